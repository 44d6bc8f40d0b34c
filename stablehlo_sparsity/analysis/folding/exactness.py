"""How far a folded float may be from what XLA computes: the trust half of the constant lattice.

The constant lattice folds ops with NumPy.  A folded *integer* or *boolean* is what every backend computes
(integer arithmetic is exact; a float may become an integer only through a decision that was certain, see
below).  A folded *float* is one correctly rounded evaluation in the written order — but XLA may evaluate
differently on each backend:

* it reassociates chains of adds and multiplies with constants (``(x + 1) - 1`` becomes ``x + (1 - 1)``;
  ``0.5 * (i * 0.002)`` becomes ``i * 0.001``) and rewrites ``a / c`` as ``a * (1 / c)``;
* it contracts a multiply into a following add (FMA), so a product may be used unrounded;
* reductions, dot products and convolutions sum in any order (and, on TPU, an ``f32`` dot with default
  precision multiplies ``bf16``-rounded inputs);
* transcendental functions are approximations that differ by backend (and by many ulps on some);
* some backends flush subnormal inputs and results to zero.

So every folded float carries an :class:`Uncertainty`: an absolute bound ``err`` (per element) on how far any
of those evaluations can be from the folded value.  ``err == 0`` means *exact*: every evaluation XLA may
choose gives that value.  A folded value may **decide** something — drop a dependency because a factor is
zero, pick a branch, fix an index, a permutation or a trip count — only where the decision is the same for
every value within ``err``:

====================  ==========================================================================
decision              certain when
====================  ==========================================================================
``x == 0``            ``x == 0`` and ``err == 0``  (see :func:`maybe_nonzero`)
``a < b`` (compare)   ``|a − b| > err_a + err_b``, or both exact
``trunc(x)``          ``trunc(x − err) == trunc(x + err)``
====================  ==========================================================================

An undecided comparison or conversion makes its (integer/boolean) result unknown: the index-set rule then
treats it soundly as any value.

Exact by construction: literals (except subnormals), integer arithmetic, structural ops, ``select``,
``maximum``/``minimum``/``abs``/``negate`` of exact values, comparisons and conversions of exact values.
Rounded float arithmetic is exact only where no evaluation can round:

* a **sum** of two exact leaves is one correctly rounded add, the same everywhere; a longer sum (an
  add/subtract tree, a reduction, a dot product) is exact when all its leaves are exact multiples of ``2^q``
  whose absolute values add up to at most ``2^(p + q)`` (``p`` the precision in bits): then every partial
  sum, in any order, is representable.  So add trees remember their leaves
  (:class:`AddTree`: ``Σ|leaf|``, the number of leaves, the smallest ``q``) — through reassociation, a
  cancelling sum of rounded constants is never mistaken for an exact zero;
* a **product** is exact when its exact value is representable (then every sub-product of a chain is too,
  so reassociation and FMA change nothing);
* a **quotient** only for a zero numerator or a power-of-two divisor;
* a **transcendental** never (except what a later exact op makes exact, e.g. a multiply by an exact zero).

Otherwise ``err`` is a rounding-error bound, with generous constants (``K_TRANSCENDENTAL`` ulps for
transcendental functions, factor 2 for reassociated or fused evaluations); values far from a decision
boundary (``0.3`` next to ``5e-18``) still decide.  Worked examples (float64, ``u = 2^-53``)::

    iota(4) / 4                   = [0, .25, .5, .75]        exact (power-of-two divisor)
    iota(5) / 500                 = [0, .002, …]             err ≈ 4u·|x|  (XLA multiplies by 1/500)
    0.5·(1 − i/500) − 0.5·(i/500) at i = 250  = 0            err > 0: *not* surely zero
    1 + (−1)                      = 0                        exact (leaves 1, −1: q = 0, Σ = 2 ≤ 2^53)
    (1 + (−1)) + 2^-60            = 2^-60                    err ≈ 2u·2: XLA may compute 0 or 2^-60

:func:`join` of two uncertainties (loops, branches) keeps equal ones and widens different ones to ``inf``,
so fixed points stay finite.  Materializing a folded value into the program (the fold pass) is allowed only
for exact values without NaN (whose payload backends do not agree on): see ``passes/fold_constants.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ...dtypes import is_float  # noqa: F401  (the rules import it from here too)

__all__ = [
    "K_TRANSCENDENTAL",
    "AddTree",
    "Uncertainty",
    "Undecided",
    "precision_bits",
    "unit_roundoff",
    "smallest_normal",
    "is_float",
    "error_array",
    "exact_mask",
    "is_exact",
    "maybe_nonzero",
    "surely",
    "finalize",
    "literal_uncertainty",
    "lowest_bit_exponent",
    "significant_bits",
    "add_tree_of",
    "join",
    "same_uncertainty",
]

#: Accuracy assumed of a transcendental function on any backend, in units of roundoff (XLA's CPU/GPU/TPU
#: approximations are within a few ulps; this leaves room for poor ones and for argument reduction).
K_TRANSCENDENTAL = 1024.0


class Undecided(Exception):
    """An op's integer or boolean result depends on a float that is not certain: it stays unknown."""


