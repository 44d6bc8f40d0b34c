"""Materialized rows: the canonical bool CSR matrix, and :class:`CsrPart` — its rows seen through a row map.

Invariants of every CSR this package builds or keeps (:func:`make_csr`, :func:`csr_of_keys`):

* shape ``(rows, n)``, ``data`` all ``True``, one entry per ``(row, column)`` — *canonical*: each row's columns
  sorted ascending and distinct (``has_canonical_format`` set without SciPy's O(nnz) check);
* ``indptr``/``indices`` ``int32`` whenever they fit (:func:`~stablehlo_sparsity.dtypes.index_dtype`), else
  ``int64``;
* every allocation of entries passes :func:`~..budget.check_nnz` first.

A :class:`CsrPart` holds such a matrix ``base`` and an optional ``rowmap`` (``None`` = identity; row ``i`` is
``base[rowmap[i]]``, ``-1`` = empty): a structural move (gather, slice, broadcast) composes row maps in O(rows)
and never copies entries.  Several parts can share one ``base``.

Conversions out: :meth:`CsrPart.to_csr` (the gathered rows in one block), :func:`_gather_block` (rows through a
map as ``(indptr, indices)``, the block step of materialization); a large gather goes block by block through
:func:`~.lazy_parts.gather_csr_rows`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...dtypes import index_dtype
from ..budget import check_nnz

__all__ = ["CsrPart", "make_csr", "csr_of_keys", "rows_of_keys", "distinct_sorted", "LONG_ROW"]

def _col_dtype(n: int):
    """Column indices are int32 whenever they fit: half the memory traffic of int64."""
    return index_dtype(n)


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
        """The rows as a canonical CSR: ``base`` itself, or its rows gathered through the row map in one block
        (a value's parts are materialized block by block by :func:`~.lazy_parts.csr_from_parts` instead)."""
        if self.rowmap is None:
            return self.base
        check_nnz(int(_rowmap_lengths(self.base.indptr, self.rowmap).sum()))
        indptr, cols = _gather_block(self.base, self.rowmap)
        return make_csr(indptr, cols, len(self.rowmap), self.base.shape[1])

    def nnz_upper(self) -> int:
        return self.base.nnz if self.rowmap is None else self.base.nnz * 2


#: Gathered rows this long on average are copied as slices, one per row (at most BLOCK_ENTRIES / LONG_ROW
#: rows per block), rather than entry by entry.
LONG_ROW = 256


def _rowmap_lengths(indptr: np.ndarray, rowmap: np.ndarray) -> np.ndarray:
    """Row lengths (int64) of a CSR seen through a row map (``-1`` = empty row)."""
    valid = rowmap >= 0
    safe = np.where(valid, rowmap, 0)
    return np.where(valid, indptr[safe + 1].astype(np.int64) - indptr[safe], 0)


def _gather_block(m: sp.csr_array, rowmap: np.ndarray, lengths: np.ndarray | None = None) -> tuple[np.ndarray,
                                                                                                     np.ndarray]:
    """Rows ``rowmap`` of ``m`` (``-1`` = empty): ``(indptr int64, indices)``, temporaries of the result's size
    (``lengths``: the rows' lengths, ``_rowmap_lengths(m.indptr, rowmap)``, when the caller has them)."""
    if lengths is None:
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


def distinct_sorted(a: np.ndarray) -> np.ndarray:
    """The distinct entries of a sorted array."""
    keep = np.empty(len(a), bool)
    keep[:1] = True
    np.not_equal(a[1:], a[:-1], out=keep[1:])
    return a[keep]


def _row_csr(cols: np.ndarray, n: int) -> sp.csr_array:
    """A ``(1, n)`` CSR of the sorted, distinct ``cols``, within the active nonzero budget."""
    check_nnz(len(cols))
    return make_csr(np.array([0, len(cols)], np.int64), cols, 1, n)
