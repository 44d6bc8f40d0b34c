"""Structural ops: the *rows by index map* move, found with the position-map trick.

Each op here moves elements without computing on them.  Its index map is obtained by applying the op's NumPy
twin to ``arange(k).reshape(shape)``: output element ``i`` copies operand element ``map[i]`` (``-1`` where
the element comes from somewhere else, e.g. a padding value).  The same NumPy twin folds constants, so the
index-set rule and the fold rule cannot disagree.

Spec sections mirrored: §reshape, §transpose, §broadcast_in_dim, §slice, §concatenate, §pad, §reverse,
§iota, §constant.
"""

from __future__ import annotations

import weakref

import numpy as np

from ...ir.attrs import dense_attr, i64_list, int_attr, literal_from_text
from ...lattice.windows import positions
from ...lattice import Deps
from ..values import AbstractValue
from ..folding.exactness import (Uncertainty, Undecided, error_array, finalize, is_float, literal_uncertainty,
                                 unknown_float)
from .registry import (EXACT, ZERO, FOLD_RULES, UNION_OF_OPERANDS, UNION_WHEN_UNKNOWN, NotFoldable, deps_rule,
                       error_rule, fold_rule)
from .registry import RuleContext, Op, DepsResult, ErrorResult, FoldResult  # the rule contract



# ---------------------------------------------------------------- the NumPy twins
def transpose_np(x, op):
    return np.transpose(x, i64_list(op, "permutation"))


def broadcast_in_dim_np(x, op, out_shape):
    dims = i64_list(op, "broadcast_dimensions")
    # Operand dim d goes to result dim dims[d]; size-1 operand dims are broadcast.
    expanded_shape = [1] * len(out_shape)
    for d, rd in enumerate(dims):
        expanded_shape[rd] = x.shape[d]
    order = sorted(range(len(dims)), key=dims.__getitem__)  # (stable, as argsort's "stable")
    x = np.transpose(x, order) if order != list(range(len(dims))) else x
    return np.broadcast_to(x.reshape(expanded_shape), out_shape)


def slice_np(x, op):
    starts = i64_list(op, "start_indices")
    limits = i64_list(op, "limit_indices")
    strides = i64_list(op, "strides", [1] * x.ndim)
    return x[tuple(slice(s, l, st) for s, l, st in zip(starts, limits, strides))]


def slice_index_map(shape, starts, limits, strides) -> np.ndarray:
    """§slice's index map, flat: operand element ``Σ_d (start_d + stride_d·i_d)·step_d`` for each result index
    ``i`` (``step_d`` the operand's row-major element stride), in result order.

    What ``slice_np(positions(shape), op).ravel()`` gives, built from the start/limit/stride arithmetic alone:
    O(result size) work and memory, not O(operand size) — a written-out program slices one scalar out of an
    ``n``-vector ``n`` times, which through the operand's full position map is quadratic in ``n``."""
    step = 1
    steps = []
    for d in reversed(shape):
        steps.append(step)
        step *= int(d)
    flat = np.zeros((), np.int64)
    for s, lim, st, k in zip(starts, limits, strides, reversed(steps)):
        flat = np.add.outer(flat, np.arange(s, lim, st, dtype=np.int64) * k)
    return flat.ravel()


def reverse_np(x, op):
    return np.flip(x, axis=tuple(i64_list(op, "dimensions")))


def pad_np(x, fill, lo, hi, interior):
    """§pad: interior padding between elements, then (possibly negative) low/high edge padding."""
    lo_pos = [max(v, 0) for v in lo]
    hi_pos = [max(v, 0) for v in hi]
    inner = [(d - 1) * (i + 1) + 1 if d > 0 else 0 for d, i in zip(x.shape, interior)]
    buf_shape = [a + b + c for a, b, c in zip(lo_pos, inner, hi_pos)]
    buf = np.full(buf_shape, fill, dtype=x.dtype)
    buf[tuple(slice(a, a + b, i + 1) for a, b, i in zip(lo_pos, inner, interior))] = x
    crop = tuple(slice(-min(l, 0), n - (-min(h, 0))) for l, h, n in zip(lo, hi, buf_shape))
    return buf[crop]


def _pad_args(op):
    return i64_list(op, "edge_padding_low"), i64_list(op, "edge_padding_high"), i64_list(op, "interior_padding")


