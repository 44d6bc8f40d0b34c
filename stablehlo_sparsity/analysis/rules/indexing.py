"""Indexing ops: §gather, §scatter, §dynamic_slice, §dynamic_update_slice (and MHLO's legacy
``stablehlo.torch_index_select``, a gather along one dim) — constants are values.

With known start indices (the constant lattice resolves JAX's index normalization chains) every rule is
exact, built from the NumPy index maps of :mod:`..folding.index_maps`:

* gather / dynamic_slice / torch_index_select: *rows by index map* — result element ``i`` copies operand
  element ``map[i]``;
* dynamic_update_slice: rows by index map over the operand and the update;
* scatter: *group union* of the update elements landing on each result element (an index map when no two
  land on the same one), combined with the input according to the update computation (below).

The same maps fold the ops when every operand is a constant.

Unknown (input-dependent) start indices stay sound and as tight as the op allows: along an indexed
dimension of size ``dim`` a slice of ``size`` at an unknown clamped start reads any coordinate in
``[o, o + dim - size]`` — along the indexed dimensions only; a scatter with unknown indices may write
anywhere along the scattered dimensions and never *replaces* (old dependencies are kept).  Each such op
raises a :class:`~stablehlo_sparsity.errors.SparsityWarning` naming it.  A start computed from the inputs
whose integer range is known (:mod:`~stablehlo_sparsity.analysis.folding.ranges`: an ``argmax``, a predicate turned
into ``0/1`` …) narrows this to the starts the range reaches (after the spec's clamping): dynamic_slice and
dynamic_update_slice by a band of starts per dim, gather and scatter by trying each start combination (at
most :data:`MAX_INDEX_COMBINATIONS`); a bounded scatter still never replaces, since which update lands is
not known.

Scatter's update computation (a region of ``2N`` scalar arguments: the current values of the ``N`` inputs,
then the ``N`` updates) is summarized per result ``j`` by which arguments its return value reaches through
the body (``A_j``: inputs, ``U_j``: updates; closed transitively over ``A``, since a current value is itself
the outcome of earlier updates).  A body that does not read any current value *replaces*: elements that are
certainly written lose their old dependencies; a combining body (add, multiply, max, min …) *unions*.
With duplicate indices the update schedule is implementation defined, so every update landing on an
element is kept.  §scatter drops an out-of-bounds update element; XLA drops its whole window — new
dependencies are added under the spec's (larger) set, old ones removed only under XLA's (smaller) set.
"""

from __future__ import annotations

import numpy as np

from ...ir.helpers import num_elements
from ...ir.attrs import i64_list, int_attr
from ...lattice.windows import positions
from ..folding.index_maps import (GatherDims, ScatterDims, box_matrix, clamp_starts, dynamic_slice_index_map,
                                  gather_index_map, scatter_targets, window_union_matrix)
from ..folding.ranges import known_bounds
from ...lattice import Deps, group_union, Groups
from ..folding.exactness import (AddTree, Uncertainty, Undecided, error_array, finalize, is_float, lowest_bit_exponent,
                                 smallest_normal, sum_is_exact, sum_rounding, unknown_float)
from .structural import moved_uncertainty
from .registry import VALUE_AWARE, NotFoldable, deps_rule, error_rule, fold_rule
from .registry import RuleContext, Op, DepsResult, ErrorResult, FoldResult  # the rule contract
from ..values import AbstractValue
from ...errors import InputError



def _collapse(ctx: RuleContext, op: Op, deps: Deps, shape, sizes, free, what: str, ranges=None):
    """Union ``deps`` over every clamped start along the ``free`` dims (unknown starts, or starts bounded by
    ``ranges[d] = (a, b)``); warns.

    Returns the collapsed lattice and its shape (``sizes[d]`` along free dims), on which a slice at
    start 0 along the free dims gives the sound result.
    """
    free = sorted(set(free))
    ranges = ranges or {}
    if not free:
        return deps, tuple(shape)
    bounded = {d: ranges[d] for d in free if d in ranges}
    within = f" (starts within {bounded} by their integer ranges)" if bounded else " (conservative)"
    ctx.warn(op, f"{what} not known constants: each result element may read any operand element along "
                 f"dimension(s) {free} that a possible start reaches{within}")
    red_shape = tuple(int(sizes[d]) if d in free else int(shape[d]) for d in range(len(shape)))
    if deps.is_empty:
        return ctx.empty(num_elements(red_shape)), red_shape
    return group_union(deps, Groups.from_matrix(window_union_matrix(shape, sizes, free, ranges))), red_shape


