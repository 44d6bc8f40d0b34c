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
2. **Score.** A lower bound per split, in a few compiled passes over the nonzeros: in a row with
   ``f ≥ 1`` forward nonzeros and ``a`` active columns, ``f + [a > f]`` columns pairwise conflict
   (likewise for columns); the score is the sum of the two largest such cliques.  Only splits whose score
   can beat the best coloring found are colored, best score first.  The one-direction colorings
   (everything ``F``, everything ``R``) are candidates too — computed only when their own lower bound (the
   densest row, or column) can win — so a bicoloring never needs more products than
   :func:`~.color_columns` or :func:`~.color_rows`.
3. **Color.** With the split fixed the two sides are independent: columns ``j, j'`` conflict iff some row
   holds both, active, and one of the two nonzeros is ``F``.  That is a distance-2 walk through *handles*
   (per row: its active columns, and its ``F`` columns), so the column kernels run unchanged — orderings,
   DSATUR, tabu and iterated greedy (:mod:`.greedy`).  Each candidate is screened with one greedy pass per
   side; the best is then colored with the full options.
"""

from __future__ import annotations

import numpy as np

from ..dtypes import index_dtype
from .bounds import lower_bound
from .distance2 import color_bipartite, color_columns, color_distance2
from .graph import Bipartite, as_csr
from .kinds import ColoringKind
from .policy import check_recolor
from .result import Bicoloring, Coloring

__all__ = ["color_bidirectional", "color_fewest_products", "split_candidates"]


# ----------------------------------------------------------------------------------------------- one side
def _side(nv: int, nother: int, other: np.ndarray, vert: np.ndarray, sel: np.ndarray):
    """The conflict walk of one side for a split.

    Entries are grouped by ``other`` (ascending: the rows for the column side); ``vert`` is the vertex to
    color of each entry, ``sel`` whether the entry is read on this side.  Returns ``(graph, lower bound,
    active)``: handle ``h < nother`` lists the active vertices of ``other`` row ``h``, handle
    ``nother + h`` its selected ones; a vertex walks to the "active" handle of every other-side index
    where it is selected and to the "selected" handle where it is only active."""
    t = index_dtype(len(vert), nv, 2 * nother)
    active = np.bincount(vert[sel], minlength=nv) > 0
    in_a = active[vert]
    n_a = np.bincount(other[in_a], minlength=nother)
    n_s = np.bincount(other[sel], minlength=nother)
    optr: np.ndarray = np.zeros(2 * nother + 1, t)
    np.cumsum(np.concatenate([n_a, n_s]), out=optr[1:])
    onbr: np.ndarray = np.concatenate([vert[in_a], vert[sel]]).astype(t)
    # an active vertex read on the other side walks to the selected list of that row: skip empty lists
    walk = in_a & (sel | (n_s[other] > 0))
    handle = np.where(sel, other, nother + other)[walk]
    owner = vert[walk]
    order = np.argsort(owner, kind="stable")
    ptr: np.ndarray = np.zeros(nv + 1, t)
    np.cumsum(np.bincount(owner, minlength=nv), out=ptr[1:])
    g = Bipartite(nv, ptr, handle[order].astype(t), optr, onbr)
    return g, _side_bound(n_a, n_s), active


def _side_bound(n_active: np.ndarray, n_selected: np.ndarray) -> int:
    """Largest clique a row (column) forces: its selected vertices plus one more active one."""
    if len(n_active) == 0:
        return 0
    b = np.where(n_selected > 0, n_selected + (n_active > n_selected), 0)
    return int(b.max())


# ----------------------------------------------------------------------------------------------- splits
def split_candidates(pattern, max_thresholds: int = 4):
    """Candidate splits of the nonzeros of ``pattern`` (CSR order), as ``(name, forward mask)`` pairs:

    * ``denser-side``: forward iff the row is sparser than the column (ties forward, or ties reverse);
    * thresholds, when some rows (columns) are much denser than the typical one (more than twice the
      median count): rows with more than ``t`` nonzeros reverse, columns with more than ``u`` forward
      (a nonzero in both: the sparser side), the rest forward or reverse — for a few ``t``, ``u`` between
      the median and the largest count.
    """
    csr = as_csr(pattern)
    m, n = csr.shape
    rc = np.diff(csr.indptr).astype(np.int32)  # (int32: two per-nonzero arrays below)
    cc = np.bincount(csr.indices, minlength=n).astype(np.int32)
    dr = np.repeat(rc, rc)
    dc = cc[csr.indices]
    yield "denser-side/tie-reverse", dr < dc
    yield "denser-side/tie-forward", dr <= dc
    trs = _thresholds(rc, max_thresholds)
    tcs = _thresholds(cc, max_thresholds)
    if not trs and not tcs:
        return
    trs = trs or [int(np.max(rc))]
    tcs = tcs or [int(np.max(cc))]
    sparser_row = dr <= dc
    for default_fwd in (True, False):
        for tr in trs:
            heavy_r = dr > tr
            for tc in tcs:
                heavy_c = dc > tc
                fwd = np.where(heavy_r, heavy_c & sparser_row, heavy_c | default_fwd)
                yield f"rows>{tr}:reverse,cols>{tc}:forward,rest:{'forward' if default_fwd else 'reverse'}", fwd


def _thresholds(counts: np.ndarray, k: int) -> list[int]:
    """Up to ``k`` thresholds ``t`` (a count is heavy when ``> t``) from the median count to just below the
    largest; none when nothing is denser than twice the median."""
    nz = counts[counts > 0]
    if len(nz) == 0:
        return []
    med = float(np.median(nz))
    top = int(nz.max())
    if top <= 2 * med:
        return []
    u = np.unique(nz)
    cand = u[(u >= med) & (u < top)]
    if len(cand) > k:
        cand = cand[np.unique(np.linspace(0, len(cand) - 1, k).round().astype(int))]
    return [int(t) for t in cand]


# ----------------------------------------------------------------------------------------------- coloring
def _color_split(csr, rows, cols, csc_order, fwd, order="best", recolor="auto", seed=0, iterations=None,
                 tabu_iterations=None, effort=1.0, time_limit=None, progress=None):
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
        what = "split " + ("columns" if g is gc else "rows")
        colors, k, how, _, _ = color_distance2(g, lb, order, recolor, seed, iterations, tabu_iterations, effort,
                                                time_limit, progress, what=what)
        colors = np.where(act, colors, -1).astype(np.int32)
        out.append((colors, len(np.unique(colors[act])), how))
    (cc, kc, hc), (rc, kr, hr) = out
    return cc, rc, kc, kr, f"{hc}/{hr}"


def color_bidirectional(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
                        iterations: int | None = None, tabu_iterations: int | None = None,
                        max_candidates: int = 8, *, effort: float = 1.0, time_limit: float | None = None,
                        progress=None) -> Bicoloring:
    """A bidirectional coloring of ``pattern`` with as few products (JVPs + VJPs) as this heuristic finds,
    never more than :func:`~.color_columns` or :func:`~.color_rows` (see the module docstring); a
    one-direction coloring, when that is the best, comes back as a Bicoloring with an empty side.

    ``order`` / ``recolor`` / ``seed`` / ``iterations`` / ``tabu_iterations`` / ``effort`` / ``time_limit`` /
    ``progress`` as for :func:`~.color_columns`, applied to each side; at most ``max_candidates`` splits are
    colored (best score first).

    Raises:
        ValueError: ``pattern`` is not 2-D, an unknown ``order`` or ``recolor``, or a negative ``effort``.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity import color_bidirectional, color_columns
        >>> A = np.eye(5) + np.eye(5)[[0]] + np.eye(5)[:, [0]]    # an arrowhead: a dense row and column
        >>> b = color_bidirectional(A)
        >>> b.num_colors, b.num_column_colors, b.num_row_colors, color_columns(A).num_colors
        (3, 1, 2, 5)
    """
    csr = as_csr(pattern)
    best, tried = _fewest(csr, order, recolor, seed, iterations, tabu_iterations, max_candidates, effort, time_limit,
                          progress)
    if isinstance(best, Bicoloring):
        return best
    lb = lower_bound(csr, ColoringKind.BIDIRECTIONAL) if csr.nnz else 0
    out = _as_bicoloring(best, csr, lb)
    return Bicoloring.from_sides(out.column_colors, out.row_colors, csr.shape, out.order, lb, tried)


def color_fewest_products(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
                          iterations: int | None = None, tabu_iterations: int | None = None,
                          max_candidates: int = 8, *, effort: float = 1.0, time_limit: float | None = None,
                          progress=None) -> Coloring:
    """The column, row or bidirectional coloring with the fewest products (ties: forward, then reverse,
    then bidirectional) — ``sparse_jacobian(mode="auto")``.

    Colorings that cannot win are not computed: a direction whose lower bound (the densest row, or
    column) is already beaten, and split candidates whose bound is (on stencils, all of them: the split
    step then costs a few compiled passes over the nonzeros).  When a split's bound is below both
    one-direction bounds (dense rows *and* dense columns) the splits are colored first, which spares the
    one-direction colorings of an arrowhead (quadratic in ``n``)."""
    best, _ = _fewest(as_csr(pattern), order, recolor, seed, iterations, tabu_iterations, max_candidates, effort,
                      time_limit, progress)
    return best


def _as_bicoloring(c: Coloring, csr, lb: int) -> Bicoloring:
    """A one-direction coloring as a Bicoloring; empty columns (rows) are left out of the seeds."""
    m, n = csr.shape
    none_c, none_r = np.full(n, -1, np.int32), np.full(m, -1, np.int32)
    if c.kind == ColoringKind.COLUMN:
        used = np.bincount(csr.indices, minlength=n) > 0
        return Bicoloring.from_sides(np.where(used, c.colors, -1), none_r, (m, n), "forward:" + c.order, lb)
    used = np.diff(csr.indptr) > 0
    return Bicoloring.from_sides(none_c, np.where(used, c.colors, -1), (m, n), "reverse:" + c.order, lb)


def _fewest(csr, order, recolor, seed, iterations, tabu_iterations, max_candidates, effort=1.0, time_limit=None,
            progress=None):
    """``(best coloring, {candidate: products})`` over forward, reverse and the split candidates."""
    check_recolor(recolor)
    kw = dict(order=order, recolor=recolor, seed=seed, iterations=iterations, tabu_iterations=tabu_iterations,
              effort=effort, time_limit=time_limit, progress=progress)
    m, n = csr.shape
    if csr.nnz == 0:
        return color_columns(csr, **kw), {}
    rc = np.diff(csr.indptr)
    cc = np.bincount(csr.indices, minlength=n)
    lb_f, lb_r = int(rc.max()), int(cc.max())
    csc = csr.tocsc()  # shared by both directions and the symmetry test
    lb_one = min(lb_f, lb_r)
    tried = {}
    split_state = {"csc": None}
    scored_once: list = []

    def scored():
        """The split candidates with their bounds, best first (scored on first use: see ``splits_first``)."""
        if not scored_once:
            scored_once.append(_scored_splits(csr, lb_one, rc, cc))
        return scored_once[0]

    def splits(beat):
        candidates = scored()
        if not any(score < beat for score, _, _ in candidates[:max_candidates]):
            return None  # (no candidate can win: spare the per-nonzero row and column arrays)
        rows = np.repeat(np.arange(m), np.diff(csr.indptr))
        cols = csr.indices.astype(np.int64)
        return _color_splits(csr, rows, cols, split_state, candidates, beat, kw, max_candidates, tried)

    def k(c):
        return np.inf if c is None else c.num_colors

    best = None
    # A split reads some nonzeros from a JVP and the others from a VJP: its bound is at least 2, so with a
    # direction bound at most 2 no split is colored first (and the candidates are scored only if one may win).
    splits_first = lb_one > 2 and bool(scored()) and scored()[0][0] < lb_one
    if splits_first:
        best = splits(np.inf)
    if lb_f <= k(best):
        c = color_bipartite(csr, ColoringKind.COLUMN, csc=csc, **kw)
        tried["forward"] = c.num_colors
        if c.num_colors <= k(best):
            best = c
    if (lb_r < k(best) or (isinstance(best, Bicoloring) and lb_r <= k(best))) \
            and not (isinstance(best, Coloring) and best.kind == ColoringKind.COLUMN and _symmetric(csr, csc)):
        # (a structurally symmetric pattern's rows are its columns: the same graph, the same coloring, and
        # a tie goes forward — the reverse coloring cannot win)
        c = color_bipartite(csr, ColoringKind.ROW, csc=csc, **kw)
        tried["reverse"] = c.num_colors
        if c.num_colors < k(best) or (isinstance(best, Bicoloring) and c.num_colors == k(best)):
            best = c
    if not splits_first and k(best) >= 3:  # one or two products: a split cannot do better
        found = splits(k(best))
        if found is not None:
            best = found
    return best, tried


def _symmetric(csr, csc) -> bool:
    """Is the square pattern equal to its transpose?  (The CSC arrays of A are the CSR arrays of Aᵀ.)"""
    if csr.shape[0] != csr.shape[1]:
        return False
    return np.array_equal(csc.indptr, csr.indptr) and np.array_equal(csc.indices, csr.indices)


def _scored_splits(csr, stop: int, rc=None, cc=None) -> list:
    """The distinct split candidates (one-direction splits left out), with their bounds, best first; a
    bound at or above ``stop`` may be truncated to its forward part (still a lower bound)."""
    from .greedy import split_bound  # compiled: imported on first use, like every numba kernel

    m, n = csr.shape
    rc = np.diff(csr.indptr) if rc is None else rc
    cc = np.bincount(csr.indices, minlength=n) if cc is None else cc
    rnz, cnz = rc[rc > 0], cc[cc > 0]
    if rnz.min() >= cnz.max() and rnz.max() <= cnz.min():
        # every nonempty row and column holds as many nonzeros (a periodic stencil): both denser-side splits
        # are one direction, and no count is heavy (no threshold splits)
        return []
    scored = {}
    for name, fwd in split_candidates(csr):
        if fwd.all() or not fwd.any():
            continue
        key = hash(np.packbits(fwd).tobytes())
        if key not in scored:
            scored[key] = (int(split_bound(m, n, csr.indptr, csr.indices, fwd, stop)), name, fwd)
    return sorted(scored.values(), key=lambda t: t[0])


def _color_splits(csr, rows, cols, state, scored, beat, kw, max_candidates, tried):
    """The best Bicoloring among the first ``max_candidates`` splits whose bound is below ``beat``, or None.

    Each split is screened with one greedy pass per side (DSATUR, or the requested ``order``; no
    recoloring), then the best screened split is colored with the full options (orderings, tabu,
    iterated greedy) — recoloring every candidate would cost more than all the rest together."""
    m, n = csr.shape
    screen = dict(kw, order="dsatur" if kw["order"] == "best" else kw["order"], recolor="none")
    cands = []
    best_k = beat
    for score, name, fwd in scored[:max_candidates]:
        if score >= best_k:
            break
        if state["csc"] is None:
            state["csc"] = np.lexsort((rows, cols))
        out = _color_split(csr, rows, cols, state["csc"], fwd, **screen)
        k = out[2] + out[3]
        cands.append((k, name, fwd, out))
        best_k = min(best_k, k)
    if not cands:
        return None
    k, name, fwd, out = min(cands, key=lambda t: t[0])
    if kw["recolor"] != "none" or kw["order"] == "best":
        full = _color_split(csr, rows, cols, state["csc"], fwd, **kw)
        if full[2] + full[3] <= k:
            out = full
    for k_, name_, _, _ in cands:
        tried[name_] = k_
    cc, rc, kc, kr, how = out
    tried[name] = kc + kr
    if kc + kr >= beat:
        return None
    lb = lower_bound(csr, ColoringKind.BIDIRECTIONAL)
    return Bicoloring.from_sides(cc, rc, (m, n), f"{name} ({how})", lb, tried)
