"""Greedy partial distance-2 coloring of a bipartite graph, and Culberson's iterated greedy recoloring.

Column coloring (forward mode): columns ``j, j'`` may share a color iff no row has a nonzero in both — then
one JVP with the seed ``e_j + e_j' + …`` recovers every nonzero of those columns directly.  This is a
*partial distance-2* coloring of the bipartite row/column graph (Gebremedhin, Manne & Pothen 2005, §3).
Row coloring (reverse mode, VJPs) is the same on the transpose.

Iterated greedy (Culberson & Luo 1996): re-run greedy over the vertices listed class by class (in any
order of the classes).  Each class is an independent set, so a vertex never needs a color above the rank
of its class: the number of colors never grows, and re-ordering the classes (reversed, by size, at random)
lets it shrink.  It converges in a few hundred cheap passes on stencil-like patterns.
"""

from __future__ import annotations

import numpy as np

from ..kernels.compiled import njit

__all__ = ["greedy_color", "iterated_greedy", "split_bound"]


@njit
def _greedy_pass(nv, ptr, nbr, optr, onbr, d2, order, colors, forbidden, s0):
    """Color ``order`` greedily into ``colors`` (overwritten).  ``forbidden`` holds stamps; stamps used are
    ``s0 + 1 … s0 + nv`` so successive passes need no clearing.  Returns the number of colors."""
    for t in range(nv):
        colors[order[t]] = -1
    k = 0
    for t in range(nv):
        v = order[t]
        s = s0 + t + 1
        if d2:
            for p in range(ptr[v], ptr[v + 1]):
                w = nbr[p]
                for q in range(optr[w], optr[w + 1]):
                    c = colors[onbr[q]]
                    if c >= 0:
                        forbidden[c] = s
        else:
            for p in range(ptr[v], ptr[v + 1]):
                c = colors[nbr[p]]
                if c >= 0:
                    forbidden[c] = s
        c = 0
        while forbidden[c] == s:
            c += 1
        colors[v] = c
        if c >= k:
            k = c + 1
    return k


@njit
def _greedy(nv, ptr, nbr, optr, onbr, d2, order):
    colors = np.full(nv, -1, np.int32)
    forbidden = np.zeros(nv + 1, np.int64)
    k = _greedy_pass(nv, ptr, nbr, optr, onbr, d2, order, colors, forbidden, 0)
    return colors, k


@njit
def _class_order(colors, k, rank, order):
    """Vertices sorted by ``rank[colors[v]]`` (a counting sort, stable in ``v``)."""
    nv = len(colors)
    start = np.zeros(k + 1, np.int64)
    for v in range(nv):
        start[rank[colors[v]] + 1] += 1
    for r in range(k):
        start[r + 1] += start[r]
    for v in range(nv):
        r = rank[colors[v]]
        order[start[r]] = v
        start[r] += 1


@njit
def _iterated_greedy(nv, ptr, nbr, optr, onbr, d2, colors, iters, target, patience, seed):
    np.random.seed(seed)
    cur = colors.copy()
    best = colors.copy()
    k = 0
    for v in range(nv):
        if cur[v] + 1 > k:
            k = cur[v] + 1
    bestk = k
    forbidden = np.zeros(nv + 1, np.int64)
    order = np.empty(nv, np.int64)
    rank = np.empty(nv + 1, np.int64)
    size = np.zeros(nv + 1, np.int64)
    s0 = 0
    stall = 0
    for _ in range(iters):
        if bestk <= target:
            break
        u = np.random.random()
        if u < 0.5:  # reverse the classes
            for c in range(k):
                rank[c] = k - 1 - c
        elif u < 0.8:  # random permutation of the classes
            perm = np.random.permutation(k)
            for c in range(k):
                rank[c] = perm[c]
        else:  # largest class first
            for c in range(k):
                size[c] = 0
            for v in range(nv):
                size[cur[v]] += 1
            idx = np.argsort(-size[:k], kind="mergesort")
            for r in range(k):
                rank[idx[r]] = r
        _class_order(cur, k, rank, order)
        k = _greedy_pass(nv, ptr, nbr, optr, onbr, d2, order, cur, forbidden, s0)
        s0 += nv
        if k < bestk:
            bestk = k
            best[:] = cur
            stall = 0
        else:
            stall += 1
            if stall >= patience:
                break
    return best, bestk


def greedy_color(nv, ptr, nbr, optr, onbr, d2: bool, order: np.ndarray) -> tuple[np.ndarray, int]:
    """Greedy coloring in ``order``: ``(colors int32, number of colors)``."""
    colors, k = _greedy(nv, ptr, nbr, optr, onbr, d2, np.ascontiguousarray(order, dtype=np.int64))
    return colors, int(k)


