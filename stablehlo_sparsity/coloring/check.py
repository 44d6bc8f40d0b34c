"""Validity of a coloring, vectorized (``O(nnz log nnz)`` at most — ``O(nnz)`` for a valid column or row coloring
with fewer than 64 colors — and no Python loop over entries).

* column coloring: no row holds two nonzeros whose columns share a color — then every nonzero ``J[i, j]``
  is ``B[i, color[j]]`` of the compressed ``B = J S``;
* row coloring: the same for the transpose;
* star (symmetric) coloring: every nonzero ``H[i, j]`` of the symmetric pattern is recoverable directly —
  ``j`` is the only column of its color in row ``i`` (read ``B[i, color[j]]``), or ``i`` is the only column
  of its color in row ``j`` (read ``B[j, color[i]]``, by symmetry).  This is the *symmetrically
  orthogonal* condition of Coleman & Moré (1984); every star coloring satisfies it.
* acyclic coloring: a distance-1 coloring of the adjacency graph (the diagonal is not an edge) in which
  every two colors induce a forest — the condition for recovery by substitution (see :mod:`.acyclic`);
* bidirectional coloring: column colors and row colors, ``-1`` meaning "in no seed"; with ``B = J S_c``
  (one JVP per column color) and ``C = S_rᵀ J`` (one VJP per row color), every nonzero ``J[i, j]`` is read
  directly from ``B[i, c_col[j]]`` (``j`` colored, and the only colored column of its color in row ``i``)
  or from ``C[c_row[i], j]`` (``i`` colored, and the only colored row of its color in column ``j``).  This
  is the exact condition for direct bidirectional recovery (Coleman & Verma 1998 call it a *direct
  bicoloring* when it holds; a star bicoloring is a sufficient condition).
"""

from __future__ import annotations

import numpy as np

from .graph import adjacency, as_csr, symmetrize
from .kinds import ColoringKind

__all__ = ["check_coloring", "star_sources", "bidirectional_sources", "acyclic_violation", "InvalidColoringError"]


class InvalidColoringError(ValueError):
    """A coloring that does not allow direct recovery of every nonzero."""


def _unique_in_row(rows: np.ndarray, cols_colors: np.ndarray, k: int) -> np.ndarray:
    """For each entry, True iff no other entry of its row has the same color."""
    keys = rows.astype(np.int64) * max(k, 1) + cols_colors
    _, inv, counts = np.unique(keys, return_inverse=True, return_counts=True)
    return counts[inv] == 1


def _rows_have_distinct_colors(csr, c: np.ndarray) -> bool:
    """No row holds two columns of one color (``c`` below 63 colors): per row, the OR of one bit per entry
    has as many bits set as the row has entries — one pass over the nonzeros."""
    lengths = np.diff(csr.indptr)
    nonempty = lengths > 0
    if not nonempty.any():
        return True
    bits = np.left_shift(np.uint64(1), c.astype(np.uint64))[csr.indices]
    masks = np.bitwise_or.reduceat(bits, np.asarray(csr.indptr[:-1])[nonempty])
    if hasattr(np, "bitwise_count"):
        distinct = np.bitwise_count(masks)
    else:  # NumPy < 2.0
        distinct = np.zeros(len(masks), np.int64)
        for b in range(int(c.max()) + 1):
            distinct += (masks >> np.uint64(b)) & np.uint64(1)
    return bool(np.array_equal(distinct, lengths[nonempty]))


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


def _side_colors(colors, nv: int, what: str) -> np.ndarray:
    c = np.asarray(colors)
    if c.ndim != 1 or len(c) != nv:
        raise InvalidColoringError(f"expected {nv} {what} colors, got an array of shape {c.shape}")
    if not np.issubdtype(c.dtype, np.integer) and len(c):
        raise InvalidColoringError(f"{what} colors must be integers, got {c.dtype}")
    if nv and c.min() < -1:
        raise InvalidColoringError(f"{what} colors must be >= -1 (-1: in no seed)")
    return c.astype(np.int64)


