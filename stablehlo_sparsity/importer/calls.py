"""Calls: ``func.call`` and §composite (the callee replayed inline: XLA sees one program either way), and
§map (the scalar computation applied elementwise)."""

from __future__ import annotations

import numpy as np

from ..attrs import symbol_ref
from .core import import_rule


def _lax():
    from jax import lax

    return lax


@import_rule("func.call")
def _call(ctx, op, args):
    """``func.call``: the callee replayed inline (XLA sees one program either way)."""
    return ctx.call(symbol_ref(op, "callee"), args)


@import_rule("stablehlo.composite")
def _composite(ctx, op, args):
    """§composite: the op *is* its ``decomposition`` function."""
    return ctx.call(symbol_ref(op, "decomposition"), args)


@import_rule("stablehlo.map")
def _map(ctx, op, args):
    """§map: the scalar computation applied elementwise (``jax.vmap`` over the flattened operands)."""
    import jax

    (t,) = ctx.result_types(op)
    fn = ctx.region_fn(op.regions[0])
    flat = [_lax().reshape(a, (int(np.prod(np.shape(a), dtype=np.int64)),)) for a in args]
    if flat and flat[0].shape[0] == 0:
        return [np.zeros(t.shape, t.dtype)]
    out = jax.vmap(lambda *xs: fn(*xs)[0])(*flat)
    return [_lax().reshape(out, t.shape)]
