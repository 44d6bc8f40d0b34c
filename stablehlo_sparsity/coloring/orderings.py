"""Vertex orderings for greedy coloring.

The greedy algorithm colors vertices one at a time with the smallest color no conflicting neighbour holds;
the order decides the number of colors.  The classic orderings (Gebremedhin, Manne & Pothen, "What color
is your Jacobian? Graph coloring for computing derivatives", SIAM Review 2005, §4) are:

* ``natural``               — ``0, 1, …, n-1``;
* ``largest_first``         — by decreasing degree (static);
* ``smallest_last``         — repeatedly remove a vertex of minimum degree in the remaining graph, color in
  reverse removal order (Matula & Beck); greedy then needs at most ``degeneracy + 1`` colors;
* ``incidence_degree``      — repeatedly pick the vertex with the most already-ordered neighbours;
* ``dynamic_largest_first`` — repeatedly pick the vertex with the largest degree among unordered vertices;
* ``random``                — a seeded random permutation.

"Degree" is taken in the conflict graph being colored: the distance-2 graph of a bipartite pattern for
column/row coloring, the adjacency graph for star coloring.  The dynamic orderings keep a bucket queue
(doubly linked lists per degree) so each is ``O(sum of distance-2 neighbourhood sizes)``.
"""

from __future__ import annotations

import numpy as np

from . import ORDERS
from ..kernels.compiled import njit
from .graph import Adjacency, Bipartite

__all__ = ["ORDERS", "order_vertices", "conflict_degrees", "best_of_orderings"]


@njit
def collect_neighbors(v, ptr, nbr, optr, onbr, d2, stamp, s, buf):
    """Write the distinct conflict neighbours of ``v`` (≠ v) into ``buf``; return how many.

    ``stamp[x] == s`` marks ``x`` as seen for this call, so no per-call clearing is needed."""
    cnt = 0
    stamp[v] = s
    if d2:
        for p in range(ptr[v], ptr[v + 1]):
            w = nbr[p]
            for q in range(optr[w], optr[w + 1]):
                x = onbr[q]
                if stamp[x] != s:
                    stamp[x] = s
                    buf[cnt] = x
                    cnt += 1
    else:
        for p in range(ptr[v], ptr[v + 1]):
            x = nbr[p]
            if stamp[x] != s:
                stamp[x] = s
                buf[cnt] = x
                cnt += 1
    return cnt


@njit
def _degrees(nv, ptr, nbr, optr, onbr, d2):
    deg = np.zeros(nv, np.int64)
    stamp = np.zeros(nv, np.int64)
    buf = np.empty(max(nv, 1), np.int64)
    for v in range(nv):
        deg[v] = collect_neighbors(v, ptr, nbr, optr, onbr, d2, stamp, v + 1, buf)
    return deg


@njit
def _dynamic_order(nv, ptr, nbr, optr, onbr, d2, key0, insert_order, pick_max, delta):
    """Bucket-queue ordering: pick the vertex of max (or min) key, then add ``delta`` to the key of each
    unordered conflict neighbour.  Ties go to the most recently (re)inserted vertex."""
    key = key0.copy()
    head = np.full(nv + 1, -1, np.int64)
    nxt = np.full(nv, -1, np.int64)
    prv = np.full(nv, -1, np.int64)
    for t in range(nv):
        v = insert_order[t]
        k = key[v]
        nxt[v] = head[k]
        if head[k] >= 0:
            prv[head[k]] = v
        head[k] = v
    order = np.empty(nv, np.int64)
    if nv == 0:
        return order
    cur = key.max() if pick_max else key.min()
    done = np.zeros(nv, np.bool_)
    stamp = np.zeros(nv, np.int64)
    buf = np.empty(nv, np.int64)
    for t in range(nv):
        if pick_max:
            while head[cur] < 0:
                cur -= 1
        else:
            while head[cur] < 0:
                cur += 1
        v = head[cur]
        # unlink v (it is the head of its bucket)
        head[cur] = nxt[v]
        if nxt[v] >= 0:
            prv[nxt[v]] = -1
        done[v] = True
        order[t] = v
        cnt = collect_neighbors(v, ptr, nbr, optr, onbr, d2, stamp, t + 1, buf)
        for i in range(cnt):
            x = buf[i]
            if done[x]:
                continue
            k = key[x]
            # unlink x from bucket k
            if prv[x] >= 0:
                nxt[prv[x]] = nxt[x]
            else:
                head[k] = nxt[x]
            if nxt[x] >= 0:
                prv[nxt[x]] = prv[x]
            k += delta
            key[x] = k
            prv[x] = -1
            nxt[x] = head[k]
            if head[k] >= 0:
                prv[head[k]] = x
            head[k] = x
            if pick_max:
                if k > cur:
                    cur = k
            elif k < cur:
                cur = k
    return order


