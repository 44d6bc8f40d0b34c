"""Trust in folded elementwise results (spec §add … §xor, §select, §clamp, §compare, §convert): error models.

For each elementwise op with a float result: how far the value XLA computes on any backend may be from the
NumPy fold, given the operands' bounds (the model and its worked examples are in
:mod:`stablehlo_sparsity.analysis.folding.exactness`).  Integer and boolean results of exact operands need no model
(they are exact); the models below decide them from uncertain floats — or raise ``Undecided``.

Per op (``e_a`` the operand's bound, ``u`` the unit roundoff, ``r`` the folded result)::

    add, subtract      a sum XLA may reassociate: exact iff its leaves are exact and on one grid
                       (exactness.sum_is_exact) or it has just two (one correctly rounded add),
                       else e_a + e_b + 2(k-1)·u·Σ|leaf|
    multiply           exact iff the exact product is representable, else |a|e_b + |b|e_a + e_a·e_b + 2u|r|
    fma                never exact: |a|e_b + |b|e_a + e_a·e_b + e_c + u|a·b| + 2u|r| (one rounding against two)
    divide             exact for 0/b (b surely nonzero) and a/2^k (XLA rewrites a/c as a·(1/c)),
                       else (|a|e_b + |b|e_a)/(|b|(|b|-e_b)) + 4u|r|
    negate, abs        e_a (abs of a complex: a rounded hypot)
    maximum, minimum   max(e_a, e_b); the winner's bound where one surely wins (and the smallest normal where
                       ±0 meet: backends differ on the sign)
    floor, ceil, sign, round_*   0 where the interval [a - e_a, a + e_a] rounds to one value, else the spread
    exp, log, sin …    never exact: K_TRANSCENDENTAL·u·(|r| + floor) plus the operand's bound pushed through
                       the function (monotone: its values at a ± e_a; sine/cosine: Lipschitz 1; tan: ∞)
    compare, convert to integer/bool, is_finite:   decided per element or Undecided
"""

from __future__ import annotations

import numpy as np

from ..folding.exactness import (K_TRANSCENDENTAL, AddTree, Uncertainty, Undecided, add_tree_of, error_array,
                                 exact_or_unknown, finalize, is_float, largest_finite, smallest_normal, sum_is_exact,
                                 sum_rounding, unit_roundoff, unknown_float)
from .structural import moved_uncertainty
from .registry import error_rule
from .registry import RuleContext, Op, ErrorResult  # the rule contract
from ..values import AbstractValue



def _f64(x) -> np.ndarray:
    return np.asarray(x).astype(np.float64)


def _bound(av, shape) -> np.ndarray:
    return np.broadcast_to(error_array(av), shape)


def _exact(av) -> bool:
    return av.uncertainty is None or av.uncertainty.exact


