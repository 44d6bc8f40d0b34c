"""Elementwise ops (§abs … §xor, §compare, §select, §clamp, §convert, §bitcast_convert, §reduce_precision)
replayed with the ``jax.lax`` primitive that lowers to the same StableHLO op.

Booleans: §add is logical OR, §multiply logical AND, §maximum OR, §minimum AND (the spec's integer rules on
``i1``); ``jax.lax`` refuses arithmetic on ``bool``, so those are replayed with the bitwise ops.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...ir.attrs import enum_or, enum_text, int_attr
from .core import ImportContext, ImportRule, Op, Values, import_rule, jax_lax
from ...dtypes import is_float, is_real_float


def _is_bool(x: Any) -> bool:
    return bool(np.dtype(x.dtype if hasattr(x, "dtype") else np.result_type(x)) == np.bool_)


# ---------------------------------------------------------------------- unary ops: the lax twin
#: op -> name of the ``jax.lax`` function (§<op> of the spec; same semantics, same StableHLO op)
UNARY = {
    "abs": "abs", "cbrt": "cbrt", "ceil": "ceil", "cosine": "cos", "count_leading_zeros": "clz",
    "exponential": "exp", "exponential_minus_one": "expm1", "exp2": "exp2", "log2": "log2", "floor": "floor",
    "imag": "imag",
    "is_finite": "is_finite", "log": "log", "log_plus_one": "log1p", "logistic": "logistic", "negate": "neg",
    "not": "bitwise_not", "popcnt": "population_count", "real": "real", "rsqrt": "rsqrt", "sign": "sign",
    "sine": "sin", "sqrt": "sqrt", "tan": "tan", "tanh": "tanh",
}


def _unary_rule(lax_name: str) -> ImportRule:
    def rule(ctx: ImportContext, op: Op, args: Values) -> Values:
        """§<unary op>: the ``jax.lax`` function of the same name (the table :data:`UNARY`)."""
        return [getattr(jax_lax(), lax_name)(args[0])]

    return rule


for _op, _fn in UNARY.items():
    import_rule("stablehlo." + _op)(_unary_rule(_fn))


def _round_rule(method: str) -> ImportRule:
    def rule(ctx: ImportContext, op: Op, args: Values) -> Values:
        """§round_nearest_afz / §round_nearest_even: ``lax.round`` with the matching rounding method."""
        lax = jax_lax()
        return [lax.round(args[0], getattr(lax.RoundingMethod, method))]

    return rule


import_rule("stablehlo.round_nearest_afz")(_round_rule("AWAY_FROM_ZERO"))
import_rule("stablehlo.round_nearest_even")(_round_rule("TO_NEAREST_EVEN"))


# ---------------------------------------------------------------------- binary ops
#: op -> (``jax.lax`` function, its replacement on booleans or None)
BINARY = {
    "add": ("add", "bitwise_or"), "subtract": ("sub", None), "multiply": ("mul", "bitwise_and"),
    "divide": ("div", None), "remainder": ("rem", None), "power": ("pow", None), "maximum": ("max", "bitwise_or"),
    "minimum": ("min", "bitwise_and"), "atan2": ("atan2", None), "and": ("bitwise_and", "bitwise_and"),
    "or": ("bitwise_or", "bitwise_or"), "xor": ("bitwise_xor", "bitwise_xor"), "complex": ("complex", None),
    "shift_left": ("shift_left", None), "shift_right_arithmetic": ("shift_right_arithmetic", None),
    "shift_right_logical": ("shift_right_logical", None),
}


def _binary_rule(lax_name: str, bool_name: str | None) -> ImportRule:
    def rule(ctx: ImportContext, op: Op, args: Values) -> Values:
        """§<binary op>: the ``jax.lax`` function of :data:`BINARY` (booleans: the spec's logical twin)."""
        a, b = args
        name = bool_name if (bool_name and _is_bool(a)) else lax_name
        if name == "pow" and np.issubdtype(np.dtype(a.dtype), np.integer):
            return [integer_power(a, b)]
        return [getattr(jax_lax(), name)(a, b)]

    return rule


for _op, (_fn, _bfn) in BINARY.items():
    import_rule("stablehlo." + _op)(_binary_rule(_fn, _bfn))


@import_rule("stablehlo.fma")
def _fma(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§fma (JAX 0.12.1): ``lax.fma``, which lowers to it (a module holding it parses only where it exists)."""
    return [jax_lax().fma(*args)]


def integer_power(a: Any, b: Any) -> Any:
    """§power on integers: exponentiation by squaring; a negative exponent gives 0, except for bases 1 and -1
    (XLA's semantics); ``lax.pow`` accepts only floating-point and complex bases."""
    lax = jax_lax()
    import jax.numpy as jnp

    dt = np.dtype(a.dtype)
    bits = dt.itemsize * 8
    one = np.ones((), dt)
    acc = jnp.ones(np.broadcast_shapes(np.shape(a), np.shape(b)), dt)
    base = jnp.broadcast_to(a, acc.shape)
    e = jnp.broadcast_to(b, acc.shape)
    for _ in range(bits):  # a fixed number of squarings covers every exponent of the type
        acc = lax.select((e & 1) == 1, lax.mul(acc, base), acc)
        base = lax.mul(base, base)
        shift = lax.shift_right_logical if dt.kind == "u" else lax.shift_right_arithmetic
        e = shift(e, np.array(1, dt))
    if dt.kind == "i":
        neg = b < 0
        minus_one = np.array(-1, dt)
        odd = (b & 1) == 1
        neg_val = lax.select(a == one, jnp.ones_like(acc), lax.select(
            a == minus_one, lax.select(odd, jnp.full_like(acc, -1), jnp.ones_like(acc)), jnp.zeros_like(acc)))
        acc = lax.select(jnp.broadcast_to(neg, acc.shape), neg_val, acc)
    return acc


# ---------------------------------------------------------------------- §compare
def _compare_prims() -> Any:
    from jax._src.lax import lax as lax_internal

    return lax_internal


@import_rule("stablehlo.compare")
def _compare(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§compare: ``comparison_direction`` with ``compare_type`` (FLOAT: IEEE, TOTALORDER: the spec's total
    order — JAX's ``eq_to``/``lt_to``/``le_to`` primitives lower to it — SIGNED / UNSIGNED on integers)."""
    return [compare(args[0], args[1], enum_text(op, "comparison_direction"),
                    enum_or(op, "compare_type", None))]


def compare(a: Any, b: Any, direction: str, compare_type: str | None) -> Any:
    lax = jax_lax()
    dt = np.dtype(a.dtype)
    if compare_type == "TOTALORDER" and is_float(dt):
        li = _compare_prims()
        if direction == "EQ":
            return li.eq_to_p.bind(*_same_shape(a, b))
        if direction == "NE":
            return lax.bitwise_not(li.eq_to_p.bind(*_same_shape(a, b)))
        if direction == "LT":
            return li.lt_to_p.bind(*_same_shape(a, b))
        if direction == "LE":
            return li.le_to_p.bind(*_same_shape(a, b))
        if direction == "GT":
            return li.lt_to_p.bind(*_same_shape(b, a))
        return li.le_to_p.bind(*_same_shape(b, a))
    if dt.kind in "iu" and compare_type in ("SIGNED", "UNSIGNED"):
        want = "i" if compare_type == "SIGNED" else "u"
        if dt.kind != want:  # reinterpret the bits, as the spec's comparison type says
            to = np.dtype(f"{want}{dt.itemsize}")
            a, b = lax.bitcast_convert_type(a, to), lax.bitcast_convert_type(b, to)
    fn = {"EQ": lax.eq, "NE": lax.ne, "LT": lax.lt, "LE": lax.le, "GT": lax.gt, "GE": lax.ge}[direction]
    return fn(a, b)


def _same_shape(a: Any, b: Any) -> tuple[Any, Any]:
    import jax.numpy as jnp

    shape = np.broadcast_shapes(np.shape(a), np.shape(b))
    return jnp.broadcast_to(a, shape), jnp.broadcast_to(b, shape)


# ---------------------------------------------------------------------- select, clamp
@import_rule("stablehlo.select")
def _select(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§select: ``pred ? on_true : on_false`` (a scalar ``pred`` selects whole tensors)."""
    pred, t, f = args
    lax = jax_lax()
    if np.ndim(pred) == 0 and np.ndim(t) > 0:
        import jax.numpy as jnp

        pred = jnp.broadcast_to(pred, np.shape(t))
    return [lax.select(pred, t, f)]


@import_rule("stablehlo.clamp")
def _clamp(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§clamp: ``min(max(operand, min), max)`` with scalar or full-shape bounds.  The primal is ``lax.clamp``
    (the same StableHLO op); the derivative is the spec's definition's (:func:`spec_clamp`), not JAX's rule for
    ``lax.clamp``, which assumes ``min <= max`` and gives 0 for all three operands when ``min > max``."""
    lo, x, hi = args
    shape = np.shape(x)
    if shape:  # full-shape bounds: the same values, and a JVP of clamp cannot batch scalar bounds
        import jax.numpy as jnp

        lo, hi = jnp.broadcast_to(lo, shape), jnp.broadcast_to(hi, shape)
    if not is_float(np.result_type(x)):
        return [jax_lax().clamp(lo, x, hi)]
    return [spec_clamp(lo, x, hi)]


def _spec_clamp() -> Callable[..., Any]:
    import jax

    lax = jax_lax()

    @jax.custom_jvp
    def clamp(lo: Any, x: Any, hi: Any) -> Any:
        return lax.clamp(lo, x, hi)

    @clamp.defjvp
    def clamp_jvp(primals: Values, tangents: Values) -> tuple[Any, Any]:
        """∂ of ``min(max(x, lo), hi)``: ``hi``'s tangent where ``max(x, lo) > hi``, else ``x``'s where
        ``x > lo``, else ``lo``'s (ties, non-differentiable points, take the later operand's: XLA returns it)."""
        lo, x, hi = primals
        dlo, dx, dhi = (jax.numpy.broadcast_to(t, np.shape(x)) for t in tangents)
        inner = lax.max(x, lo)
        d_inner = lax.select(lax.gt(x, lo), dx, dlo)
        return clamp(lo, x, hi), lax.select(lax.gt(inner, hi), dhi, d_inner)

    return clamp


_SPEC_CLAMP: Callable[..., Any] | None = None


def spec_clamp(lo: Any, x: Any, hi: Any) -> Any:
    """``lax.clamp`` with the derivative of §clamp's definition ``min(max(x, lo), hi)`` (also for ``lo > hi``)."""
    global _SPEC_CLAMP
    if _SPEC_CLAMP is None:
        _SPEC_CLAMP = _spec_clamp()
    return _SPEC_CLAMP(lo, x, hi)


# ---------------------------------------------------------------------- conversions
@import_rule("stablehlo.convert")
def _convert(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§convert: ``lax.convert_element_type`` to the result element type."""
    (t,) = ctx.result_types(op)
    x = args[0]
    if isinstance(x, np.ndarray) and x.size <= 1 << 20 and _exact_convert(x.dtype, t.dtype):
        return [x.astype(t.dtype)]  # a constant stays concrete (see structural.py)
    return [jax_lax().convert_element_type(x, t.dtype)]


def _exact_convert(src: Any, dst: Any) -> bool:
    """Conversions NumPy performs exactly as the spec (no rounding, no out-of-range float to integer)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src.kind in "iub" and dst.kind in "iub":
        return True
    if src.kind == "f" and dst.kind == "f":
        return bool(dst.itemsize >= src.itemsize)
    # every ml_dtypes float (bfloat16, float8_*, …) is exactly representable in float32
    return is_real_float(src) and src.kind == "V" and dst in (np.dtype(np.float32), np.dtype(np.float64))


@import_rule("stablehlo.bitcast_convert")
def _bitcast_convert(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§bitcast_convert: ``lax.bitcast_convert_type`` (a width change adds or removes the last dimension, as
    in the spec)."""
    (t,) = ctx.result_types(op)
    return [jax_lax().bitcast_convert_type(args[0], t.dtype)]


@import_rule("stablehlo.reduce_precision")
def _reduce_precision(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§reduce_precision: ``lax.reduce_precision`` with the op's exponent and mantissa bits."""
    return [jax_lax().reduce_precision(args[0], int_attr(op, "exponent_bits"), int_attr(op, "mantissa_bits"))]