@dataclass(frozen=True, eq=False)
class AddTree:
    """The leaves of the add/subtract tree that ends at a value (XLA may sum them in any order).

    leaf_sum: ``Σ |leaf|`` per element (float64, broadcastable to the value's shape).
    leaves: an upper bound on the number of leaves of any element's tree.
    low_exp: per element, the largest ``q`` such that every leaf is a multiple of ``2^q`` (``+inf``: all
        leaves are zero; ``-inf``: a leaf is not finite); float64, broadcastable.
    """

    leaf_sum: np.ndarray
    leaves: int
    low_exp: np.ndarray


@dataclass(frozen=True, eq=False)
class Uncertainty:
    """``|v − const| ≤ err`` (elementwise) for every value ``v`` an XLA backend may compute; ``tree`` when the
    value is a sum XLA may reassociate."""

    err: np.ndarray
    tree: AddTree | None = None

    @property
    def exact(self) -> bool:
        return not np.any(self.err)


# ---------------------------------------------------------------------------------------------- formats
def _real_dtype(dtype: np.dtype) -> np.dtype:
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        return np.dtype(np.float32 if dtype.itemsize == 8 else np.float64)
    return dtype


_BITS = {"float16": (11, -14), "bfloat16": (8, -126), "float32": (24, -126), "float64": (53, -1022)}

#: dtype -> the smallest positive normal number of its real format (``dtype.name`` is slow: read once per dtype)
_SMALLEST_NORMAL: dict = {}


def precision_bits(dtype) -> int:
    """``p``: significand bits including the implicit one (f16 11, bf16 8, f32 24, f64 53)."""
    return _BITS[_real_dtype(dtype).name][0]


def unit_roundoff(dtype) -> float:
    """``u = 2^-p``: the relative error of one correctly rounded operation."""
    return 2.0 ** -precision_bits(dtype)


def smallest_normal(dtype) -> float:
    """The smallest positive normal number: below it a backend may flush to zero."""
    try:
        return _SMALLEST_NORMAL[dtype]
    except (KeyError, TypeError):
        pass
    value = 2.0 ** _BITS[_real_dtype(dtype).name][1]
    try:
        _SMALLEST_NORMAL[dtype] = value
    except TypeError:  # an unhashable dtype-like: not cached
        pass
    return value


def largest_finite(dtype) -> float:
    import ml_dtypes

    return float(ml_dtypes.finfo(_real_dtype(dtype)).max)


def _min_exp(dtype) -> int:
    return _BITS[_real_dtype(dtype).name][1]


# ---------------------------------------------------------------------------------------------- queries
def error_array(av) -> np.ndarray:
    """The error bound of a known value as a float64 array of its shape (zeros when exact)."""
    u = av.uncertainty
    shape = np.shape(av.const)
    if u is None:
        return np.zeros(shape)
    return np.broadcast_to(np.asarray(u.err, np.float64), shape)


def exact_mask(av) -> np.ndarray:
    """Where a known value is exact (every backend computes this very value)."""
    if av.uncertainty is None:
        return np.ones(np.shape(av.const), bool)
    return error_array(av) == 0


def is_exact(av) -> bool:
    return av.const is not None and (av.uncertainty is None or av.uncertainty.exact)


