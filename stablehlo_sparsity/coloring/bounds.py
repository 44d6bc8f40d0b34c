"""Lower bounds on the number of colors of each kind (a target: the searches stop when they reach it)."""

from __future__ import annotations

import numpy as np

from .graph import adjacency, as_csr
from .kinds import ColoringKind

__all__ = ["lower_bound", "star_lower_bound", "acyclic_lower_bound"]


def lower_bound(pattern, kind: str | ColoringKind = "column") -> int:
    """A lower bound on the number of colors: the most nonzeros in one row (``"column"``: those columns
    pairwise conflict), in one column (``"row"``); for ``"star"`` 3, or 2 for a star forest, 1 without
    off-diagonal entries."""
    if kind not in tuple(ColoringKind):
        raise ValueError(f"kind must be 'column', 'row', 'star', 'acyclic' or 'bidirectional', got {kind!r}")
    csr = as_csr(pattern)
    if csr.nnz == 0:
        return 0
    if kind == ColoringKind.COLUMN:
        return int(np.diff(csr.indptr).max())
    if kind == ColoringKind.ROW:
        return int(np.max(np.bincount(csr.indices, minlength=csr.shape[1])))
    if kind == ColoringKind.STAR:
        return star_lower_bound(adjacency(csr))
    if kind == ColoringKind.ACYCLIC:
        return acyclic_lower_bound(adjacency(csr))
    if kind == ColoringKind.BIDIRECTIONAL:
        # One product is one JVP (every row holds at most one nonzero) or one VJP (every column does).
        rows_ok = int(np.diff(csr.indptr).max()) <= 1
        cols_ok = int(np.max(np.bincount(csr.indices, minlength=csr.shape[1]))) <= 1
        return 1 if rows_ok or cols_ok else 2
    raise ValueError(f"kind must be 'column', 'row', 'star', 'acyclic' or 'bidirectional', got {kind!r}")


def star_lower_bound(g) -> int:
    """1 without edges; 2 for a star forest; else 3.  Two colors suffice exactly for star forests: a connected
    two-colored graph with a path on four vertices has a bicolored P4.  A graph is a star forest iff every
    edge has an endpoint of degree 1."""
    if g.nv == 0 or len(g.nbr) == 0:
        return 1
    deg = np.diff(g.ptr)
    owner = np.repeat(np.arange(g.nv), deg)
    return 2 if bool(((deg[owner] == 1) | (deg[g.nbr] == 1)).all()) else 3


def acyclic_lower_bound(g) -> int:
    """1 without edges; 2 for a forest (any proper 2-coloring of a forest is acyclic); else 3 (a cycle
    colored with two colors is a two-colored cycle).  A graph is a forest iff edges = vertices − components."""
    if g.nv == 0 or len(g.nbr) == 0:
        return 1
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    ncomp = connected_components(csr_array((np.ones(len(g.nbr), np.int8), g.nbr, g.ptr), shape=(g.nv, g.nv)),
                                 directed=False, return_labels=False)
    return 2 if len(g.nbr) // 2 == g.nv - ncomp else 3
