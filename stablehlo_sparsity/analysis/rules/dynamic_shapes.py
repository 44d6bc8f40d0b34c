"""Dynamic-shape ops (§dynamic_broadcast_in_dim, §dynamic_reshape, §dynamic_iota, §dynamic_pad,
§real_dynamic_slice, §get_dimension_size, §set_dimension_size …).

With static result types and known shape operands they are their static twins; otherwise
:class:`~stablehlo_sparsity.errors.DynamicShapeError` (a dynamic result type is already refused when its type
is read).  ``dynamic_gather`` and ``dynamic_conv`` take their sizes as runtime operands: refused.
"""

from __future__ import annotations

from typing import NoReturn

import numpy as np

from ...ir.attrs import int_attr
from ...lattice.windows import positions
from ...errors import DynamicShapeError
from ...lattice import Deps
from ..values import AbstractValue
from .registry import ERROR, EXACT, ZERO, deps_rule, error_rule, fold_rule
from .registry import RuleContext, Op, DepsResult, FoldResult  # the rule contract
from .structural import moved_uncertainty


def _dynamic_error(ctx: RuleContext, op: Op, what: str) -> NoReturn:
    raise DynamicShapeError(f"{op.operation.name}: {what}; sparsity patterns need static shapes (try the "
                            "'stablehlo-refine-shapes' and 'stablehlo-canonicalize-dynamism' passes)",
                            ctx.location(op))


def _const_ints(ctx: RuleContext, op: Op, arg, what: str) -> list[int]:
    if arg.const is None:
        _dynamic_error(ctx, op, f"{what} is not a known constant")
    return [int(v) for v in np.asarray(arg.const).ravel()]


@deps_rule("stablehlo.dynamic_broadcast_in_dim", kind=EXACT,
           note="static result type and known shape operands: the static twin; else DynamicShapeError")
def _dynamic_broadcast_in_dim(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§dynamic_broadcast_in_dim with a static result type: §broadcast_in_dim to that shape."""
    from .structural import broadcast_in_dim_np

    (t,) = ctx.result_types(op)
    x = args[0]
    return [x.deps.gather_rows(np.ascontiguousarray(broadcast_in_dim_np(positions(x.shape), op, t.shape)).ravel())]


@fold_rule("stablehlo.dynamic_broadcast_in_dim")
def _dynamic_broadcast_in_dim_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    from .structural import broadcast_in_dim_np

    (t,) = ctx.result_types(op)
    return [np.ascontiguousarray(broadcast_in_dim_np(consts[0], op, t.shape))]


@deps_rule("stablehlo.dynamic_reshape", kind=EXACT,
           note="static result type and known shape operands: the static twin; else DynamicShapeError")
def _dynamic_reshape(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§dynamic_reshape with a static result type: §reshape (row-major order kept)."""
    return [args[0].deps]


@fold_rule("stablehlo.dynamic_reshape")
def _dynamic_reshape_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    (t,) = ctx.result_types(op)
    return [consts[0].reshape(t.shape)]


@deps_rule("stablehlo.dynamic_iota", kind=ZERO, note="a constant (static result type)")
def _dynamic_iota(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    (t,) = ctx.result_types(op)
    dim = int_attr(op, "iota_dimension")
    shape = [1] * len(t.shape)
    shape[dim] = t.shape[dim]
    const = np.broadcast_to(np.arange(t.shape[dim]).reshape(shape), t.shape).astype(t.dtype)
    return [AbstractValue(t, ctx.empty(t.size), const)]


@deps_rule("stablehlo.dynamic_pad", kind=EXACT,
           note="static result type and known shape operands: the static twin; else DynamicShapeError")
def _dynamic_pad(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§dynamic_pad with known padding amounts: §pad."""
    from .structural import pad_np

    x, fill, lo_a, hi_a, in_a = args
    lo = _const_ints(ctx, op, lo_a, "edge_padding_low")
    hi = _const_ints(ctx, op, hi_a, "edge_padding_high")
    interior = _const_ints(ctx, op, in_a, "interior_padding")
    idx = pad_np(positions(x.shape), -1, lo, hi, interior).ravel()
    parts = [x.deps.gather_rows(idx)]
    if not fill.deps.is_empty:
        parts.append(fill.deps.gather_rows(np.where(idx < 0, 0, -1)))
    return [Deps.union(*parts)]


@deps_rule("stablehlo.real_dynamic_slice", kind=EXACT,
           note="static result type and known shape operands: the static twin; else DynamicShapeError")
def _real_dynamic_slice(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§real_dynamic_slice with known start / limit / strides: §slice."""
    x, start_a, limit_a, strides_a = args
    start = _const_ints(ctx, op, start_a, "start_indices")
    limit = _const_ints(ctx, op, limit_a, "limit_indices")
    strides = _const_ints(ctx, op, strides_a, "strides")
    idx = positions(x.shape)[tuple(slice(s, l, st) for s, l, st in zip(start, limit, strides))]
    return [x.deps.gather_rows(np.ascontiguousarray(idx).ravel())]


@deps_rule("stablehlo.dynamic_gather", "stablehlo.dynamic_conv", kind=ERROR,
           note="DynamicShapeError (sizes are runtime operands)")
def _dynamic_unsupported(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    _dynamic_error(ctx, op, "its sizes are runtime operands")


@deps_rule("stablehlo.get_dimension_size", kind=ZERO, note="a known integer")
def _get_dimension_size(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§get_dimension_size: a known constant (shapes are static here)."""
    (t,) = ctx.result_types(op)
    dim = int_attr(op, "dimension")
    return [AbstractValue(t, ctx.empty(t.size), np.asarray(args[0].shape[dim], dtype=t.dtype).reshape(t.shape))]


@deps_rule("stablehlo.set_dimension_size", kind=EXACT,
           note="static result type and known shape operands: the static twin; else DynamicShapeError")
def _set_dimension_size(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """``set_dimension_size`` to a static result type is the identity; a bounded-dynamic result is refused
    when its type is read."""
    (t,) = ctx.result_types(op)
    x = args[0]
    if tuple(t.shape) != tuple(x.shape):
        _dynamic_error(ctx, op, "the result shape differs from the operand's")
    return [x.deps]


# ---------------------------------------------------------------- trust (folding/exactness.py)
error_rule("stablehlo.dynamic_broadcast_in_dim", "stablehlo.dynamic_reshape")(
    lambda ctx, op, args, consts: moved_uncertainty(ctx, op, args, data=(0,)))