def _start_range(av, dim: int, size: int) -> int | tuple[int, int] | None:
    """The clamped start(s) of a scalar start index along a dim of ``dim`` (§dynamic_slice clamps into
    ``[0, dim - size]``): an int when known, ``(a, b)`` when its integer range bounds it, else ``None``."""
    b = known_bounds(av)
    if b is None:
        return None
    top = dim - size
    lo, hi = (min(max(int(x.min() if i == 0 else x.max()), 0), top) for i, x in enumerate(b))
    if lo == 0 and hi == top:
        return None
    return lo if lo == hi else (lo, hi)


#: At most this many start combinations are tried for a gather or scatter whose indices have known ranges.
MAX_INDEX_COMBINATIONS = 64


def _index_choices(indices, index_vector_dim: int, clamp_top=None) -> list[np.ndarray] | None:
    """Index arrays that together cover every value the bounded ``indices`` may take, element by element
    (each element's options are all reached, since a gathered or scattered element depends only on its own
    index vector); ``None`` when the indices are unbounded or the combinations exceed
    :data:`MAX_INDEX_COMBINATIONS`.  ``clamp_top[c]``: gather's clamp of component ``c`` into
    ``[0, clamp_top[c]]`` (it narrows the choices; scatter does not clamp)."""
    b = known_bounds(indices)
    if b is None:
        return None
    lo, hi = (np.asarray(x, np.int64) for x in b)
    implicit = index_vector_dim >= lo.ndim
    lo = lo[..., None] if implicit else np.moveaxis(lo, index_vector_dim, -1)
    hi = hi[..., None] if implicit else np.moveaxis(hi, index_vector_dim, -1)
    if clamp_top is not None:
        top = np.asarray(clamp_top, np.int64)
        lo, hi = np.clip(lo, 0, top), np.clip(hi, 0, top)
    widths = (hi - lo).reshape(-1, lo.shape[-1]).max(axis=0, initial=0) + 1
    if int(np.prod(widths, dtype=np.float64)) > MAX_INDEX_COMBINATIONS:
        return None
    out = []
    for shift in np.ndindex(*(int(w) for w in widths)):
        idx = np.minimum(lo + np.asarray(shift, np.int64), hi)
        out.append(idx[..., 0] if implicit else np.moveaxis(idx, -1, index_vector_dim))
    return out


# ====================================================================== gather
@deps_rule("stablehlo.gather", kind=VALUE_AWARE,
           note="known indices: exact index map; bounded (integer ranges): the elements they reach; "
                "unknown: any element along the indexed dims (warns)")
