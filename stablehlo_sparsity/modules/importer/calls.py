"""Calls: ``func.call`` and §composite (the callee replayed inline: XLA sees one program either way), and
§map (the scalar computation applied elementwise)."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import symbol_ref
from .core import ImportContext, Op, Values, import_rule, jax_lax


@import_rule("func.call")
def _call(ctx: ImportContext, op: Op, args: Values) -> Values:
    """``func.call``: the callee replayed inline (XLA sees one program either way)."""
    return ctx.call(symbol_ref(op, "callee"), args)


@import_rule("stablehlo.composite")
def _composite(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§composite: the op *is* its ``decomposition`` function."""
    return ctx.call(symbol_ref(op, "decomposition"), args)


@import_rule("stablehlo.map")
def _map(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§map: the scalar computation applied elementwise (``jax.vmap`` over the flattened operands)."""
    import jax

    (t,) = ctx.result_types(op)
    fn = ctx.region_fn(op.regions[0])
    flat = [jax_lax().reshape(a, (int(np.prod(np.shape(a), dtype=np.int64)),)) for a in args]
    if flat and flat[0].shape[0] == 0:
        return [np.zeros(t.shape, t.dtype)]
    out = jax.vmap(lambda *xs: fn(*xs)[0])(*flat)
    return [jax_lax().reshape(out, t.shape)]
