"""Elementwise ops (StableHLO spec §"Ops": abs … xor): the *union* and *drop* moves, and their folding.

Every elementwise op maps element ``e`` of each operand to element ``e`` of the result, so its index set is
the union of the operands' rows ``e`` — restricted to the operands through which the derivative can be
nonzero.  The table :data:`ELEMENTWISE` says, per op, which operands carry derivatives (``"all"``) or none
(``"none"``: comparisons, rounding, bit manipulation…), and the NumPy function that folds it.  Ops whose
result type is an integer or boolean get empty index sets from the interpreter anyway.

Value-aware rules (constants are values, DESIGN §3): ``multiply`` by a known zero drops that element;
``select`` with a known predicate takes one side per element; ``divide`` of a known zero numerator drops the
denominator's dependency.  ``clamp`` keeps its operand's dependency (its derivative in ``operand`` is 1
between the bounds — a peer loses this).
"""

from __future__ import annotations

import numpy as np

from ..attrs import enum_text
from ..interpreter import NotFoldable
from ..lattice import Deps
from .registry import deps_rule, fold_rule

S = "stablehlo."


def _broadcast_rows(ctx, arg, size: int) -> Deps:
    """Operands of select/clamp may be scalars: repeat their single row."""
    if arg.size == size:
        return arg.deps
    if arg.size == 1:
        return arg.deps.broadcast_row(size)
    raise ValueError("operand shape does not match")


def _union_rule(ctx, op, args):
    (t,) = ctx.result_types(op)
    return [Deps.union(*[_broadcast_rows(ctx, a, t.size) for a in args])]


def _drop_rule(ctx, op, args):
    return [ctx.empty(t.size) for t in ctx.result_types(op)]


# ---------------------------------------------------------------- folding helpers
def _int_div(a, b):
    if np.any(b == 0):
        raise NotFoldable
    if a.dtype.kind == "u":
        return a // b
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q).astype(a.dtype)


def _divide(a, b):
    if a.dtype.kind in "iu":
        return _int_div(a, b)
    with np.errstate(all="ignore"):
        return a / b


def _remainder(a, b):
    if a.dtype.kind in "iu" and np.any(b == 0):
        raise NotFoldable
    with np.errstate(all="ignore"):
        return np.fmod(a, b)


def _power(a, b):
    if a.dtype.kind in "iu":
        if np.any(b < 0):
            raise NotFoldable
        return np.power(a, b)
    with np.errstate(all="ignore"):
        return np.power(a, b)


def _shift_left(a, b):
    bits = a.dtype.itemsize * 8
    ub = b.astype(np.uint64) if b.dtype.kind == "i" else b
    out = np.left_shift(a, np.minimum(b, bits - 1).astype(a.dtype))
    return np.where((ub >= bits) | (b < 0), 0, out).astype(a.dtype)


def _shift_right_logical(a, b):
    bits = a.dtype.itemsize * 8
    udt = np.dtype(f"u{a.dtype.itemsize}")
    ua = a.view(udt)
    out = np.right_shift(ua, np.clip(b, 0, bits - 1).astype(udt)).view(a.dtype)
    return np.where((b >= bits) | (b < 0), 0, out).astype(a.dtype)


def _shift_right_arithmetic(a, b):
    bits = a.dtype.itemsize * 8
    sdt = np.dtype(f"i{a.dtype.itemsize}")
    sa = a.view(sdt)
    out = np.right_shift(sa, np.clip(b, 0, bits - 1).astype(sdt))
    return out.view(a.dtype)


def _popcnt(a):
    udt = np.dtype(f"u{a.dtype.itemsize}")
    return np.bitwise_count(a.view(udt)).astype(a.dtype)


def _clz(a):
    bits = a.dtype.itemsize * 8
    udt = np.dtype(f"u{a.dtype.itemsize}")
    u = a.view(udt).astype(np.uint64)
    out = np.full(a.shape, bits, np.int64)
    nz = u != 0
    out[nz] = bits - 1 - np.floor(np.log2(u[nz].astype(np.float64))).astype(np.int64)
    # float log2 can be off by one near powers of two for 64-bit values: fix exactly.
    hi = np.left_shift(np.uint64(1), (bits - 1 - out[nz]).astype(np.uint64))
    out_nz = out[nz] - (u[nz] >= np.left_shift(hi, np.uint64(1))).astype(np.int64) * (out[nz] > 0)
    out[nz] = out_nz
    return out.astype(a.dtype)