def _walk_args(graph):
    if isinstance(graph, Bipartite):
        return graph.nv, graph.ptr, graph.nbr, graph.optr, graph.onbr, True
    if isinstance(graph, Adjacency):
        empty = np.zeros(1, graph.ptr.dtype)
        return graph.nv, graph.ptr, graph.nbr, empty, empty, False
    raise TypeError(f"expected a Bipartite or Adjacency graph, got {type(graph).__name__}")


def conflict_degrees(graph) -> np.ndarray:
    """Degree of every vertex in the conflict graph (distance-2 for bipartite, distance-1 for adjacency)."""
    return _degrees(*_walk_args(graph))


def order_vertices(graph, order: str = "natural", seed: int = 0, degrees: np.ndarray | None = None) -> np.ndarray:
    """The vertices of ``graph`` in the named order (see the module docstring)."""
    args = _walk_args(graph)
    nv = args[0]
    if order == "natural":
        return np.arange(nv, dtype=np.int64)
    if order == "random":
        return np.random.default_rng(seed).permutation(nv).astype(np.int64)
    if order not in ORDERS:
        raise ValueError(f"unknown order {order!r}; expected one of {', '.join(ORDERS)} or 'best'")
    deg = conflict_degrees(graph) if degrees is None else degrees
    if order == "largest_first":
        return np.argsort(-deg, kind="stable").astype(np.int64)
    # Insert in increasing-degree order (ties: higher index first) so that, among equal keys, the
    # bucket head (picked first) is the lowest-index vertex of largest degree.
    by_degree = np.lexsort((-np.arange(nv), deg)).astype(np.int64)
    if order == "smallest_last":
        return _dynamic_order(*args, deg, by_degree, False, -1)[::-1].copy()
    if order == "incidence_degree":
        return _dynamic_order(*args, np.zeros(nv, np.int64), by_degree, True, 1)
    return _dynamic_order(*args, deg, by_degree, True, -1)  # dynamic_largest_first


def best_of_orderings(graph, names, color, lower_bound: int, seed: int = 0, on_each=None):
    """Greedy-color ``graph`` once per ordering of ``names``, stopping as soon as one reaches
    ``lower_bound``.  ``color(name, order)`` returns ``(colors, k)``; ``order()`` gives the vertices in that
    ordering (the conflict degrees, which most orderings need, are computed once for all of them); a
    coloring that orders itself (DSATUR) need not call it.  ``on_each(name, k)`` hears each result.  Returns
    ``(colors, k, name, tried)`` for the fewest colors (the first ordering on ties); ``tried`` maps each
    ordering run to its count."""
    best = None
    tried: dict[str, int] = {}
    degrees: list[np.ndarray] = []

    def order_of(name: str):
        def order() -> np.ndarray:
            if name not in ("natural", "random") and not degrees:
                degrees.append(conflict_degrees(graph))
            return order_vertices(graph, name, seed=seed, degrees=degrees[0] if degrees else None)
        return order

    for name in names:
        colors, k = color(name, order_of(name))
        tried[name] = k
        if on_each is not None:
            on_each(name, k)
        if best is None or k < best[1]:
            best = (colors, k, name)
        if k <= lower_bound:
            break
    if best is None:
        raise ValueError("no ordering to try")
    return best[0], best[1], best[2], tried
