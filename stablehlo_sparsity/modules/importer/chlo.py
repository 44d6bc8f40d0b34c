"""CHLO: the ops JAX emits for special functions, hyperbolic and inverse trigonometric functions and broadcasting
binary ops, replayed with the ``jax.lax`` function that lowers to each (``chlo.mulhi`` and JAX's internal
``_asin_acos_kernel`` are re-emitted verbatim)."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...ir.attrs import enum_or, enum_text, has_attr, i64_list, scalar_of
from .core import ImportContext, ImportRule, Op, Values, import_rule, jax_lax
from .elementwise import BINARY, compare
from .replay import replay


@import_rule("chlo.mulhi", "chlo._asin_acos_kernel")
def _replayed(ctx: ImportContext, op: Op, args: Values) -> Values:
    """Re-emitted as they are: ``chlo.mulhi`` (the high half of an integer product: integer-valued, a zero
    derivative) and JAX's internal complex ``asin``/``acos`` kernel (no derivative rule here)."""
    return replay(ctx, op, args)


# ---------------------------------------------------------------------- CHLO
CHLO_UNARY = {
    "acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh", "atan": "atan", "atanh": "atanh",
    "cosh": "cosh", "sinh": "sinh", "tan": "tan", "erf": "erf", "erfc": "erfc", "erf_inv": "erf_inv",
    "lgamma": "lgamma", "digamma": "digamma", "bessel_i1e": "bessel_i1e", "conj": "conj", "square": "square",
}


def _chlo_unary(name: str) -> ImportRule:
    def rule(ctx: ImportContext, op: Op, args: Values) -> Values:
        """``chlo.<op>``: the ``jax.lax`` function of the same name (JAX lowers it to that CHLO op)."""
        return [getattr(jax_lax(), name)(args[0])]

    return rule


for _op, _fn in CHLO_UNARY.items():
    import_rule("chlo." + _op)(_chlo_unary(_fn))


@import_rule("chlo.is_inf", "chlo.is_pos_inf", "chlo.is_neg_inf")
def _is_inf(ctx: ImportContext, op: Op, args: Values) -> Values:
    """``chlo.is_inf`` / ``is_pos_inf`` / ``is_neg_inf``: comparisons with ±∞."""
    lax = jax_lax()
    (x,) = args
    inf = np.asarray(np.inf, x.dtype)
    name = op.operation.name
    if name == "chlo.is_inf":
        return [lax.eq(lax.abs(x), inf)]
    return [lax.eq(x, inf if name == "chlo.is_pos_inf" else -inf)]


CHLO_BINARY = {"next_after": "nextafter", "polygamma": "polygamma", "zeta": "zeta"}


def _chlo_binary(name: str) -> ImportRule:
    def rule(ctx: ImportContext, op: Op, args: Values) -> Values:
        """``chlo.<op>``: the ``jax.lax`` function of :data:`CHLO_BINARY`."""
        return [getattr(jax_lax(), name)(args[0], args[1])]

    return rule


for _op, _fn in CHLO_BINARY.items():
    import_rule("chlo." + _op)(_chlo_binary(_fn))


def _chlo_broadcast(op: Op, args: Values, out_shape: Sequence[int]) -> list[Any]:
    """Operands of ``chlo.broadcast_<op>`` broadcast to the result shape (``broadcast_dimensions`` if given, else
    NumPy's rules)."""
    lax = jax_lax()
    out = []
    for a in args:
        shape = np.shape(a)
        if tuple(shape) == tuple(out_shape):
            out.append(a)
            continue
        if has_attr(op, "broadcast_dimensions") and len(shape) < len(out_shape):
            dims = tuple(i64_list(op, "broadcast_dimensions"))
        else:
            dims = tuple(range(len(out_shape) - len(shape), len(out_shape)))
        out.append(lax.broadcast_in_dim(a, tuple(out_shape), dims))
    return out


def _chlo_broadcast_rule(name: str) -> ImportRule:
    def rule(ctx: ImportContext, op: Op, args: Values) -> Values:
        """``chlo.broadcast_<op>``: broadcast the operands, then the StableHLO op (or its CHLO twin)."""
        (t,) = ctx.result_types(op)
        xs = _chlo_broadcast(op, args, t.shape)
        if name == "compare":
            ctype = enum_or(op, "compare_type", None)
            direction = enum_text(op, "comparison_direction")
            return [compare(xs[0], xs[1], direction, ctype)]
        if name == "select":
            return [jax_lax().select(*xs)]
        if name in CHLO_BINARY:
            return [getattr(jax_lax(), CHLO_BINARY[name])(*xs)]
        lax_name, bool_name = BINARY[name]
        if bool_name and np.dtype(xs[0].dtype) == np.bool_:
            lax_name = bool_name
        return [getattr(jax_lax(), lax_name)(*xs)]

    return rule


for _op in ("add", "atan2", "complex", "divide", "maximum", "minimum", "multiply", "next_after", "polygamma",
            "power", "remainder", "subtract", "zeta", "select", "and", "or", "xor", "compare", "shift_left",
            "shift_right_arithmetic", "shift_right_logical"):
    import_rule("chlo.broadcast_" + _op)(_chlo_broadcast_rule(_op))


@import_rule("chlo.constant_like")
def _constant_like(ctx: ImportContext, op: Op, args: Values) -> Values:
    """``chlo.constant_like``: a splat of ``value`` with the operand's shape."""
    (t,) = ctx.result_types(op)
    return [np.broadcast_to(np.asarray(scalar_of(op, "value"), t.dtype), t.shape)]


@import_rule("chlo.constant")
def _chlo_constant(ctx: ImportContext, op: Op, args: Values) -> Values:
    """``chlo.constant``: the literal."""
    from .structural import constant_value

    (t,) = ctx.result_types(op)
    return [constant_value(ctx, op, "value", t)]
