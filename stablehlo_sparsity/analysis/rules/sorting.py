"""Sorting: §sort and ``chlo.top_k``.

§sort permutes each 1-D slice along ``dimension`` of all operands together, by a permutation the
comparator computes from operand values.  The permutation is piecewise constant in those values (it only
changes where the comparator flips: a zero derivative), so output ``j`` at position ``p`` is
``operand_j[perm[p]]`` with ``perm`` locally fixed:

* its derivative is one element of operand ``j``'s slice — never an element of another operand, whatever
  the comparator reads.  Globally, any element of the slice can land at ``p``, so::

      results[j][…, p, …] = ∪_q operands[j][…, q, …]          (exact when the keys are unknown)

* when every operand the comparator reads is a known constant, the permutation is known: it is computed
  (vectorized, below) and output ``j`` is operand ``j``'s rows in that order — exact, no slice union.
  Sorting values by a constant key, or an ``argsort`` of constants, stay precise.

Integer outputs (``argsort``'s indices) have empty index sets anyway.

The permutation of a constant slice is computed without a Python loop over elements: the comparator
(an elementwise body) is evaluated once on all ordered pairs ``(x_i, x_j)`` of each slice, giving
``less[i, j]``; the stable position of ``i`` is ``#{j : less[j, i]} + #{j < i : neither less[i, j] nor
less[j, i]}``.  A comparator that is not a strict weak order gives positions that are not a permutation —
then nothing is concluded (the slice union / no folding).  The pair tables are capped at
:data:`MAX_PAIRS` entries (and ``options.max_fold_elements``).

``chlo.top_k(x, k)`` (what ``jax.lax.top_k`` emits): the ``k`` largest along the last dimension — each
value depends on its whole row (exact), the indices are integers.  Constant operands fold.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import bool_attr, int_attr
from ...lattice import slice_union
from ..values import AbstractValue
from ..folding.exactness import Uncertainty, Undecided, error_array, is_float
from ..values import TensorType
from ...ir.helpers import region_captures, region_ops
from .reduction import eval_body_np, eval_body_trusted
from .registry import EXACT, VALUE_AWARE, NotFoldable, deps_rule, error_rule, fold_rule
from .registry import RuleContext, Op, DepsResult, ErrorResult, FoldResult  # the rule contract


#: Cap on the comparator's pair table (each of its ops makes an array this big).
MAX_PAIRS = 1_000_000


# ---------------------------------------------------------------- the permutation of known keys
def _comparator_reads(region, k: int) -> list[int]:
    """Operands whose block arguments (``2i``, ``2i+1``) the comparator uses."""
    bargs = list(list(region.blocks)[0].arguments)
    used = {v for op in region_ops(region) for v in op.operands}
    return [i for i in range(k) if bargs[2 * i] in used or bargs[2 * i + 1] in used]


def sort_permutation(ctx: RuleContext, op: Op,
                     keys: dict[int, AbstractValue], shape, dim: int, k: int) -> np.ndarray | None:
    """Source position of every output element along ``dim`` (``shape`` moved so ``dim`` is last:
    ``(B, m)``), computed from the known operands ``keys`` the comparator reads; ``None`` if not certain.

    Certain means: every backend orders the slice this way.  With uncertain float keys
    (folding/exactness.py) the comparator is evaluated with error bounds, and one undecided pair leaves the
    order unknown; a sort that is not stable leaves the order of ties to the backend, so ties make it
    unknown too."""
    shape = tuple(shape)
    m = shape[dim]
    b = int(np.prod(shape, dtype=np.int64)) // max(m, 1)
    if b * m * m > min(ctx.options.max_fold_elements, MAX_PAIRS):
        return None
    region = op.regions[0]
    trusted = all(keys[i].is_exact for i in keys) and all(
        ctx.value(v).uncertainty is None for v in region_captures(region))
    pairs = []
    for i in range(k):
        if i in keys:
            x = np.moveaxis(np.asarray(keys[i].const), dim, -1).reshape(b, m)
            e = None if trusted or keys[i].uncertainty is None else np.moveaxis(
                error_array(keys[i]), dim, -1).reshape(b, m)
        else:  # not read by the comparator: any value of the right type
            x, e = np.zeros((b, m), dtype=_operand_dtype(ctx, op, i)), None
        for sel in ((slice(None), slice(None), None), (slice(None), None, slice(None))):
            xp = np.broadcast_to(x[sel], (b, m, m))
            if trusted:
                pairs.append(xp)
            else:
                u = None
                if e is not None:
                    # The diagonal compares an element with itself: the same bits on both sides, whatever
                    # its rounding — evaluated at the folded value (a strict weak order says False there,
                    # and the permutation check below catches a comparator that does not)
                    err = np.broadcast_to(e[sel], (b, m, m)).copy()
                    err[:, np.arange(m), np.arange(m)] = 0.0
                    u = Uncertainty(err)
                pairs.append(AbstractValue(TensorType(xp.shape, xp.dtype), None, xp, u))  # type: ignore[arg-type]
    try:
        with np.errstate(all="ignore"):
            if trusted:
                (less,) = eval_body_np(ctx, region, pairs)
            else:
                (less,) = (v.const for v in eval_body_trusted(ctx, region, pairs))
    except (NotFoldable, Undecided):
        return None
    less = np.broadcast_to(np.asarray(less, dtype=bool), (b, m, m))
    # less[b, i, j] = comparator(x_i, x_j) ("x_i before x_j").
    before = less.sum(axis=1)  # #{j : x_j before x_i}
    ties = ~less & ~np.swapaxes(less, 1, 2)
    ties &= np.tril(np.ones((m, m), dtype=bool), -1)[None, :, :].swapaxes(1, 2)  # keep j < i: [b, j, i]
    if ties.any() and not _is_stable(op):
        return None  # §sort: an unstable sort may put equal keys in either order
    pos = before + ties.sum(axis=1)
    if not np.array_equal(np.sort(pos, axis=1), np.broadcast_to(np.arange(m), (b, m))):
        return None  # not a strict weak order: no conclusion
    src = np.empty_like(pos)
    np.put_along_axis(src, pos, np.broadcast_to(np.arange(m), (b, m)), axis=1)
    return src  # (b, m): output slot p of slice b takes element src[b, p]


def _is_stable(op) -> bool:
    return bool_attr(op, "is_stable")


def _operand_dtype(ctx: RuleContext, op: Op, i):
    return ctx.result_types(op)[i].dtype


def _norm_dim(op, rank: int) -> int:
    d = int_attr(op, "dimension", 0)
    return d + rank if d < 0 else d


def _gather_map(shape, dim: int, src: np.ndarray) -> np.ndarray:
    """Flat operand index of every flat output element, for per-slice sources ``src`` of shape ``(B, m)``."""
    pos = np.moveaxis(np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape), dim, -1)
    moved_shape = pos.shape
    flat = np.take_along_axis(pos.reshape(src.shape), src, axis=1).reshape(moved_shape)
    return np.moveaxis(flat, -1, dim).ravel()


@deps_rule("stablehlo.sort", kind=VALUE_AWARE,
           note="each output: its operand's whole slice; known keys: the exact permutation")
def _sort(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§sort: output ``j`` ← operand ``j``'s rows by the known permutation, else its slice union."""
    k = len(args)
    shape = args[0].shape
    dim = _norm_dim(op, len(shape))
    reads = _comparator_reads(op.regions[0], k)
    src = None
    if all(args[i].const is not None for i in reads) and any(not a.deps.is_empty for a in args):
        src = sort_permutation(ctx, op, {i: args[i] for i in reads}, shape, dim, k)
    out = []
    for a in args:
        if a.deps.is_empty:
            out.append(a.deps)
        elif src is not None:
            out.append(a.deps.gather_rows(_gather_map(shape, dim, src)))
        else:
            out.append(slice_union(a.deps, shape, dim))
    return out