def _not(a):
    return np.logical_not(a) if a.dtype == np.bool_ else np.invert(a)


def _round_afz(a):
    return np.sign(a) * np.floor(np.abs(a) + 0.5)


def _logistic(a):
    with np.errstate(all="ignore"):
        return 1.0 / (1.0 + np.exp(-a))


def _rsqrt(a):
    with np.errstate(all="ignore"):
        return 1.0 / np.sqrt(a)


def _safe(fn):
    def wrapped(*xs):
        with np.errstate(all="ignore"):
            return fn(*xs)

    return wrapped


#: op name -> (derivative kind, NumPy folder).  "all": every float operand carries derivatives;
#: "none": zero derivative everywhere it exists.
ELEMENTWISE: dict[str, tuple[str, object]] = {
    "abs": ("all", np.abs),
    "add": ("all", np.add),
    "atan2": ("all", _safe(np.arctan2)),
    "cbrt": ("all", np.cbrt),
    "ceil": ("none", np.ceil),
    "complex": ("all", lambda a, b: a + 1j * b),
    "cosine": ("all", np.cos),
    "count_leading_zeros": ("none", _clz),
    "divide": ("all", _divide),
    "exponential": ("all", _safe(np.exp)),
    "exponential_minus_one": ("all", _safe(np.expm1)),
    "floor": ("none", np.floor),
    "imag": ("all", np.imag),
    "is_finite": ("none", np.isfinite),
    "log": ("all", _safe(np.log)),
    "log_plus_one": ("all", _safe(np.log1p)),
    "logistic": ("all", _logistic),
    "maximum": ("all", np.maximum),
    "minimum": ("all", np.minimum),
    "multiply": ("all", np.multiply),
    "negate": ("all", np.negative),
    "not": ("none", _not),
    "and": ("none", np.bitwise_and),
    "or": ("none", np.bitwise_or),
    "xor": ("none", np.bitwise_xor),
    "popcnt": ("none", _popcnt),
    "power": ("all", _power),
    "real": ("all", np.real),
    "remainder": ("all", _remainder),
    "round_nearest_afz": ("none", _round_afz),
    "round_nearest_even": ("none", np.rint),
    "rsqrt": ("all", _rsqrt),
    "shift_left": ("none", _shift_left),
    "shift_right_arithmetic": ("none", _shift_right_arithmetic),
    "shift_right_logical": ("none", _shift_right_logical),
    "sign": ("none", np.sign),
    "sine": ("all", np.sin),
    "sqrt": ("all", _safe(np.sqrt)),
    "subtract": ("all", np.subtract),
    "tan": ("all", _safe(np.tan)),
    "tanh": ("all", np.tanh),
}

_VALUE_AWARE = {"multiply", "divide"}


def _make_folder(fn):
    def fold(ctx, op, consts):
        (t,) = ctx.result_types(op)
        with np.errstate(all="ignore"):
            out = fn(*consts)
        return [np.asarray(out).astype(t.dtype, copy=False)]

    return fold


for _name, (_kind, _fn) in ELEMENTWISE.items():
    fold_rule(S + _name)(_make_folder(_fn))
    if _name in _VALUE_AWARE:
        continue
    deps_rule(S + _name)(_union_rule if _kind == "all" else _drop_rule)


@deps_rule(S + "multiply")
def _multiply(ctx, op, args):
    """``x * c`` with a known ``c``: the elements where ``c == 0`` have a zero derivative."""
    a, b = args
    da, db = a.deps, b.deps
    if b.const is not None:
        da = da.mask_rows(np.asarray(b.const).ravel() != 0)
    if a.const is not None:
        db = db.mask_rows(np.asarray(a.const).ravel() != 0)
    return [Deps.union(da, db)]


@deps_rule(S + "divide")
def _divide_rule(ctx, op, args):
    """``c / x`` with a known ``c``: where ``c == 0`` the quotient is 0 for every nonzero x."""
    a, b = args
    db = b.deps
    if a.const is not None:
        db = db.mask_rows(np.asarray(a.const).ravel() != 0)
    return [Deps.union(a.deps, db)]


