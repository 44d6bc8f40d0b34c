"""The second-order lattice's column space: first-order columns and interaction (pair) columns in one matrix.

A value with ``k`` elements in a program with ``n`` differentiated inputs gets one sparse boolean matrix of
shape ``(k, n + n²)``, an ordinary :class:`~stablehlo_sparsity.lattice.Deps`:

* columns ``0 … n-1`` — the first-order set ``S_e`` (the inputs element ``e`` may depend on), exactly what the
  Jacobian analysis computes;
* column ``n + u·n + v`` with ``u ≤ v`` — the interaction ``{u, v}``: ``∂²y_e/∂x_u∂x_v`` may be nonzero.  Only
  the upper triangle is stored; the Hessian is symmetric.

Why one matrix: a linear op moves a value's interactions exactly as it moves its first-order sets (a
reshape, a gather, a sum), and the chain rule ``H(g∘y) = Σ g'·H(y) + g''·∇y∇yᵀ`` says every op passes its
operands' interactions on wherever its first derivative may be nonzero — which is what its first-order rule
computes.  So the first-order rules, applied to these wider rows, propagate both parts at once (loops and
constants included), and a nonlinear op only *adds* its local term ``g''·∇y∇yᵀ`` (:mod:`.terms`).

Worked example (``n = 2``; pair ``{u, v}`` is column ``2 + 2u + v``)::

    x = [{0}, {1}]                 d = x0 - x1 = [{0, 1}]
    d * d  (cross term S_d × S_d)  = [{0, 1} ∪ pairs {0,0} {0,1} {1,1}] = [{0, 1, 2, 3, 5}]
"""

from __future__ import annotations

import functools
import math

import numpy as np
import scipy.sparse as sp

from ...errors import PatternTooLargeError
from ...kernels.compiled import kernels_start_free
from ...lattice import Deps
from ...dtypes import index_dtype
from ...lattice.core import (ROW_UNIONS, SORTING_NETWORKS, WIDE_DISTINCT, WIDE_DISTINCT_OF_ARRAYS, CsrPart,
                             GroupPart, IndexPart, check_nnz, csr_from_parts, csr_of_keys, distinct_entries,
                             distinct_sorted, gather_csr_rows, is_arange, make_csr, rows_of_keys, sorted_columns)
from . import pair_buckets
from .pair_buckets import distinct_in_place, sorted_distinct_pairs, worth_buckets
from .pair_marks import columns_of_marks, distinct_by_marks
from .sorted_union import union_of_sorted

__all__ = ["pair_width", "inputs_of_width", "distinct_columns", "distinct_of_arrays", "first_order", "pair_rows",
           "full_rows", "distinct_factor_pairs", "pairs_to_hessian", "MAX_PAIR_WIDTH"]

#: The widest column space (``n + n²``) the pair encoding may use: columns are ``int64``.
MAX_PAIR_WIDTH = 1 << 62


def pair_width(n: int) -> int:
    """The number of columns of the second-order lattice over ``n`` inputs (``n + n²``)."""
    width = n + n * n
    if width >= MAX_PAIR_WIDTH:
        raise PatternTooLargeError(f"{n} inputs are too many for the direct second-order analysis "
                                   "(pair columns n + n² must fit in int64)")
    return width


