"""Materialization: any rows to one canonical CSR, block by block, within the nonzero budget.

A :class:`RowSource` describes rows without holding them: ``bounds(lo, hi)`` (entries per row, an upper bound;
exact when :attr:`RowSource.exact`) and ``block(lo, hi)`` (rows ``lo:hi`` as canonical ``(indptr, indices)``).
:class:`_PartsRows` is the source of a lazy union of index and CSR parts (:mod:`.lazy_parts`); the group
unions of :mod:`~stablehlo_sparsity.lattice.groups` have sources of their own.

:func:`materialize` stacks sources top to bottom in two passes over row blocks of about
:data:`BLOCK_ENTRIES` entries: the exact counts first (into the row-pointer array itself; the budget is checked
on the exact total), then the columns written in place into one array of the exact size.  Every temporary is
O(block): the peak of a materialization is its output (about 5 bytes per nonzero) plus its inputs — what
``benchmarks/memory.py`` measures and ``budget.BYTES_PER_NONZERO`` quotes.  Two shortcuts skip the blocks:
sources that are each one small materialized CSR are concatenated, and few rows of few entries take the one
sort of :mod:`.small_unions`.
"""

from __future__ import annotations

import heapq
from typing import Any, Callable, Sequence

import numpy as np
import scipy.sparse as sp

from ...dtypes import INT32_LIMIT, index_dtype
from ..budget import check_nnz
from . import small_unions
from .csr import (CsrPart, _col_dtype, _empty_csr, _gather_block, _rowmap_lengths, csr_of_keys, distinct_sorted,
                  make_csr, rows_of_keys)
from .index_parts import IndexPart, _index_block, _index_columns, _index_counts
from .small_unions import _part_entries

__all__ = ["RowSource", "materialize", "ROW_UNIONS", "merge_smallest_first", "BLOCK_ENTRIES", "PLAN_ROWS",
           "CACHED_BLOCK_ENTRIES", "SMALL_MATERIALIZE_ROWS"]

#: Materialization walks the rows in blocks of about this many entries, so every temporary is O(block): the
#: peak is the output itself (``int32`` columns, one bool per entry, ``int32`` row pointers) plus the inputs.
BLOCK_ENTRIES = 1 << 16

#: Rows per chunk when planning the blocks (the per-row bounds of one chunk at a time, never of every row).
PLAN_ROWS = 1 << 16


#: Faster merges of one row's sorted column arrays, tried in order by :func:`_merge_blocks` before SciPy's:
#: ``fn(rows) -> sorted union | None`` (``None``: not applicable).  The second-order lattice registers one (a
#: compiled merge of ``int64`` pair codes, with no data array: :mod:`stablehlo_sparsity.analysis.second_order.
#: sorted_union`).
ROW_UNIONS: list = []

#: :func:`_merge_blocks` merges blocks of at most this many entries in all by one sort of keys.
SMALL_MERGE_ENTRIES = 4096


def merge_smallest_first(items: list, size: Callable[[Any], int], merge: Callable[[Any, Any], Any]):
    """``items`` (at least one) merged pairwise by ``merge``, the two smallest by ``size`` first (Huffman order: one
    big item plus many small ones costs one pass over the big one); the last merge's result."""
    heap = [(size(x), i, x) for i, x in enumerate(items)]
    heapq.heapify(heap)
    tick = len(heap)
    while len(heap) > 1:
        _, _, x = heapq.heappop(heap)
        _, _, y = heapq.heappop(heap)
        z = merge(x, y)
        heapq.heappush(heap, (size(z), tick, z))
        tick += 1
    return heap[0][2]


