"""The index-set lattice, vectorized.

For a value with ``k`` elements in a program with ``n`` flat inputs, its index sets form one sparse boolean
matrix ``S`` of shape ``(k, n)``: row ``e`` holds the inputs that element ``e`` may depend on.  The join is
the elementwise union (``S_a ∨ S_b``), the bottom is the empty matrix, and every rule is monotone.

Worked examples (one row per element, columns are inputs)::

    S_a = [{0}, {1}]          S_b = [{1}, {}]
    S_a ∨ S_b            = [{0, 1}, {1}]
    gather_rows(S_a, [1, -1, 0]) = [{1}, {}, {0}]          (-1 ⇒ empty row)
    group_union(S_a ∨ S_b, [[0, 1]]) = [{0, 1}]             (each output unions a group of rows, groups.py)

Representation.  A :class:`Deps` is a *lazy union of parts*.  A part is either

* an :class:`IndexPart` — every row has at most one dependency, stored as one column index per row (``int32``
  whenever it fits, ``-1`` = none); the inputs themselves and everything reached from them by structural ops
  look like this;
* a :class:`CsrPart` — a canonical ``scipy.sparse.csr_array`` of bool, optionally seen through a row map.

Elementwise unions just concatenate part lists (O(#parts), independent of the tensor size) and structural
ops compose row maps (O(k) integer work per part); the matrix is only materialized when a rule needs whole
rows (a reduction, a contraction with a large group) or at the end.  Materialization is vectorized NumPy:
no Python loop over elements anywhere.

Memory.  :func:`materialize` walks the rows in blocks of :data:`BLOCK_ENTRIES` entries, twice: it counts each
row's entries into the row-pointer array, checks the nonzero budget on the exact count, then writes the
columns in place into one ``int32`` array of the exact size.  Every temporary is O(block), so the peak of a
materialization is its output (about 5 bytes per nonzero) plus its inputs — what ``benchmarks/memory.py``
measures and ``irtools.BYTES_PER_NONZERO`` quotes.
"""

from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

import contextlib
import contextvars

import numpy as np
import scipy.sparse as sp

from ..dtypes import INT32_LIMIT, index_dtype
from .budget import too_large

__all__ = ["Deps", "IndexPart", "CsrPart", "csr_from_parts", "gather_csr_rows", "make_csr", "materialize", "RowSource",
           "BLOCK_ENTRIES", "MAX_LAZY_PARTS", "SMALL_ROWS", "nnz_budget", "check_nnz", "is_arange", "as_index",
           "COMPACT_MOVES", "register_compact_moves", "SORTING_NETWORKS", "sorted_columns", "distinct_entries"]

#: Above this many columns, and 16 per entry, :meth:`Deps.reduce_all` sorts the entries instead of marking a
#: vector of ``n`` flags (the second-order lattice has ``n + n²`` columns).
SPARSE_REDUCE_COLUMNS = 1 << 22

#: Faster ways to the sorted distinct columns of a wide column space, tried in order by the sorted
#: :meth:`Deps.reduce_all`: ``fn(columns int64, n) -> sorted distinct columns | None`` (``None``: not
#: applicable).  The second-order lattice registers one that knows its pair encoding.
WIDE_DISTINCT: list = []

#: Above this many parts a union is materialized into a single CSR part, to bound the cost of later moves.
MAX_LAZY_PARTS = 24

#: Unions of values with at most this many rows are materialized at once: it is cheap, and lazy parts of a
#: small value (a loop's hidden state) otherwise multiply into everything built from it (2x on a scan).
SMALL_ROWS = 64

#: A small value's union of at most this many index parts (shifted slices of the inputs: a stencil) stays lazy:
#: later moves gather index parts cheaply, and it is materialized once, when something needs its matrix.
LAZY_INDEX_PARTS = 8

#: Moves in a compact form another module knows, registered with :func:`register_compact_moves` (the
#: package's ``__init__`` registers :mod:`.runs`' run-length rows):
#: ``"union": fn(parts, rows, n, materializing) -> part | None`` (one part equal to the union of several;
#: ``materializing``: called by :meth:`Deps.to_csr`, which keeps that part) and
#: ``"vstack": fn(items) -> Deps | None``.  ``None`` leaves the move to the code below.
COMPACT_MOVES: dict = {}


def register_compact_moves(*, union=None, vstack=None) -> None:
    """Plug a compact representation's ``union`` and ``vstack`` into the lattice (see :data:`COMPACT_MOVES`)."""
    if union is not None:
        COMPACT_MOVES["union"] = union
    if vstack is not None:
        COMPACT_MOVES["vstack"] = vstack


#: The nonzero budget of the running analysis (set by the interpreter from ``AnalysisOptions.max_pattern_nnz``).
_NNZ_BUDGET: contextvars.ContextVar[int | None] = contextvars.ContextVar("nnz_budget", default=None)


@contextlib.contextmanager
def nnz_budget(limit: int | None):
    """Within this block, materializing a lattice with more than ``limit`` nonzeros raises
    :class:`PatternTooLargeError` *before* the arrays are allocated."""
    token = _NNZ_BUDGET.set(limit)
    try:
        yield
    finally:
        _NNZ_BUDGET.reset(token)


def check_nnz(nnz: int, what: str = "a value's index sets") -> None:
    """Refuse an allocation of ``nnz`` pattern entries above the active budget."""
    limit = _NNZ_BUDGET.get()
    if limit is not None and nnz > limit:
        raise too_large(f"{what} would need", nnz, limit, unit="nonzeros")


def _col_dtype(n: int):
    """Column indices are int32 whenever they fit: half the memory traffic of int64."""
    return index_dtype(n)


def as_index(a) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.int64)