def iterated_greedy(nv, ptr, nbr, optr, onbr, d2: bool, colors: np.ndarray, iterations: int, target: int,
                    patience: int = 200, seed: int = 0) -> tuple[np.ndarray, int]:
    """Culberson's iterated greedy from ``colors``: at most ``iterations`` passes, stopping at ``target``
    colors or after ``patience`` passes without improvement.  Never returns more colors than it got."""
    if nv == 0 or iterations <= 0:
        return colors, int(colors.max() + 1) if nv else 0
    best, k = _iterated_greedy(nv, ptr, nbr, optr, onbr, d2, np.ascontiguousarray(colors, dtype=np.int32),
                               int(iterations), int(target), int(patience), int(seed))
    return best, int(k)


# ----------------------------------------------------------------------------------------------- DSATUR
@njit
def _dsatur(nv, ptr, nbr, optr, onbr, d2, words32, deg0):
    """DSATUR (Brélaz 1979): repeatedly color the uncolored vertex whose colored conflict neighbours show
    the most distinct colors, ties broken by the most uncolored conflict neighbours (then by the most
    recently updated vertex, which keeps the colored region compact), with the smallest color it may take.

    The priority is ``saturation·(dmax+1) + uncolored degree`` in a bucket queue of doubly linked lists;
    ``deg0`` is the initial degree estimate (``-1``-free, may count a neighbour more than once).
    ``words32`` 32-bit words per vertex hold the set of its neighbours' colors, so colors beyond
    ``32·words32`` do not raise the saturation (they are still forbidden correctly: validity never depends on
    the sets).

    Every per-vertex field lives in one row of ``state`` (stamp, color, uncolored degree, key, next, previous,
    color set): a neighbour costs one cache line, not one per field — on 10⁷ vertices, where the colored
    front touches memory all over the arrays, that is twice as fast.
    """
    cap = 32 * words32
    STAMP, COLOR, UDEG, KEY, NXT, PRV, MASK = 0, 1, 2, 3, 4, 5, 6
    state = np.zeros((nv, MASK + words32), np.int32)
    buf = np.empty(max(nv, 1), np.int32)
    dmax = 0
    for v in range(nv):
        state[v, COLOR] = -1
        state[v, UDEG] = deg0[v]
        state[v, KEY] = deg0[v]
        state[v, NXT] = -1
        state[v, PRV] = -1
        if deg0[v] > dmax:
            dmax = deg0[v]
    base = dmax + 1
    head = np.full((cap + 1) * base + 1, -1, np.int32)
    cur = 0
    for v in range(nv - 1, -1, -1):  # the lowest index ends up first among equal keys
        kv = state[v, KEY]
        state[v, NXT] = head[kv]
        if head[kv] >= 0:
            state[head[kv], PRV] = v
        head[kv] = v
        if kv > cur:
            cur = kv
    forbidden = np.zeros(nv + 1, np.int32)
    k = 0
    for t in range(nv):
        while head[cur] < 0:
            cur -= 1
        v = head[cur]
        nx = state[v, NXT]
        head[cur] = nx
        if nx >= 0:
            state[nx, PRV] = -1
        s = t + 1
        # distinct conflict neighbours; mark the colors they hold
        cnt = 0
        state[v, STAMP] = s
        if d2:
            for p in range(ptr[v], ptr[v + 1]):
                w = nbr[p]
                for q in range(optr[w], optr[w + 1]):
                    x = onbr[q]
                    if state[x, STAMP] != s:
                        state[x, STAMP] = s
                        c = state[x, COLOR]
                        if c >= 0:
                            forbidden[c] = s
                        else:
                            buf[cnt] = x
                            cnt += 1
        else:
            for p in range(ptr[v], ptr[v + 1]):
                x = nbr[p]
                if state[x, STAMP] != s:
                    state[x, STAMP] = s
                    c = state[x, COLOR]
                    if c >= 0:
                        forbidden[c] = s
                    else:
                        buf[cnt] = x
                        cnt += 1
        c = 0
        while forbidden[c] == s:
            c += 1
        state[v, COLOR] = c
        if c >= k:
            k = c + 1
        tracked = c < cap
        wi = MASK + c // 32
        bit = np.int32(-2147483648) if c % 32 == 31 else np.int32(1) << np.int32(c % 32)
        for i in range(cnt):  # the uncolored conflict neighbours
            x = buf[i]
            old = state[x, KEY]
            kx = old
            if state[x, UDEG] > 0:
                state[x, UDEG] -= 1
                kx -= 1
            if tracked and (state[x, wi] & bit) == 0:
                state[x, wi] |= bit
                kx += base
            if kx == old:
                continue
            state[x, KEY] = kx
            px = state[x, PRV]
            nx = state[x, NXT]
            if px >= 0:
                state[px, NXT] = nx
            else:
                head[old] = nx
            if nx >= 0:
                state[nx, PRV] = px
            state[x, PRV] = -1
            state[x, NXT] = head[kx]
            if head[kx] >= 0:
                state[head[kx], PRV] = x
            head[kx] = x
            if kx > cur:
                cur = kx
    return state[:, COLOR].copy(), k


