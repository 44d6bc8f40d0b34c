"""Elementwise ops (StableHLO spec §abs … §xor): the *union* and *drop* moves.

Every elementwise op maps element ``e`` of each operand to element ``e`` of the result, so its index set is
the union of the operands' rows ``e`` — restricted to the operands through which the derivative can be
nonzero.  The table :data:`ELEMENTWISE` says, per op, which operands carry derivatives and gives the NumPy
function that folds it (StableHLO semantics, checked against the reference interpreter and XLA in
``tests/analysis/rules/test_elementwise.py``).  Results of integer or boolean type get empty index sets from the
interpreter whatever the rule says.

Derivative kinds::

    "all"      every operand: add, multiply, clamp (also in its operand!), remainder (∂/∂rhs = -trunc(l/r)) …
    "none"     zero derivative wherever it exists: floor, ceil, round_*, compare, is_finite, bit operations
    "complex"  only for a complex operand: sign(z) = z/|z| varies, sign(x) of a real x is piecewise constant;
               imag(x) of a real x is the constant 0

Constants are values (docs/explanation/guarantees.md, "Trust in folded constants"): :data:`ZERO_WHERE` lists, per op,
where a
known operand makes the derivative in another operand vanish — ``x * c`` where ``c == 0``, ``c / x`` where ``c ==
0``, ``x ** 0``, ``1 ** y``, ``atan2(0, x)`` … ``select`` with a known predicate takes one side per element;
``clamp`` with known bounds ``min >= max`` is constant."""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ...ir.attrs import enum_text, symbol_ref
from ..folding.exactness import error_array, finalize, is_float, surely
from ...ir.helpers import nested_ops, region_captures
from ...lattice import Deps, group_union, Groups
from .registry import (CONSERVATIVE, EXACT, UNION_OF_OPERANDS, UNION_WHEN_UNKNOWN, VALUE_AWARE, ZERO, NotFoldable,
                       deps_rule, fold_rule)
from .registry import RuleContext, Op, DepsResult, FoldResult  # the rule contract
from ..values import AbstractValue



# ---------------------------------------------------------------- the moves
def _rows(arg, size: int) -> Deps:
    """An operand's index sets at the result's size (select/clamp accept scalar operands: repeat the row)."""
    if arg.size == size:
        return arg.deps
    if arg.size == 1:
        return arg.deps.broadcast_row(size)
    raise ValueError(f"operand of {arg.size} elements for a result of {size}")


def _values(arg, shape) -> np.ndarray:
    """A known operand's values, flat, at the result's shape (scalars broadcast)."""
    return np.broadcast_to(np.asarray(arg.const), shape).ravel()