# ---------------------------------------------------------------------------------------------- sums
@error_rule("stablehlo.add", "stablehlo.subtract")
def _sum(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§add / §subtract: one node of an add tree (XLA reassociates adds of constants)."""
    (r,) = consts
    a, b = args
    ta, tb = add_tree_of(a), add_tree_of(b)
    tree = AddTree(np.asarray(ta.leaf_sum) + np.asarray(tb.leaf_sum), ta.leaves + tb.leaves,
                   np.minimum(ta.low_exp, tb.low_exp))
    carried = error_array(a) + error_array(b)
    with np.errstate(invalid="ignore"):
        # Two exact leaves: one correctly rounded add, the same everywhere (the tree remembers both, so a
        # later reassociation is still accounted for).  More leaves: exact only on one grid.
        exact = (sum_is_exact(tree, r.dtype) | (tree.leaves == 2)) & (carried == 0)
        err = np.where(exact, 0.0, carried + sum_rounding(tree, r.dtype))
    return [finalize(r, err, tree)]


# ---------------------------------------------------------------------------------------------- products
def _dekker_split(x: np.ndarray):
    c = 134217729.0 * x  # 2^27 + 1
    hi = c - (c - x)
    return hi, x - hi


def product_residue(a, b, r) -> np.ndarray:
    """``|a·b − r|`` per element, computed exactly enough to tell zero from nonzero (float64: Dekker's
    TwoProduct; narrower types: the float64 product is exact).  ``inf`` where it cannot be told (overflow,
    also of Dekker's split above ~2^996: conservative), the smallest normal where the product underflows."""
    a, b, r = np.asarray(a), np.asarray(b), np.asarray(r)
    dt = r.dtype
    a64, b64, r64 = _f64(a), _f64(b), _f64(r)
    with np.errstate(all="ignore"):
        if dt == np.float64:
            ahi, alo = _dekker_split(a64)
            bhi, blo = _dekker_split(b64)
            res = np.abs(((ahi * bhi - r64) + ahi * blo + alo * bhi) + alo * blo)
        else:
            res = np.abs(a64 * b64 - r64)
        finite_in = np.isfinite(a64) & np.isfinite(b64)
        res = np.where(finite_in & (a64 != 0) & (b64 != 0), res, 0.0)  # 0·x, inf·x, NaN: the same everywhere
        res = np.where(finite_in & ~np.isfinite(r64), np.inf, res)        # overflow
        tiny = smallest_normal(dt)
        under = finite_in & (a64 != 0) & (b64 != 0) & (np.abs(r64) < tiny)
        res = np.where(under, np.maximum(res, tiny), res)
        return np.where(np.isnan(res), np.inf, res)


@error_rule("stablehlo.multiply")
def product_rule(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§multiply: exact iff the exact product is representable (then fused or reassociated evaluations agree);
    a known exact zero factor gives an exact zero when the other factor is surely finite."""
    (r,) = consts
    a, b = args
    if r.dtype.kind == "c":  # complex products are not modeled beyond an exact zero factor
        return [finalize(r, 0.0) if _exact(a) and _exact(b) and _zero_factor(a, b) else unknown_float(r)]
    av, bv = np.abs(_f64(a.const)), np.abs(_f64(b.const))
    ea, eb = _bound(a, r.shape), _bound(b, r.shape)
    with np.errstate(all="ignore"):
        carried = np.where(eb > 0, av * eb, 0.0) + np.where(ea > 0, bv * ea, 0.0) + np.where(
            (ea > 0) & (eb > 0), ea * eb, 0.0)
        residue = product_residue(a.const, b.const, r)
        own = np.where((residue == 0) & (carried == 0), 0.0,
                       2 * unit_roundoff(r.dtype) * (np.abs(_f64(r)) + carried) + residue)
        err = carried + own
    return [finalize(r, err)]


def _zero_factor(a, b) -> bool:
    return bool(np.all((np.asarray(a.const) == 0) | (np.asarray(b.const) == 0)))


def _is_power_of_two(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        m, _ = np.frexp(np.where(np.isfinite(x), x, 3.0))
    return np.abs(m) == 0.5


@error_rule("stablehlo.divide")
def _quotient(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§divide: XLA rewrites ``a / c`` as ``a · (1/c)`` (and TPUs divide approximately): exact only for a zero
    numerator or a power-of-two divisor."""
    (r,) = consts
    a, b = args
    if r.dtype.kind == "c":
        return [unknown_float(r)]
    a64, b64, r64 = _f64(a.const), _f64(b.const), _f64(r)
    ea, eb = _bound(a, r.shape), _bound(b, r.shape)
    with np.errstate(all="ignore"):
        both = (ea == 0) & (eb == 0)
        # an exact zero over a divisor that is surely nonzero, finite and (if rounded) surely normal, so that
        # 1/b is finite: ±0 however b and 1/b round
        sure_b = ((eb == 0) & (b64 != 0) & ~np.isnan(b64)) | (
            (eb > 0) & np.isfinite(b64) & (np.abs(b64) - eb >= smallest_normal(r.dtype)))
        zero_num = (ea == 0) & (a64 == 0) & sure_b
        scaled = both & _is_power_of_two(b64) & (r64 * b64 == a64) & (
            (np.abs(r64) >= smallest_normal(r.dtype)) | (r64 == 0))
        ab, bb = np.abs(a64), np.abs(b64)
        carried = np.where(bb > eb, (ab * eb + bb * ea) / (bb * (bb - eb)), np.inf)
        carried = np.where(both, 0.0, carried)
        err = np.where(zero_num | scaled, 0.0, carried + 4 * unit_roundoff(r.dtype) * (np.abs(r64) + carried))
    return [finalize(r, err)]


# ---------------------------------------------------------------------------------------------- moves of values
@error_rule("stablehlo.negate")
def _negate(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§negate: exact; an add tree stays one (the leaves only change sign)."""
    (r,) = consts
    (a,) = args
    u = a.uncertainty
    return [None if u is None else Uncertainty(u.err, u.tree)]


@error_rule("stablehlo.abs")
def _abs(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§abs: exact on reals (Lipschitz 1); of a complex it is a rounded ``hypot``."""
    (r,) = consts
    (a,) = args
    if np.asarray(a.const).dtype.kind == "c":
        return [_transcendental_bound(r, _bound(a, r.shape), 0.0)]
    return [finalize(r, error_array(a))]


@error_rule("stablehlo.real", "stablehlo.imag")
def _part(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§real / §imag: a part is within the bound of the whole (``|Re Δz| ≤ |Δz|``)."""
    (r,) = consts
    (a,) = args
    return [finalize(r, error_array(a))]


@error_rule("stablehlo.complex")
def _complex(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    (r,) = consts
    a, b = args
    return [finalize(r, error_array(a) + error_array(b))]


def _zero_sign_clash(r, *operands) -> np.ndarray:
    """Where the result is a zero whose sign backends may choose differently (``max(-0, +0)``)."""
    r = np.asarray(r)
    clash = np.zeros(r.shape, bool)
    if not np.any(r == 0):
        return clash
    for x in operands:
        x = np.broadcast_to(np.asarray(x), r.shape)
        clash |= (r == 0) & (x == 0) & (np.signbit(x) != np.signbit(r))
    return clash


@error_rule("stablehlo.maximum", "stablehlo.minimum")
def _extremum(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§maximum / §minimum: Lipschitz 1 in each operand — and where one operand surely wins, the result *is*
    that operand (its bound only); ±0 meeting: the sign of the result is not certain."""
    (r,) = consts
    a, b = args
    if r.dtype.kind == "c":
        return [unknown_float(r)]
    ea, eb = _bound(a, r.shape), _bound(b, r.shape)
    err = np.maximum(ea, eb)
    if np.any(ea != eb):
        with np.errstate(invalid="ignore", over="ignore"):
            x = _f64(np.broadcast_to(np.asarray(a.const), r.shape))
            y = _f64(np.broadcast_to(np.asarray(b.const), r.shape))
            a_above, b_above = x - ea > y + eb, y - eb > x + ea
        a_wins = a_above if op.operation.name == "stablehlo.maximum" else b_above
        b_wins = b_above if op.operation.name == "stablehlo.maximum" else a_above
        err = np.where(a_wins, ea, np.where(b_wins, eb, err))
    clash = _zero_sign_clash(r, a.const, b.const)
    if np.any(clash):
        err = np.where(clash, np.maximum(err, smallest_normal(r.dtype)), err)
    return [finalize(r, err)]


@error_rule("stablehlo.clamp")
def _clamp(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§clamp = min(max(x, lo), hi): the largest operand bound."""
    (r,) = consts
    lo, x, hi = args
    if r.dtype.kind == "c":
        return [unknown_float(r)]
    err = np.maximum(np.maximum(_bound(lo, r.shape), _bound(x, r.shape)), _bound(hi, r.shape))
    clash = _zero_sign_clash(r, lo.const, x.const, hi.const)
    if np.any(clash):
        err = np.where(clash, np.maximum(err, smallest_normal(r.dtype)), err)
    return [finalize(r, err)]


@error_rule("stablehlo.select")
def _select(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§select: each element is a copy of ``on_true`` or ``on_false`` (the predicate is exact: a boolean)."""
    return moved_uncertainty(ctx, op, args, data=(1, 2))


# ---------------------------------------------------------------------------------------------- step functions
_STEPS = {
    "stablehlo.floor": np.floor,
    "stablehlo.ceil": np.ceil,
    "stablehlo.round_nearest_even": np.rint,
    "stablehlo.round_nearest_afz": lambda x: np.where(np.abs(x - np.trunc(x)) >= 0.5, np.trunc(x) + np.sign(x),
                                                      np.trunc(x)),
    "stablehlo.sign": np.sign,
}


def _step_rule(fn):
    def rule(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
        """A step function: exact where the operand's interval does not cross a step."""
        (r,) = consts
        (a,) = args
        if r.dtype.kind == "c":
            return [unknown_float(r)]
        if a.uncertainty is None:
            return [finalize(r, 0.0)]
        x, e, r64 = _f64(a.const), _bound(a, r.shape), _f64(r)
        with np.errstate(all="ignore"):
            err = np.maximum(np.abs(fn(x + e) - r64), np.abs(fn(x - e) - r64))
            err = np.where(e == 0, 0.0, err)
        return [finalize(r, err)]

    return rule


for _name, _fn in _STEPS.items():
    error_rule(_name)(_step_rule(_fn))


# ---------------------------------------------------------------------------------------------- transcendental
#: Monotone on their domain: the image of [x - e, x + e] is between f(x - e) and f(x + e).
_MONOTONE = {
    "stablehlo.exponential": np.exp, "stablehlo.exponential_minus_one": np.expm1, "stablehlo.log": np.log,
    "stablehlo.log_plus_one": np.log1p, "stablehlo.logistic": lambda x: 1.0 / (1.0 + np.exp(-x)),
    "stablehlo.tanh": np.tanh, "stablehlo.cbrt": np.cbrt, "stablehlo.sqrt": np.sqrt,
    "stablehlo.rsqrt": lambda x: 1.0 / np.sqrt(x), "stablehlo.exp2": np.exp2, "stablehlo.log2": np.log2,
}
#: |f'| <= 1 everywhere.
_LIPSCHITZ_ONE = {"stablehlo.sine": np.sin, "stablehlo.cosine": np.cos}
#: An absolute floor on the implementation's error, beyond the relative part: argument reduction of
#: trigonometric functions loses ~u·|x|; logarithms near 1 are accurate only absolutely.
_FLOOR = {"stablehlo.sine": "x", "stablehlo.cosine": "x", "stablehlo.tan": "x", "stablehlo.log": 1.0,
          "stablehlo.log_plus_one": 1.0, "stablehlo.log2": 1.0}


def _transcendental_bound(r, carried, floor) -> Uncertainty | None:
    r64 = np.abs(_f64(np.abs(r) if np.asarray(r).dtype.kind == "c" else r))
    u = unit_roundoff(np.asarray(r).dtype)
    with np.errstate(all="ignore"):
        err = carried + K_TRANSCENDENTAL * u * (r64 + floor + carried) + smallest_normal(np.asarray(r).dtype)
    return finalize(r, err)


def transcendental_rule(monotone=None, lipschitz_one=None, floor=0.0):
    """The error rule of a unary transcendental function (an approximation on every backend, never exact).

    ``monotone``: the function in float64 if it is monotone on its domain (an operand's interval maps to the
    interval between its values at the ends); ``lipschitz_one``: ``|f'| <= 1`` everywhere; neither: an
    uncertain operand bounds nothing.  ``floor``: the absolute part of the implementation's error (``"x"``:
    ``|x| + 1``, for argument reduction)."""

    def rule(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
        (r,) = consts
        (a,) = args
        x = np.asarray(a.const)
        if x.dtype.kind == "c":
            return [unknown_float(r)]
        x64, e = _f64(x), _bound(a, r.shape)
        r64 = _f64(r)
        with np.errstate(all="ignore"):
            if not np.any(e):
                carried = np.zeros(r.shape)
            elif monotone is not None:
                carried = np.maximum(np.abs(monotone(x64 + e) - r64), np.abs(monotone(x64 - e) - r64))
                carried = np.where(e == 0, 0.0, carried)
            elif lipschitz_one:
                carried = np.minimum(e, 2.0)
            else:
                carried = np.where(e == 0, 0.0, np.inf)
            low = np.abs(x64) + 1.0 if isinstance(floor, str) else floor
        return [_transcendental_bound(r, np.where(np.isnan(carried), np.inf, carried), low)]

    return rule


for _name in ("stablehlo.cbrt", "stablehlo.cosine", "stablehlo.exponential", "stablehlo.exponential_minus_one",
              "stablehlo.exp2", "stablehlo.log2",
              "stablehlo.log", "stablehlo.log_plus_one", "stablehlo.logistic", "stablehlo.rsqrt", "stablehlo.sine",
              "stablehlo.sqrt", "stablehlo.tan", "stablehlo.tanh"):
    error_rule(_name)(transcendental_rule(_MONOTONE.get(_name), _name in _LIPSCHITZ_ONE, _FLOOR.get(_name, 0.0)))


@error_rule("stablehlo.power", "stablehlo.atan2")
def _binary_transcendental(ctx: RuleContext, op: Op,
                           args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§power / §atan2 of exact operands: an approximation; of uncertain ones: not bounded here."""
    (r,) = consts
    if not all(_exact(a) for a in args) or r.dtype.kind == "c":
        return [unknown_float(r)]
    return [_transcendental_bound(r, np.zeros(r.shape), 1.0)]


@error_rule("stablehlo.fma")
def _fma(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§fma (JAX 0.12.1): ``a·b + c``, rounded once by XLA (or emulated), twice by the NumPy fold: the two differ
    by at most ``u·|a·b| + 2u·|r|`` plus the smallest normal; uncertain operands carry ``|a|e_b + |b|e_a + e_a·e_b
    + e_c``.  Never exact: the fold decides nothing a rounding could flip."""
    (r,) = consts
    if np.asarray(r).dtype.kind == "c":
        return [unknown_float(r)]
    x, y = (_f64(np.broadcast_to(np.asarray(v.const), r.shape)) for v in args[:2])
    ea, eb, ec = (_bound(v, r.shape) for v in args)
    u = unit_roundoff(np.asarray(r).dtype)
    with np.errstate(all="ignore"):
        err = (np.abs(x) * eb + np.abs(y) * ea + ea * eb + ec + u * np.abs(x * y) + 2 * u * np.abs(_f64(r))
               + smallest_normal(np.asarray(r).dtype))
    return [finalize(r, np.where(np.isnan(err), np.inf, err))]


@error_rule("stablehlo.remainder")
def _remainder(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§remainder: IEEE ``fmod`` is exact, but not every backend computes it that way (``a − trunc(a/b)·b``);
    discontinuous in its operands, so uncertain operands bound nothing."""
    (r,) = consts
    a, b = args
    if not (_exact(a) and _exact(b)) or r.dtype.kind == "c":
        return [unknown_float(r)]
    return [finalize(r, 4 * unit_roundoff(r.dtype) * np.abs(_f64(a.const)) + smallest_normal(r.dtype))]


#: Integer and boolean ops: their operands are exact by construction (an integer is never rounded).
error_rule("stablehlo.and", "stablehlo.or", "stablehlo.xor", "stablehlo.not", "stablehlo.popcnt",
           "stablehlo.count_leading_zeros", "stablehlo.shift_left", "stablehlo.shift_right_arithmetic",
           "stablehlo.shift_right_logical")(exact_or_unknown)


# ---------------------------------------------------------------------------------------------- decisions
def separated(a, b, shape) -> np.ndarray:
    """Where two known floats compare the same way for every value within their bounds."""
    ea, eb = _bound(a, shape), _bound(b, shape)
    x, y = np.broadcast_to(np.asarray(a.const), shape), np.broadcast_to(np.asarray(b.const), shape)
    with np.errstate(all="ignore"):
        if x.dtype.kind == "c":
            return (ea == 0) & (eb == 0)
        x64, y64 = _f64(x), _f64(y)
        apart = np.isfinite(x64) & np.isfinite(y64) & (np.abs(x64 - y64) > ea + eb)
        return ((ea == 0) & (eb == 0)) | apart


def compare_decided(op, a, b, shape) -> np.ndarray:
    """Where ``compare(a, b)`` of two known floats is certain: :func:`separated`, or a block argument
    compared with itself (one value, the same bits on both sides — a sort comparator's NaN test ``x != x``),
    which is certain wherever it is surely not NaN (and always in ``TOTALORDER``)."""
    from jaxlib.mlir import ir

    from ...ir.attrs import enum_text

    sure = separated(a, b, shape)
    x, y = op.operands[0], op.operands[1]
    if x == y and isinstance(x, ir.BlockArgument) and not np.all(sure):
        if "compare_type" in op.attributes and enum_text(op, "compare_type") == "TOTALORDER":
            return np.ones(shape, bool)
        with np.errstate(invalid="ignore"):
            v = np.broadcast_to(np.asarray(a.const), shape)
            finite = np.isfinite(_f64(np.abs(v) if v.dtype.kind == "c" else v)) & np.isfinite(_bound(a, shape))
        sure = sure | finite
    return sure


@error_rule("stablehlo.compare")
def _compare(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§compare: a boolean of uncertain floats is known only where their intervals do not overlap (or where a
    block argument meets itself, :func:`compare_decided`)."""
    (r,) = consts
    a, b = args
    if not np.all(compare_decided(op, a, b, r.shape)):
        raise Undecided
    return [None]


@error_rule("stablehlo.is_finite")
def is_finite_rule(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§is_finite of an uncertain float: known where the value is surely finite (far from overflow)."""
    (a,) = args
    x, e = _f64(a.const), error_array(a)
    with np.errstate(all="ignore"):
        sure = ((e == 0) | (np.isfinite(x) & (np.abs(x) + e <= largest_finite(np.asarray(a.const).dtype))))
    if not np.all(sure):
        raise Undecided
    return [None]


@error_rule("stablehlo.convert")
def _convert(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§convert: exact operands convert exactly (correctly rounded, the same everywhere); from an uncertain
    float, a float result widens the bound by the rounding, an integer or boolean one must be decided."""
    (r,) = consts
    (a,) = args
    src = np.asarray(a.const)
    if _exact(a):
        return [finalize(r, 0.0)]
    e = error_array(a)
    if is_float(r.dtype):
        narrowing = unit_roundoff(r.dtype) > unit_roundoff(src.dtype) if is_float(src.dtype) else True
        extra = unit_roundoff(r.dtype) * (np.abs(_f64(np.abs(r) if r.dtype.kind == "c" else r)) + e) \
            if narrowing else 0.0
        return [finalize(r, e + extra)]
    x = _f64(np.real(src))
    with np.errstate(all="ignore"):
        if r.dtype == np.bool_:
            sure = (e == 0) | (np.abs(x) > e)
        else:
            sure = (e == 0) | (np.isfinite(x) & (np.trunc(x - e) == np.trunc(x + e)))
    if not np.all(sure):
        raise Undecided
    return [None]


@error_rule("stablehlo.bitcast_convert")
def _bitcast(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§bitcast_convert: the bits of an exact value are exact; of an uncertain one, unknown."""
    (r,) = consts
    if not _exact(args[0]):
        if not is_float(r.dtype):
            raise Undecided
        return [unknown_float(r)]
    return [finalize(r, 0.0)]


@error_rule("stablehlo.reduce_precision")
def _reduce_precision(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§reduce_precision: a rounding of the bit pattern (the same everywhere) — exact on exact operands."""
    from ...ir.attrs import int_attr

    (r,) = consts
    (a,) = args
    if _exact(a):
        return [finalize(r, 0.0)]
    e = error_array(a)
    rel = 2.0 ** -int_attr(op, "mantissa_bits")
    return [finalize(r, e + rel * (np.abs(_f64(r)) + e))]


__all__ = ["product_residue", "product_rule", "transcendental_rule", "is_finite_rule", "separated", "compare_decided"]
