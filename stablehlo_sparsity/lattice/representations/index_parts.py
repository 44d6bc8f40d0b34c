"""Index parts: at most one dependency per row, one column index per row.

:class:`IndexPart` ``cols[i]`` is the one input row ``i`` depends on, ``-1`` = none.  The inputs themselves
(:meth:`~..core.Deps.identity`) and everything structural ops reach from them (slices, transposes, gathers,
pads) look like this; a stencil is a union of a few shifted index parts.

Invariants: ``cols`` is a 1-D integer array of the value's row count, entries in ``[-1, n)``, ``int32``
whenever ``n`` fits (never written after construction: moves build new arrays or views).  A union of ``p``
index parts holds at most ``p`` entries a row, so it is materialized without any sort of the whole: each
row's ``p`` columns go through a sorting network (:data:`SORTING_NETWORKS`, vectorized over rows), and
repeats and ``-1`` are dropped by comparing neighbours (:func:`_index_block`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

__all__ = ["IndexPart", "SORTING_NETWORKS", "sorted_columns", "distinct_entries"]

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
