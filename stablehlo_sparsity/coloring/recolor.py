"""Removing colors from a proper coloring, one class at a time, by tabu search on a region around the class.

Greedy colorings of large stencil-like patterns are near-perfect lattices with a few defects: DSATUR colors
the periodic 2-D Brusselator (bound 6) with six full classes and four thin classes along the seams where its
fronts meet.  Removing a thin class is a local problem, so the search runs on the *region* within ``radius``
conflict hops of the class and keeps every other vertex fixed (its color still counts as a constraint):
the cost is that of the region, not of the graph, and a 10⁷-vertex pattern is improved in milliseconds.

One attempt (TabuCol: Hertz & de Werra 1987, with Galinier & Hao's dynamic tenure): drop the smallest class,
give each of its vertices the color least used among its neighbours, then repeatedly move a conflicting
vertex of the region to the color that lowers the number of conflicting edges most, forbidding the move
back for a while, until no conflict is left (success: one color fewer) or the attempt's budget is spent.
A failed attempt is retried on a wider region (radius 2, 4, 8, then the whole graph).  Every coloring
returned is proper, and never has more colors than the one given.

Work is counted in *units* (one neighbour visit, or one candidate move evaluated; a few nanoseconds each),
so a budget is deterministic and independent of the machine; ``time_limit`` adds an optional wall-clock cap
checked between attempts.
"""

from __future__ import annotations

import time

import numpy as np

from ..kernels.compiled import njit
from .orderings import collect_neighbors

__all__ = ["reduce_colors", "RADII", "LOCAL_WORK_PER_EDGE", "WHOLE_GRAPH_CELLS"]

#: Region radii (conflict hops around the dropped class) tried in turn; ``-1``: the whole graph.
RADII = (2, 8, -1)

#: A local attempt gives up after this many work units per edge of its region (plus 10⁶): the successful
#: repairs of Brusselator seams take about 15.
LOCAL_WORK_PER_EDGE = 60

#: The whole graph is searched only when its ``vertices × colors`` tables (two ``int32`` each) have at most
#: this many cells (about 160 MB).
WHOLE_GRAPH_CELLS = 20_000_000


# ---------------------------------------------------------------- the conflict list and the tabu move
@njit
def conflict_add(conf, where, nconf, v):
    """Append ``v`` to TabuCol's list of conflicting vertices (``where[v]``: its slot); returns the new length."""
    where[v] = nconf
    conf[nconf] = v
    return nconf + 1


@njit
def conflict_remove(conf, where, nconf, v):
    """Remove ``v`` from the conflict list (the last entry takes its slot); returns the new length."""
    j = where[v]
    last = conf[nconf - 1]
    conf[j] = last
    where[last] = j
    where[v] = -1
    return nconf - 1


@njit
def tabu_move(conf, nconf, col, gamma, k, tabu, it, f, best_f):
    """TabuCol's move: the (vertex, color) among the conflicting vertices that changes the number of
    conflicting edges by the least ``d`` (ties broken at random), skipping tabu moves unless they beat the best
    count so far (aspiration); a random move when every move is tabu.  Returns ``(vertex, color, d)``."""
    best_d = 1 << 30
    bv = -1
    bc = -1
    ties = 0
    for i in range(nconf):
        v = conf[i]
        cv = col[v]
        gv = gamma[v, cv]
        for c in range(k):
            if c == cv:
                continue
            d = gamma[v, c] - gv
            if tabu[v, c] > it and f + d >= best_f:
                continue
            if d < best_d:
                best_d = d
                bv = v
                bc = c
                ties = 1
            elif d == best_d:
                ties += 1
                if np.random.randint(ties) == 0:
                    bv = v
                    bc = c
    if bv < 0:  # every move is tabu: take a random one
        bv = conf[np.random.randint(nconf)]
        bc = np.random.randint(k - 1)
        if bc >= col[bv]:
            bc += 1
        best_d = gamma[bv, bc] - gamma[bv, col[bv]]
    return bv, bc, best_d