def _dims_in_order(op) -> bool:
    """§broadcast_in_dim's ``broadcast_dimensions`` increase: operand dimensions keep their order."""
    dims = i64_list(op, "broadcast_dimensions")
    return all(a < b for a, b in zip(dims, dims[1:]))


def _map_rule(np_twin):
    """An index-set rule for a one-operand structural op from its NumPy twin."""

    def rule(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
        (t,) = ctx.result_types(op)
        if args[0].size == 1:  # every result element is a copy of the one operand element (a scalar's broadcast)
            return [args[0].deps if t.size == 1 else args[0].deps.broadcast_row(t.size)]
        if np_twin is broadcast_in_dim_np and t.size == args[0].size and _dims_in_order(op):
            # nothing is repeated and no dimension moves (``x[:, None]``): a reshape, rows in the same order
            return [args[0].deps]
        idx = np_twin(positions(args[0].shape), op, t.shape)
        return [args[0].deps.gather_rows(np.ascontiguousarray(idx).ravel())]

    def fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
        (t,) = ctx.result_types(op)
        x = consts[0]
        if x.size == 1:
            # every result element is the one operand element, as in the rule above (a literal broadcast,
            # ``x * 2.0``: every vectorized program has some): filled at once, the bits as they are — a quarter
            # of the cost of NumPy's view and its copy
            return [np.full(t.shape, x.reshape(()), dtype=x.dtype)]
        return [np.array(np_twin(x, op, t.shape))]  # a contiguous copy (keeps 0-d arrays 0-d)

    return rule, fold


_ONE_OPERAND = {
    "stablehlo.transpose": lambda x, op, shape: transpose_np(x, op),
    "stablehlo.broadcast_in_dim": broadcast_in_dim_np,
    "stablehlo.slice": lambda x, op, shape: slice_np(x, op),
    "stablehlo.reverse": lambda x, op, shape: reverse_np(x, op),
}

for _name, _twin in _ONE_OPERAND.items():
    _rule, _fold = _map_rule(_twin)
    if _name != "stablehlo.slice":
        deps_rule(_name, kind=EXACT, note="rows by index map")(_rule)
    fold_rule(_name)(_fold)


@deps_rule("stablehlo.slice", kind=EXACT, note="rows by index map")
def _slice(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§slice: the rows at the sliced positions, from the start/limit/stride arithmetic (no operand-sized map)."""
    x = args[0]
    starts = i64_list(op, "start_indices")
    limits = i64_list(op, "limit_indices")
    if len(starts) == 1 and limits[0] - starts[0] == 1:
        # ``x[i]`` of a written-out vector, the commonest slice of all: one element, whatever the stride
        return [_take_row(ctx, x.deps, starts[0])]
    strides = i64_list(op, "strides", [1] * len(x.shape))
    if all(lim - s <= st for s, lim, st in zip(starts, limits, strides)) and all(lim > s for s, lim in
                                                                               zip(starts, limits)):
        # one element (``x[i, j]``): its flat position, without the index-map arithmetic
        flat, step = 0, 1
        for s, d in zip(reversed(starts), reversed(x.shape)):
            flat += int(s) * step
            step *= int(d)
        return [x.deps.take_row(flat)]
    run = _flat_run(x.shape, starts, limits, strides)
    if run is not None:  # ``x[1:]``, ``x[::2]``, a block of whole rows: a range of rows, no index map
        return [x.deps.row_range(*run)]
    return [x.deps.gather_rows(slice_index_map(x.shape, starts, limits, strides))]


def _take_row(ctx: RuleContext, deps: Deps, i: int) -> Deps:
    """Row ``i`` of ``deps``, the same object for every slice of one row of one value: a written-out program
    reads each ``x[i]`` in several terms.  The rows are kept for the value sliced last only, which the table
    refers to weakly (a released value is not kept alive by it)."""
    taken = ctx.memo("rows_taken")
    source = taken.get("of")
    if source is None or source() is not deps:
        taken.clear()
        taken["of"] = weakref.ref(deps)
    row = taken.get(i)
    if row is None:
        row = taken[i] = deps.take_row(i)
    return row


def _flat_run(shape, starts, limits, strides) -> tuple[int, int, int] | None:
    """``(start, stop, step)`` of the flat operand positions a (non-empty) §slice reads, when they are evenly
    spaced: every dimension before some ``k`` takes one index, every one after ``k`` is whole, and dimension
    ``k`` has stride 1 (or nothing after it).  ``None`` otherwise."""
    ndim = len(shape)
    if any(lim <= s for s, lim in zip(starts, limits)):
        return None  # (an empty slice)
    k = 0
    while k < ndim - 1 and limits[k] - starts[k] <= strides[k]:  # one index of dimension k
        k += 1
    inner = 1
    for d in range(ndim - 1, k, -1):
        if starts[d] != 0 or limits[d] != shape[d] or strides[d] != 1:
            return None
        inner *= int(shape[d])
    if strides[k] != 1 and inner != 1:
        return None
    offset, step = 0, 1
    for d in range(ndim - 1, -1, -1):
        if d <= k:
            offset += int(starts[d]) * step
        step *= int(shape[d])
    row_step = int(strides[k]) if inner == 1 else 1
    count = ((int(limits[k]) - int(starts[k]) + int(strides[k]) - 1) // int(strides[k])) * inner
    return offset, offset + (count - 1) * row_step + 1, row_step


@deps_rule("stablehlo.reshape", kind=EXACT, note="rows by index map")
def _reshape(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§reshape keeps the row-major element order: the index sets are unchanged."""
    return [args[0].deps]


UNION_WHEN_UNKNOWN.add(_reshape)
UNION_OF_OPERANDS.add(_reshape)


@fold_rule("stablehlo.reshape")
def _reshape_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    (t,) = ctx.result_types(op)
    return [consts[0].reshape(t.shape)]


@deps_rule("stablehlo.concatenate", kind=EXACT, note="rows by index map")
def _concatenate(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§concatenate along ``dimension``: a position map over the joined operands."""
    dim = int_attr(op, "dimension")
    joined = _stack_rows(ctx, args)
    if all(d == 1 for d in args[0].shape[:dim]):
        return [joined]  # operands are contiguous row blocks of the result
    offsets = np.cumsum([0] + [a.size for a in args])
    pos = np.concatenate([positions(a.shape) + off for a, off in zip(args, offsets)], axis=dim).ravel()
    return [joined.gather_rows(pos)]


def _stack_rows(ctx, args) -> Deps:
    """All operands' rows one after the other, as one lattice (for multi-operand index maps)."""
    return Deps.vstack([a.deps for a in args])


@fold_rule("stablehlo.concatenate")
def _concatenate_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    return [np.concatenate(consts, axis=int_attr(op, "dimension"))]


@deps_rule("stablehlo.pad", kind=EXACT, note="rows by index map")
def _pad(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§pad: operand elements by position map; every other element is a copy of the padding value."""
    x, fill = args
    lo, hi, interior = _pad_args(op)
    idx = pad_np(positions(x.shape), -1, lo, hi, interior).ravel()
    from_operand = x.deps.gather_rows(idx)
    if fill.deps.is_empty:
        return [from_operand]
    from_fill = fill.deps.gather_rows(np.where(idx < 0, 0, -1))
    return [Deps.union(from_operand, from_fill)]


@fold_rule("stablehlo.pad")
def _pad_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    x, fill = consts
    lo, hi, interior = _pad_args(op)
    return [pad_np(x, fill.reshape(()).item(), lo, hi, interior).astype(x.dtype)]


@deps_rule("stablehlo.broadcast", kind=EXACT, note="rows by index map")
def _broadcast(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """``stablehlo.broadcast`` (legacy): ``broadcast_sizes`` prepended to the operand's shape."""
    (t,) = ctx.result_types(op)
    x = args[0]
    return [x.deps.gather_rows(np.broadcast_to(positions(x.shape), t.shape).ravel())]


@fold_rule("stablehlo.broadcast")
def _broadcast_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    (t,) = ctx.result_types(op)
    return [np.ascontiguousarray(np.broadcast_to(consts[0], t.shape))]


# ---------------------------------------------------------------- sources: iota and constant
@deps_rule("stablehlo.iota", kind=ZERO, note="a constant (folded)")
def _iota(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    return [ctx.empty(t.size) for t in ctx.result_types(op)]


@fold_rule("stablehlo.iota")
def _iota_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    """§iota: values ``0, 1, …`` along ``iota_dimension``, broadcast along the others."""
    (t,) = ctx.result_types(op)
    dim = int_attr(op, "iota_dimension")
    shape = [1] * len(t.shape)
    shape[dim] = t.shape[dim]
    return [np.broadcast_to(np.arange(t.shape[dim]).reshape(shape), t.shape).astype(t.dtype)]


@deps_rule("stablehlo.constant", kind=ZERO, note="a constant (folded: its value feeds the constant lattice)")
def _constant(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """A constant the bindings cannot convert (e.g. complex literals) stays unknown, with no dependencies."""
    return [ctx.empty(t.size) for t in ctx.result_types(op)]


@fold_rule("stablehlo.constant")
def _constant_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    """§constant.  The bindings convert most literals to NumPy; complex and bf16 ones they cannot, so those
    are read from the op's printed form.  A literal neither way understands stays unknown (sound)."""
    (t,) = ctx.result_types(op)
    arr = None
    try:
        arr = dense_attr(op, "value")
    except Exception:  # the bindings cannot even cast complex literals to a Python attribute
        pass
    if arr is None:
        arr = literal_from_text(str(op), t.dtype)
    if arr is None:
        raise NotFoldable
    return [literal_value(arr, t)]


def literal_value(arr, t) -> np.ndarray:
    """A §constant's value of type ``t`` from its literal as the bindings convert it (``arr``): a splat's one
    element is repeated (a read-only view), any other literal reshaped."""
    arr = np.asarray(arr)
    if arr.size == 1 and t.size != 1:
        return np.broadcast_to(arr.reshape(()), t.shape)
    return arr.reshape(t.shape)


__all__ = ["literal_value", "pad_np", "slice_np", "slice_index_map", "broadcast_in_dim_np", "transpose_np",
           "reverse_np", "AbstractValue"]


# ---------------------------------------------------------------- trust (folding/exactness.py)
def moved_uncertainty(ctx: RuleContext, op: Op, args, data: tuple[int, ...] | None = None) -> list[Uncertainty | None]:
    """Error bounds of an op that only moves elements (§reshape, §gather, §pad, §select …): each result
    element is a copy of one element of a *data* operand, so it carries that element's bound.

    The position map comes from the op's own fold rule applied to element positions (``int64``) in place of
    the data operands (``data``: their indices, default all), the other operands (indices, predicates) as
    they are — the position-map trick of the index-set rules, once more.  Add trees do not survive a move
    (XLA does not reassociate through it)."""
    data = tuple(range(len(args))) if data is None else data
    if all(args[i].uncertainty is None for i in data):
        return [None] * len(op.results)
    consts, errs, offset = [], [], 0
    for i, a in enumerate(args):
        if i in data:
            consts.append(np.arange(offset, offset + a.size, dtype=np.int64).reshape(a.shape))
            errs.append(error_array(a).ravel())
            offset += a.size
        else:
            consts.append(np.asarray(a.const))
    flat = np.concatenate(errs) if errs else np.zeros(0)
    try:
        moved = FOLD_RULES[op.operation.name](ctx, op, consts)
    except NotFoldable:  # e.g. duplicate scatter targets: which copy lands is not known from positions
        if not all(is_float(t.dtype) for t in ctx.result_types(op)):
            raise Undecided from None
        return [unknown_float(None) for _ in op.results]
    out: list[Uncertainty | None] = []
    for pos in moved:
        pos = np.asarray(pos)
        if pos.dtype.kind not in "iu":  # a fold that cannot move positions: trust nothing
            out.append(unknown_float(None))
            continue
        err = flat[pos] if flat.size else np.zeros(pos.shape)
        out.append(None if not np.any(err) else Uncertainty(err))
    return out


def _moved(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """Moves copy elements: each result element carries the bound of the element it copies."""
    return moved_uncertainty(ctx, op, args)


error_rule("stablehlo.transpose", "stablehlo.broadcast_in_dim", "stablehlo.slice", "stablehlo.reverse",
           "stablehlo.reshape", "stablehlo.concatenate", "stablehlo.pad", "stablehlo.broadcast")(_moved)


@error_rule("stablehlo.constant")
def _constant_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """A literal is exact (a subnormal one may be flushed by a backend)."""
    return [literal_uncertainty(c) for c in consts]


@error_rule("stablehlo.iota")
def _iota_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """Integers converted to the element type, correctly rounded: the same everywhere."""
    return [finalize(c, 0.0) for c in consts]
