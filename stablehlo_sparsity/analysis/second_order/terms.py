"""The building blocks of local terms (:mod:`.registry`): none, full, cross."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ...lattice import Deps
from ...dtypes import index_dtype
from ...lattice.core import ROW_LANE_ENTRIES, IndexPart, check_nnz, gather_csr_rows, row_columns
from .encoding import elementwise_pairs, full_rows, pair_rows, uniform_rows

__all__ = ["no_term", "full_term", "cross_rows", "full_of", "scalar_pair_codes"]


def no_term(ctx, op, args, results):
    """Linear or piecewise linear: the first-order rule already passed every interaction on."""
    return [None] * len(results)


def scalar_pair_codes(n: int, ra: frozenset[int], rb: frozenset[int]) -> frozenset[int] | None:
    """The pairs ``{u, v}``, ``u ∈ S_a``, ``v ∈ S_b`` of two one-element values' column sets (first-order columns
    ``< n``; pair columns pass by), as codes ``n + min·n + max``; ``None`` when there are more of them than the
    scalar lane holds (:data:`ROW_LANE_ENTRIES`)."""
    sa = [c for c in ra if c < n]
    sb = sa if rb is ra else [c for c in rb if c < n]
    if len(sa) * len(sb) > ROW_LANE_ENTRIES:
        return None
    return frozenset(n + u * n + v if u <= v else n + v * n + u for u in sa for v in sb)


def _scalar_pairs(ctx, a, b, square: bool):
    """The term of one-element operands from their column sets (the scalar lane of the lattice): their
    :func:`scalar_pair_codes` (empty when there are none); ``None`` when a set is not at hand cheaply or the
    term is too large for the lane."""
    ra = row_columns(a.deps)
    rb = ra if square else row_columns(b.deps)
    if ra is None or rb is None:
        return None
    codes = scalar_pair_codes(ctx.n_first, ra, rb)
    return None if codes is None else Deps.of_row(ctx.n, codes)


#: :func:`row_groups` samples this many rows spread over a value before it looks for repeated rows exactly.
GROUP_SAMPLES = 8
#: … and uses the groups only when there are at most this fraction of the rows (the term is then built for
#: the distinct rows only and repeated by a row map).
GROUP_FRACTION = 0.25


def row_groups(m) -> tuple[np.ndarray, np.ndarray] | None:
    """Repeated rows of a first-order CSR: ``(first, inverse)`` with ``m[first[inverse[e]]] == m[e]`` for
    every row ``e``, when the rows have one length and at most :data:`GROUP_FRACTION` of them are distinct;
    else ``None``.

    A value built from a broadcast (``r_e = x_e + Σx``: every row the whole of ``x``) has the same set in
    every row, and its pair term is the same for every row: ``k`` copies of ``|S|²/2`` codes.  Built for the
    distinct rows only, it costs one row's term.  Rows that differ (a stencil's) are told apart by sampling
    :data:`GROUP_SAMPLES` rows first, so their check costs O(1); the grouping itself is exact
    (``np.unique`` over the rows), never a hash."""
    k = m.shape[0]
    if k < 2 * GROUP_SAMPLES:
        return None
    ptr, cols = m.indptr, m.indices
    at = np.arange(0, k, k // GROUP_SAMPLES)
    starts, ends = ptr[at].tolist(), ptr[at + 1].tolist()
    sample = {cols[a:b].tobytes() for a, b in zip(starts, ends)}
    if len(sample) == len(starts):           # the sampled rows are all different
        return None
    length = uniform_rows(m)
    if not length:
        return None
    rows = cols.reshape(k, length)
    if (rows == rows[0]).all():              # one set in every row (a broadcast's): no sort needed
        return np.zeros(1, np.int64), np.zeros(k, np.int64)
    _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    if len(first) > GROUP_FRACTION * k:
        return None
    return first.astype(np.int64), np.asarray(inverse, np.int64).reshape(-1)


def full_of(ctx, av):
    """``S_e × S_e`` for every element of ``av`` (None when it depends on nothing)."""
    if av.deps.is_empty:
        return None
    if av.size == 1:
        lane = _scalar_pairs(ctx, av, av, True)
        if lane is not None:
            return lane
    s = ctx.first_order(av)
    groups = row_groups(s)
    if groups is not None:
        first, inverse = groups
        return full_rows(gather_csr_rows(s, first), ctx.n_first).gather_rows(inverse)
    return full_rows(s, ctx.n_first)


def full_term(ctx, op, args, results):
    """Nonlinear (or unknown): every pair of inputs each result element depends on."""
    return [full_of(ctx, r) for r in results]


def cross_rows(ctx, a, b, size: int):
    """Elementwise ``S_a,e × S_b,e`` (and its transpose) for operands of the result's size (scalars repeat)."""
    if a.deps.is_empty or b.deps.is_empty:
        return None
    if size == 1 and a.size == 1 and b.size == 1:
        lane = _scalar_pairs(ctx, a, b, False)
        if lane is not None:
            return lane
    indexed = _index_cross(ctx, a, b, size)
    if indexed is not None:
        return indexed
    sa, sb = ctx.first_order(a), ctx.first_order(b)
    grouped = _grouped_cross(ctx, a, sa, b, sb, size) if size > 1 else None
    if grouped is not None:
        return grouped
    if a.size == size and b.size == size:
        fast = elementwise_pairs(sa, sb, ctx.n_first)
        if fast is not None:
            return fast
    e = np.arange(size, dtype=np.int64)
    ia = e if a.size == size else np.zeros(size, np.int64)
    ib = e if b.size == size else np.zeros(size, np.int64)
    return pair_rows(e, size, sa, ia, sb, ib, ctx.n_first, one_per_row=True)