def _bicolors(pattern, colors) -> tuple:
    """``(csr, column_colors, row_colors)`` from a :class:`Bicoloring` or a ``(column_colors, row_colors)``
    pair."""
    csr = as_csr(pattern)
    m, n = csr.shape
    if hasattr(colors, "column_colors"):
        cc, rc = colors.column_colors, colors.row_colors
    else:
        try:
            cc, rc = colors
        except (TypeError, ValueError):
            raise InvalidColoringError("a bidirectional coloring is a Bicoloring or a (column_colors, row_colors) "
                                       "pair") from None
    return csr, _side_colors(cc, n, ColoringKind.COLUMN), _side_colors(rc, m, ColoringKind.ROW)


def bidirectional_sources(pattern, colors) -> np.ndarray:
    """For each nonzero of ``pattern`` (CSR order): where it is read from, as a flat index into the
    concatenation of ``B.ravel()`` (``B = J S_c``, ``m × kc``) and ``C.ravel()`` (``C = S_rᵀ J``, ``kr × n``),
    the JVP side preferred; ``-1`` where neither side isolates it.  ``kc``, ``kr``: the largest column / row
    color plus one."""
    csr, cc, rc = _bicolors(pattern, colors)
    m, n = csr.shape
    kc = int(cc.max()) + 1 if n else 0
    kr = int(rc.max()) + 1 if m else 0
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(csr.indptr))
    cols = csr.indices.astype(np.int64)
    src = np.full(len(cols), -1, np.int64)
    # forward: j colored and alone with its color among the colored columns of row i
    col_c = cc[cols]
    on = col_c >= 0
    uniq = np.zeros(len(cols), bool)
    uniq[on] = _unique_in_row(rows[on], col_c[on], kc)
    src[uniq] = rows[uniq] * kc + col_c[uniq]
    # reverse: i colored and alone with its color among the colored rows of column j
    row_c = rc[rows]
    on = row_c >= 0
    if (on & ~uniq).any():
        alone = np.zeros(len(cols), bool)
        alone[on] = _unique_in_row(cols[on], row_c[on], kr)
        take = alone & ~uniq
        src[take] = m * kc + row_c[take] * n + cols[take]
    return src


def acyclic_violation(pattern, colors):
    """``None`` if ``colors`` is an acyclic coloring of the symmetrized ``pattern``, else a message naming
    the problem: two adjacent vertices of one color, or two colors inducing a cycle.

    Vectorized and independent of the coloring kernel: each edge ``u–v`` joins the tree-vertices
    ``(pair, u)`` and ``(pair, v)`` of its color pair; every component of that graph must be a tree
    (edges = vertices − 1)."""
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    g = adjacency(pattern)
    c, _ = _colors_array(colors, g.nv)
    rows = np.repeat(np.arange(g.nv, dtype=np.int64), np.diff(g.ptr))
    cols = g.nbr.astype(np.int64)
    same = np.flatnonzero(c[rows] == c[cols])
    if len(same):
        e = same[0]
        return f"adjacent variables {rows[e]} and {cols[e]} share color {c[rows[e]]}"
    if len(cols) == 0:
        return None
    k = int(c.max()) + 1
    pair = np.minimum(c[rows], c[cols]) * k + np.maximum(c[rows], c[cols])
    uniq, tv = np.unique(pair * g.nv + rows, return_inverse=True)
    mirror = np.lexsort((rows, cols))
    nt = len(uniq)
    graph = csr_array((np.ones(len(tv), np.int8), (tv, tv[mirror])), shape=(nt, nt))
    ncomp, label = connected_components(graph, directed=False)
    nverts = np.bincount(label, minlength=ncomp)
    nedges = np.bincount(label[tv], minlength=ncomp) // 2
    bad = np.flatnonzero(nedges >= nverts)
    if len(bad) == 0:
        return None
    t = int(np.flatnonzero(label == bad[0])[0])
    p, v = divmod(int(uniq[t]), g.nv)
    return (f"colors {p // k} and {p % k} induce a cycle through variable {v} "
            f"({len(bad)} two-colored components with a cycle)")