def _merge_blocks(blocks, b: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Union of canonical CSR blocks of ``b`` rows each: SciPy's compiled merge of sorted rows (``A + B`` on
    bool is ``A ∨ B``; linear in the entries, several times faster than sorting (row, col) keys), the two
    smallest first (:func:`merge_smallest_first`); one long row by :data:`ROW_UNIONS` first."""
    blocks = [blk for blk in blocks if len(blk[1])]
    if not blocks:
        return np.zeros(b + 1, np.int64), np.zeros(0, _col_dtype(n))
    if len(blocks) == 1:
        return blocks[0]
    if sum(len(ind) for _, ind in blocks) <= SMALL_MERGE_ENTRIES and b * n < 1 << 62:
        # a few entries: one sort of ``row · n + column`` keys costs less than SciPy's per-call overhead
        rows = np.arange(b, dtype=np.int64)
        key = np.concatenate([np.repeat(rows, np.diff(ptr)) * n + ind for ptr, ind in blocks])
        key.sort()
        indptr, cols = rows_of_keys(distinct_sorted(key), b, n)
        return indptr, cols.astype(_col_dtype(n), copy=False)
    if b == 1:
        # one long row (a scalar value's parts): the columns merged alone, no data array (:data:`ROW_UNIONS`)
        for union in ROW_UNIONS:
            merged = union([ind for _, ind in blocks])
            if merged is not None:
                return np.array([0, len(merged)], np.int64), merged
    m = merge_smallest_first([make_csr(ptr, ind, b, n) for ptr, ind in blocks], lambda x: x.nnz,
                             lambda x, y: x + y)
    if not m.has_sorted_indices:
        m.sort_indices()
    return m.indptr.astype(np.int64), m.indices


class RowSource:
    """Rows to materialize, block by block: ``bounds(lo, hi)`` (int64 entries per row, an upper bound — exact
    when :attr:`exact`) and ``block(lo, hi)`` (the canonical rows ``lo:hi`` as ``(local indptr, indices)``)."""

    exact = False

    def __init__(self, rows: int):
        self.rows = int(rows)

    def bounds(self, lo: int, hi: int) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def block(self, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - abstract
        raise NotImplementedError

    def counts(self, lo: int, hi: int) -> np.ndarray:
        """Exact entries per row (the first pass of :func:`materialize`)."""
        return np.diff(self.block(lo, hi)[0])

    def columns(self, lo: int, hi: int) -> np.ndarray:
        """The columns of rows ``lo:hi``, row after row (the second pass)."""
        return self.block(lo, hi)[1]


class _PartsRows(RowSource):
    """The union of lazy parts."""

    def __init__(self, parts, rows: int, n: int):
        super().__init__(rows)
        self.n = n
        self.index_parts = [p for p in parts if isinstance(p, IndexPart)]
        self.csr_parts = [p for p in parts if isinstance(p, CsrPart)]
        # one part: its row lengths are the counts, and nothing needs merging
        self.exact = len(self.index_parts) + len(self.csr_parts) == 1

    def bounds(self, lo, hi):
        ub = np.zeros(hi - lo, np.int64)
        for p in self.index_parts:
            ub += p.cols[lo:hi] >= 0
        for p in self.csr_parts:
            if p.rowmap is None:
                ub += np.diff(p.base.indptr[lo:hi + 1])
            else:
                ub += _rowmap_lengths(p.base.indptr, p.rowmap[lo:hi])
        return ub

    def counts(self, lo, hi):
        if self.csr_parts or not self.index_parts:
            return super().counts(lo, hi)
        return _index_counts([p.cols[lo:hi] for p in self.index_parts])

    def columns(self, lo, hi):
        if self.csr_parts or not self.index_parts:
            return super().columns(lo, hi)
        return _index_columns([p.cols[lo:hi] for p in self.index_parts])

    def block(self, lo, hi):
        blocks = []
        if self.index_parts:
            blocks.append(_index_block([p.cols[lo:hi] for p in self.index_parts], hi - lo))
        for p in self.csr_parts:
            if p.rowmap is None:
                ptr = p.base.indptr[lo:hi + 1].astype(np.int64)
                blocks.append((ptr - ptr[0], p.base.indices[ptr[0]:ptr[-1]]))
            else:
                blocks.append(_gather_block(p.base, p.rowmap[lo:hi]))
        return _merge_blocks(blocks, hi - lo, self.n)


def _plan_blocks(source: RowSource) -> list[int]:
    """Row cuts ``[0, …, rows]``: each block holds at most about :data:`BLOCK_ENTRIES` entries (a longer row is a
    block of its own).  Works through the rows :data:`PLAN_ROWS` at a time: O(chunk) memory."""
    k = source.rows
    cuts = [0]
    total = 0
    prev = 0
    for lo in range(0, k, PLAN_ROWS):
        hi = min(k, lo + PLAN_ROWS)
        ub = source.bounds(lo, hi)
        before = np.cumsum(ub)
        before -= ub
        before += total
        block = before // BLOCK_ENTRIES
        change = np.flatnonzero(np.diff(block, prepend=prev))
        cuts.extend((lo + change).tolist())
        prev = int(block[-1])
        total += int(ub.sum())
    if cuts[-1] != k:
        cuts.append(k)
    return cuts


#: :func:`materialize` keeps the merged blocks of its counting pass for its writing pass, up to this many
#: entries in all: within it every block is merged once instead of twice, and past it the blocks are merged
#: again as they are written — the extra memory is bounded whatever the output's size (at most the output's own
#: size, and 2²⁵ entries: a scatter's 1.5·10⁷-entry result at n = 10⁶ merged once is 0.3 s faster; raised from
#: 2²² for issue 48).
CACHED_BLOCK_ENTRIES = 1 << 25


def _stack_materialized(sources: Sequence[RowSource], k: int, n: int) -> sp.csr_array | None:
    """:func:`materialize` of sources that are each one materialized CSR, of at most :data:`BLOCK_ENTRIES`
    entries in all (a written-out program's output: one small row per residual), by two concatenations;
    ``None`` for anything else."""
    mats = []
    total = 0
    for s in sources:
        if type(s) is not _PartsRows or not s.exact or not s.csr_parts:
            return None
        (p,) = s.csr_parts
        if p.rowmap is not None or type(p) is not CsrPart:
            return None
        total += p.base.nnz
        if total > BLOCK_ENTRIES:
            return None
        mats.append(p.base)
    if not mats:
        return None
    indptr = np.zeros(k + 1, np.int64)
    np.cumsum(np.concatenate([np.diff(m.indptr) for m in mats]), out=indptr[1:])
    check_nnz(int(indptr[-1]))
    return make_csr(indptr, np.concatenate([m.indices for m in mats]).astype(np.int64, copy=False), k, n)


#: :func:`materialize` stacks sources of at most this many rows and
#: :data:`~.small_unions.SMALL_UNION_ENTRIES` entries by one sort of ``row · n + column`` keys (a small
#: program's values), without planning blocks.
SMALL_MATERIALIZE_ROWS = 4096


def _small_materialized(sources: Sequence[RowSource], k: int, n: int) -> sp.csr_array | None:
    """:func:`materialize` of few rows and entries (see :data:`SMALL_MATERIALIZE_ROWS`) as
    :func:`~.small_unions._small_union` does it: the entries of every part as keys, one stable sort (the parts
    are sorted runs), repeats dropped; ``None`` for anything larger."""
    if k > SMALL_MATERIALIZE_ROWS or k * n >= 1 << 62 or any(type(s) is not _PartsRows for s in sources):
        return None
    if sum(int(s.bounds(0, s.rows).sum()) for s in sources) > small_unions.SMALL_UNION_ENTRIES:
        return None
    keys = []
    off = 0
    for s in sources:
        assert isinstance(s, _PartsRows)
        parts: list[IndexPart | CsrPart] = [*s.index_parts, *s.csr_parts]
        for p in parts:
            rows, cols = _part_entries(p, s.rows)
            keys.append((rows + off) * n + cols)
        off += s.rows
    if not keys:
        return _empty_csr(k, n)
    return csr_of_keys(np.concatenate(keys), k, n)


def materialize(sources: Sequence[RowSource], n: int) -> sp.csr_array:
    """One canonical bool CSR of the sources' rows stacked top to bottom.

    Two passes over row blocks: the per-row counts first (into the row-pointer array itself), then the columns
    written in place into one array of the exact size — nothing of the output's size is allocated twice, and
    every temporary is O(:data:`BLOCK_ENTRIES`).  A source whose bounds are exact skips the counting merge; the
    merged blocks of the first :data:`CACHED_BLOCK_ENTRIES` entries are kept for the second pass.  One row of
    several parts is one block: the merge's output is the result's column array."""
    k = sum(s.rows for s in sources)
    stacked = _stack_materialized(sources, k, n)
    if stacked is not None:
        return stacked
    small = _small_materialized(sources, k, n)
    if small is not None:
        return small
    if k == 1 and len(sources) == 1 and not sources[0].exact:
        # one row (a scalar value's parts): its merged block is the output, not copied into a second array
        ptr, cols = sources[0].block(0, 1)
        check_nnz(len(cols))
        return make_csr(np.asarray(ptr, np.int64), cols, 1, n) if len(cols) else _empty_csr(1, n)
    wide = k >= INT32_LIMIT or n >= INT32_LIMIT
    indptr: np.ndarray = np.zeros(k + 1, np.int64 if wide else np.int32)
    plans = []
    kept: dict[tuple[int, int], np.ndarray] = {}
    room = CACHED_BLOCK_ENTRIES
    off = 0
    for si, s in enumerate(sources):
        cuts = _plan_blocks(s)
        plans.append(cuts)
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            if s.exact:
                indptr[1 + off + lo:1 + off + hi] = s.bounds(lo, hi)
            elif room > 0:
                ptr, cols = s.block(lo, hi)
                indptr[1 + off + lo:1 + off + hi] = np.diff(ptr)
                kept[(si, lo)] = cols
                room -= len(cols)
            else:
                indptr[1 + off + lo:1 + off + hi] = s.counts(lo, hi)
        off += s.rows
    nnz = int(indptr.sum(dtype=np.int64))
    if nnz == 0:
        return _empty_csr(k, n)
    check_nnz(nnz)
    idx_dtype = index_dtype(n, nnz)
    if indptr.dtype != idx_dtype:
        indptr = indptr.astype(idx_dtype)
    np.cumsum(indptr, out=indptr)
    indices: np.ndarray = np.empty(nnz, idx_dtype)
    off = 0
    for si, (s, cuts) in enumerate(zip(sources, plans)):
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            cols = kept.pop((si, lo)) if (si, lo) in kept else s.columns(lo, hi)
            indices[int(indptr[off + lo]):int(indptr[off + hi])] = cols
        off += s.rows
    return make_csr(indptr, indices, k, n)
