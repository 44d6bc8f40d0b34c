"""Sorted distinct pair codes by buckets of ``u`` (:func:`sorted_distinct_pairs`), and the distinct values of a sorted
array moved to its front (:func:`distinct_in_place`): two compiled kernels with C twins.

Pair codes ``n + u·n + v`` (``u ≤ v``, :mod:`.encoding`) that lie on no few diagonals — an interaction
graph's random edges — are sorted and de-duplicated when a reduction unions them.  ``np.sort`` of ``m`` such
codes is a comparison sort (about 70 ns a code at 5·10⁶ on the reference machine); these codes have a cheaper
order.  Counting ``u`` and placing each ``v`` in its row's bucket is two linear passes; a bucket holds the few
partners of one ``u`` (a node's degree), sorted in place where it lies (insertion sort, ``np.sort`` above
:data:`INSERTION_SORT_MAX`), and its repeats dropped as it is written back as codes.  On the graph Laplacian
at n = 10⁶ (5–6·10⁶ codes, half of them repeats) the C twin takes 70–100 ms where the sort and the
de-duplication took 330–400 ms.  The extra memory is the ``n + 1`` bucket starts: :func:`worth_buckets` says
when they pay.
"""

from __future__ import annotations

import numpy as np

from ...kernels.compiled import njit

__all__ = ["sorted_distinct_pairs", "worth_buckets", "distinct_in_place", "INSERTION_SORT_MAX", "MIN_BUCKET_CODES",
           "MIN_IN_PLACE"]

#: Buckets of up to this many partners are sorted by insertion, longer ones by ``np.sort`` (a hub of a graph).
INSERTION_SORT_MAX = 32

#: Fewer codes than this sort by ``np.sort`` (the kernel's call and its ``n + 1`` starts cost more).
MIN_BUCKET_CODES = 1 << 14

#: :func:`distinct_in_place` drops repeats in place from this many codes on (fewer: NumPy's boolean mask).
MIN_IN_PLACE = 1 << 14

#: The ``n + 1`` bucket starts may take up to this many times the codes.
BUCKET_SLACK = 4


def worth_buckets(m: int, n: int) -> bool:
    """Whether ``m`` pair codes over ``n`` inputs are sorted by buckets rather than ``np.sort``: enough codes,
    and not many more buckets than codes (each empty bucket is still visited)."""
    return m >= MIN_BUCKET_CODES and n <= BUCKET_SLACK * m


@njit
def _bucket_pairs(code, n, out):
    """``out[:k]``: the sorted distinct codes of ``code`` (pair codes over ``n`` inputs, any order); returns
    ``k``.  ``out`` has ``len(code)`` slots; ``code`` is only read."""
    m = len(code)
    start = np.zeros(n + 1, np.int64)
    for i in range(m):
        start[(code[i] - n) // n + 1] += 1
    for u in range(n):
        start[u + 1] += start[u]
    pos = start[:-1].copy()
    for i in range(m):
        c = code[i] - n
        u = c // n
        out[pos[u]] = c - u * n
        pos[u] += 1
    k = 0
    for u in range(n):
        s = start[u]
        e = start[u + 1]
        if e - s > INSERTION_SORT_MAX:
            out[s:e].sort()
        else:
            for i in range(s + 1, e):
                x = out[i]
                j = i - 1
                while j >= s and out[j] > x:
                    out[j + 1] = out[j]
                    j -= 1
                out[j + 1] = x
        base = n + u * n
        last = -1
        for i in range(s, e):
            v = out[i]
            if v != last:
                out[k] = base + v   # (k ≤ i: a write never overtakes the read)
                k += 1
                last = v
    return k


def sorted_distinct_pairs(code: np.ndarray, n: int) -> np.ndarray:
    """The sorted distinct values of ``code``, pair codes ``n + u·n + v`` over ``n`` inputs (every code in
    ``[n, n + n²)``), by buckets of ``u`` (the module docstring); ``np.unique(code)``."""
    code = np.ascontiguousarray(code, dtype=np.int64)
    if len(code) and (int(code.min()) < n or int(code.max()) >= n + n * n):
        # (the kernel indexes buckets by u without bounds checks: a code out of range must never reach it)
        raise ValueError(f"pair codes out of range for {n} inputs")
    out = np.empty(len(code), np.int64)
    k = _bucket_pairs(code, np.int64(n), out)
    return out[:k]


@njit
def _drop_repeats(a):
    """Moves the distinct values of the sorted ``a`` to its front, in order; returns how many there are."""
    k = 0
    for i in range(len(a)):
        if i == 0 or a[i] != a[k - 1]:
            a[k] = a[i]
            k += 1
    return k


def distinct_in_place(a: np.ndarray) -> np.ndarray:
    """The distinct values of the sorted ``int64`` array ``a`` (overwritten): ``a`` itself when they are all
    distinct, else a copy of its front, where they were moved (a view would keep all of ``a`` alive: measured, a
    peak 80% higher on a sum of local terms).  NumPy's ``a[a[1:] != a[:-1]]`` also writes a mask the size of
    ``a`` and reads ``a`` twice (a reduction's millions of pair codes)."""
    k = _drop_repeats(a)
    return a if k == len(a) else a[:k].copy()
