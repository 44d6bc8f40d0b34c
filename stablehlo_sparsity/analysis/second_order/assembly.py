"""The symmetric Hessian pattern from sorted pair codes, in two compiled passes (:func:`symmetric_pattern`).

A scalar objective's interactions end as one sorted row of distinct pair codes ``n + u·n + v`` (``u ≤ v``,
:mod:`.encoding`): the upper triangle ``U`` in row-major order.  The pattern is ``U ∪ Uᵀ``, and since the two
meet only on the diagonal, every row ``r`` of it is its lower entries (``u < r`` with ``{u, r}`` present)
followed by its upper ones (``v ≥ r``) — both already ascending when the codes are read in order.  So one
pass counts the entries of each row and one pass writes them in place: no transpose, no merge, no sort, no
division (``u`` only grows along sorted codes).  SciPy's ``U + Uᵀ`` takes a transpose, a merge and a sort
check, three to five times longer on the large patterns this is for.
"""

from __future__ import annotations

import numpy as np

from ...dtypes import index_dtype
from ...kernels.compiled import njit

__all__ = ["symmetric_pattern"]


@njit
def _advance(c, u, base, n):
    """The row ``u`` of code ``c`` and the code ``base = n + u·n`` of pair ``(u, 0)``, moved forward from the
    previous code's (codes are read in order, so ``u`` only grows)."""
    while c >= base + n:
        u += 1
        base += n
    return u, base


@njit
def _row_counts(codes, n):
    """Entries per row of ``U ∪ Uᵀ`` and, of those, the lower ones (before the diagonal)."""
    count = np.zeros(n, np.int64)
    lower = np.zeros(n, np.int64)
    u = 0
    base = n  # n + u·n: the code of pair (u, 0)
    for i in range(len(codes)):
        u, base = _advance(codes[i], u, base, n)
        v = codes[i] - base
        count[u] += 1
        if v != u:
            count[v] += 1
            lower[v] += 1
    return count, lower


@njit
def _fill(codes, n, low, up, indices):
    """Each row's lower entries, then its upper ones, in place: ``low[r]`` and ``up[r]`` are the next lower and upper
    slots of row ``r`` (advanced as they are written)."""
    u = 0
    base = n
    for i in range(len(codes)):
        u, base = _advance(codes[i], u, base, n)
        v = codes[i] - base
        indices[up[u]] = v
        up[u] += 1
        if v != u:
            indices[low[v]] = u
            low[v] += 1


def symmetric_pattern(codes: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(indptr, indices)`` of the canonical ``(n, n)`` CSR ``U ∪ Uᵀ`` of sorted distinct pair codes (every
    code in ``[n, n + n²)``: the first-order columns dropped; a canonical CSR row's order), in the index dtype
    :func:`~stablehlo_sparsity.dtypes.index_dtype` gives (``int32`` below 2³¹: written so, never converted)."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    if len(codes) and (codes[0] < n or codes[-1] >= n + n * n):
        # (the kernels index rows by u without bounds checks: a code out of range must never reach them)
        raise ValueError(f"pair codes out of range for {n} inputs: [{codes[0]}, {codes[-1]}]")
    count, lower = _row_counts(codes, np.int64(n))
    dtype = index_dtype(n, 2 * len(codes))  # (at most two entries a code)
    indptr: np.ndarray = np.zeros(n + 1, dtype)
    np.cumsum(count, out=indptr[1:])
    low = count                             # (the counts are spent: their arrays become the fill's cursors)
    low[:] = indptr[:-1]
    lower += low
    indices: np.ndarray = np.empty(int(indptr[-1]), dtype)
    _fill(codes, np.int64(n), low, lower, indices)
    return indptr, indices