def maybe_nonzero(av, shape=None) -> np.ndarray:
    """Where a value may be nonzero on some backend: everywhere when unknown; else ``const != 0`` or ``err > 0``.

    ``shape``: broadcast to this shape (scalar operands of ``select``/``clamp``).  This is the *only* way a
    rule may learn that a factor is zero."""
    shape = np.shape(av.const) if shape is None else tuple(shape)
    if av.const is None:
        return np.ones(shape, bool)
    nz = np.asarray(av.const) != 0  # NaN != 0: a NaN is not a zero
    if av.uncertainty is not None:
        nz = nz | (error_array(av) > 0)
    return np.broadcast_to(nz, shape)


def surely(av, predicate, shape=None) -> np.ndarray:
    """Where a known value certainly satisfies ``predicate`` (an elementwise test on the folded value): the
    value is exact there.  All False when unknown."""
    shape = np.shape(av.const) if shape is None else tuple(shape)
    if av.const is None:
        return np.zeros(shape, bool)
    if av.uncertainty is None and np.size(av.const) == 1:  # an exact scalar: one test, no error array
        with np.errstate(all="ignore"):
            ok1 = bool(np.asarray(predicate(np.asarray(av.const))).reshape(()))
        return np.full(shape, ok1)
    with np.errstate(all="ignore"):
        ok = np.asarray(predicate(np.asarray(av.const)), bool) & exact_mask(av)
    return np.broadcast_to(ok, shape)


# ---------------------------------------------------------------------------------------------- bits
def _as_f64(x) -> np.ndarray:
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return np.abs(x.astype(np.complex128))
    return x.astype(np.float64)


