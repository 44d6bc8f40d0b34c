"""Structural ops and constants (§constant, §iota, §reshape, §transpose, §broadcast_in_dim, §slice,
§concatenate, §pad, §reverse); their dynamic-shape twins are in :mod:`.dynamic_shapes`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import dense_attr, i64_list, int_attr
from ...analysis.values import TensorType
from .core import ImportContext, Op, Values, import_rule, jax_lax


def constant_value(ctx: ImportContext, op: Op, name: str, t: TensorType) -> np.ndarray:
    """A ``DenseElementsAttr`` as a NumPy array of the result type; a splat stays a broadcast scalar (JAX then
    emits a broadcast of one literal, not a huge dense constant).  Literals the bindings cannot convert
    (complex, bf16) are read from the printed form, as the constant folder does."""
    from ...ir.attrs import literal_from_text

    arr = None
    try:
        arr = dense_attr(op, name)
    except Exception:  # the bindings cannot even cast complex literals to a Python attribute
        pass
    if arr is None:
        arr = literal_from_text(str(op), t.dtype)
        if arr is None:
            raise ctx.error(op, "cannot read the literal")
    arr = np.asarray(arr)
    if arr.size == 1 and t.size != 1:
        return np.broadcast_to(arr.astype(t.dtype).reshape(()), t.shape)
    return arr.astype(t.dtype, copy=False).reshape(t.shape)


@import_rule("stablehlo.constant")
def _constant(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§constant: the literal, as a NumPy array (a concrete value for JAX)."""
    (t,) = ctx.result_types(op)
    return [constant_value(ctx, op, "value", t)]


@import_rule("stablehlo.iota")
def iota(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§iota (and §dynamic_iota with a static result type): ``lax.broadcasted_iota``."""
    (t,) = ctx.result_types(op)
    return [jax_lax().broadcasted_iota(t.dtype, t.shape, int_attr(op, "iota_dimension"))]


# Data movement on a NumPy constant stays a NumPy constant (bit-exact): JAX then still sees a *concrete*
# value, e.g. the init value of a reduction behind JAX's own ``broadcast_in_dim`` of a scalar literal, and picks
# the monoid reduction with its derivative rules instead of the generic one.
_FOLD_LIMIT = 1 << 20


def _foldable(x: Any, t: TensorType) -> bool:
    return isinstance(x, np.ndarray) and t.size <= _FOLD_LIMIT


@import_rule("stablehlo.reshape")
def reshape(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§reshape (row-major order kept); §dynamic_reshape with a static result type."""
    (t,) = ctx.result_types(op)
    if _foldable(args[0], t):
        return [np.reshape(args[0], t.shape)]
    return [jax_lax().reshape(args[0], t.shape)]


@import_rule("stablehlo.transpose")
def _transpose(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§transpose: ``lax.transpose`` with ``permutation``."""
    perm = tuple(i64_list(op, "permutation"))
    (t,) = ctx.result_types(op)
    if _foldable(args[0], t):
        return [np.ascontiguousarray(np.transpose(args[0], perm))]
    return [jax_lax().transpose(args[0], perm)]


@import_rule("stablehlo.broadcast_in_dim")
def broadcast_in_dim(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§broadcast_in_dim (and §dynamic_broadcast_in_dim with a static result type)."""
    (t,) = ctx.result_types(op)
    dims = tuple(i64_list(op, "broadcast_dimensions"))
    if _foldable(args[0], t):
        from ...analysis.rules.structural import broadcast_in_dim_np

        return [broadcast_in_dim_np(args[0], op, t.shape)]
    return [jax_lax().broadcast_in_dim(args[0], t.shape, dims)]


@import_rule("stablehlo.broadcast")
def _broadcast(ctx: ImportContext, op: Op, args: Values) -> Values:
    """``stablehlo.broadcast`` (legacy): ``broadcast_sizes`` prepended (``lax.broadcast``)."""
    return [jax_lax().broadcast(args[0], tuple(i64_list(op, "broadcast_sizes")))]


@import_rule("stablehlo.slice")
def _slice(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§slice: ``lax.slice`` with start, limit and strides."""
    return [jax_lax().slice(args[0], tuple(i64_list(op, "start_indices")), tuple(i64_list(op, "limit_indices")),
                         tuple(i64_list(op, "strides")))]


@import_rule("stablehlo.concatenate")
def _concatenate(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§concatenate along ``dimension``."""
    return [jax_lax().concatenate(list(args), int_attr(op, "dimension"))]


@import_rule("stablehlo.pad")
def _pad(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§pad: edge (possibly negative) and interior padding (``lax.pad``)."""
    lo, hi, inner = (i64_list(op, k) for k in ("edge_padding_low", "edge_padding_high", "interior_padding"))
    return [jax_lax().pad(args[0], args[1], list(zip(lo, hi, inner)))]


@import_rule("stablehlo.reverse")
def _reverse(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§reverse along ``dimensions`` (``lax.rev``)."""
    return [jax_lax().rev(args[0], tuple(i64_list(op, "dimensions")))]