#: :func:`_index_cross` builds the term of operands made of index parts only while it is at most this many
#: index parts (one per pair of the operands' parts); more go through the operands' CSRs.
MAX_INDEX_TERMS = 6


def _first_order_columns(d, n: int, dtype) -> list[tuple[np.ndarray, bool]] | None:
    """A lattice made of index parts (and broadcast rows of few inputs, :func:`_broadcast_columns`), as the
    first-order column of each row in each part (``-1``: none; pair columns dropped; parts of pairs only left
    out), in ``dtype``, each with whether it has a row without one (a ``-1``) — a slice of an argument,
    ``1 - x``, ``x[1:] - x[:-1]²`` keep this form, with a column in every row; ``None`` when a part is any
    other CSR."""
    parts = d.parts
    for p in parts:  # (a CSR part seen whole is no broadcast row: told before any arithmetic)
        if type(p) is not IndexPart and p.rowmap is None:
            return None
    out: list[tuple[np.ndarray, bool]] = []
    for p in parts:
        if type(p) is not IndexPart:
            shared = _broadcast_columns(p, n)
            if shared is None:
                return None
            out.extend((c.astype(dtype, copy=False), True) for c in shared)
            continue
        cols = p.cols
        high = int(_MAX(cols, initial=-1))
        if high < 0:
            continue
        if high >= n:
            cols = np.where(cols < n, cols, -1)
            if int(_MAX(cols, initial=-1)) < 0:
                continue                      # (a part of pairs only: x², x·y of single inputs)
        out.append((cols.astype(dtype, copy=False), bool(_MIN(cols, initial=0) < 0)))
    return out


#: (the ufuncs' reductions themselves: ``ndarray.max`` adds a Python wrapper to each call; typed as plain callables,
#: since NumPy 2.5's stubs reject ``ufunc.reduce(array, initial=...)``)
_MAX: Callable[..., Any] = np.maximum.reduce
_MIN: Callable[..., Any] = np.minimum.reduce


#: :func:`_broadcast_columns` reads a broadcast row holding at most this many first-order columns.
MAX_BROADCAST_COLUMNS = 2