@fold_rule("stablehlo.sort")
def _sort_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    k = len(consts)
    shape = consts[0].shape
    dim = _norm_dim(op, len(shape))
    reads = _comparator_reads(op.regions[0], k)
    src = sort_permutation(ctx, op, {i: _exact_key(consts[i]) for i in reads}, shape, dim, k)
    if src is None:
        raise NotFoldable
    idx = _gather_map(shape, dim, src)
    return [np.asarray(c).ravel()[idx].reshape(shape) for c in consts]


def _exact_key(c) -> AbstractValue:
    c = np.asarray(c)
    return AbstractValue(TensorType(c.shape, c.dtype), None, c)  # type: ignore[arg-type]  # never read


@error_rule("stablehlo.sort")
def _sort_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """The fold took the order of the folded keys; it stands only if every backend orders them so (then
    each element carries its source's bound to its new place)."""
    if all(a.uncertainty is None for a in args):
        return [None] * len(consts)
    k = len(args)
    shape = args[0].shape
    dim = _norm_dim(op, len(shape))
    reads = _comparator_reads(op.regions[0], k)
    src = sort_permutation(ctx, op, {i: args[i] for i in reads}, shape, dim, k)
    if src is None:
        raise Undecided
    idx = _gather_map(shape, dim, src)
    return [None if a.uncertainty is None else Uncertainty(error_array(a).ravel()[idx].reshape(shape)) for a in args]