def _union_rule(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    (t,) = ctx.result_types(op)
    return [Deps.union(*[_rows(a, t.size) for a in args])]


def _drop_rule(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    return [ctx.empty(t.size) for t in ctx.result_types(op)]


def _complex_rule(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """sign/imag: a derivative only when the operand is complex."""
    if args[0].dtype.kind == "c":
        return _union_rule(ctx, op, args)
    return _drop_rule(ctx, op, args)


_KIND_RULES = {"all": _union_rule, "none": _drop_rule, "complex": _complex_rule}


# ---------------------------------------------------------------- folding helpers (exact StableHLO semantics)
def _bits(dt: np.dtype) -> int:
    return dt.itemsize * 8


def _udt(dt: np.dtype) -> np.dtype:
    return np.dtype(f"u{dt.itemsize}")


def _sdt(dt: np.dtype) -> np.dtype:
    return np.dtype(f"i{dt.itemsize}")


def _check_int_division(a, b):
    """§divide/§remainder: division by zero and INT_MIN / -1 are implementation-defined: do not fold."""
    if np.any(b == 0):
        raise NotFoldable
    if a.dtype.kind == "i" and np.any((a == np.iinfo(a.dtype).min) & (b == -1)):
        raise NotFoldable


def _divide(a, b):
    """Integers: the quotient truncated toward zero (not NumPy's floor division)."""
    if a.dtype.kind in "iu":
        _check_int_division(a, b)
        if a.dtype.kind == "u":
            return a // b
        # a - fmod(a, b) is an exact multiple of b and cannot overflow (|fmod| < |a|, same sign): the floor
        # division of it is the truncated quotient.  (np.abs(INT_MIN) would overflow.)
        return (a - np.fmod(a, b)) // b
    return a / b


def _remainder(a, b):
    """The sign of the result is the dividend's (C ``fmod``), for integers and floats; complex: TBD in spec."""
    if a.dtype.kind == "c":
        raise NotFoldable
    if a.dtype.kind in "iu":
        _check_int_division(a, b)
    return np.fmod(a, b)


def _power(a, b):
    """Integers: exact powers modulo 2^bits; a negative exponent gives 0 except for bases 1 and -1 (XLA)."""
    if a.dtype.kind in "iu":
        if a.dtype.kind == "i":
            neg = b < 0
            if np.any(neg & (a == 0)):
                raise NotFoldable  # 0 ** -k divides by zero
            pos = np.power(a, np.where(neg, 0, b))
            odd = (b % 2) != 0
            negval = np.where(a == 1, 1, np.where(a == -1, np.where(odd, -1, 1), 0)).astype(a.dtype)
            return np.where(neg, negval, pos)
        if np.any(b >> np.asarray(_bits(b.dtype) - 1, b.dtype)):
            raise NotFoldable  # XLA and the reference interpreter read such exponents as negative
        return np.power(a, b)
    return np.power(a, b)


def _shift_amount(b, bits):
    """Shift amounts are read as unsigned: a negative amount is a huge one (reference interpreter and XLA)."""
    ub = b.view(_udt(b.dtype)).astype(np.uint64)
    return ub, np.minimum(ub, bits - 1)


def _shift_left(a, b):
    bits = _bits(a.dtype)
    ub, amount = _shift_amount(b, bits)
    u = a.view(_udt(a.dtype))
    out = np.left_shift(u, amount.astype(u.dtype)).view(a.dtype)
    return np.where(ub >= bits, np.zeros((), a.dtype), out)


def _shift_right_logical(a, b):
    bits = _bits(a.dtype)
    ub, amount = _shift_amount(b, bits)
    u = a.view(_udt(a.dtype))
    out = np.right_shift(u, amount.astype(u.dtype)).view(a.dtype)
    return np.where(ub >= bits, np.zeros((), a.dtype), out)


def _shift_right_arithmetic(a, b):
    """Also for unsigned types: the bit pattern is shifted with sign fill; past the width, all sign bits."""
    bits = _bits(a.dtype)
    _, amount = _shift_amount(b, bits)
    s = a.view(_sdt(a.dtype))
    return np.right_shift(s, amount.astype(s.dtype)).view(a.dtype)


def _popcnt(a):
    return np.bitwise_count(a.view(_udt(a.dtype))).astype(a.dtype)


def _count_leading_zeros(a):
    """bits - bit_length, with the bit length found by a binary search over shifts (exact for 64 bits)."""
    bits = _bits(a.dtype)
    u = a.view(_udt(a.dtype)).astype(np.uint64)
    length = np.zeros(a.shape, np.int64)
    shift = bits // 2
    while shift >= 1:
        high = u >= (np.uint64(1) << np.uint64(shift))
        length += np.where(high, shift, 0)
        u = np.where(high, u >> np.uint64(shift), u)
        shift //= 2
    length += (u != 0).astype(np.int64)
    return (bits - length).astype(a.dtype)


def _not(a):
    return np.logical_not(a) if a.dtype == np.bool_ else np.invert(a)


def _sign(a):
    """§sign: ±0 keep their sign, NaN stays NaN; complex: z/|z|, 0 at 0, NaN if either part is NaN."""
    if a.dtype.kind == "c":
        nan = np.isnan(a.real) | np.isnan(a.imag)
        mag = np.where(np.abs(a) == 0, np.inf, np.abs(a))  # x / |x|, part by part; 0 at 0
        out = _complex(a.real / mag, a.imag / mag)
        return np.where(nan, complex(np.nan, np.nan), out)
    if a.dtype.kind in "iu":
        return np.sign(a)
    return np.where(a == 0, a, np.sign(a))


def _round_afz(a):
    """§round_nearest_afz: ties away from zero; ``a - trunc(a)`` is exact, so no double rounding."""
    t = np.trunc(a)
    return np.where(np.abs(a - t) >= 0.5, t + np.copysign(np.ones((), a.dtype), a), t)


def _signed_zero_fix(out, a, b, take_negative):
    """IEEE maximum/minimum order -0 < +0, which NumPy's maximum/minimum do not."""
    if a.dtype.kind != "f" and a.dtype.name != "bfloat16":
        return out
    both = (a == 0) & (b == 0)
    if not np.any(both):
        return out
    neg = take_negative(np.signbit(a), np.signbit(b))
    zero = np.where(neg, -np.zeros((), out.dtype), np.zeros((), out.dtype))
    return np.where(both, zero, out)


def _maximum(a, b):
    if a.dtype.kind == "c":
        raise NotFoldable  # lexicographic order with NaNs: not worth reproducing
    return _signed_zero_fix(np.maximum(a, b), a, b, np.logical_and)


def _minimum(a, b):
    if a.dtype.kind == "c":
        raise NotFoldable
    return _signed_zero_fix(np.minimum(a, b), a, b, np.logical_or)


def _complex(a, b):
    """§complex: (real, imag) pairs; built part by part (``a + 1j * b`` turns ``(1, inf)`` into NaN)."""
    out = np.empty(a.shape, np.result_type(a.dtype, np.complex64))
    out.real = a
    out.imag = b
    return out


def _logistic(a):
    return 1.0 / (1.0 + np.exp(-a))


def _rsqrt(a):
    return 1.0 / np.sqrt(a)


def _fma(a, b, c):
    """§fma (JAX 0.12.1): ``a·b + c`` rounded once.  NumPy rounds twice, so the fold may differ from XLA's in the
    last place: the op has no error model (elementwise_trust), and its float results decide nothing."""
    return a * b + c


#: op name -> (derivative kind, NumPy folder).  Folders run under ``np.errstate(all="ignore")``.  (CHLO's
#: elementwise ops — sinh, erf, lgamma … — live in ``chlo.py``.)
ELEMENTWISE: dict[str, tuple[str, object]] = {
    "stablehlo.abs": ("all", np.abs),
    "stablehlo.add": ("all", np.add),
    "stablehlo.and": ("none", np.bitwise_and),
    "stablehlo.atan2": ("all", np.arctan2),
    "stablehlo.cbrt": ("all", np.cbrt),
    "stablehlo.ceil": ("none", np.ceil),
    "stablehlo.complex": ("all", _complex),
    "stablehlo.cosine": ("all", np.cos),
    "stablehlo.count_leading_zeros": ("none", _count_leading_zeros),
    "stablehlo.divide": ("all", _divide),
    "stablehlo.exponential": ("all", np.exp),
    "stablehlo.exponential_minus_one": ("all", np.expm1),
    "stablehlo.exp2": ("all", np.exp2),
    "stablehlo.fma": ("all", _fma),
    "stablehlo.floor": ("none", np.floor),
    "stablehlo.imag": ("complex", np.imag),
    "stablehlo.is_finite": ("none", np.isfinite),
    "stablehlo.log": ("all", np.log),
    "stablehlo.log_plus_one": ("all", np.log1p),
    "stablehlo.log2": ("all", np.log2),
    "stablehlo.logistic": ("all", _logistic),
    "stablehlo.maximum": ("all", _maximum),
    "stablehlo.minimum": ("all", _minimum),
    "stablehlo.multiply": ("all", np.multiply),
    "stablehlo.negate": ("all", np.negative),
    "stablehlo.not": ("none", _not),
    "stablehlo.or": ("none", np.bitwise_or),
    "stablehlo.popcnt": ("none", _popcnt),
    "stablehlo.power": ("all", _power),
    "stablehlo.real": ("all", np.real),
    "stablehlo.remainder": ("all", _remainder),
    "stablehlo.round_nearest_afz": ("none", _round_afz),
    "stablehlo.round_nearest_even": ("none", np.rint),
    "stablehlo.rsqrt": ("all", _rsqrt),
    "stablehlo.shift_left": ("none", _shift_left),
    "stablehlo.shift_right_arithmetic": ("none", _shift_right_arithmetic),
    "stablehlo.shift_right_logical": ("none", _shift_right_logical),
    "stablehlo.sign": ("complex", _sign),
    "stablehlo.sine": ("all", np.sin),
    "stablehlo.sqrt": ("all", np.sqrt),
    "stablehlo.subtract": ("all", np.subtract),
    "stablehlo.tan": ("all", np.tan),
    "stablehlo.tanh": ("all", np.tanh),
    "stablehlo.xor": ("none", np.bitwise_xor),
}


# ---------------------------------------------------------------- value-aware rules (constants are values)
def _is_zero(v):
    return v == 0


def _is_one(v):
    return v == 1


def _is_inf(v):
    return np.isinf(v) if is_float(v.dtype) else np.zeros(v.shape, bool)


#: Each predicate on one number of a real or integer dtype, as ``ndarray.item()`` gives it (a bool, int or float):
#: the same answer as on a one-element array.
_SCALAR_PREDICATES: dict[Callable, Callable[[Any], bool]] = {
    _is_zero: lambda v: v == 0,
    _is_one: lambda v: v == 1,
    _is_inf: lambda v: isinstance(v, float) and math.isinf(v),
}

#: op -> {operand i: (operand j, predicate)}: the derivative in operand ``i`` is zero wherever operand ``j``
#: is a known constant whose value satisfies the predicate.
ZERO_WHERE: dict[str, dict[int, tuple[int, Callable[[np.ndarray], Any]]]] = {
    "stablehlo.multiply": {0: (1, _is_zero), 1: (0, _is_zero)},   # ∂(a·b)/∂a = b
    "stablehlo.fma": {0: (1, _is_zero), 1: (0, _is_zero)},        # ∂(a·b + c)/∂a = b;  ∂/∂c = 1
    "stablehlo.divide": {0: (1, _is_inf), 1: (0, _is_zero)},       # ∂(a/b)/∂a = 1/b;  ∂(a/b)/∂b = -a/b²
    "stablehlo.power": {0: (1, _is_zero), 1: (0, _is_one)},        # a**0 = 1;  1**b = 1
    "stablehlo.atan2": {0: (1, _is_zero), 1: (0, _is_zero)},       # atan2(y, 0) = ±π/2;  atan2(0, x) ∈ {0, ±π}
    "stablehlo.remainder": {1: (0, _is_zero)},           # fmod(0, b) = 0
}


def _value_aware_rule(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """A union rule that drops an operand's rows where a known other operand makes its derivative zero."""
    (t,) = ctx.result_types(op)
    table = ZERO_WHERE[op.operation.name]
    parts = []
    for i, a in enumerate(args):
        d = _rows(a, t.size)
        if i in table and not d.is_empty:
            j, pred = table[i]
            other = args[j]
            if other.const is None:
                pass
            elif other.uncertainty is None:  # exact everywhere (a literal, `x * 2.0`): the values alone decide
                c = np.asarray(other.const)
                if c.size == 1 and c.dtype.kind in "biuf":  # one number (a written-out program's literal):
                    if _SCALAR_PREDICATES[pred](c.item()):  # Python's comparison of it, not NumPy's calls
                        d = ctx.empty(t.size)
                    parts.append(d)
                    continue
                # (the predicates are comparisons and isinf, which warn of nothing: no errstate needed)
                zero = np.asarray(pred(c), bool)
                if zero.all():
                    d = ctx.empty(t.size)
                elif zero.any():
                    d = d.mask_rows(~np.broadcast_to(zero, t.shape).ravel())
            else:  # only where the known value is exact (folding/exactness.py)
                d = d.mask_rows(~surely(other, pred, t.shape).ravel())
        parts.append(d)
    return [Deps.union(*parts)]


#: Complex ops whose results NumPy and XLA compute alike for every input; the others (abs, division, exp …)
#: disagree on infinite or NaN parts, so those inputs are not folded.
_EXACT_COMPLEX = frozenset({"stablehlo.real", "stablehlo.imag", "stablehlo.complex", "stablehlo.negate",
                            "stablehlo.add", "stablehlo.subtract"})


def _make_folder(fn, name):
    def fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
        (t,) = ctx.result_types(op)
        if name not in _EXACT_COMPLEX and any(c.dtype.kind == "c" and not np.isfinite(c).all() for c in consts):
            raise NotFoldable
        try:
            with np.errstate(all="ignore"):
                out = fn(*consts)
        except (TypeError, ValueError, OverflowError):  # e.g. a ufunc NumPy lacks for bf16
            raise NotFoldable from None
        return [np.asarray(out).astype(t.dtype, copy=False)]

    return fold


#: The coverage kind and note of each derivative kind (``docs/reference/coverage.md``).
_KIND_COVERAGE = {
    "all": (EXACT, "elementwise union"),
    "none": (ZERO, "piecewise constant or integer/boolean"),
    "complex": (EXACT, "union for complex operands; zero-derivative for real ones"),
}

UNION_WHEN_UNKNOWN.update({_union_rule, _value_aware_rule})
UNION_OF_OPERANDS.add(_union_rule)

for _name, (_kind, _fn) in ELEMENTWISE.items():
    fold_rule(_name)(_make_folder(_fn, _name))
    if _name in ZERO_WHERE:
        deps_rule(_name, kind=VALUE_AWARE, note="union of the operands; a known operand's exact values zero "
                                               "some derivatives")(_value_aware_rule)
    else:
        deps_rule(_name, kind=_KIND_COVERAGE[_kind][0], note=_KIND_COVERAGE[_kind][1])(_KIND_RULES[_kind])


# ---------------------------------------------------------------- partly decided predicates
#: How many boolean ops (and/or/not) :func:`decided_predicate` looks through above the comparisons.
_PREDICATE_DEPTH = 4


def decided_predicate(ctx, value, depth: int = _PREDICATE_DEPTH):
    """``(decided, truth)`` for a boolean SSA value the constant lattice could not fold, or ``None``.

    The lattice knows a boolean tensor whole or not at all: one comparison of folded floats that some backend
    may decide the other way (their error bounds overlap, folding/exactness.py) leaves every element unknown.
    This looks through the ops that built it — §compare of known floats, decided per element where their
    bounds do not overlap (the compare error rule's own test), and §and/§or/§not of such predicates — and
    returns where each element is certain and its value there.  Used by ``select`` and by ``convert`` of a
    predicate to a float (``relu``'s and ``max``'s JVPs at a point; a ``where`` on nearly tied values)."""
    from jaxlib.mlir import ir

    av = ctx.value(value)
    if av.const is not None:
        return np.ones(av.shape, bool), np.asarray(av.const, bool)
    if depth <= 0 or av.dtype != np.bool_ or not isinstance(value, ir.OpResult) \
            or av.size > ctx.options.max_fold_elements:
        return None
    src = value.owner
    name = src.operation.name
    if name == "stablehlo.compare":
        a, b = (ctx.value(v) for v in src.operands)
        if a.const is None or b.const is None or not is_float(a.dtype):
            return None
        from .elementwise_trust import compare_decided

        try:
            (truth,) = _compare_fold(ctx, src, [np.asarray(a.const), np.asarray(b.const)])
        except NotFoldable:
            return None
        return compare_decided(src, a, b, av.shape), np.asarray(truth, bool)
    if name in ("stablehlo.not", "stablehlo.and", "stablehlo.or"):
        parts = [decided_predicate(ctx, v, depth - 1) for v in src.operands]
        if any(p is None for p in parts):
            return None
        if name == "stablehlo.not":
            return parts[0][0], ~parts[0][1]
        (da, va), (db, vb) = parts
        if name == "stablehlo.and":  # a certain False decides an and; two certain values decide anything
            return (da & db) | (da & ~va) | (db & ~vb), va & vb
        return (da & db) | (da & va) | (db & vb), va | vb
    return None


def _either(t, deps: Deps, truth, decided, a, ea, b, eb):
    """``truth ? a : b`` where the predicate is ``decided``, and either side elsewhere: there the midpoint,
    with the half-distance as its bound (plus the sides' own bounds) — ``select(p, 2, 1)`` is ``1.5 ± 0.5``,
    surely nonzero, so a quotient by it stays decided."""
    from ..values import AbstractValue

    with np.errstate(invalid="ignore", over="ignore"):
        a64, b64 = np.asarray(a, np.float64), np.asarray(b, np.float64)
        mid = np.where(decided, np.where(truth, a64, b64), (a64 + b64) / 2)
        spread = np.abs(a64 - b64) / 2 + np.maximum(ea, eb)
        bound = np.where(decided, np.where(truth, ea, eb), np.where(np.isfinite(spread), spread, np.inf))
    const = np.where(decided, np.where(truth, a, b), mid.astype(t.dtype)).astype(t.dtype).reshape(t.shape)
    return AbstractValue(t, deps, const, finalize(const, bound.reshape(t.shape)))


# ---------------------------------------------------------------- select, clamp
@deps_rule("stablehlo.select", kind=VALUE_AWARE, note="a known predicate takes one side per element")
def _select(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§select: ``pred ? on_true : on_false`` (``pred`` may be a scalar); a known predicate takes one side
    per element.  No derivative flows through the boolean predicate.

    A predicate the lattice could not fold may still be certain in most elements (:func:`decided_predicate`):
    those take one side; when both sides are known values, so is the result where the predicate is certain
    (unknown — error bound ∞ — elsewhere)."""
    pred, on_true, on_false = args
    (t,) = ctx.result_types(op)
    if pred.const is not None:
        p = _values(pred, t.shape).astype(bool)
        return [Deps.union(on_true.deps.mask_rows(p), on_false.deps.mask_rows(~p))]
    partial = decided_predicate(ctx, op.operands[0])
    if partial is None or not partial[0].any():
        return [Deps.union(on_true.deps, on_false.deps)]
    decided, truth = (np.broadcast_to(x, t.shape).ravel() for x in partial)
    deps = Deps.union(on_true.deps.mask_rows(~(decided & ~truth)), on_false.deps.mask_rows(~(decided & truth)))
    if on_true.const is None or on_false.const is None or not is_float(t.dtype):
        return [deps]
    # Known sides carry no dependencies (the constant lattice's invariant), so neither does the result.
    if t.dtype.kind == "c":
        return [deps]
    return [_either(t, deps, truth, decided,
                    _values(on_true, t.shape), np.broadcast_to(error_array(on_true), t.shape).ravel(),
                    _values(on_false, t.shape), np.broadcast_to(error_array(on_false), t.shape).ravel())]


@fold_rule("stablehlo.select")
def _select_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    pred, a, b = consts
    return [np.where(pred, a, b)]


@deps_rule("stablehlo.clamp", kind=VALUE_AWARE, note="depends on operand, min and max; known min ≥ max: constant")
def _clamp(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§clamp: ``minimum(maximum(operand, min), max)`` depends on all three (``min``/``max`` may be scalars):
    on the operand between the bounds, on a bound where it is active.  Where both bounds are known and
    ``min >= max`` the result is the constant ``max``, so the operand's rows are dropped there."""
    lo, x, hi = args
    (t,) = ctx.result_types(op)
    dx = x.deps
    if lo.const is not None and hi.const is not None and not dx.is_empty:
        # min >= max only where certain: lo − err_lo >= hi + err_hi (folding/exactness.py)
        with np.errstate(invalid="ignore"):
            low = _values(lo, t.shape) - np.broadcast_to(error_array(lo), t.shape).ravel()
            high = _values(hi, t.shape) + np.broadcast_to(error_array(hi), t.shape).ravel()
            dx = dx.mask_rows(~(low >= high))
    return [Deps.union(_rows(lo, t.size), dx, _rows(hi, t.size))]


@fold_rule("stablehlo.clamp")
def _clamp_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    lo, x, hi = consts
    if x.dtype.kind == "c":
        raise NotFoldable
    with np.errstate(all="ignore"):
        return [_minimum(_maximum(x, np.broadcast_to(lo, x.shape)), np.broadcast_to(hi, x.shape))]


# ---------------------------------------------------------------- compare
_CMP = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal, "GT": np.greater,
        "LE": np.less_equal, "LT": np.less}
_VALID_COMPARE_TYPE = {"b": ("UNSIGNED",), "i": ("SIGNED",), "u": ("UNSIGNED",),
                       "f": ("FLOAT", "TOTALORDER"), "c": ("FLOAT",), "V": ("FLOAT", "TOTALORDER")}


def _total_order_key(a):
    """IEEE totalOrder as signed integers: -NaN < -inf < … < -0 < +0 < … < +inf < +NaN."""
    s = a.view(_sdt(a.dtype))
    return np.where(s < 0, s ^ np.iinfo(s.dtype).max, s)


@deps_rule("stablehlo.compare", kind=ZERO, note="boolean result")
def _compare(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§compare: a boolean result, zero derivative."""
    return _drop_rule(ctx, op, args)


@fold_rule("stablehlo.compare")
def _compare_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    """§compare: integers and booleans compare by their element type; floats with FLOAT (IEEE quiet
    comparisons) or TOTALORDER (as XLA: -0 < +0, NaNs ordered by their bits); complex lexicographically.
    A ``compare_type`` that does not fit the element type is invalid (XLA rejects it): not folded."""
    a, b = consts
    direction = enum_text(op, "comparison_direction")
    ctype = enum_text(op, "compare_type") if "compare_type" in op.attributes else None
    kind = "V" if a.dtype.name == "bfloat16" else a.dtype.kind
    if ctype is not None and ctype not in _VALID_COMPARE_TYPE[kind]:
        raise NotFoldable
    if ctype == "TOTALORDER":
        a, b = _total_order_key(a), _total_order_key(b)
    with np.errstate(invalid="ignore"):
        return [_CMP[direction](a, b)]


# ---------------------------------------------------------------- convert, bitcast_convert, reduce_precision
@deps_rule("stablehlo.convert", kind=EXACT, note="elementwise; to an integer type: zero-derivative")
@deps_rule("stablehlo.reduce_precision", kind=EXACT, note="elementwise")
@deps_rule("stablehlo.bitcast_convert", kind=CONSERVATIVE,
           note="same width: elementwise; width change: grouped elements")
def _convert(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§convert / §reduce_precision / §bitcast_convert: element ``e`` keeps its dependencies (to an integer
    or boolean type: none, by the interpreter).  reduce_precision is a rounding, but keeps them as JAX's own
    derivative does (identity on tangents).  bitcast_convert between float types of one width is treated
    like convert (conservative: the result's bits are a function of the operand's); a width-changing bitcast
    adds (narrowing) or removes (widening) a minor dimension of ``ratio`` elements.

    From an integer operand back to a float: see :func:`_float_bits_provenance` — the integer may be a
    float's bit pattern (bit tricks), whose dependencies the interpreter dropped on the way."""
    (a,) = args
    (t,) = ctx.result_types(op)
    deps = a.deps
    if a.const is None and a.dtype == np.bool_ and is_float(t.dtype) and op.operation.name == "stablehlo.convert":
        partial = decided_predicate(ctx, op.operands[0])  # e.g. a max-reduction's JVP: [x == max] as a float
        if partial is not None and partial[0].any() and t.dtype.kind != "c":
            decided, truth = (np.ravel(x) for x in partial)
            one, zero = np.ones(t.size, t.dtype), np.zeros(t.size, t.dtype)
            return [_either(t, ctx.empty(t.size), truth, decided, one, 0.0, zero, 0.0)]
    if a.const is None and not is_float(a.dtype) and is_float(t.dtype):
        deps = Deps.union(deps, _float_bits_provenance(ctx, op.operands[0], a.size))
    if a.size == t.size:
        return [deps]
    if a.size > t.size:  # e.g. 2 x f32 -> f64: each result element unions `ratio` consecutive operand elements
        ratio = a.size // t.size
        return [group_union(deps, Groups.from_table(np.arange(a.size, dtype=np.int64).reshape(t.size, ratio)))]
    ratio = t.size // a.size  # e.g. f64 -> 2 x f32: each operand element feeds `ratio` result elements
    return [deps.gather_rows(np.repeat(np.arange(a.size, dtype=np.int64), ratio))]


#: Integer ops that keep elements in place (same shape in and out): provenance stays per element through them.
_IN_PLACE = frozenset(ELEMENTWISE) | {"stablehlo.select", "stablehlo.clamp", "stablehlo.convert",
                                      "stablehlo.bitcast_convert", "stablehlo.reshape"}
#: Integer results that carry no bits of a float: constants, iotas, predicates.
_NO_BITS = frozenset({"stablehlo.compare", "stablehlo.is_finite", "stablehlo.iota", "stablehlo.constant"})


def _float_bits_provenance(ctx, value, size: int) -> Deps:
    """Dependencies carried by an integer value through a float's *bit pattern*.

    ``bitcast_convert`` of a float to an integer keeps every bit: integer arithmetic on those bits and a
    bitcast (or convert) back to a float is a continuous function of the float almost everywhere — the
    fast inverse square root, ``bits + 1`` (the next float), ``float(bits)`` (a log2 approximation).  The
    interpreter gives integer values no index sets, so on the way back this walks the integer operands
    backwards — over the IR, never over elements — to the float-to-integer bitcasts, and returns their
    operands' index sets.  Truncating float-to-integer converts, comparisons, constants and iotas end the
    walk (piecewise constant).  Through a call, loop or other op with regions the walk continues into the
    op's integer inputs (operands and values its regions capture), and takes its float inputs as sources
    when a float-to-integer bitcast occurs anywhere inside (callees included); from a block argument of a
    loop or branch body it continues into the enclosing op's inputs the same way.  Per element when every
    op on the way keeps elements in place; otherwise every element gets the union of all sources (sound,
    coarse).  Programs without such bitcasts pay one short walk per integer-to-float conversion."""
    walk = _BitsWalk(ctx, size)
    walk.run(value)
    if not walk.sources:
        return ctx.empty(size)
    if walk.in_place:
        return Deps.union(*[a.deps for a in walk.sources])
    return Deps.union(*[a.deps.reduce_all() for a in walk.sources]).broadcast_row(size)


class _BitsWalk:
    """The backward walk of :func:`_float_bits_provenance`: the float values whose bits reach ``value``
    (``sources``), and whether every op on the way keeps elements in place."""

    def __init__(self, ctx: RuleContext, size: int):
        self.ctx, self.size = ctx, size
        self.sources: list = []
        self.in_place = True

    def run(self, value) -> None:
        seen: set = set()
        stack = [value]
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            found = self._defining_op(v)
            if found is not None:
                stack.extend(self._integer_inputs(*found))

    def _defining_op(self, v):
        """``(op, name)`` that defines ``v`` — for a block argument of a loop or branch body, the enclosing op
        (its carried values start there); ``None`` for a function's own arguments (a callee's caller is not
        known in a memoized call — documented gap)."""
        from jaxlib.mlir import ir

        if isinstance(v, ir.OpResult):
            if self.ctx.value(v).size != self.size:
                self.in_place = False
            return v.owner, v.owner.operation.name
        parent = v.owner.owner
        if parent is None or parent.operation.name == "func.func":
            return None
        self.in_place = False
        return parent, parent.operation.name

    def _integer_inputs(self, src, name: str) -> list:
        """The integer values to walk on from ``src``; float-to-integer bitcasts become sources."""
        first = self.ctx.value(src.operands[0]) if len(src.operands) else None
        floaty_first = first is not None and is_float(first.dtype)
        if name in _NO_BITS or (name == "stablehlo.convert" and floaty_first):
            return []
        if name == "stablehlo.bitcast_convert" and floaty_first:
            assert first is not None
            self.sources.append(first)
            self.in_place &= first.size == self.size
            return []
        inputs, inside = list(src.operands), False
        if len(src.regions) or name == "func.call":
            self.in_place = False
            inputs += region_captures(src)
            inside = _has_float_bitcast(self.ctx, src, set())
        elif name not in _IN_PLACE:
            self.in_place = False
        out = []
        for operand in inputs:
            av = self.ctx.value(operand)
            if av.const is not None:
                continue
            if not is_float(av.dtype):
                out.append(operand)
            elif inside:
                self.sources.append(av)
                self.in_place = False
        return out


def _elemis_float(mlir_type) -> bool:
    from ..values import tensor_type

    try:
        return is_float(tensor_type(mlir_type).dtype)
    except Exception:  # tokens, tuples …: not a float tensor
        return False


def _has_float_bitcast(ctx: RuleContext, op: Op, visited: set) -> bool:
    """Whether a float-to-integer ``bitcast_convert`` occurs inside ``op`` (its regions, or its callee)."""

    ops = nested_ops(op)
    if op.operation.name == "func.call":
        callee = symbol_ref(op, "callee")
        if callee in visited:
            return False
        visited.add(callee)
        ops = nested_ops(ctx.function(callee))
    for inner in ops:
        if inner.operation.name == "stablehlo.bitcast_convert" and _elemis_float(inner.operands[0].type) \
                and not _elemis_float(inner.results[0].type):
            return True
        if inner.operation.name == "func.call" and _has_float_bitcast(ctx, inner, visited):
            return True
    return False


def _float_to_int(a, dt: np.dtype) -> np.ndarray:
    """Truncation toward zero, saturating at the type's range, NaN -> 0 (what the StableHLO reference
    interpreter and XLA both do; the spec leaves out-of-range values TBD)."""
    bits = _bits(dt)
    lo = -(2.0 ** (bits - 1)) if dt.kind == "i" else 0.0
    hi = 2.0 ** (bits - 1) if dt.kind == "i" else 2.0 ** bits  # exclusive, exact in float64
    t = np.trunc(a.astype(np.float64))
    info = np.iinfo(dt)
    safe = np.where(np.isnan(t) | (t < lo) | (t >= hi), 0, t).astype(dt)
    return np.where(np.isnan(t), dt.type(0), np.where(t >= hi, info.max, np.where(t < lo, info.min, safe)))


@fold_rule("stablehlo.convert")
def _convert_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    """§convert: to bool ``x != 0``; float -> int truncates (saturating); complex -> real drops the
    imaginary part; int -> int wraps; everything else rounds to nearest even (NumPy's casts)."""
    (a,) = consts
    (t,) = ctx.result_types(op)
    if a.dtype.kind == "c" and t.dtype.kind != "c":
        if t.dtype == np.bool_:
            raise NotFoldable  # the spec is ambiguous (real part only, or both parts)
        a = np.real(a)
    if t.dtype == np.bool_:
        return [a != 0]
    if t.dtype.kind in "iu" and (a.dtype.kind == "f" or a.dtype.name == "bfloat16"):
        return [_float_to_int(a, t.dtype)]
    with np.errstate(all="ignore"):
        return [a.astype(t.dtype)]


@fold_rule("stablehlo.bitcast_convert")
def _bitcast_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    (a,) = consts
    (t,) = ctx.result_types(op)
    if a.dtype == np.bool_ or t.dtype == np.bool_:
        raise NotFoldable  # i1 has no fixed bit layout
    return [np.ascontiguousarray(a).view(t.dtype).reshape(t.shape)]


_MANTISSA_BITS = {"float16": 10, "bfloat16": 7, "float32": 23, "float64": 52}


@fold_rule("stablehlo.reduce_precision")
def _reduce_precision_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    """§reduce_precision on the bit pattern: round the mantissa to ``mantissa_bits`` (ties to even), then
    overflow to ±inf / underflow to ±0 outside the range of ``exponent_bits`` (XLA's algorithm, checked
    against the reference interpreter and XLA)."""
    from ...ir.attrs import int_attr

    (x,) = consts
    if x.dtype.name not in _MANTISSA_BITS:
        raise NotFoldable
    exp_bits, mant_bits = int_attr(op, "exponent_bits"), int_attr(op, "mantissa_bits")
    nbits = _bits(x.dtype)
    src_mant = _MANTISSA_BITS[x.dtype.name]
    src_exp = nbits - 1 - src_mant
    u = x.view(_udt(x.dtype)).astype(np.uint64)
    one = np.uint64(1)
    if mant_bits < src_mant:
        shift = np.uint64(src_mant - mant_bits)
        last = one << shift
        bias = ((u & last) >> shift) + (last >> one) - one  # ties to even: +1 more when the kept LSB is odd
        u = ((u + bias) & ~(last - one)) & np.uint64((1 << nbits) - 1)
    if exp_bits < src_exp:
        exp_mask = np.uint64(((1 << src_exp) - 1) << src_mant)
        exp_bias = (1 << (src_exp - 1)) - 1
        reduced_bias = (1 << (exp_bits - 1)) - 1
        x_exp = u & exp_mask
        sign = u & np.uint64(1 << (nbits - 1))
        over = x_exp > np.uint64((exp_bias + reduced_bias) << src_mant)
        under = x_exp <= np.uint64((exp_bias - reduced_bias) << src_mant)
        u = np.where(over, sign | exp_mask, np.where(under, sign, u))
    out = u.astype(_udt(x.dtype)).view(x.dtype)
    # A NaN stays NaN (rounding could carry it to inf or past the sign bit).  With no mantissa bit left the
    # reference interpreter returns +inf and XLA keeps the NaN: such a value is not folded.
    nan = np.isnan(x)
    if mant_bits == 0 and nan.any():
        raise NotFoldable
    return [np.where(nan, x, out)]