# ---------------------------------------------------------------- select, clamp, compare, convert
@deps_rule(S + "select")
def _select(ctx, op, args):
    """§select: ``pred ? on_true : on_false``; a known predicate takes one side per element."""
    pred, on_true, on_false = args
    (t,) = ctx.result_types(op)
    if pred.const is not None:
        p = np.broadcast_to(np.asarray(pred.const, dtype=bool), t.shape).ravel()
        return [Deps.union(on_true.deps.mask_rows(p), on_false.deps.mask_rows(~p))]
    return [Deps.union(on_true.deps, on_false.deps)]


@fold_rule(S + "select")
def _select_fold(ctx, op, consts):
    pred, a, b = consts
    return [np.where(pred, a, b)]


@deps_rule(S + "clamp")
def _clamp(ctx, op, args):
    """§clamp: ``min(max(operand, min), max)`` depends on all three (min/max may be scalars)."""
    return _union_rule(ctx, op, args)


@fold_rule(S + "clamp")
def _clamp_fold(ctx, op, consts):
    lo, x, hi = consts
    return [np.minimum(np.maximum(x, lo), hi)]


_CMP = {"EQ": np.equal, "NE": np.not_equal, "GE": np.greater_equal, "GT": np.greater,
        "LE": np.less_equal, "LT": np.less}


@deps_rule(S + "compare")
def _compare(ctx, op, args):
    return _drop_rule(ctx, op, args)


@fold_rule(S + "compare")
def _compare_fold(ctx, op, consts):
    """§compare: direction EQ/NE/GE/GT/LE/LT under SIGNED/UNSIGNED/FLOAT/TOTALORDER comparison types."""
    a, b = consts
    direction = enum_text(op, "comparison_direction")
    ctype = enum_text(op, "compare_type") if "compare_type" in op.attributes else None
    if ctype == "UNSIGNED" and a.dtype.kind == "i":
        udt = np.dtype(f"u{a.dtype.itemsize}")
        a, b = a.view(udt), b.view(udt)
    elif ctype == "SIGNED" and a.dtype.kind == "u":
        sdt = np.dtype(f"i{a.dtype.itemsize}")
        a, b = a.view(sdt), b.view(sdt)
    if ctype == "TOTALORDER" and a.dtype.kind in "fc":
        if np.isnan(a).any() or np.isnan(b).any() or (a == 0).any() or (b == 0).any():
            raise NotFoldable  # -0 < +0 and NaN ordering: let the index-set rule handle it
    return [_CMP[direction](a, b)]


@deps_rule(S + "convert", S + "reduce_precision", S + "bitcast_convert")
def _convert(ctx, op, args):
    """§convert / §reduce_precision: element ``e`` keeps its dependencies; to an integer type: none.

    §bitcast_convert between float types of one width is treated like convert (conservative: the bits of
    the result are a function of the operand's).  Width-changing bitcasts add or remove a trailing dimension.
    """
    (a,) = args
    (t,) = ctx.result_types(op)
    if a.size == t.size:
        return [a.deps]
    if a.size > t.size:  # e.g. f64 -> 2 x f32 is the other way; here several elements fold into one
        ratio = a.size // t.size
        return [a.deps.group_union_dense(np.arange(a.size, dtype=np.int64).reshape(t.size, ratio))]
    ratio = t.size // a.size
    return [a.deps.gather_rows(np.repeat(np.arange(a.size, dtype=np.int64), ratio))]


@fold_rule(S + "convert")
def _convert_fold(ctx, op, consts):
    """§convert: float -> int truncates toward zero; out-of-range values are not folded."""
    (a,) = consts
    (t,) = ctx.result_types(op)
    if t.dtype == np.bool_:
        return [a != 0]
    if t.dtype.kind in "iu" and a.dtype.kind in "fc":
        a = np.real(a)
        info = np.iinfo(t.dtype)
        if not np.all(np.isfinite(a)) or np.any(a < info.min) or np.any(a > info.max):
            raise NotFoldable
        return [np.trunc(a).astype(t.dtype)]
    if t.dtype.kind in "f" and a.dtype.kind == "c":
        return [np.real(a).astype(t.dtype)]
    with np.errstate(all="ignore"):
        return [a.astype(t.dtype)]


@fold_rule(S + "bitcast_convert")
def _bitcast_fold(ctx, op, consts):
    (a,) = consts
    (t,) = ctx.result_types(op)
    return [np.ascontiguousarray(a).view(t.dtype).reshape(t.shape)]


@fold_rule(S + "reduce_precision")
def _reduce_precision_fold(ctx, op, consts):
    raise NotFoldable  # exact mantissa rounding is not worth reproducing; the value stays unknown
