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

* an :class:`IndexPart` — every row has at most one dependency, stored as one ``int64`` column per row
  (``-1`` = none); the inputs themselves and everything reached from them by structural ops look like this;
* a :class:`CsrPart` — a canonical ``scipy.sparse.csr_array`` of bool, optionally seen through a row map.

Elementwise unions just concatenate part lists (O(#parts), independent of the tensor size) and structural
ops compose row maps (O(k) integer work per part); the matrix is only materialized when a rule needs whole
rows (a reduction, a contraction with a large group) or at the end.  Materialization is vectorized NumPy:
no Python loop over elements anywhere.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Iterable, Sequence

import contextlib
import contextvars

import numpy as np
import scipy.sparse as sp

from ..irtools import index_dtype, too_large

__all__ = ["Deps", "IndexPart", "CsrPart", "csr_from_parts", "gather_csr_rows", "make_csr", "MAX_LAZY_PARTS",
           "SMALL_ROWS", "nnz_budget", "check_nnz", "is_arange", "as_index", "COMPACT_MOVES"]

#: Above this many parts a union is materialized into a single CSR part, to bound the cost of later moves.
MAX_LAZY_PARTS = 24

#: Unions of values with at most this many rows are materialized at once: it is cheap, and lazy parts of a
#: small value (a loop's hidden state) otherwise multiply into everything built from it (2x on a scan).
SMALL_ROWS = 64

#: Moves in a compact form another module knows (:mod:`.runs` registers run-length rows):
#: ``"union": fn(parts, rows, n, materializing) -> part | None`` (one part equal to the union of several;
#: ``materializing``: called by :meth:`Deps.to_csr`, which keeps that part) and
#: ``"vstack": fn(items) -> Deps | None``.  ``None`` leaves the move to the code below.
COMPACT_MOVES: dict = {}


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


def make_csr(indptr: np.ndarray, indices: np.ndarray, k: int, n: int, canonical: bool = True) -> sp.csr_array:
    """Build a bool CSR array without scipy's O(nnz) validation (the inputs are ours and well formed)."""
    idx_dtype = index_dtype(n, int(indptr[-1]) if len(indptr) else 0)
    m = sp.csr_array((k, n), dtype=bool)
    m.indptr = indptr.astype(idx_dtype, copy=False)
    m.indices = indices.astype(idx_dtype, copy=False)
    m.data = np.ones(len(indices), dtype=bool)
    if canonical:
        m.has_sorted_indices = True
        m.has_canonical_format = True
    return m


def gather_csr_rows(m: sp.csr_array, idx: np.ndarray) -> sp.csr_array:
    """Rows of ``m`` by an index map: ``out[i] = m[idx[i]]`` and ``out[i] = {}`` where ``idx[i] < 0``."""
    k_out = len(idx)
    n = m.shape[1]
    indptr = m.indptr.astype(np.int64, copy=False)
    valid = idx >= 0
    safe = np.where(valid, idx, 0)
    lengths = np.where(valid, indptr[safe + 1] - indptr[safe], 0)
    out_indptr = np.zeros(k_out + 1, np.int64)
    np.cumsum(lengths, out=out_indptr[1:])
    total = int(out_indptr[-1])
    if total == 0:
        return _empty_csr(k_out, n)
    check_nnz(total)
    # For every output slot, the source position: start of its source row + offset within the row.
    starts = np.where(valid, indptr[safe], 0)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(out_indptr[:-1], lengths)
    src = np.repeat(starts, lengths) + offsets
    return make_csr(out_indptr, m.indices[src], k_out, n)


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


def _index_parts_to_csr(cols_list: Sequence[np.ndarray], k: int, n: int) -> sp.csr_array:
    """Union of index parts: a (k, p) matrix of columns, sorted and de-duplicated per row, vectorized."""
    if len(cols_list) == 1:
        c = cols_list[0]
        valid = c >= 0
        indptr = np.zeros(k + 1, np.int64)
        np.cumsum(valid, out=indptr[1:])
        return make_csr(indptr, c[valid], k, n)
    check_nnz(k * len(cols_list))
    if len(cols_list) < len(_NETWORKS):
        # A sorting network over whole columns: each compare-exchange is two vectorized passes over k values,
        # much cheaper than numpy's per-row sort for a handful of parts.
        cols = [np.asarray(c) for c in cols_list]
        for i, j in _NETWORKS[len(cols)]:
            lo = np.minimum(cols[i], cols[j])
            cols[j] = np.maximum(cols[i], cols[j])
            cols[i] = lo
        mat = np.stack(cols, axis=1)
    else:
        mat = np.stack(cols_list, axis=1)
        mat.sort(axis=1)
    keep = mat >= 0
    keep[:, 1:] &= mat[:, 1:] != mat[:, :-1]
    indptr = np.zeros(k + 1, np.int64)
    np.cumsum(keep.sum(axis=1), out=indptr[1:])
    return make_csr(indptr, mat[keep], k, n)


def _transposition_network(p: int) -> list[tuple[int, int]]:
    """Compare-exchange pairs of an odd-even transposition network on p wires (correct for any p)."""
    pairs = []
    for rnd in range(p):
        for i in range(rnd % 2, p - 1, 2):
            pairs.append((i, i + 1))
    return pairs


#: Sorting networks for 0..8 wires (index = wire count).  Odd-even transposition: p rounds, simple and valid.
_NETWORKS = [_transposition_network(p) for p in range(9)]


def _union_csr(mats: Sequence[sp.csr_array], k: int, n: int) -> sp.csr_array:
    mats = [m for m in mats if m.nnz]
    if not mats:
        return _empty_csr(k, n)
    if len(mats) == 1:
        return mats[0]
    check_nnz(sum(int(m.nnz) for m in mats))
    # SciPy's compiled merge of sorted rows (``A + B`` on bool is ``A ∨ B``): linear in the nonzeros, several
    # times faster than sorting all (row, col) keys.  The two smallest are merged first (Huffman order), so
    # one big part plus many small ones (an accumulator written slot by slot in a loop) costs one pass
    # over the big part, not one per level of a merge tree.
    heap = [(m.nnz, i, m) for i, m in enumerate(mats)]
    heapq.heapify(heap)
    tick = len(heap)
    while len(heap) > 1:
        _, _, a = heapq.heappop(heap)
        _, _, b = heapq.heappop(heap)
        c = a + b
        heapq.heappush(heap, (c.nnz, tick, c))
        tick += 1
    m = heap[0][2]
    if not m.has_sorted_indices:
        m.sort_indices()
    return make_csr(m.indptr, m.indices, k, n)


def csr_from_parts(parts: Sequence[IndexPart | CsrPart], k: int, n: int) -> sp.csr_array:
    """Materialize a union of parts into one canonical bool CSR matrix."""
    index_cols = [p.cols for p in parts if isinstance(p, IndexPart)]
    csrs = [p.to_csr() for p in parts if isinstance(p, CsrPart)]
    if index_cols:
        csrs.append(_index_parts_to_csr(index_cols, k, n))
    return _union_csr(csrs, k, n)


class Deps:
    """The index sets of one value: a ``(rows, n)`` boolean relation, kept as a lazy union of parts.

    Instances are immutable; every move returns a new instance (or the same one when nothing changes).
    """

    __slots__ = ("rows", "n", "parts", "_csr")

    def __init__(self, rows: int, n: int, parts: Iterable[IndexPart | CsrPart] = ()):
        self.rows = int(rows)
        self.n = int(n)
        self.parts: tuple[IndexPart | CsrPart, ...] = tuple(parts)
        self._csr: sp.csr_array | None = None

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
    def full(cls, rows: int, n: int) -> "Deps":
        """⊤: every element depends on every input (the conservative fallback)."""
        if rows == 0 or n == 0:
            return cls.empty(rows, n)
        row = make_csr(np.array([0, n], np.int64), np.arange(n, dtype=np.int64), 1, n)
        return cls(rows, n, [CsrPart(row, np.zeros(rows, np.int64))])

    # ----------------------------------------------------------------- queries
    @property
    def is_empty(self) -> bool:
        return not self.parts

    def to_csr(self) -> sp.csr_array:
        """The materialized ``(rows, n)`` canonical bool CSR matrix (cached)."""
        if self._csr is None:
            if len(self.parts) > 1 and "union" in COMPACT_MOVES:
                part = COMPACT_MOVES["union"](self.parts, self.rows, self.n, True)
                if part is not None:
                    self.parts = (part,)
            self._csr = csr_from_parts(self.parts, self.rows, self.n) if self.parts else _empty_csr(self.rows, self.n)
            if self.parts and len(self.parts) > 1:
                # Keep the materialized form as the only part, so later moves work on one matrix.
                self.parts = (CsrPart(self._csr),) if self._csr.nnz else ()
        return self._csr

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
        if not self.parts or self.rows == 0:  # (from zero rows every index is -1: e.g. padding an empty tensor)
            return Deps.empty(len(idx), self.n)
        if len(idx) == self.rows and is_arange(idx):
            return self
        has_neg = bool(len(idx)) and int(idx.min()) < 0
        return Deps(len(idx), self.n, [p.gather(idx, has_neg) for p in self.parts])

    def mask_rows(self, keep) -> "Deps":
        """Drop: rows where ``keep`` is False become empty (a zero derivative there)."""
        keep = np.asarray(keep, dtype=bool).ravel()
        if keep.all() or not self.parts:
            return self
        if not keep.any():
            return Deps.empty(self.rows, self.n)
        return self.gather_rows(np.where(keep, np.arange(self.rows, dtype=np.int64), -1))

    @staticmethod
    def union(*items: "Deps") -> "Deps":
        """Join ``S_a ∨ S_b ∨ …`` of values of the same number of rows (elementwise ops)."""
        vals = [d for d in items if d is not None]
        if not vals:
            raise ValueError("union of nothing")
        rows, n = vals[0].rows, vals[0].n
        for d in vals:
            if d.rows != rows or d.n != n:
                raise ValueError(f"union of mismatched lattices {(d.rows, d.n)} vs {(rows, n)}")
        nonempty = [d for d in vals if d.parts]
        if not nonempty:
            return vals[0] if vals[0].is_empty else Deps.empty(rows, n)
        first = nonempty[0]
        if all(d is first for d in nonempty):
            return first
        parts: list = []
        seen: set[int] = set()
        for d in nonempty:
            for p in d.parts:
                if id(p) not in seen:
                    seen.add(id(p))
                    parts.append(p)
        if len(parts) > 1 and "union" in COMPACT_MOVES:
            part = COMPACT_MOVES["union"](parts, rows, n, False)
            if part is not None:
                return Deps(rows, n, [part])
        out = Deps(rows, n, parts)
        if len(parts) > MAX_LAZY_PARTS or (rows <= SMALL_ROWS and len(parts) > 1):
            out.to_csr()
        return out

    @staticmethod
    def vstack(items: Sequence["Deps"]) -> "Deps":
        """Rows of several values one after the other (a concatenation along the outermost dimension).

        Parts stay lazy: the union is over parts, so part ``j`` of every operand can share one stacked part
        (an operand with fewer parts contributes empty rows).  Index parts stay index parts.
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
        if "vstack" in COMPACT_MOVES:
            out = COMPACT_MOVES["vstack"](items)
            if out is not None:
                return out
        idx_lists = [[p for p in d.parts if isinstance(p, IndexPart)] for d in items]
        csr_lists = [[p for p in d.parts if isinstance(p, CsrPart)] for d in items]
        parts: list = []
        dt = _col_dtype(n)
        for j in range(max(len(l) for l in idx_lists)):
            cols = [l[j].cols if j < len(l) else np.full(d.rows, -1, dt) for l, d in zip(idx_lists, items)]
            parts.append(IndexPart(np.concatenate(cols).astype(dt, copy=False)))
        if any(csr_lists):
            mats = [csr_from_parts(l, d.rows, n) if l else _empty_csr(d.rows, n) for l, d in zip(csr_lists, items)]
            indptrs = [np.asarray(mats[0].indptr, np.int64)]
            off = int(mats[0].indptr[-1])
            for m in mats[1:]:
                indptrs.append(np.asarray(m.indptr[1:], np.int64) + off)
                off += int(m.indptr[-1])
            indices = np.concatenate([np.asarray(m.indices, np.int64) for m in mats])
            parts.append(CsrPart(make_csr(np.concatenate(indptrs), indices, total, n)))
        return Deps(total, n, parts)

    def reduce_all(self) -> "Deps":
        """One row: the union of every row (the full reduction), in O(entries + n) with a mark vector.

        Reads the parts directly, so nothing of size ``rows × n`` is materialized: index parts contribute
        their columns, CSR parts the entries of the base rows their row map reaches."""
        n = self.n
        if not self.parts:
            return Deps.empty(1, n)
        mark = np.zeros(n, bool)
        for p in self.parts:
            if isinstance(p, IndexPart):
                c = p.cols
                mark[c[c >= 0]] = True
            elif p.rowmap is None:
                mark[p.base.indices] = True
            else:
                used = np.zeros(p.base.shape[0], bool)
                rm = p.rowmap
                used[rm[rm >= 0]] = True
                mark[p.base.indices[np.repeat(used, np.diff(p.base.indptr))]] = True
        cols = np.flatnonzero(mark)
        return Deps(1, n, [CsrPart(make_csr(np.array([0, len(cols)], np.int64), cols, 1, n))] if len(cols) else [])

    def broadcast_row(self, rows: int) -> "Deps":
        """A one-row lattice repeated ``rows`` times (a scalar broadcast)."""
        if self.rows != 1:
            raise ValueError("broadcast_row needs a single row")
        return self.gather_rows(np.zeros(rows, np.int64))


def is_arange(idx: np.ndarray) -> bool:
    if len(idx) == 0:
        return True
    if idx[0] != 0 or idx[-1] != len(idx) - 1:
        return False
    return bool(np.all(np.diff(idx) == 1))
