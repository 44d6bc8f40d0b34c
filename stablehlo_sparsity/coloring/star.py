"""Greedy star coloring of a symmetric pattern, for Hessians with direct (substitution-free) recovery.

A *star coloring* of the adjacency graph is a distance-1 coloring in which every path on four vertices uses
at least three colors (no bicolored P4); equivalently every two-colored subgraph is a union of stars.
Coleman & Moré (1984) showed that such a coloring lets every nonzero ``H[i, j]`` be read directly from the
compressed ``B = H S`` (one Hessian-vector product per color): ``B[i, color[j]]`` when ``j`` is the only
neighbour of ``i`` with its color, else ``B[j, color[i]]`` (see :func:`~.check.star_sources`).

The greedy rule here forbids, for the vertex ``v`` being colored, exactly the colors that would break the
definition given the colors already placed (Gebremedhin, Tarafdar, Manne & Pothen, "New acyclic and star
coloring algorithms with application to computing Hessians", SIAM J. Sci. Comput. 2007, §3):

1. ``color(w)`` for each colored neighbour ``w`` (distance-1);
2. ``v`` as an end of a P4 ``v–w–x–y``: ``color(x)`` whenever ``x`` (a colored neighbour of the colored
   neighbour ``w``) has another neighbour ``y ≠ w`` colored like ``w``;
3. ``v`` inside a P4 ``w–v–x–y``: when two neighbours ``w, x`` of ``v`` share a color, the colors of all
   colored neighbours ``y ≠ v`` of ``x``.

It costs ``O(Σ_v deg(v)·Σ_{w~v} deg(w)·deg)`` — cubic in the degree, linear in the number of vertices.
"""

from __future__ import annotations

import numpy as np

from ..kernels.compiled import njit

__all__ = ["greedy_star"]


@njit
def _greedy_star(nv, ptr, nbr, order):
    colors = np.full(nv, -1, np.int32)
    forbidden = np.zeros(nv + 1, np.int64)
    count = np.zeros(nv + 1, np.int64)   # how many neighbours of v hold each color (valid where seen == s)
    seen = np.zeros(nv + 1, np.int64)
    k = 0
    for t in range(nv):
        v = order[t]
        s = t + 1
        for p in range(ptr[v], ptr[v + 1]):
            cw = colors[nbr[p]]
            if cw >= 0:
                forbidden[cw] = s
                if seen[cw] != s:
                    seen[cw] = s
                    count[cw] = 0
                count[cw] += 1
        for p in range(ptr[v], ptr[v + 1]):
            w = nbr[p]
            cw = colors[w]
            if cw < 0:
                continue
            if count[cw] >= 2:
                # rule 3: w and another neighbour of v share cw; v's color must differ from every
                # colored neighbour y of w (else y–w–v–w' is bicolored).
                for q in range(ptr[w], ptr[w + 1]):
                    y = nbr[q]
                    if y != v and colors[y] >= 0:
                        forbidden[colors[y]] = s
            # rule 2: v–w–x–y with color(y) == cw forbids color(x).
            for q in range(ptr[w], ptr[w + 1]):
                x = nbr[q]
                cx = colors[x]
                if x == v or cx < 0 or forbidden[cx] == s:
                    continue
                for r in range(ptr[x], ptr[x + 1]):
                    y = nbr[r]
                    if y != w and colors[y] == cw:
                        forbidden[cx] = s
                        break
        c = 0
        while forbidden[c] == s:
            c += 1
        colors[v] = c
        if c >= k:
            k = c + 1
    return colors, k


def greedy_star(nv, ptr, nbr, order) -> tuple[np.ndarray, int]:
    """Greedy star coloring of the adjacency graph ``(ptr, nbr)`` in ``order``: ``(colors, count)``."""
    colors, k = _greedy_star(nv, ptr, nbr, np.ascontiguousarray(order, dtype=np.int64))
    return colors, int(k)
