"""Windowed unions: each output element unions the input elements in a window along some dimensions.

Pooling, cumulative sums, full and partial reductions, sorts (any element of a slice can land anywhere) and
running unions down factorization columns are the group union of :mod:`.groups` with groups that have
structure — a window per dimension, a whole slice, a prefix — which these moves exploit::

    S = [{0}, {1}, {2}]                       (shape (3,))
    reduce_dims(S, (3,), [0])             = [{0, 1, 2}]
    slice_union(S, (3,), 0)               = [{0, 1, 2}, {0, 1, 2}, {0, 1, 2}]
    prefix_union(S, 3)                    = [{0}, {0, 1}, {0, 1, 2}]
    window_union(S, (3,), [R]) with R = [[1, 1, 0], [0, 1, 1]]  = [{0, 1}, {1, 2}]

A window relation ``R_d`` (``out_d × in_d``, 0/1) per dimension composes: the union over a rectangular window
is the union along one dimension at a time, so an ``r``-dimensional window costs ``r`` small moves.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .core import CsrPart, Deps, check_nnz
from .groups import DENSE_CELLS, Groups, group_union

__all__ = ["relation_along", "window_union", "reduce_dims", "slice_union", "prefix_union", "LAZY_TAPS"]

#: Windows with at most this many taps along a dimension stay lazy unions of row maps.
LAZY_TAPS = 8


def positions(shape) -> np.ndarray:
    """The position map: ``arange(size).reshape(shape)`` — apply a structural op to it to get its index map."""
    return np.arange(math.prod(int(d) for d in shape), dtype=np.int64).reshape(shape)


def _is_identity(r: sp.csr_array) -> bool:
    m, n = r.shape
    return (m == n and r.nnz == n and np.array_equal(r.indices, np.arange(n))
            and np.array_equal(r.indptr, np.arange(n + 1)))


def relation_along(deps: Deps, shape: tuple[int, ...], d: int, r: sp.csr_array) -> Deps:
    """Apply a 0/1 relation ``r`` (``m × shape[d]``) along dimension ``d``: row ``(…, o, …)`` of the result is
    the union of rows ``(…, i, …)`` with ``r[o, i]``."""
    if _is_identity(r):
        return deps
    pre = int(np.prod(shape[:d], dtype=np.int64))
    post = int(np.prod(shape[d + 1:], dtype=np.int64))
    n_d = shape[d]
    m = r.shape[0]
    if deps.is_empty or r.nnz == 0:
        return Deps.empty(pre * m * post, deps.n)
    counts = np.diff(r.indptr)
    g = int(counts.max())
    if g <= LAZY_TAPS:
        # Row o's entries, padded with -1 to g columns.
        table_d = np.full((m, g), -1, np.int64)
        slot = np.arange(r.nnz, dtype=np.int64) - np.repeat(r.indptr[:-1].astype(np.int64), counts)
        table_d[np.repeat(np.arange(m), counts), slot] = r.indices
        base = (np.arange(pre, dtype=np.int64)[:, None, None, None] * (n_d * post)
                + np.arange(post, dtype=np.int64)[None, None, :, None])
        tap = table_d[None, :, None, :]
        table = np.where(tap >= 0, base + tap * post, -1).reshape(pre * m * post, g)
        return group_union(deps, Groups.from_table(table))
    big = r
    if pre > 1:
        big = sp.kron(sp.identity(pre, dtype=bool, format="csr"), big, format="csr")
    if post > 1:
        big = sp.kron(big, sp.identity(post, dtype=bool, format="csr"), format="csr")
    return group_union(deps, Groups.from_matrix(big))


def window_union(deps: Deps, in_shape, relations) -> Deps:
    """Union over each window, one dimension at a time (the biggest shrink first, to keep rows few)."""
    shape = list(in_shape)
    order = sorted(range(len(shape)), key=lambda d: relations[d].shape[0] / max(shape[d], 1))
    for d in order:
        deps = relation_along(deps, tuple(shape), d, relations[d])
        shape[d] = relations[d].shape[0]
    return deps


def reduce_dims(deps: Deps, shape, dims) -> Deps:
    """Rows of the reduced shape: row ``o`` is the union of the operand rows that ``dims`` collapse onto it.

    The groups are a position map: move the reduced dimensions first, so column ``o`` of
    ``positions(shape).transpose(dims + kept).reshape(g, out)`` lists group ``o``'s operand elements."""
    shape = tuple(int(s) for s in shape)
    dims = sorted(int(d) for d in dims)
    kept = [d for d in range(len(shape)) if d not in dims]
    out_size = math.prod(shape[d] for d in kept)   # (Python integers: exact, and no array for a few numbers)
    g = math.prod(shape[d] for d in dims)
    if deps.is_empty or g == 0 or out_size == 0:
        return Deps.empty(out_size, deps.n)
    if out_size == 1:
        return deps.reduce_all()
    if not dims:
        return deps
    return group_union(deps, Groups.member_major(positions(shape).transpose(dims + kept).reshape(g, out_size)))