@njit
def _drop_class(nv, ptr, nbr, optr, onbr, d2, colors, k, drop, radius, max_region, max_iter, max_work, work_per_edge,
                seed):
    """One attempt at a proper ``k - 1`` coloring without class ``drop`` (see the module docstring).

    The search stops after ``max_iter`` moves (``-1``: ``2·region + 10⁴``) or ``max_work`` units, or
    ``work_per_edge`` units per edge of the region (``0``: no such cap) — a local attempt that fails should
    fail fast.  Returns ``(colors, success, region size, work units spent)``; on success the colors are
    renumbered to ``[0, k - 1)`` (classes above ``drop`` move down by one), else the input is returned."""
    np.random.seed(seed)
    work = 0
    stamp = np.zeros(nv, np.int32)  # (int32 per vertex: the attempt's O(nv) arrays stay small on 10⁷ vertices)
    s = 0
    buf = np.empty(max(nv, 1), np.int32)
    loc = np.full(nv, -1, np.int32)
    region = np.empty(max(nv, 1), np.int32)
    nr = 0
    for v in range(nv):
        if colors[v] == drop:
            loc[v] = nr
            region[nr] = v
            nr += 1
    if radius < 0:  # the whole graph
        for v in range(nv):
            if loc[v] < 0:
                loc[v] = nr
                region[nr] = v
                nr += 1
    lo = 0
    for _ in range(max(radius, 0)):
        hi = nr
        for i in range(lo, hi):
            s += 1
            cnt = collect_neighbors(region[i], ptr, nbr, optr, onbr, d2, stamp, s, buf)
            work += cnt
            for j in range(cnt):
                x = buf[j]
                if loc[x] < 0 and nr < max_region:
                    loc[x] = nr
                    region[nr] = x
                    nr += 1
        lo = hi
    # the region's conflict adjacency (global vertex ids; neighbours outside the region are fixed)
    aptr = np.zeros(nr + 1, np.int64)
    for i in range(nr):
        s += 1
        aptr[i + 1] = aptr[i] + collect_neighbors(region[i], ptr, nbr, optr, onbr, d2, stamp, s, buf)
    adj = np.empty(aptr[nr], np.int32)
    for i in range(nr):
        s += 1
        cnt = collect_neighbors(region[i], ptr, nbr, optr, onbr, d2, stamp, s, buf)
        for j in range(cnt):
            adj[aptr[i] + j] = buf[j]
    work += 2 * aptr[nr]
    if max_iter < 0:
        max_iter = 2 * nr + 10_000
    if work_per_edge > 0:
        max_work = min(max_work, work + 1_000_000 + work_per_edge * aptr[nr])
    kk = k - 1
    # colors in the new numbering; the dropped class takes, vertex by vertex, its least used neighbour color
    new = np.empty(nv, np.int32)
    for v in range(nv):
        c = colors[v]
        new[v] = c - 1 if c > drop else c
    cnt_c = np.zeros(kk, np.int64)
    for i in range(nr):
        v = region[i]
        if colors[v] == drop:
            cnt_c[:] = 0
            for p in range(aptr[i], aptr[i + 1]):
                u = adj[p]
                if colors[u] != drop or loc[u] < i:  # a dropped neighbour counts once it has its new color
                    cnt_c[new[u]] += 1
            new[v] = np.argmin(cnt_c)
    col = np.empty(nr, np.int64)
    for i in range(nr):
        col[i] = new[region[i]]
    gamma = np.zeros((nr, kk), np.int32)  # gamma[i, c]: neighbours of region vertex i with color c
    for i in range(nr):
        for p in range(aptr[i], aptr[i + 1]):
            gamma[i, new[adj[p]]] += 1
    f2 = 0  # twice the conflicting edges inside the region, plus twice those to fixed vertices
    where = np.full(nr, -1, np.int64)
    conf = np.empty(max(nr, 1), np.int64)
    nconf = 0
    for i in range(nr):
        if gamma[i, col[i]] > 0:
            nconf = conflict_add(conf, where, nconf, i)
            for p in range(aptr[i], aptr[i + 1]):
                u = adj[p]
                if new[u] == col[i]:
                    f2 += 2 if loc[u] < 0 else 1
    f = f2 // 2
    best_f = f
    tabu = np.zeros((nr, kk), np.int32)  # the move until which (vertex, color) is tabu
    for it in range(max_iter):
        if f == 0:
            break
        work += nconf * (kk - 1)
        if work > max_work:
            break
        bi, bc, best_d = tabu_move(conf, nconf, col, gamma, kk, tabu, it, f, best_f)
        old = col[bi]
        col[bi] = bc
        new[region[bi]] = bc
        f += best_d
        for p in range(aptr[bi], aptr[bi + 1]):
            j = loc[adj[p]]
            if j < 0:
                continue
            gamma[j, old] -= 1
            gamma[j, bc] += 1
            cj = col[j]
            if cj == old and gamma[j, old] == 0 and where[j] >= 0:  # j leaves the conflict list
                nconf = conflict_remove(conf, where, nconf, j)
            elif cj == bc and gamma[j, bc] == 1 and where[j] < 0:  # j enters it
                nconf = conflict_add(conf, where, nconf, j)
        if gamma[bi, bc] == 0 and where[bi] >= 0:
            nconf = conflict_remove(conf, where, nconf, bi)
        elif gamma[bi, bc] > 0 and where[bi] < 0:
            nconf = conflict_add(conf, where, nconf, bi)
        tabu[bi, old] = it + 1 + np.random.randint(10) + (6 * nconf) // 10
        if f < best_f:
            best_f = f
    if f == 0:
        return new, True, nr, work
    return colors, False, nr, work


