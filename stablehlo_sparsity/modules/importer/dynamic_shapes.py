"""Dynamic-shape ops with static result types: §dynamic_pad, §real_dynamic_slice, §get_dimension_size,
``set_dimension_size`` (shape operands must be known constants); §dynamic_gather and §dynamic_conv are refused
(sizes given at run time), as by the analysis.  ``dynamic_iota``, ``dynamic_reshape`` and
``dynamic_broadcast_in_dim`` share the rules of their static twins in :mod:`.structural`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import int_attr
from .core import ImportContext, NOT_IMPORTABLE, Op, Values, import_rule, jax_lax
from .structural import broadcast_in_dim, iota, reshape


def static_ints(ctx: ImportContext, op: Op, value: Any, what: str) -> list[int]:
    """A shape operand of a dynamic-shape op, which must be a known constant here."""
    if not isinstance(value, np.ndarray):
        raise ctx.error(op, f"{what} is not a constant; only static shapes can be imported")
    return [int(v) for v in value.ravel()]


@import_rule("stablehlo.dynamic_pad")
def _dynamic_pad(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§dynamic_pad with constant padding amounts: §pad."""
    x, fill, lo, hi, inner = args
    cfg = zip(static_ints(ctx, op, lo, "edge_padding_low"), static_ints(ctx, op, hi, "edge_padding_high"),
              static_ints(ctx, op, inner, "interior_padding"))
    return [jax_lax().pad(x, fill, list(cfg))]


@import_rule("stablehlo.real_dynamic_slice")
def _real_dynamic_slice(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§real_dynamic_slice with constant start / limit / strides: §slice."""
    x, start, limit, strides = args
    return [jax_lax().slice(x, static_ints(ctx, op, start, "start_indices"),
                         static_ints(ctx, op, limit, "limit_indices"), static_ints(ctx, op, strides, "strides"))]


@import_rule("stablehlo.get_dimension_size")
def _get_dimension_size(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§get_dimension_size: a constant (shapes are static)."""
    (t,) = ctx.result_types(op)
    return [np.asarray(np.shape(args[0])[int_attr(op, "dimension")], dtype=t.dtype)]


@import_rule("stablehlo.set_dimension_size")
def _set_dimension_size(ctx: ImportContext, op: Op, args: Values) -> Values:
    """``set_dimension_size`` to a static result type: the identity."""
    (t,) = ctx.result_types(op)
    if tuple(np.shape(args[0])) != tuple(t.shape):
        raise ctx.error(op, "the result shape differs from the operand's (a dynamic shape)")
    return [args[0]]


@import_rule("stablehlo.dynamic_iota")
def _dynamic_iota(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§dynamic_iota with a static result type: §iota."""
    return iota(ctx, op, args)


@import_rule("stablehlo.dynamic_reshape")
def _dynamic_reshape(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§dynamic_reshape with a static result type: §reshape."""
    return reshape(ctx, op, args)


@import_rule("stablehlo.dynamic_broadcast_in_dim")
def _dynamic_broadcast_in_dim(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§dynamic_broadcast_in_dim with a static result type: §broadcast_in_dim."""
    return broadcast_in_dim(ctx, op, args)


NOT_IMPORTABLE.update({
    "stablehlo.dynamic_gather": "its slice sizes are runtime operands (a dynamic shape); the analysis refuses it too",
    "stablehlo.dynamic_conv": "its padding is a runtime operand (a dynamic shape); the analysis refuses it too",
})


@import_rule("stablehlo.dynamic_gather", "stablehlo.dynamic_conv")
def _dynamic_refused(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§dynamic_gather / §dynamic_conv: sizes given at run time — not importable (:data:`NOT_IMPORTABLE`)."""
    raise ctx.error(op, NOT_IMPORTABLE[op.operation.name])
