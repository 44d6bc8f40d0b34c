"""Bidirectional coloring: some nonzeros read from JVPs, the others from VJPs.

A dense row costs as many forward colors as it has nonzeros, a dense column as many reverse colors; a
matrix with both (an arrowhead, a bordered block-diagonal KKT matrix, a model with a few global
parameters and a few global outputs) is expensive in either direction alone.  Mixing them (Coleman &
Verma, "The efficient computation of sparse Jacobian matrices using automatic differentiation", SIAM J.
Sci. Comput. 19, 1998; Hossain & Steihaug 1998) reads each nonzero ``J[i, j]`` either from
``B = J S_c`` (forward: ``j`` is the only *colored* column of its color in row ``i``) or from
``C = S_rᵀ J`` (reverse: ``i`` is the only colored row of its color in column ``j``); a column or row
needed by neither side is left out of every seed (color ``-1``).  The arrowhead (dense first row and
column plus the diagonal) takes 1 JVP + 2 VJPs whatever ``n``, against ``n`` products in one direction.

How colors are found here (the exact condition above, not the sufficient star-bicoloring condition on
the augmented graph that SparseMatrixColorings.jl colors):

1. **Split.** Each nonzero is assigned a side: forward (``F``) or reverse (``R``).  Candidate splits come
   from the row and column counts: a nonzero of a row denser than its column is cheaper to read in reverse
   (that row would need as many forward colors as it has nonzeros), of a column denser than its row in
   forward; thresholds on the counts give more candidates ("heavy rows reverse, heavy columns forward, the
   rest one way").  A column is *active* (colored) iff one of its nonzeros is ``F``; a row iff one is ``R``.
2. **Score.** A cheap lower bound per split, vectorized: in a row with ``f ≥ 1`` forward nonzeros and
   ``a`` active columns, ``f + [a > f]`` columns pairwise conflict (likewise for columns): the sum of the
   two largest such cliques.  Splits are colored best score first, while their score can beat the best
   coloring found; the unidirectional colorings (everything ``F``, everything ``R``) are candidates too, so
   a bicoloring never needs more products than :func:`~.color_columns` or :func:`~.color_rows`.
3. **Color.** With the split fixed the two sides are independent: columns ``j, j'`` conflict iff some row
   holds both, active, and one of the two nonzeros is ``F``.  That is a distance-2 walk through *handles*
   (per row: its active columns, and its ``F`` columns), so the column kernels run unchanged — orderings,
   DSATUR, tabu and iterated greedy (:mod:`.greedy`).
"""

from __future__ import annotations

import numpy as np

from . import Bicoloring, Coloring, _check_recolor, _color_distance2, color_columns, color_rows, lower_bound
from .graph import Bipartite, as_csr

__all__ = ["color_bidirectional", "bidirectional_or", "split_candidates"]


# ----------------------------------------------------------------------------------------------- one side
def _side(nv: int, nother: int, other: np.ndarray, vert: np.ndarray, sel: np.ndarray):
    """The conflict walk of one side for a split.

    Entries are grouped by ``other`` (ascending: the rows for the column side); ``vert`` is the vertex to
    color of each entry, ``sel`` whether the entry is read on this side.  Returns ``(graph, lower bound,
    active)``: handle ``h < nother`` lists the active vertices of ``other`` row ``h``, handle
    ``nother + h`` its selected ones; a vertex walks to the "active" handle of every other-side index
    where it is selected and to the "selected" handle where it is only active."""
    t = np.int32 if max(len(vert), nv, 2 * nother) < 2**31 - 1 else np.int64
    active = np.bincount(vert[sel], minlength=nv) > 0
    in_a = active[vert]
    n_a = np.bincount(other[in_a], minlength=nother)
    n_s = np.bincount(other[sel], minlength=nother)
    optr = np.zeros(2 * nother + 1, t)
    np.cumsum(np.concatenate([n_a, n_s]), out=optr[1:])
    onbr = np.concatenate([vert[in_a], vert[sel]]).astype(t)
    handle = np.where(sel, other, nother + other)[in_a]
    owner = vert[in_a]
    order = np.argsort(owner, kind="stable")
    ptr = np.zeros(nv + 1, t)
    np.cumsum(np.bincount(owner, minlength=nv), out=ptr[1:])
    g = Bipartite(nv, ptr, handle[order].astype(t), optr, onbr)
    return g, _side_bound(n_a, n_s), active