def _sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` by sort + neighbour mask: NumPy 2.x's hash-based ``np.unique`` is ~20× slower here."""
    a = np.sort(a)
    if len(a) < 2:
        return a
    keep = np.empty(len(a), dtype=bool)
    keep[0] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _empty_csr(k: int, n: int) -> sp.csr_array:
    return make_csr(np.zeros(k + 1, np.int64), np.zeros(0, np.int64), k, n)


def _bare_csr(k: int, n: int) -> sp.csr_array:
    """An empty-shelled ``(k, n)`` CSR array: SciPy's constructor minus its checks and its three empty arrays
    (about 20 µs a call, which dominates the analysis of programs made of many scalar ops).  The fields the
    constructor sets are set by :func:`make_csr`; :data:`_FAST_SHELL` says whether this SciPy accepts it."""
    m = sp.csr_array.__new__(sp.csr_array)
    m._shape = (int(k), int(n))
    m.maxprint = 50
    return m


def _shell_works() -> bool:
    """The fast shell gives the same array as SciPy's constructor (checked once, on this SciPy)."""
    try:
        m = _bare_csr(2, 3)
        m.indptr = np.array([0, 1, 2], np.int32)
        m.indices = np.array([2, 0], np.int32)
        m.data = np.ones(2, bool)
        ref = sp.csr_array((np.ones(2, bool), np.array([2, 0]), np.array([0, 1, 2])), shape=(2, 3))
        return bool(m.shape == (2, 3) and m.nnz == 2 and ((m + ref) != ref).nnz == 0
                    and np.array_equal(m.toarray(), ref.toarray()) and np.array_equal(m.T.toarray(), ref.T.toarray()))
    except Exception:  # pragma: no cover - a SciPy whose internals moved: use its constructor
        return False


_FAST_SHELL = _shell_works()


def make_csr(indptr: np.ndarray, indices: np.ndarray, k: int, n: int, canonical: bool = True) -> sp.csr_array:
    """Build a bool CSR array without scipy's O(nnz) validation (the inputs are ours and well formed).

    Index arrays already of the right dtype are used as they are (not copied)."""
    idx_dtype = index_dtype(n, int(indptr[-1]) if len(indptr) else 0)
    m = _bare_csr(k, n) if _FAST_SHELL else sp.csr_array((k, n), dtype=bool)
    m.indptr = indptr.astype(idx_dtype, copy=False)
    m.indices = indices.astype(idx_dtype, copy=False)
    m.data = data = np.empty(len(indices), dtype=bool)
    data.fill(True)  # (np.ones is a Python function around these two)
    if canonical:
        m.has_sorted_indices = True
        m.has_canonical_format = True
    return m


@dataclass(frozen=True, eq=False)
class IndexPart:
    """Each row depends on at most one input: ``cols[i]`` (``-1`` = no dependency)."""

    cols: np.ndarray

    def gather(self, idx: np.ndarray, has_neg: bool = True) -> "IndexPart":
        if not has_neg:
            return IndexPart(self.cols[idx])
        return IndexPart(np.where(idx >= 0, self.cols[np.where(idx >= 0, idx, 0)], -1))

    def nnz_upper(self) -> int:
        return len(self.cols)


@dataclass(frozen=True, eq=False)
class CsrPart:
    """Rows of a canonical bool CSR ``base`` seen through ``rowmap`` (``None`` = identity, ``-1`` = empty)."""

    base: sp.csr_array
    rowmap: np.ndarray | None = None

    def gather(self, idx: np.ndarray, has_neg: bool = True) -> "CsrPart":
        if self.rowmap is None:
            return CsrPart(self.base, idx)
        if not has_neg:
            return CsrPart(self.base, self.rowmap[idx])
        return CsrPart(self.base, np.where(idx >= 0, self.rowmap[np.where(idx >= 0, idx, 0)], -1))

    def to_csr(self) -> sp.csr_array:
        if self.rowmap is None:
            return self.base
        return gather_csr_rows(self.base, self.rowmap)

    def nnz_upper(self) -> int:
        return self.base.nnz if self.rowmap is None else self.base.nnz * 2


# ---------------------------------------------------------------------------------------------- materialization
#: Materialization walks the rows in blocks of about this many entries, so every temporary is O(block): the
#: peak is the output itself (``int32`` columns, one bool per entry, ``int32`` row pointers) plus the inputs.
BLOCK_ENTRIES = 1 << 16

#: Rows per chunk when planning the blocks (the per-row bounds of one chunk at a time, never of every row).
PLAN_ROWS = 1 << 16

#: Gathered rows this long on average are copied as slices, one per row (at most BLOCK_ENTRIES / LONG_ROW
#: rows per block), rather than entry by entry.
LONG_ROW = 256


def _rowmap_lengths(indptr: np.ndarray, rowmap: np.ndarray) -> np.ndarray:
    """Row lengths (int64) of a CSR seen through a row map (``-1`` = empty row)."""
    valid = rowmap >= 0
    safe = np.where(valid, rowmap, 0)
    return np.where(valid, indptr[safe + 1].astype(np.int64) - indptr[safe], 0)


def _gather_block(m: sp.csr_array, rowmap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ``rowmap`` of ``m`` (``-1`` = empty): ``(indptr int64, indices)``, temporaries of the result's size."""
    lengths = _rowmap_lengths(m.indptr, rowmap)
    indptr = np.zeros(len(rowmap) + 1, np.int64)
    np.cumsum(lengths, out=indptr[1:])
    total = int(indptr[-1])
    if total == 0:
        return indptr, m.indices[:0]
    if total >= LONG_ROW * len(rowmap):
        # long rows (a lazily broadcast dense row): one slice copy per row beats an index per entry
        out = np.empty(total, m.indices.dtype)
        src = m.indptr[np.maximum(rowmap, 0)]
        for i in np.flatnonzero(lengths).tolist():
            out[indptr[i]:indptr[i + 1]] = m.indices[src[i]:src[i] + lengths[i]]
        return indptr, out
    # every output slot's source: the start of its source row plus its offset within the row
    starts = np.where(rowmap >= 0, m.indptr[np.maximum(rowmap, 0)], 0).astype(np.int64) - indptr[:-1]
    src = np.repeat(starts, lengths)
    src += np.arange(total, dtype=np.int64)
    return indptr, m.indices[src]


def sorted_columns(cols_list: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The rows of the ``(b, p)`` matrix whose columns are ``cols_list``, sorted ascending — as ``p`` contiguous
    columns.  Up to 8 columns: a sorting network, each compare-exchange two vectorized passes into reused
    buffers (much cheaper than NumPy's per-row sort for a handful of parts); more: a row sort."""
    p = len(cols_list)
    if p >= len(SORTING_NETWORKS):
        mat = np.stack(cols_list, axis=1)
        mat.sort(axis=1)
        return [np.ascontiguousarray(mat[:, j]) for j in range(p)]
    dt = np.result_type(*cols_list)
    cols = [np.array(c, dtype=dt) for c in cols_list]  # working copies: the parts' arrays are never written
    spare = np.empty_like(cols[0])
    for i, j in SORTING_NETWORKS[p]:
        np.minimum(cols[i], cols[j], out=spare)
        np.maximum(cols[i], cols[j], out=cols[j])
        cols[i], spare = spare, cols[i]
    return cols


def distinct_entries(cols: Sequence[np.ndarray]) -> list[np.ndarray]:
    """For sorted columns: entry ``(r, j)`` is kept iff it is an input (``≥ 0``) not equal to its left
    neighbour."""
    keep = [cols[0] >= 0]
    for j in range(1, len(cols)):
        k = cols[j] >= 0
        k &= cols[j] != cols[j - 1]
        keep.append(k)
    return keep


def _index_counts(cols_list: Sequence[np.ndarray]) -> np.ndarray:
    """Per row, the number of distinct inputs among the index columns."""
    if len(cols_list) == 1:
        return (cols_list[0] >= 0).astype(np.int64)
    keep = distinct_entries(sorted_columns(cols_list))
    counts = keep[0].astype(np.int64)
    for k in keep[1:]:
        counts += k
    return counts


def _index_columns(cols_list: Sequence[np.ndarray]) -> np.ndarray:
    """The distinct inputs of every row, row after row, each row sorted."""
    if len(cols_list) == 1:
        c = cols_list[0]
        return c[c >= 0]
    cols = sorted_columns(cols_list)
    keep = distinct_entries(cols)
    return np.stack(cols, axis=1)[np.stack(keep, axis=1)]


def _index_block(cols_list: Sequence[np.ndarray], b: int) -> tuple[np.ndarray, np.ndarray]:
    """Union of index columns over ``b`` rows, sorted and de-duplicated per row: ``(indptr int64, indices)``."""
    indptr = np.zeros(b + 1, np.int64)
    np.cumsum(_index_counts(cols_list), out=indptr[1:])
    return indptr, _index_columns(cols_list)


def _dedup_sorted_rows(mat: np.ndarray, indptr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows of ``mat`` sorted ascending, ``-1`` = no entry: the distinct entries of each row."""
    keep = mat >= 0
    keep[:, 1:] &= mat[:, 1:] != mat[:, :-1]
    np.cumsum(np.count_nonzero(keep, axis=1), out=indptr[1:])
    return indptr, mat[keep]


#: Sorting networks for 0..8 wires (index = wire count), with the fewest comparators known (Knuth, TAOCP 5.3.4);
#: each is checked on every 0/1 input by the tests (the 0-1 principle).
SORTING_NETWORKS = [
    [], [],
    [(0, 1)],
    [(0, 2), (0, 1), (1, 2)],
    [(0, 1), (2, 3), (0, 2), (1, 3), (1, 2)],
    [(0, 3), (1, 4), (0, 2), (1, 3), (0, 1), (2, 4), (1, 2), (3, 4), (2, 3)],
    [(0, 5), (1, 3), (2, 4), (1, 2), (3, 4), (0, 3), (2, 5), (0, 1), (2, 3), (4, 5), (1, 2), (3, 4)],
    [(0, 6), (2, 3), (4, 5), (0, 2), (1, 4), (3, 6), (0, 1), (2, 5), (3, 4), (1, 2), (4, 6), (2, 3), (4, 5), (1, 2),
     (3, 4), (5, 6)],
    [(0, 2), (1, 3), (4, 6), (5, 7), (0, 4), (1, 5), (2, 6), (3, 7), (0, 1), (2, 3), (4, 5), (6, 7), (2, 4), (3, 5),
     (1, 4), (3, 6), (1, 2), (3, 4), (5, 6)],
]


def rows_of_keys(key: np.ndarray, k: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, columns)`` of ``k`` rows from sorted, distinct ``row · n + column`` keys."""
    at, cols = np.divmod(key, n)
    indptr = np.zeros(k + 1, np.int64)
    np.bincount(at, minlength=k).cumsum(out=indptr[1:])
    return indptr, cols


def csr_of_keys(key: np.ndarray, k: int, n: int, what: str = "a value's index sets") -> sp.csr_array:
    """The ``(k, n)`` canonical CSR of ``row · n + column`` keys in any order, repeats allowed: one stable sort
    (keys that come as a few sorted runs are merged in one pass), repeats dropped, the budget checked."""
    key = distinct_sorted(np.sort(key.astype(np.int64, copy=False), kind="stable"))
    check_nnz(len(key), what)
    indptr, cols = rows_of_keys(key, k, n)
    return make_csr(indptr, cols, k, n)


def _part_entries(p: "IndexPart | CsrPart", k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(row, column)`` entries of a part of ``k`` rows, row by row, each row's columns sorted."""
    if isinstance(p, IndexPart):
        live = p.cols >= 0
        return np.flatnonzero(live), p.cols[live]
    ptr, cols = (p.base.indptr.astype(np.int64), p.base.indices) if p.rowmap is None \
        else _gather_block(p.base, p.rowmap)
    return np.repeat(np.arange(k, dtype=np.int64), np.diff(ptr)), cols


#: :func:`_merge_blocks` merges blocks of at most this many entries in all by one sort of keys.
SMALL_MERGE_ENTRIES = 4096


def _merge_blocks(blocks, b: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Union of canonical CSR blocks of ``b`` rows each: SciPy's compiled merge of sorted rows (``A + B`` on
    bool is ``A ∨ B``; linear in the entries, several times faster than sorting (row, col) keys), the two
    smallest first (Huffman order: one big block plus many small ones costs one pass over the big one)."""
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
    heap = [(len(ind), i, make_csr(ptr, ind, b, n)) for i, (ptr, ind) in enumerate(blocks)]
    heapq.heapify(heap)
    tick = len(heap)
    while len(heap) > 1:
        _, _, x = heapq.heappop(heap)
        _, _, y = heapq.heappop(heap)
        z = x + y
        heapq.heappush(heap, (z.nnz, tick, z))
        tick += 1
    m = heap[0][2]
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
#: again as they are written — the extra memory is bounded whatever the output's size.
CACHED_BLOCK_ENTRIES = 1 << 22


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


#: :func:`materialize` stacks sources of at most this many rows and :data:`SMALL_UNION_ENTRIES` entries by one
#: sort of ``row · n + column`` keys (a small program's values), without planning blocks.
SMALL_MATERIALIZE_ROWS = 4096


def _small_materialized(sources: Sequence[RowSource], k: int, n: int) -> sp.csr_array | None:
    """:func:`materialize` of few rows and entries (see :data:`SMALL_MATERIALIZE_ROWS`) as :func:`_small_union`
    does it: the entries of every part as keys, one stable sort (the parts are sorted runs), repeats dropped;
    ``None`` for anything larger."""
    if k > SMALL_MATERIALIZE_ROWS or k * n >= 1 << 62 or any(type(s) is not _PartsRows for s in sources):
        return None
    if sum(int(s.bounds(0, s.rows).sum()) for s in sources) > SMALL_UNION_ENTRIES:
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
    merged blocks of the first :data:`CACHED_BLOCK_ENTRIES` entries are kept for the second pass."""
    k = sum(s.rows for s in sources)
    stacked = _stack_materialized(sources, k, n)
    if stacked is not None:
        return stacked
    small = _small_materialized(sources, k, n)
    if small is not None:
        return small
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


def gather_csr_rows(m: sp.csr_array, idx: np.ndarray) -> sp.csr_array:
    """Rows of ``m`` by an index map: ``out[i] = m[idx[i]]`` and ``out[i] = {}`` where ``idx[i] < 0``."""
    return csr_from_parts([CsrPart(m, np.asarray(idx))], len(idx), m.shape[1])


def csr_from_parts(parts: Sequence[IndexPart | CsrPart], k: int, n: int) -> sp.csr_array:
    """Materialize a union of parts into one canonical bool CSR matrix."""
    if not parts:
        return _empty_csr(k, n)
    if len(parts) == 1:
        (p,) = parts
        if isinstance(p, CsrPart) and p.rowmap is None:
            return p.base
        if isinstance(p, IndexPart) and len(p.cols) and int(p.cols.min()) >= 0:
            # one dependency per row: the columns are the CSR's indices as they are (shared, not copied)
            check_nnz(k)
            return make_csr(np.arange(k + 1, dtype=index_dtype(n, k)), np.ascontiguousarray(p.cols), k, n)
    if k <= SMALL_ROWS:
        small = _small_union(parts, k, n)
        if small is not None:
            return small
    return materialize([_PartsRows(parts, k, n)], n)


#: :func:`_small_union` handles unions of at most this many entries (before de-duplication).
SMALL_UNION_ENTRIES = 1 << 15


def _small_union(parts: Sequence[IndexPart | CsrPart], k: int, n: int) -> sp.csr_array | None:
    """The union of the parts of a value of few rows, as one sort of ``row · n + column`` keys (``None``: too
    many entries, or keys too wide for ``int64``).

    Each part lists its rows in order and each row's columns sorted, so the keys are a few sorted runs, which
    a stable sort (timsort) merges in one pass: for the many scalars of a program written out term by term,
    this replaces the block machinery of :func:`materialize` (a dozen SciPy calls) by three NumPy calls."""
    if k * n >= 1 << 62:
        return None
    if k == 1:
        return _scalar_union(parts, n)
    keys = []
    total = 0
    for p in parts:
        rows, cols = _part_entries(p, k)
        total += len(cols)
        if total > SMALL_UNION_ENTRIES:
            return None
        keys.append(rows * n + cols)
    return csr_of_keys(np.concatenate(keys), k, n)


#: :func:`_scalar_union` inserts up to this many entries into one large row by slices instead of sorting.
MAX_INSERTED = 16


def insert_sorted(big: np.ndarray, small: np.ndarray) -> np.ndarray:
    """The sorted distinct union of a sorted distinct ``big`` and a few sorted distinct entries ``small``
    (``int64``): ``big`` copied once in slices around the new entries, no sort of the whole.

    A written-out objective adds one small term after another to a running total: sorting the total at every
    add makes the program quadratic in a sort; this keeps it quadratic in a copy only."""
    at = np.searchsorted(big, small).tolist()
    pieces = []
    prev = 0
    for pos, v in zip(at, small.tolist()):
        if pos < len(big) and big[pos] == v:
            continue                                  # already in the row
        pieces.append(big[prev:pos])
        pieces.append(np.array([v], np.int64))
        prev = pos
    if not pieces:
        return big.copy()                             # (the result owns its columns, as a sort's would)
    pieces.append(big[prev:])
    return np.concatenate(pieces)


def _one_large_row(cols_list: list, large: np.ndarray | None) -> np.ndarray | None:
    """:func:`_scalar_union`'s fast path: the row when all parts but ``large`` (a canonical CSR row, sorted
    and distinct) hold at most :data:`MAX_INSERTED` entries together; else ``None``."""
    if large is None:
        return None
    rest = [c for c in cols_list if c is not large]
    if sum(len(c) for c in rest) > MAX_INSERTED:
        return None
    small = np.concatenate(rest).astype(np.int64) if rest else np.zeros(0, np.int64)
    if len(small) > 1:
        small.sort()
        small = distinct_sorted(small)
    return insert_sorted(large.astype(np.int64, copy=False), small)


def distinct_sorted(a: np.ndarray) -> np.ndarray:
    """The distinct entries of a sorted array."""
    keep = np.empty(len(a), bool)
    keep[:1] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _part_row(p: IndexPart | CsrPart, i: int = 0) -> np.ndarray | None:
    """The columns of row ``i`` of a part (sorted and distinct), ``None`` when that row is empty."""
    if isinstance(p, IndexPart):
        return p.cols[i:i + 1] if p.cols[i] >= 0 else None
    r = i if p.rowmap is None else int(p.rowmap[i])
    if r < 0:
        return None
    ptr = p.base.indptr
    return p.base.indices[int(ptr[r]):int(ptr[r + 1])]


def _row_csr(cols: np.ndarray, n: int) -> sp.csr_array:
    """A ``(1, n)`` CSR of the sorted, distinct ``cols``, within the active nonzero budget."""
    check_nnz(len(cols))
    return make_csr(np.array([0, len(cols)], np.int64), cols, 1, n)


def _scalar_union(parts: Sequence[IndexPart | CsrPart], n: int) -> sp.csr_array | None:
    """:func:`_small_union` of one-row parts (a scalar: the many small values of a written-out program)."""
    cols_list = []
    total = 0
    large = None                                      # the longest CSR row (sorted and distinct by contract)
    for p in parts:
        row = _part_row(p)
        if row is None:
            continue
        cols_list.append(row)
        total += len(row)
        if not isinstance(p, IndexPart) and (large is None or len(row) > len(large)):
            large = row
    if not cols_list:
        return _empty_csr(1, n)
    merged = _one_large_row(cols_list, large)
    if merged is not None:
        return _row_csr(merged, n)
    if total > SMALL_UNION_ENTRIES:
        return None
    key = np.sort(np.concatenate(cols_list).astype(np.int64, copy=False), kind="stable")
    return _row_csr(distinct_sorted(key), n)


#: The scalar lane (:meth:`Deps.union` of one-row values) keeps rows of at most this many columns as Python
#: sets: a written-out program's scalars union a few columns at a time, where NumPy's per-call cost dominates.
ROW_LANE_ENTRIES = 2048
#: :meth:`Deps.take_row` gives a lane value when the row has at most this many columns (a set of a few
#: integers costs less than the arrays of a one-row part; a long row stays arrays).
TAKE_ROW_LANE = 64


def _row_set(d: "Deps") -> frozenset[int] | None:
    """The columns of a non-empty one-row value as a set, when that is cheap (``None``: not cheap)."""
    if d._row is not None:
        return d._row
    parts = d._parts
    if parts is None:  # a lazy vstack
        return None
    return _parts_row_set(parts, 0, ROW_LANE_ENTRIES)


def _parts_row_set(parts, i: int, limit: int) -> frozenset[int] | None:
    """The columns of row ``i`` of index and CSR parts as a set; ``None`` when a part is of another kind (runs:
    the general union) or the row has more than ``limit`` columns."""
    out: list[int] = []
    for p in parts:
        if type(p) is not IndexPart and type(p) is not CsrPart:
            return None
        row = _part_row(p, i)
        if row is not None:
            if len(row) + len(out) > limit:
                return None
            out.extend(row.tolist())
    return frozenset(out)


def lane_size(d: "Deps") -> int | None:
    """How many columns a value of the scalar lane holds (``None``: not a lane value)."""
    return None if d._row is None else len(d._row)


def row_columns(d: "Deps") -> frozenset[int] | None:
    """The columns of a one-row value as a Python set when that is cheap (the scalar lane: at most
    :data:`ROW_LANE_ENTRIES` of them), else ``None``; an empty value gives the empty set."""
    if d.rows != 1:
        return None
    if d.is_empty:
        return frozenset()
    return _row_set(d)


def _within_budget(parts) -> bool:
    """The entries of index and CSR parts together fit the active nonzero budget, and so does their union: a
    lazy union (``Deps.union(..., eager=False)``) stays lazy only then — else it is materialized, and refused at
    once exactly when an eager union would be."""
    limit = _NNZ_BUDGET.get()
    if limit is None:
        return True
    total = 0
    for p in parts:
        if type(p) is IndexPart:
            total += len(p.cols)
        elif type(p) is CsrPart:
            rm = p.rowmap
            total += p.base.nnz if rm is None else int(np.diff(p.base.indptr)[rm[rm >= 0]].sum())
        else:
            return False
    return total <= limit


def _stays_lazy(parts) -> bool:
    """A small value's union that need not be materialized now: a few index parts, whose entries (at most one
    per row and part) fit the active nonzero budget — so a value too large for it is still refused at once."""
    if len(parts) > LAZY_INDEX_PARTS or not all(type(p) is IndexPart for p in parts):
        return False
    return _within_budget(parts)  # (an index part holds at most one entry a row)


def _stack_of_scalars(items, n: int) -> sp.csr_array | None:
    """The CSR of a lazy vstack of one-row values of the scalar lane and empty values (of a few rows), straight
    from their sets (a written-out program's output: one scalar per residual); ``None`` for any other
    stack."""
    if not items:
        return None
    rows: list = []
    for d in items:
        if d._row is not None:
            rows.append(sorted(d._row))
        elif d.is_empty and len(rows) + d.rows <= SMALL_MATERIALIZE_ROWS:  # (a few empty rows, not a block)
            rows.extend([()] * d.rows)
        else:
            return None
    counts = np.fromiter((len(r) for r in rows), np.int64, len(rows))
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    total = int(indptr[-1])
    check_nnz(total)
    return make_csr(indptr, np.fromiter(itertools.chain.from_iterable(rows), np.int64, total), len(rows), n)


def _stack_leaves(items: Sequence["Deps"]) -> Sequence["Deps"]:
    """The items of a lazy vstack with nested lazy vstacks flattened into theirs (``jnp.stack`` of many scalars
    lowers to concatenations of concatenations); the items themselves when none is nested."""
    if all(d._stack is None for d in items):
        return items
    out: list[Deps] = []
    todo = list(reversed(items))
    while todo:
        d = todo.pop()
        if d._stack is not None:
            todo.extend(reversed(d._stack))
        else:
            out.append(d)
    return out


def _row_lane_union(items: Sequence["Deps"]) -> frozenset[int] | None:
    """The union of non-empty one-row values as a set, or ``None`` when one of them is not cheap as a set or
    the union would pass :data:`ROW_LANE_ENTRIES`."""
    sets = []
    total = 0
    for d in items:
        row = _row_set(d)
        if row is None:
            return None
        total += len(row)
        sets.append(row)
    if total > 2 * ROW_LANE_ENTRIES:
        return None
    out = sets[0].union(*sets[1:])
    if not out or len(out) > ROW_LANE_ENTRIES:
        return None
    check_nnz(len(out))  # (the array path would refuse it too)
    return out


class Deps:
    """The index sets of one value: a ``(rows, n)`` boolean relation, kept as a lazy union of parts.

    Instances are immutable; every move returns a new instance (or the same one when nothing changes).

    Examples:
        >>> from stablehlo_sparsity import Deps
        >>> d = Deps.identity(3, 4, 1)                   # element i depends on input i + 1
        >>> d.to_csr().toarray().astype(int).tolist()
        [[0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
        >>> Deps.union(d, Deps.identity(3, 4, 0)).nnz, d.reduce_all().nnz
        (6, 3)
    """

    __slots__ = ("rows", "n", "_parts", "_stack", "_csr", "_row", "__weakref__")

    def __init__(self, rows: int, n: int, parts: Iterable[IndexPart | CsrPart] = ()):
        self.rows = int(rows)
        self.n = int(n)
        self._parts: tuple[IndexPart | CsrPart, ...] | None = tuple(parts)
        self._stack: tuple[Deps, ...] | None = None  # a lazy vstack: its items (see :meth:`vstack`)
        self._csr: sp.csr_array | None = None
        #: the scalar lane: a one-row value's columns as a Python set (:meth:`union` of scalars), its parts
        #: built only when a move needs them
        self._row: frozenset[int] | None = None

    @classmethod
    def of_row(cls, n: int, row: frozenset[int]) -> "Deps":
        """A one-row value with the columns ``row`` (all in ``[0, n)``; checked by the caller), kept as a set
        (the scalar lane) while it holds at most :data:`ROW_LANE_ENTRIES` of them."""
        if not row:
            return cls.empty(1, n)
        if len(row) > ROW_LANE_ENTRIES:
            return cls._materialized(_row_csr(np.fromiter(sorted(row), np.int64, len(row)), n))
        check_nnz(len(row))
        return cls._of_row(int(n), row)

    @classmethod
    def _of_row(cls, n: int, row: frozenset[int]) -> "Deps":
        """A one-row value of the scalar lane (``row`` non-empty, at most :data:`ROW_LANE_ENTRIES` columns)."""
        d = object.__new__(cls)  # (every slot set here: the constructor's conversions are not needed)
        d.rows, d.n, d._parts, d._stack, d._csr, d._row = 1, n, None, None, None, row
        return d

    def _build_row(self) -> None:
        """The scalar lane's parts and CSR, from its set (once)."""
        assert self._row is not None
        m = _row_csr(np.fromiter(sorted(self._row), np.int64, len(self._row)), self.n)
        self._csr = m
        self._parts = (CsrPart(m),)

    @property
    def parts(self) -> tuple[IndexPart | CsrPart, ...]:
        """The lazy union, as parts (a lazy vstack builds its stacked parts on first use)."""
        if self._parts is None:
            if self._row is not None:
                self._build_row()
                assert self._parts is not None
                return self._parts
            assert self._stack is not None
            self._parts = tuple(_stacked_parts(self._stack, self.rows, self.n))
            self._stack = None  # (the items' arrays are copied: let them go)
        return self._parts

    @parts.setter
    def parts(self, value) -> None:
        self._parts = tuple(value)

    def leaf_parts(self) -> Iterator[IndexPart | CsrPart]:
        """The parts this value is made of, without building anything (a lazy vstack: its items' parts)."""
        if self._parts is not None or self._row is not None:
            yield from self.parts
        else:
            assert self._stack is not None
            for d in self._stack:
                yield from d.leaf_parts()

    # ----------------------------------------------------------------- construction
    @classmethod
    def empty(cls, rows: int, n: int) -> "Deps":
        """⊥: no element depends on anything (constants, integer values, zero derivatives)."""
        return cls(rows, n)

    @classmethod
    def identity(cls, rows: int, n: int, offset: int) -> "Deps":
        """Element ``e`` depends on input column ``offset + e`` (a function argument)."""
        return cls(rows, n, [IndexPart(np.arange(offset, offset + rows, dtype=_col_dtype(n)))])

    @classmethod
    def from_csr(cls, m: sp.spmatrix | sp.sparray) -> "Deps":
        m = sp.csr_array(m, dtype=bool)
        m.sum_duplicates()
        m.sort_indices()
        m.eliminate_zeros()
        d = cls(m.shape[0], m.shape[1], [CsrPart(m)] if m.nnz else [])
        d._csr = m if m.nnz else None
        return d

    @classmethod
    def _materialized(cls, m: sp.csr_array) -> "Deps":
        """A value whose index sets are the canonical bool CSR ``m`` (ours: no checks, no copies)."""
        d = cls(m.shape[0], m.shape[1], [CsrPart(m)] if m.nnz else [])
        d._csr = m
        return d

    @classmethod
    def full(cls, rows: int, n: int) -> "Deps":
        """⊤: every element depends on every input (the conservative fallback)."""
        if rows == 0 or n == 0:
            return cls.empty(rows, n)
        row = make_csr(np.array([0, n], np.int64), np.arange(n, dtype=np.int64), 1, n)
        return cls(rows, n, [CsrPart(row, np.zeros(rows, np.int64))])

    # ----------------------------------------------------------------- queries
    @property
    def is_empty(self) -> bool:
        # (a lazy vstack is never empty: see vstack; nor is the scalar lane)
        return self._stack is None and self._row is None and not self._parts

    def to_csr(self) -> sp.csr_array:
        """The materialized ``(rows, n)`` canonical bool CSR matrix (cached)."""
        if self._csr is None and self._row is not None:
            self._build_row()
        if self._csr is None:
            if self._parts is not None and len(self._parts) > 1 and "union" in COMPACT_MOVES:
                part = COMPACT_MOVES["union"](self._parts, self.rows, self.n, True)
                if part is not None:
                    self._parts = (part,)
            if self._parts is None:  # a lazy vstack: every item's rows written straight into one output
                assert self._stack is not None
                stacked = _stack_of_scalars(_stack_leaves(self._stack), self.n)
                self._csr = stacked if stacked is not None else materialize(self._sources(), self.n)
            else:
                self._csr = csr_from_parts(self._parts, self.rows, self.n)
            if self._parts is None or len(self._parts) > 1:
                # Keep the materialized form as the only part, so later moves work on one matrix.
                self._parts = (CsrPart(self._csr),) if self._csr.nnz else ()
                self._stack = None
        return self._csr

    def _sources(self) -> list[RowSource]:
        """The rows as materialization sources (a lazy vstack: one per item, flattened)."""
        if self._row is not None:
            self.to_csr()
        if self._csr is not None:
            return [_PartsRows([CsrPart(self._csr)], self.rows, self.n)]
        if self._parts is None:
            assert self._stack is not None
            return [s for d in self._stack for s in d._sources()]
        return [_PartsRows(self._parts, self.rows, self.n)]

    @property
    def nnz(self) -> int:
        return int(self.to_csr().nnz)

    def row_nonempty(self) -> np.ndarray:
        """Boolean mask of the rows that have at least one dependency."""
        return np.diff(self.to_csr().indptr) > 0

    def __eq__(self, other) -> bool:
        if not isinstance(other, Deps):
            return NotImplemented
        if self is other:
            return True
        if (self.rows, self.n) != (other.rows, other.n):
            return False
        a, b = self.to_csr(), other.to_csr()
        return a.nnz == b.nnz and np.array_equal(a.indptr, b.indptr) and np.array_equal(a.indices, b.indices)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Deps(rows={self.rows}, n={self.n}, parts={len(self.parts)})"

    # ----------------------------------------------------------------- the four moves
    def gather_rows(self, idx) -> "Deps":
        """Rows by index map: ``out[i] = self[idx[i]]``; ``idx[i] = -1`` gives an empty row."""
        idx = as_index(idx).ravel()
        if self.is_empty or self.rows == 0:  # (from zero rows every index is -1: e.g. padding an empty tensor)
            return Deps.empty(len(idx), self.n)
        if len(idx) == self.rows and is_arange(idx):
            return self
        has_neg = bool(len(idx)) and int(idx.min()) < 0
        return Deps(len(idx), self.n, [p.gather(idx, has_neg) for p in self.parts])

    def take_row(self, i: int) -> "Deps":
        """Row ``i`` alone, as a one-row value (``gather_rows([i])`` without the index-map checks: a written-out
        program reads its inputs one element at a time)."""
        if not 0 <= i < self.rows:
            raise IndexError(f"row {i} of a value with {self.rows} rows")
        if self.rows == 1:
            return self
        if self.is_empty:
            return Deps.empty(1, self.n)
        # ``x[i]`` of a written-out program: a row of few columns becomes a lane value at once, which the unions
        # of its scalar arithmetic and the release of dead values read without NumPy
        lane = _parts_row_set(self.parts, i, TAKE_ROW_LANE)
        if lane is not None:
            return Deps.of_row(self.n, lane)
        return self.row_range(i, i + 1)

    def row_range(self, start: int, stop: int, step: int = 1) -> "Deps":
        """Rows ``start, start + step, …`` below ``stop`` (``0 <= start < stop <= rows``, ``step >= 1``):
        ``gather_rows(np.arange(start, stop, step))`` without an index map to build and check — an index part
        is a view of its columns, a CSR part's row map one ``arange`` (a slice of a vectorized program)."""
        if not (0 <= start < stop <= self.rows and step >= 1):
            raise IndexError(f"rows {start}:{stop}:{step} of a value with {self.rows} rows")
        count = (stop - start + step - 1) // step
        if count == self.rows:
            return self
        if self.is_empty:
            return Deps.empty(count, self.n)
        parts: list = []
        for p in self.parts:
            if isinstance(p, IndexPart):
                parts.append(IndexPart(p.cols[start:stop] if step == 1 else p.cols[start:stop:step].copy()))
            elif p.rowmap is None:
                parts.append(CsrPart(p.base, np.arange(start, stop, step, dtype=np.int64)))
            else:
                rowmap = p.rowmap[start:stop] if step == 1 else p.rowmap[start:stop:step].copy()
                parts.append(CsrPart(p.base, rowmap))
        return Deps(count, self.n, parts)

    def mask_rows(self, keep) -> "Deps":
        """Drop: rows where ``keep`` is False become empty (a zero derivative there)."""
        keep = np.asarray(keep, dtype=bool).ravel()
        if keep.all() or self.is_empty:
            return self
        if not keep.any():
            return Deps.empty(self.rows, self.n)
        return self.gather_rows(np.where(keep, np.arange(self.rows, dtype=np.int64), -1))

    @staticmethod
    def union(*items: "Deps", eager: bool = True) -> "Deps":
        """Join ``S_a ∨ S_b ∨ …`` of values of the same number of rows (elementwise ops).

        A small value's union (at most :data:`SMALL_ROWS` rows) is materialized at once unless ``eager`` is
        False: the second-order walk adds a product's pair term to its first-order rows lazily, and the op that
        reads them next materializes both in one union instead of two."""
        if len(items) == 2:
            # two scalars of the lane (a written-out program's ``x[i] * x[j]``, ``t + x[k]``: most of its unions):
            # one set union, without the general checks and lists below
            a, b = items
            if a is not None and b is not None and a._row is not None and b._row is not None and a.n == b.n:
                ra, rb = a._row, b._row
                if rb <= ra:
                    return a
                if ra <= rb:
                    return b
                joined = ra | rb
                if len(joined) <= ROW_LANE_ENTRIES:
                    check_nnz(len(joined))
                    return Deps._of_row(a.n, joined)
        vals = [d for d in items if d is not None]
        if not vals:
            raise ValueError("union of nothing")
        rows, n = vals[0].rows, vals[0].n
        for d in vals:
            if d.rows != rows or d.n != n:
                raise ValueError(f"union of mismatched lattices {(d.rows, d.n)} vs {(rows, n)}")
        nonempty = [d for d in vals if not d.is_empty]
        if not nonempty:
            return vals[0] if vals[0].is_empty else Deps.empty(rows, n)
        first = nonempty[0]
        if all(d is first for d in nonempty):
            return first
        if rows == 1:
            lane = _row_lane_union(nonempty)
            if lane is not None:
                return Deps._of_row(n, lane)
        parts: list = []
        seen: set[int] = set()
        for d in nonempty:
            for p in d.parts:
                if id(p) not in seen:
                    seen.add(id(p))
                    parts.append(p)
        if rows == 1 and len(parts) > 1 and all(type(p) is IndexPart or type(p) is CsrPart for p in parts):
            # a scalar (the many small values of a written-out program): straight to the one-row union, which
            # is what materializing the lazy union would do, without the compact-move and lazy-union rounds
            row = _scalar_union(parts, n)
            if row is not None:
                return Deps._materialized(row)
        if len(parts) > 1 and "union" in COMPACT_MOVES:
            part = COMPACT_MOVES["union"](parts, rows, n, False)
            if part is not None:
                return Deps(rows, n, [part])
        out = Deps(rows, n, parts)
        if len(parts) > MAX_LAZY_PARTS or (rows <= SMALL_ROWS and len(parts) > 1 and not _stays_lazy(parts)
                                           and (eager or not _within_budget(parts))):
            out.to_csr()
        return out

    @staticmethod
    def vstack(items: Sequence["Deps"]) -> "Deps":
        """Rows of several values one after the other (a concatenation along the outermost dimension).

        Lazy: nothing is copied until a move needs the parts — then part ``j`` of every operand shares one
        stacked part (an operand with fewer parts contributes empty rows; index parts stay index parts) — or
        until :meth:`to_csr`, which writes every item's rows straight into one output.
        """
        items = list(items)
        if not items:
            raise ValueError("vstack of nothing")
        n = items[0].n
        total = sum(d.rows for d in items)
        if all(d.is_empty for d in items):
            return Deps.empty(total, n)
        if len(items) == 1:
            return items[0]
        # (a scalar of the lane is one CSR part, which the one compact move, the runs' stack, declines: asking
        # would build that part)
        if "vstack" in COMPACT_MOVES and not any(d._row is not None for d in _stack_leaves(items)):
            compact = COMPACT_MOVES["vstack"](items)
            if compact is not None:
                return compact
        out = Deps(total, n)
        out._parts = None
        out._stack = tuple(items)
        return out

    def reduce_all(self) -> "Deps":
        """One row: the union of every row (the full reduction), in O(entries + n) with a mark vector.

        Reads the parts directly, so nothing of size ``rows × n`` is materialized: index parts contribute
        their columns, CSR parts the entries of the base rows their row map reaches."""
        n = self.n
        if not self.parts:
            return Deps.empty(1, n)
        if n > SPARSE_REDUCE_COLUMNS and n > 16 * sum(len(p.cols) if isinstance(p, IndexPart) else p.base.nnz
                                                      for p in self.parts):
            return self._reduce_all_sorted()
        mark = np.zeros(n + 1, bool)  # (one flag more, at ``-1``: an index part's "none" lands there)
        index_cols = [p.cols for p in self.parts if type(p) is IndexPart]
        if index_cols:  # (one scatter for every index part: a second-order value holds several)
            mark[index_cols[0] if len(index_cols) == 1 else np.concatenate(index_cols)] = True
        for p in self.parts:
            if isinstance(p, IndexPart):
                continue
            if p.rowmap is None:
                mark[p.base.indices] = True
            else:
                rows = p.base.shape[0]
                used = np.zeros(rows + 1, bool)  # (a row map's ``-1`` lands on the extra flag)
                used[p.rowmap] = True
                mark[p.base.indices[np.repeat(used[:rows], np.diff(p.base.indptr))]] = True
        cols = mark[:n].nonzero()[0]
        return Deps(1, n, [CsrPart(make_csr(np.array([0, len(cols)], np.int64), cols, 1, n))] if len(cols) else [])

    def _reduce_all_sorted(self) -> "Deps":
        """:meth:`reduce_all` by sorting the entries: for column spaces too wide for a mark vector (the
        second-order lattice's ``n + n²`` pair columns, :mod:`~stablehlo_sparsity.analysis.second_order`)."""
        n = self.n
        cols = []
        for p in self.parts:
            if isinstance(p, IndexPart):
                cols.append(p.cols[p.cols >= 0])
            elif p.rowmap is None:
                cols.append(_entry_major(p.base))
            else:
                used = np.zeros(p.base.shape[0], bool)
                rm = p.rowmap
                used[rm[rm >= 0]] = True
                # every base row reached (a slice's or a permutation's map): all entries, no per-entry mask
                cols.append(_entry_major(p.base) if used.all()
                            else p.base.indices[np.repeat(used, np.diff(p.base.indptr))])
        flat = np.concatenate(cols).astype(np.int64, copy=False)
        c = None
        for distinct in WIDE_DISTINCT:
            c = distinct(flat, n)
            if c is not None:
                break
        if c is None:
            c = _sorted_unique(flat)
        return Deps(1, n, [CsrPart(make_csr(np.array([0, len(c)], np.int64), c, 1, n))] if len(c) else [])

    def broadcast_row(self, rows: int) -> "Deps":
        """A one-row lattice repeated ``rows`` times (a scalar broadcast)."""
        if self.rows != 1:
            raise ValueError("broadcast_row needs a single row")
        return self.gather_rows(np.zeros(rows, np.int64))


def _entry_major(m: sp.csr_array) -> np.ndarray:
    """The columns of a CSR, in an order that keeps them in few sorted runs: rows of one length ``L`` (an
    elementwise op's pair rows) are read entry-major — the first entry of every row, then the second … — since
    entry ``j`` of consecutive stencil rows increases with the row, which gives ``L`` sorted runs where the
    row-major order has one per row.  Other CSRs: row-major, as stored.  (Only the order changes: the
    sorted :meth:`Deps.reduce_all` wants the set of columns.)"""
    k = m.shape[0]
    ind = m.indices
    if k < 2 or len(ind) < 2 * k or len(ind) % k:
        return ind
    length = len(ind) // k
    if not np.array_equal(m.indptr[::max(1, k // 64)], np.arange(0, k + 1, max(1, k // 64)) * length) or \
            not np.all(np.diff(m.indptr) == length):
        return ind
    return np.ascontiguousarray(ind.reshape(k, length).T).reshape(-1)


def is_arange(idx: np.ndarray) -> bool:
    if len(idx) == 0:
        return True
    if idx[0] != 0 or idx[-1] != len(idx) - 1:
        return False
    if len(idx) <= 2:
        return True
    return bool(np.all(np.diff(idx) == 1))


def _stacked_parts(items: Sequence[Deps], total: int, n: int) -> list:
    """The parts of a vstack: part ``j`` of every operand in one stacked part."""
    idx_lists = [[p for p in d.parts if isinstance(p, IndexPart)] for d in items]
    csr_lists = [[p for p in d.parts if isinstance(p, CsrPart)] for d in items]
    parts: list = []
    dt = _col_dtype(n)
    for j in range(max(len(l) for l in idx_lists)):
        cols = [l[j].cols if j < len(l) else np.full(d.rows, -1, dt) for l, d in zip(idx_lists, items)]
        parts.append(IndexPart(np.concatenate(cols).astype(dt, copy=False)))
    if any(csr_lists):
        sources = [_PartsRows(l, d.rows, n) if l else _PartsRows([], d.rows, n) for l, d in zip(csr_lists, items)]
        parts.append(CsrPart(materialize(sources, n)))
    return parts
