"""Small unions: the union of the parts of a value of few rows, by one sort of keys instead of row blocks.

Not a stored form but the conversion *lazy parts → CSR* for small values (at most
:data:`~.lazy_parts.SMALL_ROWS` rows and :data:`SMALL_UNION_ENTRIES` entries): every entry ``(r, c)`` of every
part becomes the key ``r · n + c``; each part lists its rows in order and each row's columns sorted, so the
keys are a few sorted runs that one stable sort merges, and repeats are dropped by comparing neighbours.

One-row values (:func:`_scalar_union`, a scalar of a written-out program that outgrew the
:mod:`~.row_lane`) have a path of their own: a long canonical row plus at most :data:`MAX_INSERTED` new
columns is copied once around the insertions (:func:`insert_sorted`) — a running total that gains a term at a
time costs a copy, not a sort.

Every function returns a canonical CSR (:mod:`.csr`) or ``None`` when its size limits say the block machinery
of :mod:`.materialize` should do it; both give the same sets (tests/lattice/test_representations.py).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sp

from .csr import CsrPart, _empty_csr, _gather_block, _row_csr, csr_of_keys, distinct_sorted
from .index_parts import IndexPart

__all__ = ["SMALL_UNION_ENTRIES", "MAX_INSERTED", "insert_sorted"]

def _part_entries(p: "IndexPart | CsrPart", k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``(row, column)`` entries of a part of ``k`` rows, row by row, each row's columns sorted."""
    if isinstance(p, IndexPart):
        live = p.cols >= 0
        return np.flatnonzero(live), p.cols[live]
    ptr, cols = (p.base.indptr.astype(np.int64), p.base.indices) if p.rowmap is None \
        else _gather_block(p.base, p.rowmap)
    return np.repeat(np.arange(k, dtype=np.int64), np.diff(ptr)), cols


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


def _part_row(p: IndexPart | CsrPart, i: int = 0) -> np.ndarray | None:
    """The columns of row ``i`` of a part (sorted and distinct), ``None`` when that row is empty."""
    if isinstance(p, IndexPart):
        return p.cols[i:i + 1] if p.cols[i] >= 0 else None
    r = i if p.rowmap is None else int(p.rowmap[i])
    if r < 0:
        return None
    ptr = p.base.indptr
    return p.base.indices[int(ptr[r]):int(ptr[r + 1])]


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