def _broadcast_columns(p, n: int) -> list[np.ndarray] | None:
    """A CSR part that shows one row of its base in every row (or none: ``-1``) — a broadcast scalar, ``x[-1]²``
    added to every element — as one column array per first-order column of that row (at most
    :data:`MAX_BROADCAST_COLUMNS`); ``None`` for any other part."""
    rm = p.rowmap
    if rm is None or len(rm) == 0:
        return None
    hit = rm[rm >= 0]
    if len(hit) == 0:
        return []
    r = int(hit[0])
    if int(hit.min()) != r or int(hit.max()) != r:
        return None
    row = p.base.indices[int(p.base.indptr[r]):int(p.base.indptr[r + 1])]
    first = row[row < n]                      # (sorted: the first-order columns come first)
    if len(first) > MAX_BROADCAST_COLUMNS:
        return None
    return [np.where(rm >= 0, int(c), -1) for c in first.tolist()]


def _index_cross(ctx, a, b, size: int):
    """:func:`cross_rows` of operands made of index parts (:func:`_first_order_columns`): the pairs of each
    row as index parts, one per pair of the operands' parts (a square, ``a is b``: one per unordered pair),
    without building a CSR — their lazy union is the term (a pair found twice is the same column).
    ``None``: not that case, or more than :data:`MAX_INDEX_TERMS` parts."""
    if a.size != size or b.size != size:
        return None
    n = ctx.n_first
    dtype = index_dtype(ctx.n)   # (every code is below the width: the arithmetic stays in the index dtype)
    ca = _first_order_columns(a.deps, n, dtype)
    if ca is None:
        return None
    square = b.deps is a.deps
    cb = ca if square else _first_order_columns(b.deps, n, dtype)
    if cb is None:
        return None
    combos = [(i, j) for i in range(len(ca)) for j in range(i if square else 0, len(cb))]
    if len(combos) > MAX_INDEX_TERMS:
        return None
    parts, entries = [], 0
    for i, j in combos:
        u, u_dead = ca[i]
        v, v_dead = cb[j]
        if u is v:                        # (a part times itself: the pair {u, u}, code u·(n + 1) + n)
            codes = u * (n + 1)
        else:
            codes = np.minimum(u, v)
            codes *= n
            codes += np.maximum(u, v)
        codes += n
        missing = 0
        if u_dead or v_dead:
            dead = (u | v) < 0            # (-1 in either: no pair in that row)
            missing = int(np.count_nonzero(dead))
            if missing == size:
                continue
            if missing:
                codes[dead] = -1
        entries += size - missing
        parts.append(IndexPart(codes))
    check_nnz(entries, "the interactions of a value")
    return Deps(size, ctx.n, parts)


def _grouped_cross(ctx, a, sa, b, sb, size: int):
    """:func:`cross_rows` built once per distinct pair of operand rows (:func:`row_groups`), ``None`` when the
    operands' rows do not repeat enough.  An operand of one element is one group."""
    if a.size == 1 and b.size == 1:
        return None
    ga = np.zeros(size, np.int64) if a.size == 1 else None
    gb = np.zeros(size, np.int64) if b.size == 1 else None
    if ga is None:
        groups = row_groups(sa)
        if groups is None:
            return None
        ga = groups[0][groups[1]]            # each row's representative (a row index of sa)
    if gb is None:
        if sb is sa:
            gb = ga
        else:
            groups = row_groups(sb)
            if groups is None:
                return None
            gb = groups[0][groups[1]]
    _, first, inverse = np.unique(ga * size + gb, return_index=True, return_inverse=True)
    if len(first) > GROUP_FRACTION * size:
        return None
    u = len(first)
    term = pair_rows(np.arange(u, dtype=np.int64), u, sa, ga[first], sb, gb[first], ctx.n_first,
                     one_per_row=True)
    return term.gather_rows(np.asarray(inverse, np.int64).reshape(-1))
