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

import numpy as np
import scipy.sparse as sp

from ..errors import PatternTooLargeError
from ..lattice import Deps
from ..lattice.core import CsrPart, check_nnz, make_csr

__all__ = ["pair_width", "first_order", "pair_rows", "full_rows", "pairs_to_hessian", "MAX_PAIR_WIDTH"]

#: The widest column space (``n + n²``) the pair encoding may use: columns are ``int64``.
MAX_PAIR_WIDTH = 1 << 62


def pair_width(n: int) -> int:
    """The number of columns of the second-order lattice over ``n`` inputs (``n + n²``)."""
    width = n + n * n
    if width >= MAX_PAIR_WIDTH:
        raise PatternTooLargeError(f"{n} inputs are too many for the direct second-order analysis "
                                   "(pair columns n + n² must fit in int64)")
    return width


def first_order(deps: Deps, n: int) -> sp.csr_array:
    """The first-order part (columns ``< n``) of a second-order lattice, as a ``(k, n)`` canonical CSR.

    Rows are sorted, so each row's first-order columns come first: one mask over the entries, O(nnz)."""
    m = deps.to_csr()
    k = m.shape[0]
    if m.nnz == 0:
        return make_csr(np.zeros(k + 1, np.int64), np.zeros(0, np.int64), k, n)
    keep = m.indices < n
    row_of = np.repeat(np.arange(k, dtype=np.int64), np.diff(m.indptr))
    indptr = np.zeros(k + 1, np.int64)
    np.cumsum(np.bincount(row_of[keep], minlength=k), out=indptr[1:])
    return make_csr(indptr, m.indices[keep].astype(np.int64), k, n)


def _rows_from_entries(rows: np.ndarray, cols: np.ndarray, k: int, width: int) -> Deps:
    """A ``(k, width)`` lattice from (row, column) entries, duplicates allowed: SciPy's compiled COO → CSR
    conversion and per-row sort (an order of magnitude faster than a two-key ``lexsort``)."""
    if len(rows) == 0:
        return Deps.empty(k, width)
    m = sp.csr_array((np.ones(len(rows), bool), (rows, cols)), shape=(k, width))
    m.sum_duplicates()
    check_nnz(m.nnz, "the interactions of a value")
    return Deps(k, width, [CsrPart(make_csr(m.indptr.astype(np.int64), m.indices.astype(np.int64), k, width))])


#: Above this many distinct (left length, right length) combinations, :func:`pair_rows` expands every triple
#: through one flat index computation instead of one broadcast per combination.
MAX_LENGTH_BUCKETS = 64


def _row_matrix(m: sp.csr_array, ptr: np.ndarray, rows: np.ndarray, length: int) -> np.ndarray:
    """The columns of ``rows`` (each of exactly ``length`` entries) as a ``(len(rows), length)`` matrix."""
    return m.indices[ptr[rows][:, None] + np.arange(length, dtype=np.int64)[None, :]].astype(np.int64)


def pair_rows(out: np.ndarray, k: int, left: sp.csr_array, la: np.ndarray, right: sp.csr_array, rb: np.ndarray,
              n: int) -> Deps:
    """The cross term: for each triple ``t``, every pair ``{u, v}`` with ``u ∈ left[la[t]]`` and ``v ∈
    right[rb[t]]`` goes into output row ``out[t]`` (a product's ``∇a∇bᵀ + ∇b∇aᵀ``).  ``-1`` in ``la``/``rb``:
    an empty row.  Vectorized: the triples are bucketed by their two row lengths (a handful of buckets in
    practice: stencils give rows of equal length), and each bucket is one broadcast outer product."""
    width = pair_width(n)
    la = np.asarray(la, np.int64)
    rb = np.asarray(rb, np.int64)
    out = np.asarray(out, np.int64)
    lptr = left.indptr.astype(np.int64)
    rptr = right.indptr.astype(np.int64)
    la_ok, rb_ok = la >= 0, rb >= 0
    la_s, rb_s = np.where(la_ok, la, 0), np.where(rb_ok, rb, 0)
    len_a = np.where(la_ok, lptr[la_s + 1] - lptr[la_s], 0)
    len_b = np.where(rb_ok, rptr[rb_s + 1] - rptr[rb_s], 0)
    cnt = len_a * len_b
    live = cnt > 0
    if not live.any():
        return Deps.empty(k, width)
    la_s, rb_s, out, len_a, len_b, cnt = la_s[live], rb_s[live], out[live], len_a[live], len_b[live], cnt[live]
    total = int(cnt.sum())
    check_nnz(total, "the interactions of a value")
    combo = len_a * (int(len_b.max()) + 1) + len_b
    kinds = np.unique(combo)
    if len(kinds) <= MAX_LENGTH_BUCKETS:
        rows_list, codes_list = [], []
        for c in kinds.tolist():
            sel = np.flatnonzero(combo == c)
            a_len, b_len = int(len_a[sel[0]]), int(len_b[sel[0]])
            u = _row_matrix(left, lptr, la_s[sel], a_len)[:, :, None]
            v = _row_matrix(right, rptr, rb_s[sel], b_len)[:, None, :]
            lo, hi = np.minimum(u, v), np.maximum(u, v)
            codes_list.append((lo * n + hi + n).reshape(-1))
            rows_list.append(np.repeat(out[sel], a_len * b_len))
        return _rows_from_entries(np.concatenate(rows_list), np.concatenate(codes_list), k, width)
    t = np.repeat(np.arange(len(cnt), dtype=np.int64), cnt)
    first = np.zeros(len(cnt), np.int64)
    np.cumsum(cnt[:-1], out=first[1:])
    j = np.arange(total, dtype=np.int64) - first[t]
    lb = len_b[t]
    u = left.indices[lptr[la_s[t]] + j // lb].astype(np.int64)
    v = right.indices[rptr[rb_s[t]] + j % lb].astype(np.int64)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    return _rows_from_entries(out[t], n + lo * n + hi, k, width)


def full_rows(s: sp.csr_array, n: int) -> Deps:
    """The full term ``S_e × S_e`` of each row (a nonlinear op's ``g''·∇y∇yᵀ`` with ``g''`` unknown)."""
    k = s.shape[0]
    idx = np.arange(k, dtype=np.int64)
    return pair_rows(idx, k, s, idx, s, idx, n)


def pairs_to_hessian(row: sp.csr_array, n: int) -> sp.csr_array:
    """The symmetric ``(n, n)`` pattern of a one-row second-order lattice (its pair columns, both triangles)."""
    cols = row.indices.astype(np.int64)
    code = cols[cols >= n] - n
    u, v = code // n, code % n
    r = np.concatenate([u, v])
    c = np.concatenate([v, u])
    m = sp.csr_array((np.ones(len(r), bool), (r, c)), shape=(n, n))
    m.sum_duplicates()
    m.sort_indices()
    return m