def _gather(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§gather: rows by the index map of the clamped start indices; unknown indices read any element along
    the indexed dimensions (``start_index_map``) and only those."""
    operand, indices = args
    (t,) = ctx.result_types(op)
    dims = GatherDims.from_op(op)
    if operand.deps.is_empty:
        return [ctx.empty(t.size)]
    if indices.const is not None:
        return [operand.deps.gather_rows(gather_index_map(operand.shape, indices.const, dims, t.shape).ravel())]
    tops = [operand.shape[d] - dims.slice_sizes[d] for d in dims.start_index_map]
    choices = _index_choices(indices, dims.index_vector_dim, tops)
    if choices is not None:
        ctx.warn(op, "gather start indices are not known constants: each result element reads the elements "
                     "its start index may reach within its integer range")
        return [Deps.union(*[operand.deps.gather_rows(gather_index_map(operand.shape, c, dims, t.shape).ravel())
                             for c in choices])]
    free = [d for d in dims.start_index_map if operand.shape[d] > dims.slice_sizes[d]]
    deps, red_shape = _collapse(ctx, op, operand.deps, operand.shape, dims.slice_sizes, free,
                                "gather start indices are")
    zeros = np.zeros(indices.shape, np.int64)
    return [deps.gather_rows(gather_index_map(red_shape, zeros, dims, t.shape).ravel())]


@fold_rule("stablehlo.gather")
def _gather_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    operand, indices = consts
    (t,) = ctx.result_types(op)
    m = gather_index_map(operand.shape, indices, GatherDims.from_op(op), t.shape)
    return [np.ascontiguousarray(operand).ravel()[m]]


# ====================================================================== torch_index_select
def torch_index_select_dims(op: Op, operand_shape, index_shape, result_shape, index_dtype,
                            location: str | None) -> tuple[int, int]:
    """``(dim, batch_dims)`` of a ``stablehlo.torch_index_select``, normalized (negative values count from the
    end: ``dim`` of the operand's rank, ``batch_dims`` of the index's) and checked against the shapes — the
    dialect verifies none of this: ``0 <= batch_dims <= dim < rank(operand)``, ``batch_dims <= rank(index)``,
    leading batch dims equal, an integer index, and the result shape
    ``operand[:dim] + index[batch_dims:] + operand[dim + 1:]``.  Anything else is an :class:`InputError`."""
    operand_shape, index_shape, result_shape = (tuple(int(s) for s in x)
                                                for x in (operand_shape, index_shape, result_shape))
    dim, batch = int_attr(op, "dim"), int_attr(op, "batch_dims")
    dim += len(operand_shape) if dim < 0 else 0
    batch += len(index_shape) if batch < 0 else 0
    expected = operand_shape[:dim] + index_shape[batch:] + operand_shape[dim + 1:]
    why = None
    if not 0 <= dim < len(operand_shape):
        why = f"dim = {int_attr(op, 'dim')} is not a dimension of the operand {operand_shape}"
    elif not 0 <= batch <= min(dim, len(index_shape)):
        why = f"batch_dims = {int_attr(op, 'batch_dims')} is not in [0, min(dim, rank(index))]"
    elif operand_shape[:batch] != index_shape[:batch]:
        why = f"the batch dims of the operand {operand_shape} and the index {index_shape} differ"
    elif not np.issubdtype(index_dtype, np.integer):
        why = f"the index has element type {np.dtype(index_dtype).name}, not an integer"
    elif result_shape != expected:
        why = (f"the result shape {result_shape} is not operand[:dim] + index[batch_dims:] + operand[dim+1:] "
               f"= {expected}")
    if why is not None:
        raise InputError(f"stablehlo.torch_index_select: {why}", location)
    return dim, batch


def _torch_index_select_map(operand_shape, index, dim: int, batch: int) -> np.ndarray:
    """Flat operand element read by each result element (row-major), ``-1`` where ``index`` is out of
    ``[0, operand_shape[dim])``: result ``(b, p, i, q)`` reads operand ``(b, p, index[b, i], q)`` (``b`` the
    ``batch`` leading dims, ``p`` the operand dims before ``dim``, ``i`` the index's other dims, ``q`` the
    operand dims after ``dim``).  Broadcast sums of ``arange``s: no loop over elements."""
    shape = tuple(int(s) for s in operand_shape)
    index = np.asarray(index)
    q = index.ndim
    out_shape = shape[:dim] + index.shape[batch:] + shape[dim + 1:]
    strides = np.cumprod((1,) + shape[:0:-1], dtype=np.int64)[::-1]
    # the index's dims sit at result dims [0, batch) and [dim, dim + q - batch): a reshape inserting unit dims
    idx = index.astype(np.int64).reshape(index.shape[:batch] + (1,) * (dim - batch) + index.shape[batch:]
                                         + (1,) * (len(shape) - dim - 1))
    flat = idx * strides[dim]
    for k, size in enumerate(shape):
        if k == dim:
            continue
        axes = [1] * len(out_shape)
        axes[k if k < dim else k + q - batch - 1] = size
        flat = flat + (np.arange(size, dtype=np.int64) * strides[k]).reshape(axes)
    flat = np.where((idx >= 0) & (idx < shape[dim]), flat, -1)
    return np.broadcast_to(flat, out_shape).ravel()


@deps_rule("stablehlo.torch_index_select", kind=VALUE_AWARE,
           note="known in-range indices: exact index map; bounded in range (integer ranges): the elements they "
                "reach; unknown or out of range: any element along `dim` (warns)")
def _torch_index_select(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """``stablehlo.torch_index_select`` (MHLO's legacy op, not in the spec; ``jnp.take(operand, index,
    axis=dim)`` with ``batch_dims`` leading dims shared by operand and index):
    ``result[b, p, i, q] = operand[b, p, index[b, i], q]``, result shape
    ``operand[:dim] + index[batch_dims:] + operand[dim + 1:]``.

    Known indices: rows by index map (each result element copies one operand element).  Out-of-range
    indices have no agreed meaning: XLA's ``TorchIndexSelect`` (a gather) clamps 32-bit indices but first
    converts 64-bit ones to ``u32`` (``-1`` reads the *last* element), other lowerings leave it undefined — so
    the result elements of an out-of-range index read any operand element along ``dim`` (warns).  Unknown
    indices: every element along ``dim`` (conservative, warns), or the ones their integer ranges reach when
    those lie within ``[0, operand.shape[dim])``."""
    operand, index = args
    (t,) = ctx.result_types(op)
    dim, batch = torch_index_select_dims(op, operand.shape, index.shape, t.shape, index.dtype, ctx.location(op))
    if operand.deps.is_empty or operand.shape[dim] == 0:
        return [ctx.empty(t.size)]
    size = operand.shape[dim]
    if index.const is not None:
        c = np.asarray(index.const)
        out = operand.deps.gather_rows(_torch_index_select_map(operand.shape, c, dim, batch))
        bad = (c < 0) | (c > size - 1) if c.dtype.kind != "u" else c > size - 1
        if not bad.any():
            return [out]
        ctx.warn(op, f"torch_index_select: {int(bad.sum())} index value(s) outside [0, {size}) (XLA clamps or "
                     f"wraps them depending on the index type): their result elements may read any operand "
                     f"element along dimension {dim}")
        return [Deps.union(out, _along_dim(operand, dim).gather_rows(
            _torch_index_select_map(_red_shape(operand.shape, dim), np.where(bad, 0, -1), dim, batch)))]
    b = known_bounds(index)
    if b is not None and b[0].size and int(b[0].min()) >= 0 and int(b[1].max()) < size:
        choices = _index_choices(index, len(index.shape))
        if choices is not None:
            ctx.warn(op, "torch_index_select indices are not known constants: each result element reads the "
                         "elements its index may reach within its integer range")
            return [Deps.union(*[operand.deps.gather_rows(_torch_index_select_map(operand.shape, c, dim, batch))
                                 for c in choices])]
    ctx.warn(op, f"torch_index_select indices are not known constants: each result element may read any "
                 f"operand element along dimension {dim} (conservative)")
    zeros = np.zeros(index.shape, np.int64)
    return [_along_dim(operand, dim).gather_rows(
        _torch_index_select_map(_red_shape(operand.shape, dim), zeros, dim, batch))]


def _red_shape(shape, dim: int) -> tuple[int, ...]:
    return tuple(1 if d == dim else int(s) for d, s in enumerate(shape))


def _along_dim(operand: AbstractValue, dim: int) -> Deps:
    """The operand's lattice unioned along ``dim`` (shape :func:`_red_shape`)."""
    sizes = _red_shape(operand.shape, dim)
    return group_union(operand.deps, Groups.from_matrix(window_union_matrix(operand.shape, sizes, [dim])))