def lowest_bit_exponent(x) -> np.ndarray:
    """Per element, the exponent of the lowest set bit (``x`` is an odd multiple of ``2^that``); ``+inf`` for
    zeros, ``-inf`` for non-finite values.  Complex: the smaller of the two parts'."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return np.minimum(lowest_bit_exponent(x.real), lowest_bit_exponent(x.imag))
    a = np.abs(_as_f64(x))
    finite = np.isfinite(a)
    nz = finite & (a != 0)
    m, e = np.frexp(np.where(nz, a, 1.0))
    mant = (m * 2.0**53).astype(np.int64)          # exact: m has at most 53 significant bits
    low = np.log2((mant & -mant).astype(np.float64))  # a power of two: log2 is exact
    out = (e - 53 + low).astype(np.float64)
    return np.where(nz, out, np.where(finite, np.inf, -np.inf))


def significant_bits(x) -> np.ndarray:
    """Per element, the number of bits from the highest to the lowest set bit (0 for zeros)."""
    x = np.asarray(x)
    if x.dtype.kind == "c":
        return np.maximum(significant_bits(x.real), significant_bits(x.imag))
    a = np.abs(_as_f64(x))
    nz = np.isfinite(a) & (a != 0)
    _, e = np.frexp(np.where(nz, a, 1.0))
    return np.where(nz, e - lowest_bit_exponent(np.where(nz, a, 1.0)), np.where(np.isfinite(a), 0, np.inf))


def add_tree_of(av) -> AddTree:
    """A known value seen as an add tree: its own tree if it has one, else a single leaf (itself)."""
    u = av.uncertainty
    if u is not None and u.tree is not None:
        return u.tree
    c = np.asarray(av.const)
    return AddTree(np.abs(_as_f64(c)), 1, lowest_bit_exponent(c))


def sum_is_exact(tree: AddTree, dtype) -> np.ndarray:
    """Where every partial sum of the tree's leaves, in any order, is representable (and normal or zero):
    all leaves are multiples of ``2^q`` (``q`` not below the smallest normal's exponent) and their absolute
    values add up to at most ``2^(p + q)``."""
    p = precision_bits(dtype)
    q = np.asarray(tree.low_exp, np.float64)
    total = np.asarray(tree.leaf_sum, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        grid = np.isfinite(q) & (q >= _min_exp(dtype)) & (total <= np.exp2(p + np.where(np.isfinite(q), q, 0)))
        return np.broadcast_to((q == np.inf) | grid, np.broadcast_shapes(q.shape, total.shape))


def sum_rounding(tree: AddTree, dtype) -> np.ndarray:
    """A bound on the rounding of any evaluation order of the tree's sum, and of the fold's (factor 2)."""
    k = max(tree.leaves, 2)
    return 2.0 * (k - 1) * unit_roundoff(dtype) * np.asarray(tree.leaf_sum) + k * smallest_normal(dtype)


# ---------------------------------------------------------------------------------------------- results
def finalize(value, err, tree: AddTree | None = None) -> Uncertainty | None:
    """The uncertainty of a folded float ``value`` with error bound ``err``; ``None`` when exact and not a sum.

    Where the value is subnormal a backend may flush it (``err ≥`` the smallest normal); where it is not
    finite and not exact, nothing is known of it (``err = inf``)."""
    value = np.asarray(value)
    if not is_float(value.dtype):
        return None
    err = np.asarray(err, np.float64)
    mag = np.abs(_as_f64(value))
    tiny = smallest_normal(value.dtype)
    with np.errstate(invalid="ignore"):
        sub = (mag < tiny) & (mag != 0)
        if np.any(sub):
            err = np.where(sub, np.maximum(err, tiny), err)
        nonfinite = ~np.isfinite(mag)
        if np.any(nonfinite & (err != 0)):
            err = np.where(nonfinite & (err != 0), np.inf, err)
        err = np.where(np.isnan(err), np.inf, err)
    if tree is None and not np.any(err):
        return None
    if err.ndim and err.size and np.all(err == err.flat[0]):
        err = np.asarray(err.flat[0])  # a uniform bound: keep one number
    return Uncertainty(err, tree)


def literal_uncertainty(value) -> Uncertainty | None:
    """A literal is exact, except a subnormal one (a backend may flush it)."""
    value = np.asarray(value)
    if not is_float(value.dtype):
        return None
    if value.size == 1 and value.dtype.kind == "f":  # a scalar literal (most of a written-out program's)
        mag1 = abs(float(value.reshape(())))
        if not (mag1 < smallest_normal(value.dtype) and mag1 != 0):
            return None  # (NaN compares False: exact, as the array path decides)
        return finalize(value, 0.0)
    mag = np.abs(_as_f64(value))
    if not np.any((mag < smallest_normal(value.dtype)) & (mag != 0)):
        return None  # (what finalize answers without a subnormal, in 3 array passes instead of 12)
    return finalize(value, 0.0)


def unknown_float(value=None) -> Uncertainty:
    """A folded float about which no bound is claimed (an op without an error model)."""
    return Uncertainty(np.asarray(np.inf))


# ---------------------------------------------------------------------------------------------- lattice
def same_uncertainty(a: Uncertainty | None, b: Uncertainty | None) -> bool:
    if a is b:
        return True
    if a is None or b is None:
        return False
    if not np.array_equal(np.asarray(a.err), np.asarray(b.err)):
        return False
    ta, tb = a.tree, b.tree
    if ta is tb:
        return True
    if ta is None or tb is None:
        return False
    return ta.leaves == tb.leaves and np.array_equal(ta.low_exp, tb.low_exp) and np.array_equal(ta.leaf_sum,
                                                                                                 tb.leaf_sum)


def join(a: Uncertainty | None, b: Uncertainty | None) -> Uncertainty | None:
    """Two observations of the same folded bits (a loop's iterations, a call's contexts): equal bounds are
    kept; different ones widen to ``inf`` (so a loop's fixed point is reached in one more round)."""
    if same_uncertainty(a, b):
        return a
    return Uncertainty(np.asarray(np.inf))


# ---------------------------------------------------------------------------------------------- per op
def _exact_operand(av) -> bool:
    return av.uncertainty is None or av.uncertainty.exact


def result_uncertainties(rule, ctx, op, args, consts) -> list[Uncertainty | None]:
    """The uncertainty of each folded result of ``op`` (the interpreter's fold step), by the op's error
    ``rule`` (``None``: the op has none).

    Integer/boolean results of exact operands are exact.  Otherwise the rule decides; an op without one
    trusts its float results for nothing and its integer results only from exact operands."""
    floats = [is_float(np.asarray(c).dtype) for c in consts]
    exact_in = all(_exact_operand(a) for a in args)
    if exact_in and not any(floats) and not op.regions:
        return [None] * len(consts)
    if rule is not None:
        return list(rule(ctx, op, args, consts))
    if not exact_in and not all(floats):
        raise Undecided
    return [unknown_float(c) if f else None for c, f in zip(consts, floats)]


def exact_or_unknown(ctx, op, args, consts) -> list[Uncertainty | None]:
    """Ops that are exact on exact operands (no rounding) and trust nothing otherwise."""
    if all(_exact_operand(a) for a in args):
        return [finalize(c, 0.0) for c in consts]
    if not all(is_float(np.asarray(c).dtype) for c in consts):
        raise Undecided
    return [unknown_float(c) for c in consts]


def untrusted(ctx, op, args, consts) -> list[Uncertainty | None]:
    """Ops whose float results are rounded in ways not modeled (FFT, …): known values that decide nothing."""
    if not all(is_float(np.asarray(c).dtype) for c in consts) and not all(_exact_operand(a) for a in args):
        raise Undecided
    return [unknown_float(c) if is_float(np.asarray(c).dtype) else None for c in consts]


#: On TPU an ``f32`` (or wider) dot or convolution with default precision multiplies ``bf16``-rounded inputs.
_BF16_BITS, _BF16_MIN_EXP, _BF16_MAX_EXP = 8, -126, 127


def _fits_bf16(x: np.ndarray) -> bool:
    a = np.abs(_as_f64(x))
    nz = a[np.isfinite(a) & (a != 0)]
    if nz.size == 0:
        return True
    return bool(significant_bits(nz).max() <= _BF16_BITS and nz.min() >= 2.0**_BF16_MIN_EXP
                and nz.max() < 2.0 ** (_BF16_MAX_EXP + 1))


def sum_of_products_trust(a, b, r, contract, n: int, highest: bool = False) -> Uncertainty | None:
    """Error bound of §dot_general / §convolution results: ``Σ a_i·b_i`` over ``n`` terms per element.

    ``contract(x, y)`` is the op itself on float64 arrays of the operands' shapes.  Exact where every
    product and every partial sum in any order is representable — operands exact, products exact (the sum
    of the operands' significant bits fits), all terms on one grid — and the operands survive the ``bf16``
    rounding a TPU applies at default precision.  Otherwise ``Σ|a||b|·2(n+1)u`` for any summation order
    (plus ``2^-7·Σ|a||b|`` for that rounding, or for GPUs' TF32) and the operands' bounds pushed through.

    ``highest``: both operands' ``precision_config`` is ``HIGHEST`` — full precision on every backend (on
    TPU six ``bf16`` passes, whose products are within ``3u``): ``8u·Σ|a||b|`` replaces the ``2^-7`` term."""
    r = np.asarray(r)
    if not is_float(r.dtype):
        if a.is_exact and b.is_exact:
            return None
        raise Undecided
    if r.dtype.kind == "c":
        zero_operand = not np.any(a.const) or not np.any(b.const)
        return finalize(r, 0.0) if a.is_exact and b.is_exact and zero_operand else unknown_float(r)
    av, bv = np.abs(_as_f64(a.const)), np.abs(_as_f64(b.const))
    ea, eb = error_array(a), error_array(b)
    with np.errstate(all="ignore"):
        total = contract(av + ea, bv + eb)
        bf16 = _fits_bf16(a.const) and _fits_bf16(b.const)
        exact = np.zeros(r.shape, bool)
        if not np.any(ea) and not np.any(eb) and bf16:
            p = precision_bits(r.dtype)
            sa, sb = significant_bits(a.const), significant_bits(b.const)
            if (sa.max(initial=0) + sb.max(initial=0)) <= p:
                q = float(lowest_bit_exponent(a.const).min(initial=np.inf)) + float(
                    lowest_bit_exponent(b.const).min(initial=np.inf))
                exact = np.broadcast_to(sum_is_exact(AddTree(total, 2, np.asarray(q)), r.dtype), r.shape)
        carried = contract(av, eb) + contract(ea, bv) + contract(ea, eb) if (np.any(ea) or np.any(eb)) else 0.0
        u = unit_roundoff(r.dtype)
        reduced = 0.0 if bf16 else (8 * u if highest else 2.0**-7) * total
        rounding = 2 * (n + 1) * u * total + reduced \
            + np.where(total > 0, n * smallest_normal(r.dtype), 0.0)
        err = np.where(exact | (total == 0), 0.0, carried + rounding)
    return finalize(r, err)