def check_coloring(pattern, colors, kind: str = "column", raise_on_error: bool = False) -> bool:
    """True iff ``colors`` is a valid ``kind`` coloring of ``pattern``: ``"column"``, ``"row"``, ``"star"``
    (direct symmetric recovery), ``"acyclic"`` (symmetric recovery by substitution) or ``"bidirectional"``.

    ``colors`` is an integer array (one color per column, row, or variable), a ``(column_colors,
    row_colors)`` pair for ``"bidirectional"`` (``-1``: in no seed), or a :class:`Coloring` (whose kind
    wins).  With ``raise_on_error`` an invalid coloring raises :class:`InvalidColoringError` naming a bad
    entry.

    Raises:
        InvalidColoringError: the coloring is invalid and ``raise_on_error`` is set; also, whatever
            ``raise_on_error`` says, when ``colors`` has the wrong length or a negative color (a ``ValueError``).
        ValueError: an unknown ``kind``, or a ``pattern`` that is not 2-D (or not square for the symmetric kinds).

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity import check_coloring
        >>> J = np.array([[1, 1, 0], [0, 1, 1]])
        >>> check_coloring(J, [0, 1, 0]), check_coloring(J, [0, 0, 1])
        (True, False)
        >>> check_coloring(J, [0, 0, 1], raise_on_error=True)
        Traceback (most recent call last):
        ...
        stablehlo_sparsity.coloring.check.InvalidColoringError: column coloring: row 0 holds two columns of color 0
    """
    kind = getattr(colors, "kind", kind)
    if kind == ColoringKind.ACYCLIC:
        problem = acyclic_violation(pattern, colors)
        if problem is None:
            return True
        if raise_on_error:
            raise InvalidColoringError(f"acyclic coloring: {problem}")
        return False
    if kind == ColoringKind.BIDIRECTIONAL:
        src = bidirectional_sources(pattern, colors)
        bad = np.flatnonzero(src < 0)
        if len(bad) == 0:
            return True
        if raise_on_error:
            csr = as_csr(pattern)
            rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
            e = bad[0]
            raise InvalidColoringError(
                f"bidirectional coloring: entry ({rows[e]}, {csr.indices[e]}) is isolated neither by its column "
                f"color nor by its row color ({len(bad)} such entries)")
        return False
    csr = as_csr(pattern)
    if kind in (ColoringKind.STAR, "symmetric"):
        src = star_sources(csr, colors)  # (of the symmetrized pattern: star_sources symmetrizes it once)
        bad = np.flatnonzero(src < 0)
        if len(bad) == 0:
            return True
        if raise_on_error:
            csr = symmetrize(csr)
            rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
            e = bad[0]
            raise InvalidColoringError(
                f"star coloring: entry ({rows[e]}, {csr.indices[e]}) is not directly recoverable "
                f"({len(bad)} such entries)")
        return False
    if kind == ColoringKind.ROW:
        csr = as_csr(csr.T)
    elif kind != ColoringKind.COLUMN:
        raise ValueError(f"kind must be 'column', 'row', 'star', 'acyclic' or 'bidirectional', got {kind!r}")
    m, n = csr.shape
    c, k = _colors_array(colors, n)
    if k <= 63 and _rows_have_distinct_colors(csr, c):
        return True  # (the common case, in O(nnz) without a sort)
    rows = np.repeat(np.arange(m, dtype=np.int64), np.diff(csr.indptr))
    uniq = _unique_in_row(rows, c[csr.indices], k)
    if uniq.all():
        return True
    if raise_on_error:
        e = int(np.flatnonzero(~uniq)[0])
        side = ColoringKind.ROW if kind == ColoringKind.COLUMN else ColoringKind.COLUMN
        raise InvalidColoringError(
            f"{kind} coloring: {side} {rows[e]} holds two {kind}s of color {c[csr.indices[e]]}")
    return False