@fold_rule("stablehlo.torch_index_select")
def _torch_index_select_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    """In-range indices only (out of range the backends disagree, see the index-set rule)."""
    operand, index = consts
    (t,) = ctx.result_types(op)
    dim, batch = torch_index_select_dims(op, operand.shape, index.shape, t.shape, index.dtype, ctx.location(op))
    m = _torch_index_select_map(operand.shape, index, dim, batch)
    if operand.size == 0 or np.any(m < 0):
        if t.size:
            raise NotFoldable
        return [np.zeros(t.shape, operand.dtype)]
    return [np.ascontiguousarray(operand).ravel()[m].reshape(t.shape)]


# ====================================================================== dynamic_slice
def _known_starts(operand_shape, sizes, start_args):
    """Clamped start per dim: an int where known (a dim the slice covers entirely is known: 0), a range
    ``(a, b)`` where the start's integer range bounds it, ``None`` where unknown."""
    out = []
    for d, a in enumerate(start_args):
        dim, size = int(operand_shape[d]), int(sizes[d])
        if dim == size:
            out.append(0)
        elif a.const is not None:
            out.append(clamp_starts([a.const], [dim], [size])[0])
        else:
            out.append(_start_range(a, dim, size))
    return out


@deps_rule("stablehlo.dynamic_slice", kind=VALUE_AWARE,
           note="known starts: exact; bounded: the starts their ranges reach; unknown: along the sliced dims "
                "(warns)")