# ---------------------------------------------------------------- chlo.top_k
@deps_rule("chlo.top_k", kind=EXACT, note="each value: its whole row (the last dim)")
def _top_k(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """``chlo.top_k``: each of the ``k`` values depends on its whole last-dimension row; indices drop."""
    (x,) = args
    vt, it = ctx.result_types(op)
    if x.deps.is_empty:
        return [ctx.empty(vt.size), ctx.empty(it.size)]
    m = x.shape[-1]
    rows = x.size // max(m, 1)
    reduced = slice_union(x.deps, (rows, m), 1)  # every element of a row: the row's union
    kk = vt.shape[-1]
    first = (np.arange(rows, dtype=np.int64)[:, None] * m + np.zeros((1, kk), np.int64)).ravel()
    return [reduced.gather_rows(first), ctx.empty(it.size)]


@fold_rule("chlo.top_k")
def _top_k_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    """Descending, ties by lower index first (NaN inputs are not folded)."""
    (x,) = consts
    x = np.asarray(x)
    if is_float(x.dtype) and np.isnan(x).any():  # (bfloat16 too: NumPy kind "V")
        raise NotFoldable
    vt, it = ctx.result_types(op)
    kk = vt.shape[-1]
    m = x.shape[-1]
    # A stable ascending sort of the reversed row, reversed back: descending with ties by lower index.
    order = np.argsort(x[..., ::-1], axis=-1, kind="stable")[..., ::-1]
    idx = (m - 1 - order)[..., :kk]
    return [np.take_along_axis(x, idx, axis=-1), idx.astype(it.dtype)]


__all__ = ["sort_permutation"]


@error_rule("chlo.top_k")
def _top_k_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """The fold's choice and order stand only if the row's values are certainly ordered: sorted, every two
    neighbours are farther apart than their bounds (then all intervals are disjoint)."""
    (x,) = args
    values, indices = consts
    if x.uncertainty is None:
        return [None, None]
    v = np.asarray(x.const, np.float64)
    e = np.broadcast_to(error_array(x), v.shape)
    order = np.argsort(v, axis=-1, kind="stable")
    vs, es = np.take_along_axis(v, order, -1), np.take_along_axis(e, order, -1)
    with np.errstate(invalid="ignore"):
        apart = (vs[..., 1:] - vs[..., :-1]) > (es[..., 1:] + es[..., :-1])
        both_exact = (es[..., 1:] == 0) & (es[..., :-1] == 0)
    if not np.all(apart | both_exact):
        raise Undecided
    moved = np.take_along_axis(e, np.asarray(indices, np.int64), -1)
    return [Uncertainty(moved) if np.any(moved) else None, None]