def _side_bound(n_active: np.ndarray, n_selected: np.ndarray) -> int:
    """Largest clique a row (column) forces: its selected vertices plus one more active one."""
    if len(n_active) == 0:
        return 0
    b = np.where(n_selected > 0, n_selected + (n_active > n_selected), 0)
    return int(b.max())


def _score(n: int, m: int, rows, cols, fwd) -> tuple[int, int]:
    """The two clique bounds of a split (forward side, reverse side), in O(nnz)."""
    act_c = np.bincount(cols[fwd], minlength=n) > 0
    act_r = np.bincount(rows[~fwd], minlength=m) > 0
    lf = _side_bound(np.bincount(rows[act_c[cols]], minlength=m), np.bincount(rows[fwd], minlength=m))
    lr = _side_bound(np.bincount(cols[act_r[rows]], minlength=n), np.bincount(cols[~fwd], minlength=n))
    return lf, lr


# ----------------------------------------------------------------------------------------------- splits
def split_candidates(pattern, max_thresholds: int = 6):
    """Candidate splits of the nonzeros of ``pattern`` (CSR order), as ``(name, forward mask)`` pairs:
    density comparisons and count thresholds (see the module docstring).  Cheap: O(nnz) each."""
    csr = as_csr(pattern)
    m, n = csr.shape
    rows = np.repeat(np.arange(m), np.diff(csr.indptr))
    cols = csr.indices
    dr = np.diff(csr.indptr)[rows]
    dc = np.bincount(cols, minlength=n)[cols]
    yield "denser-side", dr < dc
    yield "denser-side/tie-forward", dr <= dc
    # thresholds: the distinct counts, thinned to a few, from the top
    for default_fwd in (True, False):
        for tr in _thresholds(np.diff(csr.indptr), max_thresholds):
            for tc in _thresholds(np.bincount(cols, minlength=n), max_thresholds):
                heavy_r = dr > tr
                heavy_c = dc > tc
                fwd = np.where(heavy_r & heavy_c, dr <= dc,
                               np.where(heavy_r, False, np.where(heavy_c, True, default_fwd)))
                yield f"rows>{tr}:rev,cols>{tc}:fwd,rest:{'fwd' if default_fwd else 'rev'}", fwd


def _thresholds(counts: np.ndarray, k: int) -> list[int]:
    u = np.unique(counts[counts > 0])
    if len(u) == 0:
        return []
    # a threshold t makes the counts > t heavy; t = max means "none heavy"
    cand = np.unique(np.concatenate([u[:-1], u[-1:]]))
    if len(cand) > k:
        cand = cand[np.unique(np.linspace(0, len(cand) - 1, k).round().astype(int))]
    return [int(t) for t in cand]


# ----------------------------------------------------------------------------------------------- coloring
def _color_split(csr, rows, cols, csc_order, fwd, order, recolor, seed, iterations, tabu_iterations):
    """Color both sides of one split: ``(column_colors, row_colors, kc, kr, how)``."""
    m, n = csr.shape
    gc, lbc, act_c = _side(n, m, rows, cols, fwd)
    # reverse side: entries grouped by column (CSC order)
    gr, lbr, act_r = _side(m, n, cols[csc_order], rows[csc_order], ~fwd[csc_order])
    out = []
    for g, lb, act in ((gc, lbc, act_c), (gr, lbr, act_r)):
        if not act.any():
            out.append((np.full(g.nv, -1, np.int32), 0, "none"))
            continue
        colors, k, how, _, _ = _color_distance2(g, lb, order, recolor, seed, iterations, tabu_iterations)
        colors = np.where(act, colors, -1).astype(np.int32)
        out.append((colors, len(np.unique(colors[act])), how))
    (cc, kc, hc), (rc, kr, hr) = out
    return cc, rc, kc, kr, f"{hc}/{hr}"