def _smallest_class(colors: np.ndarray, k: int) -> int:
    return int(np.argmin(np.bincount(colors, minlength=k)))


def reduce_colors(nv, ptr, nbr, optr, onbr, d2: bool, colors: np.ndarray, k: int, target: int, budget: float,
                  max_iter: int | None = None, seed: int = 0, deadline: float | None = None,
                  report=None) -> tuple[np.ndarray, int, float]:
    """Remove colors one class at a time (the smallest first) while an attempt succeeds within ``budget`` work
    units, down to ``target``.

    Each class is tried on the regions of :data:`RADII` in turn: a local attempt may spend
    :data:`LOCAL_WORK_PER_EDGE` units per edge of its region (a thin seam is repaired in a few passes over it,
    or not at all), the whole graph (when its ``vertices × colors`` tables fit :data:`WHOLE_GRAPH_CELLS`)
    whatever is left.  ``max_iter``: moves per attempt (default ``2·region + 10⁴``); ``deadline``: a
    ``time.perf_counter()`` value after which no new attempt starts; ``report(message)`` is told of every
    success and of the final failure.  Returns ``(colors, k, units spent)``: a proper coloring with at most
    ``k`` colors (the input when nothing could be removed)."""
    spent = 0.0
    target = max(int(target), 1)  # (vertices need a color, even without conflicts)
    if k <= target or nv == 0 or budget <= 0:
        return colors, k, spent
    colors = np.ascontiguousarray(colors, dtype=np.int32)
    attempt = 0
    moves = -1 if max_iter is None else int(max_iter)
    while k > target:
        drop = _smallest_class(colors, k)
        done = False
        for radius in RADII:
            left = budget - spent
            if left <= 0 or (deadline is not None and time.perf_counter() > deadline):
                break
            if radius < 0 and nv * (k - 1) > WHOLE_GRAPH_CELLS:
                break
            per_edge = 0 if radius < 0 else LOCAL_WORK_PER_EDGE
            new, ok, region, work = _drop_class(nv, ptr, nbr, optr, onbr, d2, colors, k, drop, radius, nv, moves,
                                                int(left), per_edge, seed + attempt)
            attempt += 1
            spent += work
            if ok:
                colors, k, done = new, k - 1, True
                if report is not None:
                    report(f"tabu: {k} colors (class {drop} removed on a region of {region:,} vertices)")
                break
            if region >= nv:  # the whole graph already
                break
        if not done:
            if report is not None:
                report(f"tabu: no {k - 1}-coloring found within the budget; keeping {k} colors")
            break
    return colors, k, spent