def _dynamic_slice(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§dynamic_slice: rows by the index map of the clamped slice; an unknown start along a dim reads any
    coordinate ``[o, o + dim - size]`` there (conservative, warns)."""
    operand, starts = args[0], args[1:]
    (t,) = ctx.result_types(op)
    sizes = i64_list(op, "slice_sizes")
    if operand.deps.is_empty:
        return [ctx.empty(t.size)]
    known = _known_starts(operand.shape, sizes, starts)
    free = [d for d, s in enumerate(known) if not isinstance(s, int)]
    ranges = {d: s for d, s in enumerate(known) if isinstance(s, tuple)}
    deps, red_shape = _collapse(ctx, op, operand.deps, operand.shape, sizes, free, "dynamic_slice start indices are",
                                ranges)
    m = dynamic_slice_index_map(red_shape, [s if isinstance(s, int) else 0 for s in known], sizes)
    return [deps.gather_rows(m.ravel())]


@fold_rule("stablehlo.dynamic_slice")
def _dynamic_slice_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    operand, starts = consts[0], consts[1:]
    sizes = i64_list(op, "slice_sizes")
    s = clamp_starts(starts, operand.shape, sizes)
    return [np.ascontiguousarray(operand[tuple(slice(a, a + b) for a, b in zip(s, sizes))])]


# ====================================================================== dynamic_update_slice
@deps_rule("stablehlo.dynamic_update_slice", kind=VALUE_AWARE,
           note="known starts: exact; bounded: the starts their ranges reach; unknown: along the updated dims "
                "(warns)")
def _dynamic_update_slice(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§dynamic_update_slice: the update replaces a clamped box of the operand.

    Unknown starts (conservative, warns): an operand element may receive any update element that some clamped
    start puts there; it is certainly overwritten only if every clamped start covers it
    (coordinates ``[dim - size, size)`` along such a dim).
    """
    operand, update, starts = args[0], args[1], args[2:]
    (t,) = ctx.result_types(op)
    known = _known_starts(operand.shape, update.shape, starts)
    certain: np.ndarray = np.ones((), bool)
    for d, (dim, size, s) in enumerate(zip(operand.shape, update.shape, known)):
        a, b = (s, s) if isinstance(s, int) else (s if s is not None else (0, dim - size))
        lo, hi = b, a + size  # covered by every possible start
        c = np.arange(dim)
        certain = np.logical_and.outer(certain, (c >= lo) & (c < hi)) if d else (c >= lo) & (c < hi)
    certain = np.broadcast_to(certain, operand.shape).ravel()
    kept = operand.deps.mask_rows(~certain)
    if update.deps.is_empty:
        return [kept]
    free = [d for d, s in enumerate(known) if not isinstance(s, int)]
    if not free:
        inv = np.full(operand.size, -1, np.int64)
        inv[dynamic_slice_index_map(operand.shape, known, update.shape).ravel()] = np.arange(update.size)
        return [Deps.union(kept, update.deps.gather_rows(inv))]
    bounded = {d: s for d, s in enumerate(known) if isinstance(s, tuple)}
    within = f" within the starts {bounded} their integer ranges allow" if bounded else " (conservative)"
    ctx.warn(op, f"dynamic_update_slice start indices are not known constants: the update may land anywhere "
                 f"along dimension(s) {free}{within}")
    box = Groups.from_matrix(box_matrix(operand.shape, update.shape, known))
    return [Deps.union(kept, group_union(update.deps, box))]


@fold_rule("stablehlo.dynamic_update_slice")
def _dynamic_update_slice_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    operand, update, starts = consts[0], consts[1], consts[2:]
    s = clamp_starts(starts, operand.shape, update.shape)
    out = np.array(operand, copy=True)
    out[tuple(slice(a, a + b) for a, b in zip(s, update.shape))] = update
    return [out]


# ====================================================================== scatter
#: Combining bodies the fold rule evaluates, by the single op of the body (commutative ops only).
_COMBINERS = {
    "stablehlo.add": np.add,
    "stablehlo.multiply": np.multiply,
    "stablehlo.maximum": np.maximum,
    "stablehlo.minimum": np.minimum,
    "stablehlo.or": np.bitwise_or,
    "stablehlo.and": np.bitwise_and,
    "stablehlo.xor": np.bitwise_xor,
}


class _BodySummary:
    """Which block arguments (and outer values) each returned value of a scatter body reaches.

    reads_inputs[j] / reads_updates[j]: argument positions ``i`` (current value of input ``i``) and ``k``
    (update ``k``) that result ``j`` depends on, closed transitively over ``reads_inputs``.
    outer[j]: values defined outside the body that result ``j`` depends on.
    kind[j]: ``"replace"`` (returns update j), ``"keep"`` (returns input j), a NumPy ufunc (a single
    recognized combiner of input j and update j), or ``None`` (anything else: not folded).
    """

    def __init__(self, op, n: int):
        block = op.regions[0].blocks[0]
        args = list(block.arguments)
        arg_pos = {a: i for i, a in enumerate(args)}
        local: dict = {}
        term = None
        defs = {}
        for inner in block.operations:
            if inner.operation.name == "stablehlo.return":
                term = inner
                break
            reach: set = set()
            outs: list = []
            for v in _all_operands(inner):
                if v in arg_pos:
                    reach.add(arg_pos[v])
                elif v in local:
                    r, o = local[v]
                    reach |= r
                    outs.extend(o)
                else:
                    outs.append(v)
            for r in inner.results:
                local[r] = (frozenset(reach), tuple(outs))
                defs[r] = inner
        if term is None or len(term.operands) != n:
            raise NotFoldable  # malformed body; verified IR never gets here
        direct_in: list[set[int]] = []
        direct_up: list[set[int]] = []
        self.outer: list[list] = []
        self.kind: list = []
        for j, v in enumerate(term.operands):
            if v in arg_pos:
                reached, outside = frozenset([arg_pos[v]]), ()
            else:
                reached, outside = local.get(v, (frozenset(), (v,)))
            direct_in.append({i for i in reached if i < n})
            direct_up.append({i - n for i in reached if i >= n})
            self.outer.append(list(outside))
            self.kind.append(_kind(v, j, n, arg_pos, defs))
        # Close over inputs: the current value of input i is itself a result of earlier updates.
        self.reads_inputs, self.reads_updates = [], []
        for j in range(n):
            ins, ups, outs = set(direct_in[j]), set(direct_up[j]), list(self.outer[j])
            todo = list(ins)
            while todo:
                i = todo.pop()
                ups |= direct_up[i]
                outs.extend(self.outer[i])
                for i2 in direct_in[i] - ins:
                    ins.add(i2)
                    todo.append(i2)
            self.reads_inputs.append(sorted(ins))
            self.reads_updates.append(sorted(ups))
            self.outer[j] = outs


def _all_operands(op):
    """Operands of ``op`` and of every op nested in its regions (values they may read)."""
    yield from op.operands
    for region in op.regions:
        for block in region.blocks:
            for inner in block.operations:
                yield from _all_operands(inner)


def _kind(v, j, n, arg_pos, defs):
    if v in arg_pos:
        return "replace" if arg_pos[v] == n + j else ("keep" if arg_pos[v] == j else None)
    inner = defs.get(v)
    if inner is None or inner.operation.name not in _COMBINERS or len(inner.operands) != 2:
        return None
    if {arg_pos.get(x) for x in inner.operands} == {j, n + j}:
        return _COMBINERS[inner.operation.name]
    return None


@deps_rule("stablehlo.scatter", kind=VALUE_AWARE,
           note="known indices: exact (replace vs combine bodies); bounded: where their ranges reach, never "
                "replacing; unknown: along the scattered dims (warns)")
def _scatter(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§scatter (multi-operand): index maps and group unions of the updates, combined per the body summary."""
    n = (len(args) - 1) // 2
    inputs, indices, updates = args[:n], args[n], args[n + 1:]
    dims = ScatterDims.from_op(op)
    body = _BodySummary(op, n)
    shape = inputs[0].shape
    k = inputs[0].size
    if indices.const is not None:
        tg = scatter_targets(shape, indices.const, updates[0].shape, dims)
        possible, certain = tg.written(k), tg.written(k, certain=True)
        inv = tg.inverse(k)
        group = tg.group_matrix(k) if inv is None else None

        def scattered(d: Deps) -> Deps:
            return d.gather_rows(inv) if inv is not None else group_union(d, Groups.from_matrix(group))
    elif (choices := _index_choices(indices, dims.index_vector_dim)) is not None:
        # Indices bounded by their integer ranges: every update lands where one of its possible indices puts
        # it, and replaces nothing for certain (which one lands is not known).
        ctx.warn(op, "scatter indices are not known constants: updates may land wherever their integer ranges "
                     "allow and never replace (conservative)")
        tgs = [scatter_targets(shape, c, updates[0].shape, dims) for c in choices]
        possible, certain = np.any(np.stack([tg.written(k) for tg in tgs]), axis=0), np.zeros(k, bool)

        def scattered(d: Deps) -> Deps:
            return Deps.union(*[group_union(d, Groups.from_matrix(tg.group_matrix(k))) for tg in tgs])
    else:
        free = sorted(set(dims.scatter_dims_to_operand_dims))
        ctx.warn(op, f"scatter indices are not known constants: updates may land anywhere along dimension(s) "
                     f"{free} and never replace (conservative)")
        red_shape = tuple(1 if d in free else int(s) for d, s in enumerate(shape))
        k_red = num_elements(red_shape)
        tg = scatter_targets(red_shape, np.zeros(indices.shape, np.int64), updates[0].shape, dims, free_dims=free)
        expand = np.broadcast_to(positions(red_shape), shape).ravel()
        possible, certain = tg.written(k_red)[expand], np.zeros(k, bool)
        group = tg.group_matrix(k_red)

        def scattered(d: Deps) -> Deps:
            return group_union(d, Groups.from_matrix(group)).gather_rows(expand)

    out = []
    for j in range(n):
        parts = [inputs[i].deps for i in body.reads_inputs[j]]
        parts += [scattered(updates[u].deps) for u in body.reads_updates[j] if not updates[u].deps.is_empty]
        parts += [ctx.value(v).deps.reduce_all().broadcast_row(k) for v in body.outer[j]]
        kept = inputs[j].deps.mask_rows(~certain)
        if parts:
            out.append(Deps.union(kept, Deps.union(*parts).mask_rows(possible)))
        else:
            out.append(kept)
    return out


@fold_rule("stablehlo.scatter")
def _scatter_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    """Fold a scatter whose body is recognized (replace, keep, or one commutative combiner), when the result
    does not depend on implementation choices (partly out-of-bounds windows, duplicate-order effects)."""
    n = (len(consts) - 1) // 2
    inputs, indices, updates = consts[:n], consts[n], consts[n + 1:]
    body = _BodySummary(op, n)
    if any(kd is None for kd in body.kind):
        raise NotFoldable
    tg = scatter_targets(inputs[0].shape, indices, updates[0].shape, ScatterDims.from_op(op))
    if not np.array_equal(tg.target >= 0, tg.certain):
        raise NotFoldable  # a partly out-of-bounds window: the spec and XLA disagree
    t = tg.target[tg.certain]
    order = np.argsort(t, kind="stable")
    ts = t[order]
    dup = ts[1:] == ts[:-1]
    out = []
    for j in range(n):
        res = np.array(inputs[j], copy=True).ravel()
        u = np.ascontiguousarray(updates[j]).ravel()[tg.certain]
        kind = body.kind[j]
        if kind == "replace":
            us = u[order]
            if dup.any() and not np.array_equal(us[1:][dup], us[:-1][dup]):
                raise NotFoldable  # which duplicate wins is implementation defined
            res[t] = u
        elif kind != "keep":
            if dup.any() and is_float(res.dtype) and kind in (np.add, np.multiply):  # (bfloat16 too)
                _check_exact_accumulation(res, t, u, kind)
            kind.at(res, t, u)
        out.append(res.reshape(inputs[j].shape))
    return out


def _check_exact_accumulation(res, t, u, ufunc):
    """Floating-point sums over duplicate indices depend on the order unless every partial result is exact:
    fold only integer-valued additions well inside the mantissa there."""
    if ufunc is not np.add:
        raise NotFoldable
    counts = np.bincount(t, minlength=len(res))
    many = counts[t] > 1
    vals = np.concatenate([res[t[many]], u[many]])
    if not np.all(np.isfinite(vals)) or not np.all(vals == np.round(vals)):
        raise NotFoldable
    import ml_dtypes  # (np.finfo refuses bfloat16)

    if np.abs(vals).astype(np.float64).sum() >= 2.0 ** ml_dtypes.finfo(np.real(vals).dtype).nmant:
        raise NotFoldable


# ====================================================================== trust (folding/exactness.py)
@error_rule("stablehlo.gather", "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice",
            "stablehlo.torch_index_select")
def _moved(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """Gathers and slices copy elements (their indices are integers, hence exact)."""
    data = (0, 1) if op.operation.name == "stablehlo.dynamic_update_slice" else (0,)
    return moved_uncertainty(ctx, op, args, data=data)


@error_rule("stablehlo.scatter")
def _scatter_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§scatter: replaced and kept elements carry their source's bound; a combiner is one more node per
    update — ``max``/``min`` keep the largest bound, ``add`` is a sum (exact on one grid, see
    :func:`~stablehlo_sparsity.analysis.folding.exactness.sum_is_exact`), any other combiner is trusted only on
    exact operands."""
    n = (len(args) - 1) // 2
    inputs, indices, updates = args[:n], args[n], args[n + 1:]
    body = _BodySummary(op, n)
    assert indices.const is not None  # error rules run on folded values
    tg = scatter_targets(inputs[0].shape, indices.const, updates[0].shape, ScatterDims.from_op(op))
    t = tg.target[tg.certain]
    out: list[Uncertainty | None] = []
    for j, c in enumerate(consts):
        x, u, kind = inputs[j], updates[j], body.kind[j]
        exact_in = x.is_exact and u.is_exact
        if not is_float(c.dtype):
            if not exact_in:
                raise Undecided
            out.append(None)
            continue
        ex = error_array(x).ravel().copy()
        eu = error_array(u).ravel()[tg.certain]
        if kind == "keep":
            err = ex
        elif kind == "replace":
            ex[t] = eu
            err = ex
        elif kind in (np.maximum, np.minimum):
            np.maximum.at(ex, t, eu)
            err = ex
            hit = np.zeros(ex.shape, bool)
            hit[t] = True
            err = np.where(hit & (np.asarray(c).ravel() == 0), np.maximum(err, smallest_normal(c.dtype)), err)
        elif kind is np.add:
            leaf = np.abs(np.asarray(x.const).ravel()).astype(np.float64)
            np.add.at(leaf, t, np.abs(np.asarray(u.const).ravel()[tg.certain]).astype(np.float64))
            count = np.ones(leaf.shape, np.int64)
            np.add.at(count, t, 1)
            low = lowest_bit_exponent(np.asarray(x.const).ravel()).copy()
            np.minimum.at(low, t, lowest_bit_exponent(np.asarray(u.const).ravel()[tg.certain]))
            tree = AddTree(leaf, int(np.max(count, initial=1)), low)
            np.add.at(ex, t, eu)
            exact = ((count == 1) | sum_is_exact(tree, c.dtype)) & (ex == 0)
            err = np.where(exact, 0.0, ex + sum_rounding(tree, c.dtype))
        elif exact_in:
            err = np.zeros(ex.shape)
        else:
            out.append(unknown_float(c))
            continue
        out.append(finalize(c, np.asarray(err).reshape(c.shape)))
    return out
