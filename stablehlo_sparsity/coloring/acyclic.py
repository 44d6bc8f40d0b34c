"""Acyclic coloring of a symmetric pattern, and the 2-colored forest that Hessian substitution walks.

An *acyclic coloring* of the adjacency graph is a distance-1 coloring in which every cycle uses at least
three colors: the subgraph induced by any two colors is a forest.  Every star coloring is acyclic (its
two-colored components are stars), so an acyclic coloring never needs more colors; on banded and grid
Hessians it often needs fewer (a path: 2 against 3).  The price is *indirect* recovery (Coleman & Cai
1986; Gebremedhin, Tarafdar, Pothen & Walther, "Efficient computation of sparse Hessians using coloring
and automatic differentiation", INFORMS J. Computing 2009): with ``B = H S`` (one Hessian-vector product
per color), a vertex ``v`` in the two-colored tree ``T`` of colors ``{c(v), a}`` satisfies

    B[v, a] = Σ_{u ~ v in T} H[v, u]

(all neighbours of ``v`` colored ``a`` lie in ``T``), so a leaf gives its edge directly and, peeling leaves,
every edge of ``T`` follows.  Rooting ``T`` at ``r`` and writing ``h(t)`` for the value on the edge from
``t`` to its parent, ``h(t) = B[t, a] - Σ_{children d} h(d)``, that is

    h(t) = s(t) · Σ_{d in subtree(t)} s(d) · B[d, a_d],     s(d) = (-1)^depth(d),

a signed subtree sum.  Laid out in depth-first preorder a subtree is a contiguous range, so the whole
substitution is one gather, one prefix sum (segmented per tree) and a difference of two gathers — no
level-by-level loop, whatever the depth of the trees (:mod:`.decompression`).

The greedy kernel is Algorithm 3.1 of Gebremedhin, Tarafdar, Manne & Pothen, "New acyclic and star
coloring algorithms with application to computing Hessians", SIAM J. Sci. Comput. 29 (2007): the
two-colored trees are kept as disjoint sets of edges (union–find), and the vertex ``v`` being colored may
not take the color of ``x`` when ``v`` would touch the tree of an edge ``w–x`` through two different
neighbours (that closes a two-colored cycle).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.compiled import njit

__all__ = ["greedy_acyclic", "edge_ids", "Forest", "two_colored_forest", "segmented_cumsum"]


# ----------------------------------------------------------------------------------------------- coloring
@njit
def _find(parent, e):
    while parent[e] != e:  # path halving
        parent[e] = parent[parent[e]]
        e = parent[e]
    return e


@njit
def _union(parent, rank, a, b):
    ra = _find(parent, a)
    rb = _find(parent, b)
    if ra == rb:
        return
    if rank[ra] < rank[rb]:
        ra, rb = rb, ra
    parent[rb] = ra
    if rank[ra] == rank[rb]:
        rank[ra] += 1


@njit
def _greedy_acyclic(nv, ptr, nbr, eid, ne, order):
    colors = np.full(nv, -1, np.int32)
    forbidden = np.zeros(nv + 1, np.int64)
    # per color: the vertex being colored when a neighbour of that color was first met, and that edge
    first_v = np.full(nv + 1, -1, np.int64)
    first_e = np.zeros(nv + 1, np.int64)
    # per tree (its root edge): the vertex that last visited it, and through which neighbour
    visit_v = np.full(max(ne, 1), -1, np.int64)
    visit_w = np.full(max(ne, 1), -1, np.int64)
    parent = np.arange(max(ne, 1))
    rank = np.zeros(max(ne, 1), np.int8)
    k = 0
    for t in range(nv):
        v = order[t]
        s = t + 1
        for p in range(ptr[v], ptr[v + 1]):
            cw = colors[nbr[p]]
            if cw >= 0:
                forbidden[cw] = s
        # v touching the tree of w–x through two different neighbours of color(w) would close a cycle
        # colored {color(w), color(x)} if v took color(x)
        for p in range(ptr[v], ptr[v + 1]):
            w = nbr[p]
            if colors[w] < 0:
                continue
            for q in range(ptr[w], ptr[w + 1]):
                x = nbr[q]
                cx = colors[x]
                if cx < 0 or forbidden[cx] == s:
                    continue
                r = _find(parent, eid[q])
                if visit_v[r] != v:
                    visit_v[r] = v
                    visit_w[r] = w
                elif visit_w[r] != w:
                    forbidden[cx] = s
        c = 0
        while forbidden[c] == s:
            c += 1
        colors[v] = c
        if c >= k:
            k = c + 1
        # the edges from v to neighbours of one color form a two-colored star around v: one tree
        for p in range(ptr[v], ptr[v + 1]):
            cw = colors[nbr[p]]
            if cw < 0:
                continue
            if first_v[cw] != v:
                first_v[cw] = v
                first_e[cw] = eid[p]
            else:
                _union(parent, rank, eid[p], first_e[cw])
        # v–w joins the trees of the edges w–x with color(x) == color(v)
        for p in range(ptr[v], ptr[v + 1]):
            w = nbr[p]
            if colors[w] < 0:
                continue
            for q in range(ptr[w], ptr[w + 1]):
                x = nbr[q]
                if x != v and colors[x] == c:
                    _union(parent, rank, eid[p], eid[q])
    return colors, k


@njit
def _mirror(nv, ptr, nbr):
    """For a symmetric CSR with sorted rows: the position of the entry ``v→u`` for every entry ``u→v``.
    Rows are visited in increasing ``u``, which is the order of the columns of each row ``v``: one cursor
    per row suffices (O(nnz), no sort)."""
    cursor = ptr[:-1].astype(np.int64)
    mirror = np.empty(len(nbr), np.int64)
    for u in range(nv):
        for p in range(ptr[u], ptr[u + 1]):
            v = nbr[p]
            mirror[p] = cursor[v]
            cursor[v] += 1
    return mirror


def edge_ids(nv: int, ptr: np.ndarray, nbr: np.ndarray) -> tuple[np.ndarray, int]:
    """For a symmetric adjacency CSR without self-loops: the undirected edge id of every entry (both
    directions of an edge share it) and the number of edges."""
    t = ptr.dtype
    rows = np.repeat(np.arange(nv, dtype=t), np.diff(ptr))
    mirror = _mirror(nv, ptr, nbr)
    upper = rows < nbr
    ids = np.empty(len(nbr), np.int64)
    ids[upper] = np.arange(int(upper.sum()))
    ids[~upper] = ids[mirror[~upper]]
    return ids.astype(t, copy=False), int(upper.sum())


def greedy_acyclic(nv, ptr, nbr, order, eid=None) -> tuple[np.ndarray, int]:
    """Greedy acyclic coloring of the adjacency graph ``(ptr, nbr)`` in ``order``: ``(colors, count)``."""
    if eid is None:
        eid, ne = edge_ids(nv, ptr, nbr)
    else:
        ne = int(eid.max()) + 1 if len(eid) else 0
    colors, k = _greedy_acyclic(nv, ptr, nbr, eid, ne, np.ascontiguousarray(order, dtype=np.int64))
    return colors, int(k)


# ----------------------------------------------------------------------------------------------- forest
@njit
def _layout(nt, tptr, tadj):
    """Root every tree of the forest ``(tptr, tadj)`` (``nt`` tree-vertices) at a center (the last vertex
    left when leaves are peeled: the height is halved, and so is the longest substitution chain) and lay
    it out in depth-first preorder.  Returns ``(preorder, position, parent, size, parity, ok)``; ``ok`` is
    False when a component has a cycle."""
    pre = np.empty(nt, np.int64)
    pos = np.full(nt, -1, np.int64)
    par = np.full(nt, -1, np.int64)
    size = np.ones(nt, np.int64)
    parity = np.zeros(nt, np.int8)
    comp = np.full(nt, -1, np.int64)
    deg = np.empty(nt, np.int64)
    members = np.empty(nt, np.int64)
    queue = np.empty(nt, np.int64)
    stack = np.empty(nt, np.int64)
    it = np.empty(nt, np.int64)
    ok = True
    out = 0
    for start in range(nt):
        if comp[start] >= 0:
            continue
        # the component, by BFS
        nm = 0
        comp[start] = start
        members[nm] = start
        nm += 1
        head = 0
        nedge2 = 0
        while head < nm:
            u = members[head]
            head += 1
            nedge2 += tptr[u + 1] - tptr[u]
            for p in range(tptr[u], tptr[u + 1]):
                x = tadj[p]
                if comp[x] < 0:
                    comp[x] = start
                    members[nm] = x
                    nm += 1
        if nedge2 != 2 * (nm - 1):
            ok = False
        # a center: peel leaves, the last vertex dequeued
        qh = 0
        qt = 0
        for i in range(nm):
            u = members[i]
            deg[u] = tptr[u + 1] - tptr[u]
            if deg[u] <= 1:
                queue[qt] = u
                qt += 1
        root = members[0]
        while qh < qt:
            u = queue[qh]
            qh += 1
            root = u
            deg[u] = -1
            for p in range(tptr[u], tptr[u + 1]):
                x = tadj[p]
                if deg[x] > 0:
                    deg[x] -= 1
                    if deg[x] == 1:
                        queue[qt] = x
                        qt += 1
        # depth-first preorder from the root (iterative; each vertex remembers where its scan stopped)
        base = out
        sp = 0
        stack[sp] = root
        sp += 1
        pos[root] = out
        pre[out] = root
        out += 1
        it[root] = tptr[root]
        while sp > 0:
            u = stack[sp - 1]
            if it[u] < tptr[u + 1]:
                x = tadj[it[u]]
                it[u] += 1
                if pos[x] < 0:
                    par[x] = u
                    parity[x] = 1 - parity[u]
                    pos[x] = out
                    pre[out] = x
                    out += 1
                    it[x] = tptr[x]
                    stack[sp] = x
                    sp += 1
            else:
                sp -= 1
        for i in range(out - 1, base, -1):  # subtree sizes, children before parents
            u = pre[i]
            size[par[u]] += size[u]
    return pre, pos, par, size, parity, ok


@dataclass(frozen=True)
class Forest:
    """The two-colored trees of an acyclic coloring, one *tree-vertex* per (tree, vertex) pair.

    ``vertex[t]``: the graph vertex of tree-vertex ``t``; ``other[t]``: the other color of its tree;
    ``preorder``: tree-vertices in depth-first preorder, one tree after another, each from its root;
    ``position``, ``parent`` (``-1`` at roots), ``size`` (of the subtree), ``parity`` (depth mod 2);
    ``entry_child[e]`` for each entry ``e`` of the adjacency CSR: the tree-vertex whose parent edge is
    that entry's edge.
    """

    vertex: np.ndarray
    other: np.ndarray
    preorder: np.ndarray
    position: np.ndarray
    parent: np.ndarray
    size: np.ndarray
    parity: np.ndarray
    entry_child: np.ndarray

    @property
    def num_tree_vertices(self) -> int:
        return len(self.vertex)

    @property
    def tree_starts(self) -> np.ndarray:
        """Boolean over preorder positions: True where a tree begins (its root)."""
        return self.parent[self.preorder] < 0

    @property
    def max_subtree(self) -> int:
        """The largest substitution chain: most HVP entries summed for one Hessian entry."""
        nonroot = self.parent >= 0
        return int(self.size[nonroot].max()) if nonroot.any() else 0


@njit
def _tree_vertices(nv, ptr, nbr, colors, mirror):
    """Tree-vertex ``tv[p]`` of every entry ``p = u→v``: ``u`` in the two-colored tree of colors
    ``{c(u), c(v)}`` — one per distinct neighbour color of ``u``, numbered row by row.  Also the forest's
    adjacency (CSR over tree-vertices), each tree-vertex's vertex and other color, and ``ok = False`` if two
    neighbours share a color.  O(nnz)."""
    k = 0
    for u in range(nv):
        if colors[u] + 1 > k:
            k = colors[u] + 1
    local = np.full(k + 1, -1, np.int64)
    seen = np.full(k + 1, -1, np.int64)
    tv = np.empty(len(nbr), np.int64)
    nt = 0
    ok = True
    for u in range(nv):
        cu = colors[u]
        for p in range(ptr[u], ptr[u + 1]):
            cv = colors[nbr[p]]
            if cv == cu:
                ok = False
            if seen[cv] != u:
                seen[cv] = u
                local[cv] = nt
                nt += 1
            tv[p] = local[cv]
    vertex = np.empty(nt, np.int64)
    other = np.empty(nt, np.int64)
    count = np.zeros(nt + 1, np.int64)
    for u in range(nv):
        for p in range(ptr[u], ptr[u + 1]):
            t = tv[p]
            vertex[t] = u
            other[t] = colors[nbr[p]]
            count[t + 1] += 1
    for t in range(nt):
        count[t + 1] += count[t]
    tptr = count.copy()
    fill = count[:-1].copy()
    tadj = np.empty(len(nbr), np.int64)
    for p in range(len(nbr)):
        t = tv[p]
        tadj[fill[t]] = tv[mirror[p]]
        fill[t] += 1
    return tv, nt, vertex, other, tptr, tadj, ok


def two_colored_forest(nv: int, ptr: np.ndarray, nbr: np.ndarray, colors: np.ndarray) -> Forest | None:
    """The forest of two-colored trees of ``colors`` on the adjacency graph ``(ptr, nbr)`` (symmetric, sorted
    rows, no self-loops); ``None`` if ``colors`` is not an acyclic coloring (an edge inside one color, or a
    two-colored cycle).  Compiled, O(nnz): tree-vertices ``(color pair, u)``, then rooting and preorder."""
    c = np.ascontiguousarray(colors, np.int64)
    if len(nbr) == 0:
        z = np.zeros(0, np.int64)
        return Forest(z, z, z, z, z, z, np.zeros(0, np.int8), z)
    mirror = _mirror(nv, ptr, nbr)
    tv, nt, vertex, other, tptr, tadj, ok = _tree_vertices(nv, ptr, nbr, c, mirror)
    if not ok:
        return None
    pre, pos, par, size, parity, ok = _layout(nt, tptr, tadj)
    if not ok:
        return None
    a, b = tv, tv[mirror]
    child = np.where(par[a] == b, a, b)
    return Forest(vertex, other, pre, pos, par, size, parity, child)


@njit
def segmented_cumsum(v, starts):
    """Inclusive prefix sums of ``v`` restarting where ``starts`` is True (one sequential pass per tree:
    no cancellation against the sums of earlier trees)."""
    out = np.empty_like(v)
    acc = v[0] * 0
    for i in range(len(v)):
        acc = v[i] if starts[i] else acc + v[i]
        out[i] = acc
    return out