def slice_union(deps: Deps, shape, dim: int) -> Deps:
    """Every row of a slice along ``dim`` becomes the union of the slice: reduce along ``dim``, broadcast back."""
    shape = tuple(int(s) for s in shape)
    m = shape[dim]
    if deps.is_empty or m <= 1:
        return deps
    pre = int(np.prod(shape[:dim], dtype=np.int64))
    post = int(np.prod(shape[dim + 1:], dtype=np.int64))
    reduced = reduce_dims(deps, (pre, m, post), [1])                      # rows (a, c)
    back = (np.arange(pre, dtype=np.int64)[:, None, None] * post
            + np.arange(post, dtype=np.int64)[None, None, :]) + np.zeros((1, m, 1), np.int64)
    return reduced.gather_rows(back.ravel())


def prefix_union(deps: Deps, length: int) -> Deps:
    """Rows in consecutive segments of ``length``: row ``s·length + r`` of the result is the union of the
    rows ``s·length … s·length + r`` (a running union).

    Linear in the entries it produces: each input column is placed once, at its first row in the segment,
    and then repeated down to the segment's end (no ``R @ S`` over the prefix groups, whose cost would be
    quadratic in the segment length).
    """
    k, n = deps.rows, deps.n
    if deps.is_empty or length <= 1:
        return deps
    csr = deps.to_csr()
    if k * n <= DENSE_CELLS and 16 * csr.nnz >= k * n:
        # dense enough: a running OR down each segment of a boolean matrix, O(k·n)
        dense = csr.toarray().reshape(k // length, length, n)
        np.logical_or.accumulate(dense, axis=1, out=dense)
        check_nnz(int(np.count_nonzero(dense)))
        return Deps.from_csr(sp.csr_array(dense.reshape(k, n)))
    counts = np.diff(np.asarray(csr.indptr, np.int64)).astype(np.int64)
    rows = np.repeat(np.arange(k, dtype=np.int64), counts)
    cols = np.asarray(csr.indices, np.int64)
    seg, pos = np.divmod(rows, length)
    # first row of every (segment, column): CSR order is row-major, so a stable sort by (segment, column)
    # puts each group's first row first
    order = np.argsort(seg * n + cols, kind="stable")
    key_sorted = (seg * n + cols)[order]
    first = np.ones(len(order), bool)
    first[1:] = key_sorted[1:] != key_sorted[:-1]
    sel = order[first]
    s, c, f = seg[sel], cols[sel], pos[sel]  # sorted by (segment, column)
    nseg = k // length
    out_nnz = int((length - f).sum())
    check_nnz(out_nnz)
    t_per_seg = np.bincount(s, minlength=nseg).astype(np.int64)
    if length * len(s) <= 4 * out_nnz:
        # Dense-enough: walk every (row, column-of-the-segment) cell in row-major order and keep the cells
        # at or below the column's first row — the output comes out sorted, no sort needed.
        t_start = np.zeros(nseg, np.int64)
        np.cumsum(t_per_seg[:-1], out=t_start[1:])
        block = length * t_per_seg
        b_start = np.zeros(nseg, np.int64)
        np.cumsum(block[:-1], out=b_start[1:])
        cell_seg = np.repeat(np.arange(nseg, dtype=np.int64), block)
        local = np.arange(int(block.sum()), dtype=np.int64) - b_start[cell_seg]
        r, t = np.divmod(local, np.maximum(t_per_seg[cell_seg], 1))
        t += t_start[cell_seg]
        keep = f[t] <= r
        out_rows = (cell_seg * length + r)[keep]
        out_cols = c[t[keep]]
        indptr = np.zeros(k + 1, np.int64)
        np.cumsum(np.bincount(out_rows, minlength=k), out=indptr[1:])
        m = sp.csr_array((np.ones(len(out_cols), bool), out_cols, indptr), shape=(k, n))
        m.has_sorted_indices = True
        return Deps(k, n, [CsrPart(m)] if m.nnz else [])
    # Sparse: per segment, the columns ordered by first row; row r of segment s is a prefix of that list.
    o = np.argsort(s * length + f, kind="stable")
    s, c, f = s[o], c[o], f[o]
    seg_start = np.searchsorted(s, np.arange(nseg + 1, dtype=np.int64), side="left")
    # how many of segment s's columns have first row <= r, for every output row (s, r)
    cnt = (np.searchsorted(s * length + f, np.arange(k, dtype=np.int64), side="right")
           - np.repeat(seg_start[:-1], length))
    indptr = np.zeros(k + 1, np.int64)
    np.cumsum(cnt, out=indptr[1:])
    row_start = np.repeat(seg_start[:-1], length)
    offs = np.arange(int(indptr[-1]), dtype=np.int64) - np.repeat(indptr[:-1], cnt)
    out_cols = c[np.repeat(row_start, cnt) + offs]
    m = sp.csr_array((np.ones(len(out_cols), bool), out_cols, indptr), shape=(k, n))
    m.has_sorted_indices = False
    m.sort_indices()
    return Deps(k, n, [CsrPart(m)] if m.nnz else [])
