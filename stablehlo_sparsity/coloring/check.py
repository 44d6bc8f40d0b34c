"""Validity of a coloring, vectorized (``O(nnz log nnz)``, no Python loop over entries).

* column coloring: no row holds two nonzeros whose columns share a color — then every nonzero ``J[i, j]``
  is ``B[i, color[j]]`` of the compressed ``B = J S``;
* row coloring: the same for the transpose;
* star (symmetric) coloring: every nonzero ``H[i, j]`` of the symmetric pattern is recoverable directly —
  ``j`` is the only column of its color in row ``i`` (read ``B[i, color[j]]``), or ``i`` is the only column
  of its color in row ``j`` (read ``B[j, color[i]]``, by symmetry).  This is the *symmetrically
  orthogonal* condition of Coleman & Moré (1984); every star coloring satisfies it.
"""

from __future__ import annotations

import numpy as np

from .graph import as_csr, symmetrize

__all__ = ["check_coloring", "star_sources", "InvalidColoringError"]


class InvalidColoringError(ValueError):
    """A coloring that does not allow direct recovery of every nonzero."""


def _unique_in_row(rows: np.ndarray, cols_colors: np.ndarray, k: int) -> np.ndarray:
    """For each entry, True iff no other entry of its row has the same color."""
    keys = rows.astype(np.int64) * max(k, 1) + cols_colors
    _, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inv] == 1


def _colors_array(colors, nv: int) -> tuple[np.ndarray, int]:
    c = np.asarray(getattr(colors, "colors", colors))
    if c.ndim != 1 or len(c) != nv:
        raise InvalidColoringError(f"expected {nv} colors, got an array of shape {c.shape}")
    if nv and (c.min() < 0):
        raise InvalidColoringError("colors must be non-negative")
    return c.astype(np.int64), int(c.max()) + 1 if nv else 0


def star_sources(pattern, colors) -> np.ndarray:
    """For each nonzero of the symmetrized ``pattern`` (CSR order), the flat index ``r * k + c`` of the
    compressed ``(n, k)`` matrix ``B = H S`` it is read from, or ``-1`` where neither side is recoverable."""
    sym = symmetrize(pattern)
    n = sym.shape[0]
    c, k = _colors_array(colors, n)
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(sym.indptr))
    cols = sym.indices.astype(np.int64)
    uniq = _unique_in_row(rows, c[cols], k)
    # For a symmetric pattern, the entries sorted by (column, row) are the mirrors (j, i) of the entries
    # (i, j) in CSR order: mirror[e] is the CSR position of the mirror of entry e.
    mirror = np.lexsort((rows, cols))
    src = np.where(uniq, rows * k + c[cols], -1)
    alt = np.where(uniq[mirror], cols * k + c[rows], -1)
    return np.where(src >= 0, src, alt)


def check_coloring(pattern, colors, kind: str = "column", raise_on_error: bool = False) -> bool:
    """True iff ``colors`` is a valid ``kind`` coloring (``"column"``, ``"row"`` or ``"star"``) of ``pattern``.

    ``colors`` is an integer array (one color per column, row, or variable) or a :class:`Coloring`.  With
    ``raise_on_error`` an invalid coloring raises :class:`InvalidColoringError` naming a bad entry.
    """
    kind = getattr(colors, "kind", kind)
    csr = as_csr(pattern)
    if kind in ("star", "symmetric"):
        csr = symmetrize(csr)
        src = star_sources(csr, colors)
        bad = np.flatnonzero(src < 0)
        if len(bad) == 0:
            return True
        if raise_on_error:
            rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
            e = bad[0]
            raise InvalidColoringError(
                f"star coloring: entry ({rows[e]}, {csr.indices[e]}) is not directly recoverable "
                f"({len(bad)} such entries)")
        return False
    if kind == "row":
        csr = as_csr(csr.T)
    elif kind != "column":
        raise ValueError(f"kind must be 'column', 'row' or 'star', got {kind!r}")
    m, n = csr.shape
    c, k = _colors_array(colors, n)
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(csr.indptr))
    uniq = _unique_in_row(rows, c[csr.indices], k)
    if uniq.all():
        return True
    if raise_on_error:
        e = int(np.flatnonzero(~uniq)[0])
        side = "row" if kind == "column" else "column"
        raise InvalidColoringError(
            f"{kind} coloring: {side} {rows[e]} holds two {kind}s of color {c[csr.indices[e]]}")
    return False