def color_bidirectional(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
                        iterations: int | None = None, tabu_iterations: int | None = None,
                        max_candidates: int = 8) -> Bicoloring:
    """A bidirectional coloring of ``pattern`` with as few products (JVPs + VJPs) as this heuristic finds,
    never more than :func:`~.color_columns` or :func:`~.color_rows` (see the module docstring).

    ``order`` / ``recolor`` / ``seed`` / ``iterations`` / ``tabu_iterations`` as for :func:`~.color_columns`,
    applied to each side; at most ``max_candidates`` splits are colored (best score first).
    """
    _check_recolor(recolor)
    kw = dict(order=order, recolor=recolor, seed=seed, iterations=iterations, tabu_iterations=tabu_iterations)
    cols = color_columns(pattern, **kw)
    rows = color_rows(pattern, **kw)
    return _bicolor(as_csr(pattern), [cols, rows], kw, max_candidates)


def bidirectional_or(pattern, incumbent: Coloring, order: str = "best", recolor: str = "auto", seed: int = 0,
                     iterations: int | None = None, tabu_iterations: int | None = None,
                     max_candidates: int = 8) -> Coloring:
    """A :class:`Bicoloring` with fewer products than ``incumbent`` (a column or row coloring of
    ``pattern``) if the split candidates find one, else ``incumbent`` — what ``mode="auto"`` uses.  Splits
    whose score cannot beat the incumbent are never colored, so this is cheap when it cannot win."""
    kw = dict(order=order, recolor=recolor, seed=seed, iterations=iterations, tabu_iterations=tabu_iterations)
    best = _bicolor(as_csr(pattern), [incumbent], kw, max_candidates)
    return best if best.num_colors < incumbent.num_colors else incumbent


def _as_bicoloring(c: Coloring, shape, lb: int) -> Bicoloring:
    m, n = shape
    if isinstance(c, Bicoloring):
        return c
    none_c, none_r = np.full(n, -1, np.int32), np.full(m, -1, np.int32)
    if c.kind == "column":
        return Bicoloring.from_sides(c.colors, none_r, shape, "forward:" + c.order, lb, c.tried)
    return Bicoloring.from_sides(none_c, c.colors, shape, "reverse:" + c.order, lb, c.tried)


def _bicolor(csr, unidirectional: list, kw: dict, max_candidates: int) -> Bicoloring:
    m, n = csr.shape
    lb = lower_bound(csr, "bidirectional")
    best = min(unidirectional, key=lambda c: c.num_colors)
    tried = {("forward" if c.kind == "column" else "reverse"): c.num_colors for c in unidirectional}
    if csr.nnz == 0:
        return Bicoloring.from_sides(np.full(n, -1), np.full(m, -1), (m, n), "empty", 0, tried)
    rows = np.repeat(np.arange(m), np.diff(csr.indptr))
    cols = csr.indices.astype(np.int64)
    csc_order = np.lexsort((rows, cols))
    scored = {}
    for name, fwd in split_candidates(csr):
        if fwd.all() or not fwd.any():
            continue  # a unidirectional split: already colored
        key = np.packbits(fwd).tobytes()
        if key in scored:
            continue
        lf, lr = _score(n, m, rows, cols, fwd)
        scored[key] = (lf + lr, name, fwd)
    best_k, best_c = best.num_colors, None
    for score, name, fwd in sorted(scored.values(), key=lambda t: t[0])[:max_candidates]:
        if score >= best_k:
            break
        cc, rc, kc, kr, how = _color_split(csr, rows, cols, csc_order, fwd, kw["order"], kw["recolor"],
                                           kw["seed"], kw["iterations"], kw["tabu_iterations"])
        tried[name] = kc + kr
        if kc + kr < best_k:
            best_k, best_c = kc + kr, (cc, rc, f"{name} ({how})")
    if best_c is None:
        out = _as_bicoloring(best, (m, n), lb)
        return Bicoloring.from_sides(out.column_colors, out.row_colors, (m, n), out.order, lb, tried)
    cc, rc, how = best_c
    return Bicoloring.from_sides(cc, rc, (m, n), how, lb, tried)
