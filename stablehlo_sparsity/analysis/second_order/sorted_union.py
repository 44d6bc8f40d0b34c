"""The sorted union of a few long sorted rows: one linear merge per pair, into an output of their summed length.

A one-row value with several parts (a scalar objective ``a·Σ f + b·Σ g``: each sum's interaction codes a sorted
row of millions) is materialized by merging the parts' rows: the lattice's ``_merge_blocks``
(:mod:`stablehlo_sparsity.lattice.representations.materialize`) tries its ``ROW_UNIONS`` first, and this module's
:func:`union_of_sorted` is registered there (by :mod:`.encoding`).  SciPy's ``A + B`` does that merge, but on a
bool CSR it also writes a data array and sizes its output for both operands, in ``int64`` and in its data: at
3·10⁶ + 2·10⁶ pair codes, 45 MB of fresh pages where the merged row itself is 24 MB — the largest allocation of
the whole direct Hessian walk of a 1-D Allen–Cahn energy at n = 10⁶, and with its page faults 50–70 ms of its
100–150.  :func:`union_of_sorted` merges the columns only, in a compiled two-pointer pass (:func:`_merge_distinct`,
with a C twin), the two shortest rows first (``merge_smallest_first``, the order of SciPy's merge there).
"""

from __future__ import annotations

import numpy as np

from ...kernels.compiled import kernels_start_free, njit
from ...lattice.core import merge_smallest_first

__all__ = ["union_of_sorted", "MIN_KERNEL_ENTRIES"]

#: Rows of fewer entries in all than this are left to the caller's merge (the kernel's call costs more than it saves).
MIN_KERNEL_ENTRIES = 1 << 16


@njit
def _merge_distinct(a, b, out):  # pragma: no cover - compiled (its C twin runs; numba under SHS_KERNELS=numba)
    """The sorted union of the sorted distinct ``a`` and ``b`` written to ``out`` (``len(a) + len(b)`` long at
    least); returns its length."""
    i = j = k = 0
    la, lb = len(a), len(b)
    while i < la and j < lb:
        x, y = a[i], b[j]
        if x <= y:
            out[k] = x
            i += 1
            if x == y:
                j += 1
        else:
            out[k] = y
            j += 1
        k += 1
    while i < la:
        out[k] = a[i]
        i += 1
        k += 1
    while j < lb:
        out[k] = b[j]
        j += 1
        k += 1
    return k


def union_of_sorted(rows: list[np.ndarray]) -> np.ndarray | None:
    """The sorted union of ``rows`` (each a sorted ``int64`` array of distinct columns), or ``None`` — the caller
    merges — for other dtypes, fewer than :data:`MIN_KERNEL_ENTRIES` entries in all, or when the kernel would cost
    numba's start (:func:`~stablehlo_sparsity.kernels.compiled.kernels_start_free`).

    The result may be a view of a longer buffer (``len(a) + len(b)`` allocated, the union's length written: the
    tail is never touched, so it maps no pages)."""
    rows = [r for r in rows if len(r)]
    if len(rows) < 2:
        return rows[0] if rows and rows[0].dtype == np.int64 else None
    if (any(r.dtype != np.int64 for r in rows) or sum(len(r) for r in rows) < MIN_KERNEL_ENTRIES
            or not kernels_start_free()):
        return None
    return merge_smallest_first(rows, len, _merged_pair)


def _merged_pair(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted union of two sorted distinct ``int64`` rows (a view of a buffer of their summed length)."""
    out = np.empty(len(a) + len(b), np.int64)
    return out[:_merge_distinct(np.ascontiguousarray(a), np.ascontiguousarray(b), out)]