def inputs_of_width(width: int) -> int | None:
    """The ``n`` with ``n + n² = width``, or ``None`` when ``width`` is not a pair width."""
    n = int((math.isqrt(4 * width + 1) - 1) // 2)
    return n if n > 0 and n + n * n == width else None


#: :func:`distinct_columns` merges up to this many sorted runs by a stable sort instead of marking.
MAX_SORTED_RUNS = 64

#: The marks of :func:`distinct_columns` may take this many times the entries (and at least this many bytes).
MARK_SLACK, MARK_FLOOR = 8, 1 << 20

#: :func:`distinct_columns` first reads the band of every this-many-th pair (a wide band shows early).
BAND_SAMPLE = 64


def _divmod(a: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.divmod`` of non-negative integers by a scalar: a floor division and a multiply (NumPy's ``divmod``
    ufunc has no fast scalar-divisor path; ``//`` has, an order of magnitude faster on large arrays)."""
    q = a // d
    return q, a - q * d


def distinct_columns(cols: np.ndarray, width: int, overwrite: bool = False) -> np.ndarray | None:
    """Sorted distinct columns of a second-order lattice, with mark vectors instead of a sort.

    First-order columns mark an ``n``-vector; a pair ``{u, v}`` marks ``(u, v - u)`` in an ``n × (b + 1)``
    array, ``b`` the widest ``v - u`` present — small for the local objectives this is for.  ``None`` when
    ``width`` is no pair width.  Pairs on many diagonals (marks not much smaller than the entries: a graph's
    random edges) are sorted by buckets of ``u`` (:mod:`.pair_buckets`), or by ``np.sort`` where that kernel
    would cost more to start than it saves: the first-order columns are already split off by then, and a sort
    of every column would redo that.
    ``overwrite``: ``cols`` (``int64``) may be sorted in place (a large copy maps fresh pages).  (The marks on
    sampled diagonals, :func:`distinct_of_arrays`, are for the caller to try first: a reduction offers them its parts
    before it gathers this buffer.)"""
    n = inputs_of_width(width)
    if n is None:
        return None
    if np.count_nonzero(cols[1:] < cols[:-1]) <= MAX_SORTED_RUNS:
        # a few sorted runs (first-order columns sort before every pair code; a stencil's pair rows come in
        # code order, read entry-major by the reduction): timsort merges the runs in O(entries · log runs)
        # and de-duplicating neighbours is one pass — no division, no marks
        if overwrite and cols.dtype == np.int64:
            cols.sort(kind="stable")
            return _distinct_sorted(cols)
        return _distinct_sorted(np.sort(cols, kind="stable").astype(np.int64, copy=False))
    pairs = cols >= n
    if overwrite and cols.dtype == np.int64 and pairs.all():
        first, code = np.zeros(0, np.int64), cols  # (pairs only, ours to overwrite: no copy)
    else:
        first = np.flatnonzero(np.bincount(cols[~pairs], minlength=n)) if (~pairs).any() else np.zeros(0, np.int64)
        code = cols[pairs]
    if len(code) == 0:
        return first.astype(np.int64)
    descents = np.count_nonzero(code[1:] < code[:-1])
    if descents <= MAX_SORTED_RUNS:
        # a few sorted runs (a stencil's elementwise pair rows are in code order, rows overlapping only at
        # their ends; one run per lazy part): a stable sort merges the runs (timsort, O(entries · log runs)),
        # then de-duplicating neighbours is one pass — no division, no marks
        if descents:
            code = np.sort(code, kind="stable")
            return _with_first(first, _distinct_sorted(code))  # (a new array: ours to overwrite)
        return _with_first(first, distinct_sorted(code))
    budget = max(MARK_SLACK * len(code), MARK_FLOOR)
    su, sv = _divmod(code[::BAND_SAMPLE] - n, n)
    sd = sv - su
    # (a sample already too wide for both mark layouts spares the full split)
    if n * (int(sd.max()) + 1) <= budget or n * len(np.unique(sd)) <= budget:
        u, d = _split_pairs(code, n)  # (``code`` is this call's own, a copy or ``cols``: it becomes ``d``)
        band = int(d.max()) + 1
        if n * band <= budget:
            offsets = np.arange(band)       # (every offset up to the widest: no need to find which occur)
        else:
            seen = np.zeros(band, bool)
            seen[d] = True
            offsets = np.flatnonzero(seen)
        if n * len(offsets) <= budget:
            return _with_first(first, _offset_marks(u, d, n, offsets))
        code = u * (n + 1) + d + n  # (the codes again: n + u·n + v)
    if worth_buckets(len(code), n) and kernels_start_free():
        # pairs on many diagonals (a graph's random edges): by buckets of u, linear, 4× faster than the sort
        return _with_first(first, sorted_distinct_pairs(code, n))
    return _with_first(first, _distinct_sorted(np.sort(code)))


def _split_pairs(code: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(u, d)`` of pair codes ``n + u·n + v`` (``d = v - u``), ``code`` overwritten with ``d``: one new array of
    its size, where ``np.divmod`` and ``v - u`` would map four more (fresh pages: at 10⁷ codes 80 MB each)."""
    code -= n
    u = code // n
    np.remainder(code, n, out=code)
    code -= u
    return u, code


def _offset_marks(u: np.ndarray, d: np.ndarray, n: int, offsets: np.ndarray) -> np.ndarray:
    """Sorted distinct pair codes of the pairs ``(u, u + d)``, every ``d`` one of the sorted ``offsets``: one mark
    per ``u`` and offset.  A band of the diagonal is the offsets ``0 … b``; the pairs of a 2-D or 3-D stencil lie on
    a few diagonals (``d`` = 0, 1, the side, …) far apart, a periodic stencil's also on its wrap-around ones
    (``{0, n - 1}``), where the band is as wide as the farthest and the marks as many as the diagonals.  Marks read
    in order are ``(u, offset)`` order, which is code order.  ``u`` and ``d`` are overwritten."""
    k = len(offsets)
    band = int(offsets[-1]) + 1 == k        # (offsets 0 … k - 1: each is its own rank)
    if not band:
        rank = np.zeros(int(offsets[-1]) + 1, np.int64)
        rank[offsets] = np.arange(k)
        # (each offset by its rank, in place: ``take`` reads index i before it writes element i; "wrap" is not
        # buffered as "raise" is, and every d is an index of ``rank``)
        np.take(rank, d, out=d, mode="wrap")
    np.multiply(u, k, out=u)
    u += d
    mark = np.zeros(n * k, bool)
    mark[u] = True
    return columns_of_marks(None, mark, n, offsets, k)


def _distinct_sorted(a: np.ndarray) -> np.ndarray:
    """The distinct values of the sorted ``int64`` array ``a``, which may be overwritten: moved to its front by a
    compiled pass when there are many and it costs nothing to start (:func:`.pair_buckets.distinct_in_place`),
    else NumPy's mask."""
    if len(a) >= pair_buckets.MIN_IN_PLACE and kernels_start_free():
        return distinct_in_place(a)
    return distinct_sorted(a)


def _with_first(first: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Sorted distinct first-order columns, then sorted distinct pair codes (every one ``≥ n``): all sorted."""
    if len(first) == 0:
        return codes.astype(np.int64, copy=False)
    return np.concatenate([first.astype(np.int64), codes.astype(np.int64, copy=False)])


def distinct_of_arrays(arrays, width: int) -> np.ndarray | None:
    """Sorted distinct columns of ``arrays`` (a second-order value's parts' columns, as they lie; ``-1`` is none),
    by marks on their few diagonals (:mod:`.pair_marks`); ``None`` when ``width`` is no pair width or the marks do
    not apply (then :func:`distinct_columns` sorts the entries gathered into one buffer)."""
    n = inputs_of_width(width)
    if n is None:
        return None
    return distinct_by_marks(arrays, n, max(MARK_SLACK * sum(len(a) for a in arrays), MARK_FLOOR))


WIDE_DISTINCT.append(distinct_columns)
WIDE_DISTINCT_OF_ARRAYS.append(distinct_of_arrays)
ROW_UNIONS.append(union_of_sorted)


def first_order(deps: Deps, n: int, bases: dict | None = None) -> sp.csr_array:
    """The first-order part (columns ``< n``) of a second-order lattice, as a ``(k, n)`` canonical CSR.

    Works on the lazy parts, so a value's interactions are never materialized just to read its first-order
    sets: index parts drop their pair columns, CSR parts filter their base once (``bases``: a cache by base,
    shared across values; many parts see one base through different row maps)."""
    return _union_of_parts(_first_order_parts(deps, n, bases), deps.rows, n)


def _union_of_parts(parts: list, k: int, n: int) -> sp.csr_array:
    """The ``(k, n)`` CSR of first-order parts: a few index parts by one sorting-network pass, one broadcast row
    that holds the others' columns repeated, else materialized."""
    if 1 < len(parts) < len(SORTING_NETWORKS) and all(isinstance(p, IndexPart) for p in parts):
        return _index_union(parts, k, n)
    row = _covering_broadcast(parts, n) if len(parts) > 1 else None
    if row is not None:
        check_nnz(k * len(row))
        return make_csr(np.arange(k + 1, dtype=np.int64) * len(row), np.tile(row.astype(np.int64), k), k, n)
    return csr_from_parts(parts, k, n)


def _covering_broadcast(parts: list, n: int) -> np.ndarray | None:
    """The columns of a part that gives every row one and the same base row (a broadcast: ``n − Σ cos x + …``,
    every row all of ``x``) when they hold every column of the other parts, so that each row's union is that row;
    else ``None``.  A dense Hessian's operand: merging its ``k`` full rows with the others cost more than the
    rest of its walk."""
    for i, p in enumerate(parts):
        if type(p) is not CsrPart or p.rowmap is None or len(p.rowmap) == 0:
            continue
        r = int(p.rowmap[0])
        if r < 0 or not bool(np.all(p.rowmap == r)):
            continue
        row = p.base.indices[p.base.indptr[r]:p.base.indptr[r + 1]]
        mark = np.zeros(n + 1, bool)  # (one flag more, at -1: an index part's "none")
        mark[row] = True
        mark[-1] = True
        for j, q in enumerate(parts):
            if j != i and not bool(mark[q.cols if isinstance(q, IndexPart) else q.base.indices].all()):
                break
        else:
            return row
    return None


def _first_order_parts(deps: Deps, n: int, bases: dict | None) -> list:
    """The parts of :func:`first_order`, before their union (a part of pair columns only contributes none)."""
    parts: list = []
    for p in deps.parts:
        if isinstance(p, IndexPart):
            cols = p.cols
            first = cols < n
            if not first.any():
                continue                  # a part of pairs only (x², x·y of single inputs): no first-order column
            parts.append(IndexPart(np.where(first, cols, -1).astype(index_dtype(n), copy=False)))
        elif type(p) is GroupPart and not p.built:
            # a lazy group union (a scatter-add's result): the groups over the source's first-order rows, so its
            # pair rows are never built just to be dropped
            hit = bases.get(id(p)) if bases is not None else None
            if hit is None or hit[0] is not p:
                hit = (p, _first_order_groups(p, n, bases))
                if bases is not None:
                    bases[id(p)] = hit
            if hit[1].nnz:
                parts.append(CsrPart(hit[1]))
        else:
            base = p.base
            hit = bases.get(id(base)) if bases is not None else None
            if hit is None or hit[0] is not base:
                hit = (base, _first_order_csr(base, n))
                if bases is not None:
                    bases[id(base)] = hit  # keeps the base alive: its id stays unique
            if hit[1].nnz:
                parts.append(CsrPart(hit[1], p.rowmap))
    return parts


def _first_order_groups(p: GroupPart, n: int, bases: dict | None) -> sp.csr_array:
    """The first-order rows of a lazy group union: its groups over the source's first-order rows — read as a
    column table when the source is index parts (a gather's ``{src, dst}``), with no union built first."""
    parts = _first_order_parts(p.source, n, bases)
    if 0 < len(parts) <= GROUP_TABLE_PARTS and all(isinstance(q, IndexPart) for q in parts):
        return p.regroup(table=np.stack([q.cols for q in parts], axis=1), n=n)
    return p.regroup(_union_of_parts(parts, p.source.rows, n))


#: :func:`_first_order_groups` reads a source of at most this many first-order index parts as a column table.
GROUP_TABLE_PARTS = 8


def _index_union(parts: list, k: int, n: int) -> sp.csr_array:
    """The union of a few index parts in one pass: each row's columns sorted by a sorting network, repeats
    dropped (what the lattice's block materialization computes in two passes, one to count and one to write;
    the temporaries here are the size of the parts themselves)."""
    cols = sorted_columns([p.cols for p in parts])
    keep = distinct_entries(cols)
    indptr = np.zeros(k + 1, np.int64)
    counts = keep[0].astype(np.int64)
    for kk in keep[1:]:
        counts += kk
    np.cumsum(counts, out=indptr[1:])
    check_nnz(int(indptr[-1]))
    return make_csr(indptr, np.stack(cols, axis=1)[np.stack(keep, axis=1)], k, n)


def _first_order_csr(m: sp.csr_array, n: int) -> sp.csr_array:
    """Columns ``< n`` of a canonical CSR (sorted rows: a mask over the entries, O(nnz))."""
    k = m.shape[0]
    keep = m.indices < n
    if keep.all():
        return make_csr(m.indptr.astype(np.int64), m.indices.astype(np.int64), k, n)
    row_of = np.repeat(np.arange(k, dtype=np.int64), np.diff(m.indptr))
    indptr = np.zeros(k + 1, np.int64)
    np.cumsum(np.bincount(row_of[keep], minlength=k), out=indptr[1:])
    return make_csr(indptr, m.indices[keep].astype(np.int64), k, n)


#: :func:`_rows_from_entries` sorts at most this many entries as one-number keys (a vectorized Hessian's terms
#: at n ≤ 100): SciPy's construction and checks cost more than the sort there (58 against 186 µs for 50 entries;
#: even at 4,000).
KEY_SORT_ENTRIES = 2048


def _rows_from_entries(rows: np.ndarray, cols: np.ndarray, k: int, width: int) -> Deps:
    """A ``(k, width)`` lattice from (row, column) entries, duplicates allowed: a few as ``row · width + column``
    keys in one sort, more by SciPy's compiled COO → CSR conversion and per-row sort (an order of magnitude faster
    than a two-key ``lexsort``); into one row (a contraction to a scalar, ``x · div``) by
    :func:`distinct_columns`.  ``cols`` is consumed: it may be reordered in place."""
    if len(rows) == 0:
        return Deps.empty(k, width)
    if k == 1 and len(rows) > KEY_SORT_ENTRIES:
        cols = cols.astype(np.int64, copy=False)
        one = distinct_of_arrays([cols], width)
        if one is None:
            one = distinct_columns(cols, width, overwrite=True)
        if one is not None:
            check_nnz(len(one), "the interactions of a value")
            return Deps(1, width, [CsrPart(make_csr(np.array([0, len(one)], np.int64), one, 1, width))])
    if len(rows) <= KEY_SORT_ENTRIES and k * width < 2 ** 62:  # (the keys fit an int64)
        key = rows.astype(np.int64, copy=False) * width + cols.astype(np.int64, copy=False)
        return Deps(k, width, [CsrPart(csr_of_keys(key, k, width, "the interactions of a value"))])
    m = sp.csr_array((np.ones(len(rows), bool), (rows, cols)), shape=(k, width))
    m.sum_duplicates()
    check_nnz(m.nnz, "the interactions of a value")
    return Deps(k, width, [CsrPart(make_csr(m.indptr.astype(np.int64), m.indices.astype(np.int64), k, width))])


#: Above this many distinct (left length, right length) combinations, :func:`pair_rows` expands every triple
#: through one flat index computation instead of one broadcast per combination.
MAX_LENGTH_BUCKETS = 64


def _row_matrix(m: sp.csr_array, ptr: np.ndarray, rows: np.ndarray, length: int) -> np.ndarray:
    """The columns of ``rows`` (each of exactly ``length`` entries) as a ``(len(rows), length)`` matrix."""
    if len(rows) == m.shape[0] and is_arange(rows):
        # every row, in order (an elementwise op's operand): the indices as they are, no gather
        return m.indices.reshape(len(rows), length).astype(np.int64, copy=False)
    return m.indices[ptr[rows][:, None] + np.arange(length, dtype=np.int64)[None, :]].astype(np.int64)


def _lengths(ptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Row lengths of a CSR at ``rows`` (``-1`` = an empty row)."""
    if len(rows) == len(ptr) - 1 and is_arange(rows):
        return np.diff(ptr)
    if len(rows) == 0 or int(rows.min()) >= 0:
        return ptr[rows + 1] - ptr[rows]
    safe = np.maximum(rows, 0)
    return np.where(rows >= 0, ptr[safe + 1] - ptr[safe], 0)


#: :func:`_upper_triangle` caches the triangles of rows up to this long (at most 130 kB each, about 6 MB if every
#: length were cached; a long row's triangle is built afresh, so the cache never holds a large array alive).
CACHED_TRIANGLE = 128


def _upper_triangle(m: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(m)``, cached for short rows: row lengths repeat (a stencil's rows, scalars), and
    building it costs more than using it for a short row."""
    return _small_upper_triangle(m) if m <= CACHED_TRIANGLE else _triu_indices(m)


def _triu_indices(m: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.triu_indices(m)`` by repeats instead of the nonzeros of an ``m × m`` mask (4× faster at m = 1,000: a
    dense Hessian's one row)."""
    r = np.arange(m, dtype=np.int64)
    count = m - r                       # row i holds columns i … m - 1
    iu = np.repeat(r, count)
    start = np.zeros(m, np.int64)       # where row i starts, less i: column = position - start + i
    np.cumsum(count[:-1], out=start[1:])
    start -= r
    ju = np.arange(len(iu), dtype=np.int64)
    ju -= np.repeat(start, count)
    return iu, ju


@functools.lru_cache(maxsize=CACHED_TRIANGLE + 1)
def _small_upper_triangle(m: int) -> tuple[np.ndarray, np.ndarray]:
    iu, ju = _triu_indices(m)
    iu.flags.writeable = False
    ju.flags.writeable = False
    return iu, ju


#: :func:`_triangle_codes` fills its result this many codes at a time (2 MB blocks of int64).
TRIANGLE_BLOCK_CODES = 1 << 18


def _triangle_codes(a: np.ndarray, n: int, out: np.ndarray | None = None) -> np.ndarray:
    """The pair codes ``n + a[e, i]·n + a[e, j]`` (``i ≤ j``) of each row of a ``(k, L)`` matrix of sorted
    columns: its upper triangle, in code order, in ``out`` (a ``(k, L(L+1)/2)`` view, e.g. of the CSR's indices)
    or a new array.  Two column gathers (``np.take`` along an axis is several times faster than fancy indexing
    here) of the scaled rows and one in-place add, a block of rows at a time straight into the result:
    whole-array temporaries were three more arrays the result's size, each mapped afresh by the allocator (a
    5-wide stencil at k = 10⁶: 15 M codes, 60–410 ms at once, 42–52 ms by blocks)."""
    iu, ju = _upper_triangle(a.shape[1])
    k = a.shape[0]
    rows = max(1, TRIANGLE_BLOCK_CODES // max(len(iu), 1))
    if k <= rows and out is None:  # (one block: its temporaries are small; a written-out program's scalars)
        codes = np.take(a * n, iu, axis=1)
        codes += np.take(a + n, ju, axis=1)
        return codes
    codes = np.empty((k, len(iu)), np.int64) if out is None else out
    for start in range(0, k, rows):
        block, dest = a[start:start + rows], codes[start:start + rows]
        np.take(block * n, iu, axis=1, out=dest)
        dest += np.take(block + n, ju, axis=1)
    return codes


def _pairs_one_per_row(out, k, left, lptr, la_s, right, rptr, rb_s, len_a, len_b, combo, kinds, n) -> Deps:
    """:func:`pair_rows` when each output row gets one triple (elementwise ops): per length bucket, the codes
    of each row as a matrix, sorted and de-duplicated along the row, written straight into the CSR."""
    width = pair_width(n)
    if left is right and np.array_equal(la_s, rb_s):
        return _triangles_one_per_row(out, k, left, lptr, la_s, len_a, combo, kinds, n)
    buckets = []
    for c in kinds.tolist():
        sel = np.flatnonzero(combo == c) if len(kinds) > 1 else None
        rows_a = la_s if sel is None else la_s[sel]
        a_len, b_len = (int(len_a[0]), int(len_b[0])) if sel is None else (int(len_a[sel[0]]), int(len_b[sel[0]]))
        u = _row_matrix(left, lptr, rows_a, a_len)[:, :, None]
        v = _row_matrix(right, rptr, rb_s if sel is None else rb_s[sel], b_len)[:, None, :]
        codes = (np.minimum(u, v) * n + np.maximum(u, v) + n).reshape(len(rows_a), a_len * b_len)
        keep = None                                 # None: every code of the bucket is distinct within its row
        if codes.shape[1] > 1:
            codes.sort(axis=1)
            keep = np.ones(codes.shape, bool)
            np.not_equal(codes[:, 1:], codes[:, :-1], out=keep[:, 1:])
        buckets.append((out if sel is None else out[sel], codes, keep))
    if len(buckets) == 1 and buckets[0][2] is None and len(out) == k and is_arange(out):
        return _one_bucket_rows(buckets[0][1], k, width)
    counts = np.zeros(k, np.int64)
    for rows, codes, keep in buckets:
        counts[rows] = codes.shape[1] if keep is None else keep.sum(axis=1)
    indptr, indices = _csr_of_counts(counts)
    for rows, codes, keep in buckets:
        if keep is None:
            _write_rows(indices, indptr, rows, codes)
        else:
            slot = np.cumsum(keep, axis=1) - 1
            slot += indptr[rows][:, None]
            indices[slot[keep]] = codes[keep]
    return Deps(k, width, [CsrPart(make_csr(indptr, indices, k, width))])


def _triangles_one_per_row(out, k, left, lptr, la_s, len_a, combo, kinds, n) -> Deps:
    """:func:`_pairs_one_per_row` of a square term (``S × S`` of each row: a nonlinear op of one operand): each
    row's codes are its upper triangle, distinct and in order, so every row's count is known before any code is
    written, and a bucket of consecutive rows writes its codes straight into the CSR's indices (a copy of 15 M
    codes into them cost as long as computing them: fresh pages)."""
    width = pair_width(n)
    sels = [np.flatnonzero(combo == c) if len(kinds) > 1 else None for c in kinds.tolist()]
    lengths = [int(len_a[0 if sel is None else sel[0]]) for sel in sels]
    if len(sels) == 1 and len(out) == k and is_arange(out):
        return _one_bucket_rows(_triangle_codes(_row_matrix(left, lptr, la_s, lengths[0]), n), k, width)
    counts = np.zeros(k, np.int64)
    for sel, length in zip(sels, lengths):
        counts[out if sel is None else out[sel]] = length * (length + 1) // 2
    indptr, indices = _csr_of_counts(counts)
    for sel, length in zip(sels, lengths):
        rows = out if sel is None else out[sel]
        a = _row_matrix(left, lptr, la_s if sel is None else la_s[sel], length)
        if _consecutive(rows):
            start, stop = int(indptr[rows[0]]), int(indptr[rows[-1] + 1])
            _triangle_codes(a, n, out=indices[start:stop].reshape(len(rows), -1))
        else:
            _write_rows(indices, indptr, rows, _triangle_codes(a, n))
    return Deps(k, width, [CsrPart(make_csr(indptr, indices, k, width))])


def _one_bucket_rows(codes: np.ndarray, k: int, width: int) -> Deps:
    """The lattice of ``k`` rows whose codes (distinct within each row) are the rows of ``codes``, in order."""
    check_nnz(codes.size, "the interactions of a value")
    if codes.shape[1] == 1:  # one pair per row (x², x·y of single inputs): an index part, unions stay lazy
        return Deps(k, width, [IndexPart(codes.reshape(-1))])
    indptr = np.arange(k + 1, dtype=np.int64) * codes.shape[1]
    return Deps(k, width, [CsrPart(make_csr(indptr, codes.reshape(-1), k, width))])


def _csr_of_counts(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``indptr`` of rows of ``counts`` entries, and their (unwritten) ``indices``."""
    indptr = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=indptr[1:])
    check_nnz(int(indptr[-1]), "the interactions of a value")
    return indptr, np.empty(int(indptr[-1]), np.int64)


def _consecutive(rows: np.ndarray) -> bool:
    """Whether ``rows`` is ``r, r + 1, …`` (a stencil's interior between its shorter boundary rows)."""
    return len(rows) > 0 and int(rows[-1]) - int(rows[0]) == len(rows) - 1 and bool(np.all(np.diff(rows) == 1))


def _write_rows(indices: np.ndarray, indptr: np.ndarray, rows: np.ndarray, codes: np.ndarray) -> None:
    """Row ``e`` of ``codes`` into CSR row ``rows[e]`` (which has exactly that many slots)."""
    if _consecutive(rows):
        indices[indptr[rows[0]]:indptr[rows[-1] + 1]] = codes.reshape(-1)
        return
    # a column of codes at a time from each row's start (a ``(rows, width)`` matrix of slots took as long as the
    # writes)
    slot = indptr[rows]
    for j in range(codes.shape[1]):
        indices[slot] = codes[:, j]
        slot += 1


def pair_rows(out: np.ndarray, k: int, left: sp.csr_array, la: np.ndarray, right: sp.csr_array, rb: np.ndarray,
              n: int, one_per_row: bool = False) -> Deps:
    """The cross term: for each triple ``t``, every pair ``{u, v}`` with ``u ∈ left[la[t]]`` and ``v ∈
    right[rb[t]]`` goes into output row ``out[t]`` (a product's ``∇a∇bᵀ + ∇b∇aᵀ``).  ``-1`` in ``la``/``rb``:
    an empty row.  Vectorized: the triples are bucketed by their two row lengths (a handful of buckets in
    practice: stencils give rows of equal length), and each bucket is one broadcast outer product.
    ``one_per_row``: ``out`` has no repeated row (elementwise ops), which allows a faster assembly."""
    width = pair_width(n)
    la = np.asarray(la, np.int64)
    rb = np.asarray(rb, np.int64)
    out = np.asarray(out, np.int64)
    if len(out) == 1:
        return _one_triple(int(out[0]), k, left, int(la[0]), right, int(rb[0]), n)
    lptr = left.indptr.astype(np.int64)
    rptr = right.indptr.astype(np.int64)
    len_a = _lengths(lptr, la)
    len_b = _lengths(rptr, rb)
    cnt = len_a * len_b
    live = cnt > 0
    if not live.any():
        return Deps.empty(k, width)
    if not live.all():
        la, rb, out, len_a, len_b, cnt = la[live], rb[live], out[live], len_a[live], len_b[live], cnt[live]
    la_s, rb_s = la, rb
    total = int(cnt.sum())
    check_nnz(total, "the interactions of a value")
    combo = len_a * (int(len_b.max()) + 1) + len_b
    # (np.unique hashes, much slower on NumPy 2; a bincount only while the length pairs are small numbers)
    kinds = np.flatnonzero(np.bincount(combo)) if int(combo.max()) < 1 << 22 else np.unique(combo)
    if one_per_row and len(kinds) <= MAX_LENGTH_BUCKETS:
        return _pairs_one_per_row(out, k, left, lptr, la_s, right, rptr, rb_s, len_a, len_b, combo, kinds, n)
    if len(kinds) <= MAX_LENGTH_BUCKETS:
        # each bucket's codes written into one buffer (a list and its concatenation map it twice); a contraction
        # to one row (``x · div``) needs no row of each code
        codes = np.empty(total, np.int64)
        rows = np.empty(total, np.int64) if k > 1 else None
        at = 0
        for c in kinds.tolist():
            sel = np.flatnonzero(combo == c)
            a_len, b_len = int(len_a[sel[0]]), int(len_b[sel[0]])
            u = _row_matrix(left, lptr, la_s[sel], a_len)[:, :, None]
            v = _row_matrix(right, rptr, rb_s[sel], b_len)[:, None, :]
            block = codes[at:at + len(sel) * a_len * b_len].reshape(len(sel), a_len, b_len)
            np.minimum(u, v, out=block)
            block *= n
            block += np.maximum(u, v)
            block += n
            if rows is not None:
                rows[at:at + block.size] = np.repeat(out[sel], a_len * b_len)
            at += block.size
        return _rows_from_entries(np.zeros(total, np.int64) if rows is None else rows, codes, k, width)
    t = np.repeat(np.arange(len(cnt), dtype=np.int64), cnt)
    first = np.zeros(len(cnt), np.int64)
    np.cumsum(cnt[:-1], out=first[1:])
    j = np.arange(total, dtype=np.int64) - first[t]
    lb = len_b[t]
    u = left.indices[lptr[la_s[t]] + j // lb].astype(np.int64)
    v = right.indices[rptr[rb_s[t]] + j % lb].astype(np.int64)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    return _rows_from_entries(out[t], n + lo * n + hi, k, width)


def _one_triple(row: int, k: int, left: sp.csr_array, a: int, right: sp.csr_array, b: int, n: int) -> Deps:
    """:func:`pair_rows` of a single triple (a product or a nonlinear op of scalars: the bulk of a program
    written out term by term), without the bucketing machinery: one outer product of two short rows."""
    width = pair_width(n)
    if a < 0 or b < 0:
        return Deps.empty(k, width)
    u = left.indices[left.indptr[a]:left.indptr[a + 1]].astype(np.int64)
    v = right.indices[right.indptr[b]:right.indptr[b + 1]].astype(np.int64)
    if len(u) == 0 or len(v) == 0:
        return Deps.empty(k, width)
    check_nnz(len(u) * len(v), "the interactions of a value")
    if left is right and a == b:
        iu, ju = _upper_triangle(len(u))              # S × S of a sorted row: its upper triangle, in code order
        codes = u[iu] * n + u[ju] + n
    else:
        codes = (np.minimum.outer(u, v) * n + np.maximum.outer(u, v) + n).reshape(-1)
        if len(codes) > 1:
            codes = distinct_sorted(np.sort(codes))
    if k == 1:
        if len(codes) == 1:  # one pair (x², x·y of single inputs): an index part, as _pairs_one_per_row gives
            return Deps(1, width, [IndexPart(codes)])
        return Deps(1, width, [CsrPart(make_csr(np.array([0, len(codes)], np.int64), codes, 1, width))])
    indptr = np.zeros(k + 1, np.int64)
    indptr[row + 1:] = len(codes)
    return Deps(k, width, [CsrPart(make_csr(indptr, codes, k, width))])


def distinct_factor_pairs(s: sp.csr_array, members: np.ndarray, n: int) -> Deps | None:
    """The one-row term ``∪_{i≠j} S_i × S_j`` of a product of the factors ``members`` (rows of the first-order
    CSR ``s``), built from the union of their columns instead of from every pair of factors; ``None`` when that
    union's triangle would cost much more than the pairs of factors (one factor holding most of the columns).

    With ``U`` the union and ``c(u)`` the number of factors holding ``u``: ``{u, u}`` needs two factors holding
    ``u`` (``c(u) ≥ 2``); ``{u, v}``, ``u ≠ v``, is missing only when a single factor, and the same one, holds
    each (``c(u) = c(v) = 1``, same owner).  So the term is ``U``'s upper triangle minus those — in code
    order, with no sort."""
    members = np.asarray(members, np.int64)
    ptr = s.indptr.astype(np.int64, copy=False)
    lengths = ptr[members + 1] - ptr[members]
    total = int(lengths.sum())
    if total == 0:
        return Deps.empty(1, pair_width(n))
    cross = total * total - int((lengths * lengths).sum())  # the factor-pair path's entries
    # (every row, in order — the factors of ``jnp.prod(x)``: the indices as they are)
    rows = s if len(members) == s.shape[0] and is_arange(members) else gather_csr_rows(s, members)
    cols = rows.indices.astype(np.int64, copy=False)
    if len(cols) < 2 or bool((cols[1:] > cols[:-1]).all()):
        # increasing already (the factors are the elements of an argument, one input each): no sort
        union, first, count = cols, np.arange(len(cols)), np.ones(len(cols), np.int64)
    else:
        union, first, count = np.unique(cols, return_index=True, return_counts=True)
    m = len(union)
    if m * (m + 1) // 2 > 2 * cross + 4096:
        return None
    check_nnz(m * (m + 1) // 2, "the factor pairs of a product")
    iu, ju = _upper_triangle(m)
    if m == total == len(members) and bool((lengths == 1).all()):
        keep = iu != ju                            # one input a factor, each its own: every pair but {u, u}
    else:
        owner = np.repeat(members, lengths)[first]  # the factor holding u, where c(u) = 1
        single = count == 1
        keep = np.where(iu == ju, ~single[iu], ~(single[iu] & single[ju] & (owner[iu] == owner[ju])))
    codes = (union[iu[keep]] * n + union[ju[keep]] + n).astype(np.int64, copy=False)
    width = pair_width(n)
    if len(codes) == 0:
        return Deps.empty(1, width)
    return Deps(1, width, [CsrPart(make_csr(np.array([0, len(codes)], np.int64), codes, 1, width))])


def uniform_rows(m: sp.csr_array) -> int | None:
    """The common length of every row of a CSR, or ``None`` when the lengths differ (or there are no rows)."""
    k = m.shape[0]
    total = int(m.indptr[-1]) if k else 0
    if k == 0 or total % k:
        return None
    length = total // k
    return length if np.array_equal(m.indptr, np.arange(0, total + 1, max(length, 1))[:k + 1]) or total == 0 \
        else None


def elementwise_pairs(left: sp.csr_array, right: sp.csr_array, n: int) -> Deps | None:
    """Row ``e`` of ``left`` × row ``e`` of ``right`` for every ``e`` (an elementwise op's term), when every row
    of each has one length and the pairs of a row need no de-duplication (``left is right``: the upper
    triangle of ``S_e × S_e``; or one entry per row on each side): a ``(k, pairs)`` code matrix, built in a
    few array passes, without :func:`pair_rows`' per-triple bookkeeping.  ``None``: not that case."""
    k = left.shape[0]
    la = uniform_rows(left)
    if la is None:
        return None
    lb = la if right is left else uniform_rows(right)
    if lb is None or (right is not left and la * lb > 1):
        return None
    width = pair_width(n)
    if la == 0 or lb == 0:
        return Deps.empty(k, width)
    a = left.indices.reshape(k, la).astype(np.int64, copy=False)
    if right is left:
        if la == 1:
            codes = a * (n + 1) + n
        else:
            codes = _triangle_codes(a, n)
    else:
        b = right.indices.reshape(k, 1).astype(np.int64, copy=False)
        codes = np.minimum(a, b) * n + np.maximum(a, b) + n
    check_nnz(codes.size, "the interactions of a value")
    if codes.shape[1] == 1:
        return Deps(k, width, [IndexPart(codes.reshape(-1))])
    indptr = np.arange(k + 1, dtype=np.int64) * codes.shape[1]
    return Deps(k, width, [CsrPart(make_csr(indptr, codes.reshape(-1), k, width))])


def full_rows(s: sp.csr_array, n: int) -> Deps:
    """The full term ``S_e × S_e`` of each row (a nonlinear op's ``g''·∇y∇yᵀ`` with ``g''`` unknown)."""
    fast = elementwise_pairs(s, s, n)
    if fast is not None:
        return fast
    k = s.shape[0]
    idx = np.arange(k, dtype=np.int64)
    return pair_rows(idx, k, s, idx, s, idx, n, one_per_row=True)


#: :func:`pairs_to_hessian` assembles patterns of at least this many pair codes with the compiled two-pass
#: kernel (:mod:`.assembly`, 1.3–2.2× faster than SciPy's ``U + Uᵀ``) when it costs nothing to start: its C twin
#: runs (:func:`~stablehlo_sparsity.kernels.compiled.native_kernels`), or this process has loaded numba already …
COMPILED_ASSEMBLY = 1 << 16
#: … or when the pattern has so many codes that the kernel saves more than loading it costs: importing numba
#: and the cached kernels takes about 0.4 s, what the kernel saves (about 12 ns a code) on 30 million codes.
#: Below that a one-off detection would pay the import for a few milliseconds.
COMPILED_ASSEMBLY_WITH_IMPORT = 1 << 25


#: :func:`pairs_to_hessian` assembles at most this many pair codes by one sort of both triangles' keys.
SMALL_ASSEMBLY = 1 << 15


def pairs_to_hessian(row: sp.csr_array, n: int) -> sp.csr_array:
    """The symmetric ``(n, n)`` pattern of a one-row second-order lattice (its pair columns, both triangles).

    The row's pair codes are sorted, so ``(u, v)`` with ``u ≤ v`` come in row-major order: the upper triangle
    is a CSR as it stands, and the pattern is ``U ∪ Uᵀ``."""
    cols = row.indices
    code = cols[int(cols.searchsorted(n)):].astype(np.int64, copy=False)  # (sorted: its pair codes come last)
    if len(code) >= COMPILED_ASSEMBLY and (kernels_start_free() or len(code) >= COMPILED_ASSEMBLY_WITH_IMPORT):
        from .assembly import symmetric_pattern

        indptr, indices = symmetric_pattern(code, n)
        check_nnz(len(indices), "the Hessian pattern")
        return make_csr(indptr, indices, n, n)
    if len(code) <= SMALL_ASSEMBLY and n < 1 << 31:
        # few pairs (a small program's Hessian): both triangles as keys, one sort, no transpose and sum — the
        # upper triangle's keys u·n + v are the codes less n (distinct already), the lower one's add no repeat
        upper = code - n
        u, v = np.divmod(upper, n)
        lower = v * n
        lower += u
        key = np.concatenate([upper, lower[u != v]])
        key.sort()
        check_nnz(len(key), "the Hessian pattern")
        indptr, cols = rows_of_keys(key, n, n)
        return make_csr(indptr, cols, n, n)
    u, v = _divmod(code - n, n)
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(np.bincount(u, minlength=n), out=indptr[1:])
    upper = make_csr(indptr, v, n, n)
    full = (upper + upper.T).tocsr()
    full.sort_indices()
    return full