@njit
def _walk_lengths(nv, ptr, nbr, optr):
    """``Σ_{w ∋ v} (|w| - 1)`` for every vertex: its distance-2 neighbours counted with multiplicity (one
    compiled pass; no per-nonzero temporaries)."""
    out = np.zeros(nv, np.int64)
    for v in range(nv):
        t = 0
        for p in range(ptr[v], ptr[v + 1]):
            w = nbr[p]
            t += optr[w + 1] - optr[w] - 1
        out[v] = t
    return out


def dsatur(nv, ptr, nbr, optr, onbr, d2: bool, max_tracked_colors: int = 64, degree_tiebreak: bool = True):
    """DSATUR coloring: ``(colors int32, number of colors)``.

    The degree tie-break starts from the walk length ``Σ_{w ∋ v} (|w| - 1)`` (distance-2 neighbours counted
    with multiplicity — exact for distance-1, one compiled pass for distance-2), capped so the bucket
    table stays small."""
    if nv >= 2**31 - 2:
        raise ValueError("DSATUR supports fewer than 2**31 vertices")
    words = max(1, -(-int(max_tracked_colors) // 64))  # (64-bit words: the kernel stores twice as many 32-bit ones)
    if not degree_tiebreak or nv == 0:
        deg0 = np.zeros(nv, np.int32)
    elif d2:
        deg0 = _walk_lengths(nv, ptr, nbr, optr)
    else:
        deg0 = np.diff(ptr)
    # The priority keys span saturation · (max degree + 1): a few vertices of huge degree (a dense row seen
    # from the columns) would make the bucket scan cost O(max degree) per pick.  Their tie-break is capped
    # at 8× the median degree: ties among such outliers are rare and cheap to lose.
    if nv:
        deg0 = np.minimum(deg0, max(64, 8 * int(np.median(deg0))))
    deg0 = np.clip(deg0, 0, 20_000_000 // (64 * words + 1) - 1).astype(np.int32)
    colors, k = _dsatur(nv, ptr, nbr, optr, onbr, d2, 2 * words, deg0)
    return colors, int(k)


# ----------------------------------------------------------------------------------------------- bicoloring
@njit
def split_bound(m, n, indptr, indices, fwd, stop):
    """Bidirectional coloring (:mod:`.bicoloring`): the lower bound of a split ``fwd`` (True: the nonzero is
    read from a JVP) of the CSR pattern — the largest forward clique (a row's forward nonzeros plus one
    other active column) plus the largest reverse clique — in three passes over the nonzeros; returns
    early (a value ≥ ``stop``) when the forward part alone reaches ``stop``."""
    act_c = np.zeros(n, np.bool_)
    act_r = np.zeros(m, np.bool_)
    for i in range(m):
        for p in range(indptr[i], indptr[i + 1]):
            if fwd[p]:
                act_c[indices[p]] = True
            else:
                act_r[i] = True
    lf = 0
    for i in range(m):
        na = 0
        ns = 0
        for p in range(indptr[i], indptr[i + 1]):
            if act_c[indices[p]]:
                na += 1
            if fwd[p]:
                ns += 1
        if ns > 0:
            b = ns + (1 if na > ns else 0)
            if b > lf:
                lf = b
    if lf >= stop:
        return lf
    na_c = np.zeros(n, np.int64)
    ns_c = np.zeros(n, np.int64)
    for i in range(m):
        if not act_r[i]:
            continue
        for p in range(indptr[i], indptr[i + 1]):
            j = indices[p]
            na_c[j] += 1
            if not fwd[p]:
                ns_c[j] += 1
    lr = 0
    for j in range(n):
        if ns_c[j] > 0:
            b = ns_c[j] + (1 if na_c[j] > ns_c[j] else 0)
            if b > lr:
                lr = b
    return lf + lr
