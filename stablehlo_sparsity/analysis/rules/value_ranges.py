"""Range rules: bounds of integer and boolean results (:mod:`~stablehlo_sparsity.analysis.folding.ranges`).

They let a start index computed from the inputs — ``argmax`` over a slice, a comparison turned into ``0/1``,
``idx + [0, 1]``, a ``clamp`` — select only the slices it can reach (the indexing rules read the bounds).
Every rule mirrors the op's StableHLO semantics on the interval of each element:

* movers (§reshape, §broadcast_in_dim, §transpose, §slice, §reverse, §concatenate, §pad, and §gather /
  §dynamic_slice at known indices) move the bounds as they move the elements: the op's own fold rule applied
  to the lower and to the upper bounds;
* monotone ops (§add, §maximum, §minimum, §clamp, §convert between integer types, §and / §or of booleans)
  map lower bounds to the lower bound and upper to upper; §subtract and §negate flip one side; §multiply
  takes the four corners;
* §select takes the side a decided predicate picks, else the hull of both;
* §compare is decided where the operands' intervals do not overlap;
* §reduce with a *selecting* body (every result is one of its arguments through §select, §maximum and
  §minimum — argmax and argmin) stays within the hull of its inputs and init values.

A result that may wrap around its type gets no range (:func:`~stablehlo_sparsity.analysis.folding.ranges.make_range`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import enum_text, i64_list
from ..folding.ranges import LIMIT, IntRange, bounds, known_bounds, make_range
from ..values import AbstractValue
from .registry import FOLD_RULES, RuleContext, range_rule

Bounds = tuple[np.ndarray, np.ndarray]


def _result(ctx: RuleContext, op: Any, lo: np.ndarray, hi: np.ndarray) -> list[IntRange | None]:
    (t,) = ctx.result_types(op)
    return [make_range(lo, hi, t.dtype, t.shape)]


def _all_bounds(args: list[AbstractValue]) -> list[Bounds] | None:
    out = []
    for a in args:
        b = bounds(a)
        if b is None:
            return None
        out.append(b)
    return out


# ====================================================================== movers
#: Ops that move elements, with the operands whose elements move (the others must be known constants).
_MOVED_OPERANDS: dict[str, tuple[int, ...] | None] = {
    "stablehlo.reshape": (0,),
    "stablehlo.broadcast_in_dim": (0,),
    "stablehlo.broadcast": (0,),
    "stablehlo.transpose": (0,),
    "stablehlo.slice": (0,),
    "stablehlo.reverse": (0,),
    "stablehlo.concatenate": None,  # every operand
    "stablehlo.pad": (0, 1),
    "stablehlo.gather": (0,),
    "stablehlo.dynamic_slice": (0,),
}


@range_rule(*_MOVED_OPERANDS)
def _moved(ctx: RuleContext, op: Any, args: list[AbstractValue]) -> list[IntRange | None]:
    """Element-moving ops: the fold rule applied to the lower bounds, then to the upper bounds."""
    name = op.operation.name
    listed = _MOVED_OPERANDS[name]
    moved = tuple(range(len(args))) if listed is None else listed
    if any(a.const is None for i, a in enumerate(args) if i not in moved):
        return [None]
    if all(known_bounds(args[i]) is None for i in moved):
        return [None]
    sides: list[list[np.ndarray]] = [[], []]
    for i, a in enumerate(args):
        b = bounds(a) if i in moved else (np.asarray(a.const), np.asarray(a.const))
        if b is None:
            return [None]
        sides[0].append(np.asarray(b[0]))
        sides[1].append(np.asarray(b[1]))
    fold = FOLD_RULES[name]
    (lo,) = fold(ctx, op, sides[0])
    (hi,) = fold(ctx, op, sides[1])
    return _result(ctx, op, np.asarray(lo, np.int64), np.asarray(hi, np.int64))


# ====================================================================== arithmetic
@range_rule("stablehlo.add", "stablehlo.maximum", "stablehlo.minimum", "stablehlo.subtract", "stablehlo.multiply")
def _binary(ctx: RuleContext, op: Any, args: list[AbstractValue]) -> list[IntRange | None]:
    """§add, §maximum, §minimum (monotone), §subtract (antitone in ``rhs``), §multiply (corners)."""
    if all(known_bounds(a) is None for a in args):
        return [None]
    bs = _all_bounds(args)
    if bs is None:
        return [None]
    (alo, ahi), (blo, bhi) = bs
    name = op.operation.name
    if name == "stablehlo.add":
        return _result(ctx, op, alo + blo, ahi + bhi)
    if name == "stablehlo.subtract":
        return _result(ctx, op, alo - bhi, ahi - blo)
    if name == "stablehlo.maximum":
        return _result(ctx, op, np.maximum(alo, blo), np.maximum(ahi, bhi))
    if name == "stablehlo.minimum":
        return _result(ctx, op, np.minimum(alo, blo), np.minimum(ahi, bhi))
    if max(np.abs(x).max(initial=0) for x in (alo, ahi, blo, bhi)) > LIMIT:
        return [None]  # a product could overflow int64 here
    corners = np.stack([alo * blo, alo * bhi, ahi * blo, ahi * bhi])
    return _result(ctx, op, np.min(corners, axis=0), np.max(corners, axis=0))


@range_rule("stablehlo.negate")
def _negate(ctx: RuleContext, op: Any, args: list[AbstractValue]) -> list[IntRange | None]:
    b = known_bounds(args[0])
    return [None] if b is None else _result(ctx, op, -b[1], -b[0])


@range_rule("stablehlo.clamp")
def _clamp(ctx: RuleContext, op: Any, args: list[AbstractValue]) -> list[IntRange | None]:
    """§clamp ``min(max(operand, min), max)`` is monotone in each argument (``min``/``max`` may be scalars)."""
    bs = _all_bounds(args)
    if bs is None or all(known_bounds(a) is None for a in (args[0], args[2])):
        return [None]
    (alo, ahi), (xlo, xhi), (blo, bhi) = bs
    return _result(ctx, op, np.minimum(np.maximum(xlo, alo), blo), np.minimum(np.maximum(xhi, ahi), bhi))


@range_rule("stablehlo.convert")
def _convert(ctx: RuleContext, op: Any, args: list[AbstractValue]) -> list[IntRange | None]:
    """§convert between integer (and boolean) types keeps the value when it fits the result type (a boolean
    is 0 or 1 even when unknown)."""
    b = bounds(args[0]) if args[0].dtype.kind == "b" else known_bounds(args[0])
    (t,) = ctx.result_types(op)
    if b is None or t.dtype.kind not in "iu":
        return [None]
    return _result(ctx, op, b[0], b[1])


@range_rule("stablehlo.and", "stablehlo.or", "stablehlo.not")
def _boolean(ctx: RuleContext, op: Any, args: list[AbstractValue]) -> list[IntRange | None]:
    """§and / §or of booleans are ``min`` / ``max``; §not is ``1 - x`` (integers: no range)."""
    if args[0].dtype.kind != "b":
        return [None]
    bs = _all_bounds(args)
    if bs is None or all(known_bounds(a) is None for a in args):
        return [None]
    name = op.operation.name
    if name == "stablehlo.not":
        ((lo, hi),) = bs
        return _result(ctx, op, 1 - hi, 1 - lo)
    (alo, ahi), (blo, bhi) = bs
    if name == "stablehlo.and":
        return _result(ctx, op, np.minimum(alo, blo), np.minimum(ahi, bhi))
    return _result(ctx, op, np.maximum(alo, blo), np.maximum(ahi, bhi))


@range_rule("stablehlo.select")
def _select(ctx: RuleContext, op: Any, args: list[AbstractValue]) -> list[IntRange | None]:
    """§select: the side a decided predicate element picks, else the hull of both sides."""
    pred, a, b = args
    ba, bb = known_bounds(a), known_bounds(b)
    if ba is None or bb is None:
        return [None]
    (t,) = ctx.result_types(op)
    pb = bounds(pred)
    assert pb is not None  # a boolean always has bounds
    plo, phi = (np.broadcast_to(x, t.shape) for x in pb)
    sure_true, sure_false = plo == 1, phi == 0
    lo = np.where(sure_true, ba[0], np.where(sure_false, bb[0], np.minimum(ba[0], bb[0])))
    hi = np.where(sure_true, ba[1], np.where(sure_false, bb[1], np.maximum(ba[1], bb[1])))
    return _result(ctx, op, lo, hi)


# ====================================================================== compare
@range_rule("stablehlo.compare")
def _compare(ctx: RuleContext, op: Any, args: list[AbstractValue]) -> list[IntRange | None]:
    """§compare of integers: decided where the intervals do not overlap (``[lo, hi]`` of the boolean)."""
    a, b = args
    if a.dtype.kind not in "iub" or (known_bounds(a) is None and known_bounds(b) is None):
        return [None]
    bs = _all_bounds(args)
    if bs is None:
        return [None]
    (alo, ahi), (blo, bhi) = bs
    direction = enum_text(op, "comparison_direction")
    if direction in ("GT", "GE"):  # a > b is b < a
        (alo, ahi), (blo, bhi) = (blo, bhi), (alo, ahi)
        direction = "LT" if direction == "GT" else "LE"
    if direction == "LT":
        true, false = ahi < blo, alo >= bhi
    elif direction == "LE":
        true, false = ahi <= blo, alo > bhi
    else:
        point = (alo == ahi) & (blo == bhi) & (alo == blo)
        apart = (ahi < blo) | (bhi < alo)
        true, false = (point, apart) if direction == "EQ" else (apart, point)
    return _result(ctx, op, true.astype(np.int64), 1 - false.astype(np.int64))


# ====================================================================== reduce (argmax, argmin)
_SELECTING = ("stablehlo.select", "stablehlo.maximum", "stablehlo.minimum")


def _selects_argument(value: Any, allowed: set[int], arg_pos: dict[Any, int], depth: int = 8) -> bool:
    """Whether ``value`` is always one of the block arguments in ``allowed`` (through selecting ops)."""
    if value in arg_pos:
        return arg_pos[value] in allowed
    owner = getattr(value, "owner", None)
    if depth <= 0 or owner is None or not hasattr(owner, "operation"):
        return False
    name = owner.operation.name
    if name not in _SELECTING:
        return False
    data = list(owner.operands)[1:] if name == "stablehlo.select" else list(owner.operands)
    return all(_selects_argument(v, allowed, arg_pos, depth - 1) for v in data)


@range_rule("stablehlo.reduce")
def _reduce(ctx: RuleContext, op: Any, args: list[AbstractValue]) -> list[IntRange | None]:
    """§reduce whose body returns, for result ``j``, one of its arguments ``j`` (accumulator) or ``N + j``
    (element): the result lies within the hull of the init value and the reduced elements (argmax's index)."""
    n = len(args) // 2
    block = op.regions[0].blocks[0]
    arg_pos = {a: i for i, a in enumerate(block.arguments)}
    term = list(block.operations)[-1]
    dims = i64_list(op, "dimensions")
    out: list[IntRange | None] = []
    for j, (t, ret) in enumerate(zip(ctx.result_types(op), term.operands)):
        x, init = args[j], args[n + j]
        if t.dtype.kind not in "iub" or (known_bounds(x) is None and known_bounds(init) is None) \
                or not _selects_argument(ret, {j, n + j}, arg_pos):
            out.append(None)
            continue
        bx, bi = bounds(x), bounds(init)
        if bx is None or bi is None or bi[0].size != 1:
            out.append(None)
            continue
        axes = tuple(int(d) for d in dims)
        lo = np.min(bx[0], axis=axes, initial=int(bi[0].reshape(-1)[0]))  # the init value is in the hull
        hi = np.max(bx[1], axis=axes, initial=int(bi[1].reshape(-1)[0]))
        out.append(make_range(lo, hi, t.dtype, t.shape))
    return out

