"""Graph coloring of sparsity patterns: fewer colors ⇒ fewer JVPs, VJPs or Hessian-vector products.

    >>> import numpy as np, scipy.sparse as sp
    >>> from stablehlo_sparsity.coloring import color_columns, check_coloring
    >>> J = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(6, 6))   # tridiagonal
    >>> c = color_columns(J)
    >>> c.num_colors, c.colors.tolist()
    (3, [0, 1, 2, 0, 1, 2])
    >>> check_coloring(J, c)
    True

* :func:`color_columns` — partial distance-2 coloring of the columns (forward mode: one JVP per color);
* :func:`color_rows` — the same for rows (reverse mode: one VJP per color);
* :func:`color_star` — star coloring of a symmetric pattern (Hessians, direct recovery);
* :func:`color_acyclic` — acyclic coloring of a symmetric pattern (Hessians, recovery by substitution:
  fewer colors on banded and grid Hessians; :mod:`.acyclic`);
* :func:`color_bidirectional` — forward and reverse products together (a :class:`Bicoloring`; an arrowhead
  takes 3 products instead of ``n``; :mod:`.bicoloring`);
* :func:`check_coloring` — validity check of every kind, vectorized;
* :func:`seed_matrix`, :func:`decompress`, :class:`DecompressionPlan` — seeds and decompression for products
  computed anywhere (:mod:`.decompression`).

``order`` is one of :data:`ORDERS`, ``"dsatur"`` (column/row only) or ``"best"`` (the default): try DSATUR
and the deterministic orderings (on large graphs, above :data:`BEST_ORDERS_MAX_WALK`, DSATUR and the natural
order), keep the fewest colors, stop early at the lower bound (the largest number of nonzeros in one row — those columns
pairwise conflict).  ``recolor`` then improves the best coloring: ``"tabu"`` removes one color at a time
with TabuCol on a region around the smallest class (:mod:`.recolor`: a thin class along the seams of a
stencil coloring is removed in milliseconds on 10⁷ vertices) while it succeeds within its budget,
``"iterated"`` runs Culberson's iterated greedy (never more colors), ``"auto"`` (default) runs tabu, then
iterated greedy with what is left of the budget, ``"none"`` skips it.

Budgets.  The improvement phases of column/row coloring spend at most a work budget (``effort=1``: about
:data:`EFFORT_BASE` units plus :data:`EFFORT_PER_WALK` greedy passes' worth; one unit is a neighbour visit or a
candidate move, a few nanoseconds), optionally capped in seconds by ``time_limit``; ``effort=0`` returns
the greedy result.  They never return more colors than the greedy pass.  Each step is reported to the
``stablehlo_sparsity.coloring`` logger (INFO) and to ``progress`` (a callable, or ``True`` for stderr).
Everything is deterministic for a given ``seed``.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from .check import InvalidColoringError, acyclic_violation, bidirectional_sources, check_coloring, star_sources
from .graph import adjacency, as_csr, bipartite, symmetrize

# The compiled kernels (greedy, orderings, star) import numba, which takes a while to import: they are
# imported on first use, so ``import stablehlo_sparsity`` stays light.

#: The vertex orderings (see :mod:`.orderings`).
ORDERS = ("natural", "largest_first", "smallest_last", "incidence_degree", "dynamic_largest_first", "random")

__all__ = [
    "Coloring",
    "Bicoloring",
    "ORDERS",
    "METHODS",
    "color_columns",
    "color_rows",
    "color_star",
    "color_acyclic",
    "color_bidirectional",
    "check_coloring",
    "KINDS",
    "seed_matrix",
    "compress",
    "decompress",
    "DecompressionPlan",
    "bidirectional_sources",
    "acyclic_violation",
    "lower_bound",
    "InvalidColoringError",
    "star_sources",
    "as_csr",
    "symmetrize",
]

#: Every ``order`` for column/row coloring: the vertex orderings plus ``"dsatur"`` (Brélaz's dynamic
#: saturation order, which picks the next vertex while coloring).
METHODS = ORDERS + ("dsatur",)

#: What ``order="best"`` tries for column/row coloring, best-first: DSATUR reaches the lower bound on 1-D,
#: 2-D and 2-D periodic stencils, and 8 colors (bound 6) on the periodic Brusselator, where the static
#: orderings take 10–13; the others are cheap and sometimes win on irregular patterns.
BEST_ORDERS = ("dsatur", "natural", "largest_first", "smallest_last", "dynamic_largest_first", "incidence_degree")

#: What ``order="best"`` tries for star coloring.
BEST_STAR_ORDERS = ("natural", "largest_first", "smallest_last", "dynamic_largest_first", "incidence_degree")

#: ``order="best"`` tries every ordering only on graphs whose greedy pass visits at most this many distance-2
#: neighbours (about 10⁶ columns of a 1-D stencil, 2·10⁵ of the 2-D Brusselator); above, only
#: :data:`LARGE_BEST_ORDERS`: the dynamic orderings cost several passes each, and the improvement phase does
#: better than they would.
BEST_ORDERS_MAX_WALK = 4_000_000

#: What ``order="best"`` tries on large graphs: DSATUR, and the natural order (one pass; it reaches the bound
#: on the rows of a convolution, where DSATUR takes 81 colors for 72).
LARGE_BEST_ORDERS = ("dsatur", "natural")

#: The improvement phases' default work budget (``effort=1``): this many units (neighbour visits or candidate
#: moves, a few nanoseconds each) ...
EFFORT_BASE = 20_000_000
#: ... plus this many greedy passes' worth.
EFFORT_PER_WALK = 1

_log = logging.getLogger("stablehlo_sparsity.coloring")

#: :func:`color_acyclic` also runs :func:`color_star` (and keeps it if it needs fewer colors) up to this many
#: vertices; above, the star coloring's cost (about as much again) is not paid.
STAR_FALLBACK_MAX_VERTICES = 200_000


@dataclass(frozen=True)
class Coloring:
    """A coloring of the columns (``kind="column"``), rows (``"row"``) or variables (``"star"``) of a pattern.

    colors: ``int32`` array, one color in ``[0, num_colors)`` per vertex.
    num_colors: the number of products (JVPs, VJPs or HVPs) one compressed evaluation needs; ``0`` when the
        pattern has no nonzeros (nothing to evaluate).
    order: how it was found (the winning ordering, plus ``+iterated`` / ``+tabu``).
    lower_bound: no valid coloring of this kind has fewer colors.
    """

    colors: np.ndarray
    num_colors: int
    kind: str
    shape: tuple[int, int]
    order: str = "natural"
    lower_bound: int = 0
    tried: dict = field(default_factory=dict, compare=False)

    def __len__(self) -> int:
        return len(self.colors)

    def groups(self) -> list[np.ndarray]:
        """The vertices of each color."""
        if self.num_colors == 0:
            return []
        order = np.argsort(self.colors, kind="stable")
        bounds = np.searchsorted(self.colors[order], np.arange(self.num_colors + 1))
        return [order[bounds[c]:bounds[c + 1]] for c in range(self.num_colors)]

    def seed_matrix(self, dtype=np.float64) -> np.ndarray:
        """The ``(len(colors), num_colors)`` 0/1 seed matrix ``S`` with ``S[v, colors[v]] = 1``."""
        s = np.zeros((len(self.colors), self.num_colors), dtype=dtype)
        if self.num_colors:
            s[np.arange(len(self.colors)), self.colors] = 1
        return s

    def __repr__(self) -> str:
        m, n = self.shape
        what = {"column": "columns", "row": "rows", "star": "variables (star)",
                "acyclic": "variables (acyclic)"}[self.kind]
        return (f"Coloring({self.num_colors} colors for {len(self.colors)} {what} of a {m}×{n} pattern, "
                f"order={self.order!r}, lower bound {self.lower_bound})")


@dataclass(frozen=True)
class Bicoloring(Coloring):
    """A bidirectional coloring of an ``m × n`` pattern: forward and reverse products together.

    column_colors: ``int32`` ``(n,)``, a color in ``[0, num_column_colors)`` or ``-1`` (in no seed);
    row_colors: ``int32`` ``(m,)``, a color in ``[0, num_row_colors)`` or ``-1``.
    One evaluation takes ``num_column_colors`` JVPs (``B = J S_c``) and ``num_row_colors`` VJPs
    (``C = S_rᵀ J``): :attr:`num_colors` is their sum.  Every nonzero is read directly from one side (see
    :func:`~.check.bidirectional_sources`).  :attr:`colors` lists the columns' colors then the rows' shifted
    by ``num_column_colors`` (``-1`` kept): one color space of ``num_colors`` products over the ``n + m``
    vertices of the bipartite graph.  :meth:`seed_matrix` returns the pair ``(S_c, S_r)``.
    """

    column_colors: np.ndarray = None
    row_colors: np.ndarray = None
    num_column_colors: int = 0
    num_row_colors: int = 0

    @classmethod
    def from_sides(cls, column_colors, row_colors, shape, order: str = "given", lower_bound: int = 0,
                   tried: dict | None = None) -> "Bicoloring":
        """A Bicoloring from the two color arrays (``-1``: in no seed); colors are relabelled by first
        appearance on each side, so unused colors cost no product."""
        cc = _canonical_partial(np.asarray(column_colors))
        rc = _canonical_partial(np.asarray(row_colors))
        kc = int(cc.max()) + 1 if len(cc) else 0
        kr = int(rc.max()) + 1 if len(rc) else 0
        kc, kr = max(kc, 0), max(kr, 0)
        both = np.concatenate([cc, np.where(rc >= 0, rc + kc, -1)]).astype(np.int32)
        return cls(both, kc + kr, "bidirectional", tuple(int(s) for s in shape), order, lower_bound,
                   tried or {}, cc, rc, kc, kr)

    @property
    def mode(self) -> str:
        """``"forward"`` (no VJP), ``"reverse"`` (no JVP) or ``"bidirectional"``."""
        if self.num_row_colors == 0:
            return "forward"
        return "reverse" if self.num_column_colors == 0 else "bidirectional"

    def seed_matrix(self, dtype=np.float64):
        """``(S_c, S_r)``: ``n × num_column_colors`` and ``m × num_row_colors`` 0/1 seeds."""
        from .decompression import seed_matrix

        return seed_matrix(self, dtype=dtype)

    def __repr__(self) -> str:
        m, n = self.shape
        return (f"Bicoloring({self.num_colors} products for a {m}×{n} pattern: {self.num_column_colors} JVPs "
                f"over {int((self.column_colors >= 0).sum())} columns + {self.num_row_colors} VJPs over "
                f"{int((self.row_colors >= 0).sum())} rows, order={self.order!r}, lower bound {self.lower_bound})")


def _canonical_partial(colors: np.ndarray) -> np.ndarray:
    """:func:`_canonical` on the colored vertices; ``-1`` (in no seed) stays."""
    out = np.full(len(colors), -1, np.int32)
    on = colors >= 0
    out[on] = _canonical(colors[on])
    return out


def lower_bound(pattern, kind: str = "column") -> int:
    """A lower bound on the number of colors: the most nonzeros in one row (``"column"``: those columns
    pairwise conflict), in one column (``"row"``); for ``"star"`` 3, or 2 for a star forest, 1 without
    off-diagonal entries."""
    csr = as_csr(pattern)
    if csr.nnz == 0:
        return 0
    if kind == "column":
        return int(np.diff(csr.indptr).max())
    if kind == "row":
        return int(np.bincount(csr.indices, minlength=csr.shape[1]).max())
    if kind == "star":
        return _star_lower_bound(adjacency(csr))
    if kind == "acyclic":
        return _acyclic_lower_bound(adjacency(csr))
    if kind == "bidirectional":
        # One product is one JVP (every row holds at most one nonzero) or one VJP (every column does).
        rows_ok = int(np.diff(csr.indptr).max()) <= 1
        cols_ok = int(np.bincount(csr.indices, minlength=csr.shape[1]).max()) <= 1
        return 1 if rows_ok or cols_ok else 2
    raise ValueError(f"kind must be 'column', 'row', 'star', 'acyclic' or 'bidirectional', got {kind!r}")


def _star_lower_bound(g) -> int:
    """1 without edges; 2 for a star forest; else 3.  Two colors suffice exactly for star forests: a connected
    two-colored graph with a path on four vertices has a bicolored P4.  A graph is a star forest iff every
    edge has an endpoint of degree 1."""
    if g.nv == 0 or len(g.nbr) == 0:
        return 1
    deg = np.diff(g.ptr)
    owner = np.repeat(np.arange(g.nv), deg)
    return 2 if bool(((deg[owner] == 1) | (deg[g.nbr] == 1)).all()) else 3


def _acyclic_lower_bound(g) -> int:
    """1 without edges; 2 for a forest (any proper 2-coloring of a forest is acyclic); else 3 (a cycle
    colored with two colors is a two-colored cycle).  A graph is a forest iff edges = vertices − components."""
    if g.nv == 0 or len(g.nbr) == 0:
        return 1
    from scipy.sparse import csr_array
    from scipy.sparse.csgraph import connected_components

    ncomp = connected_components(csr_array((np.ones(len(g.nbr), np.int8), g.nbr, g.ptr), shape=(g.nv, g.nv)),
                                 directed=False, return_labels=False)
    return 2 if len(g.nbr) // 2 == g.nv - ncomp else 3


def _canonical(colors: np.ndarray) -> np.ndarray:
    """Relabel colors by first appearance (vertex 0 gets color 0, …): same classes, a reproducible form."""
    if len(colors) == 0:
        return np.zeros(0, np.int32)
    top = int(colors.max())
    if top < 64 and int(colors.min()) >= 0:  # few colors: one vectorized scan per color beats a sort
        first = np.array([int(np.argmax(colors == c)) if (colors == c).any() else len(colors) for c in range(top + 1)])
        rank = np.empty(top + 1, np.int32)
        rank[np.argsort(first, kind="stable")] = np.arange(top + 1, dtype=np.int32)
        return rank[colors]
    labels, first = np.unique(colors, return_index=True)
    rank = np.empty(int(labels.max()) + 1, np.int32)
    rank[labels[np.argsort(first)]] = np.arange(len(labels), dtype=np.int32)
    return rank[colors]


def _orders_to_try(order: str, star: bool = False) -> tuple[str, ...]:
    if order == "best":
        return BEST_STAR_ORDERS if star else BEST_ORDERS
    allowed = ORDERS if star else METHODS
    if order not in allowed:
        raise ValueError(f"unknown order {order!r}; expected 'best' or one of {', '.join(allowed)}")
    return (order,)


def _check_recolor(recolor: str) -> None:
    if recolor not in ("auto", "iterated", "tabu", "none"):
        raise ValueError(f"recolor must be 'auto', 'iterated', 'tabu' or 'none', got {recolor!r}")


def _color_bipartite(csr, side: str, order: str = "best", recolor: str = "auto", seed: int = 0,
                     iterations: int | None = None, tabu_iterations: int | None = None, effort: float = 1.0,
                     time_limit: float | None = None, progress=None, csc=None) -> Coloring:
    _check_recolor(recolor)
    g = bipartite(csr, side, csc=csc)
    shape = tuple(int(s) for s in csr.shape)
    if csr.nnz == 0:
        return Coloring(np.zeros(g.nv, np.int32), 0, side, shape, "empty", 0)
    colors, k, how, lb, tried = _color_distance2(g, g.lower_bound, order, recolor, seed, iterations,
                                                 tabu_iterations, effort, time_limit, progress, what=side + "s")
    return Coloring(_canonical(colors), int(k), side, shape, how, lb, tried)


def _reporter(progress, what: str):
    """``report(message)``: to the ``stablehlo_sparsity.coloring`` logger (INFO), and to ``progress`` — a
    callable taking the message, or ``True`` for standard error."""
    import sys

    def report(message: str) -> None:
        text = f"coloring {what}: {message}"
        _log.info(text)
        if progress is True:
            print(text, file=sys.stderr, flush=True)
        elif callable(progress):
            progress(text)

    return report


def _work_budget(walk_len: int, effort: float) -> float:
    """Work units (neighbour visits / candidate moves, a few ns each) the improvement phases may spend:
    :data:`EFFORT_BASE` plus :data:`EFFORT_PER_WALK` greedy passes' worth, times ``effort``."""
    if effort < 0:
        raise ValueError(f"effort must be non-negative, got {effort}")
    return float(effort) * (EFFORT_BASE + EFFORT_PER_WALK * walk_len)


def _color_distance2(g, lb: int, order: str, recolor: str, seed: int, iterations: int | None,
                     tabu_iterations: int | None, effort: float = 1.0, time_limit: float | None = None,
                     progress=None, what: str = "columns"):
    """Color the vertices of ``g`` (a :class:`~.graph.Bipartite` walk: ``v`` conflicts with every vertex two
    steps away through ``ptr/nbr`` then ``optr/onbr``) with the orderings, DSATUR and recoloring of
    :func:`color_columns`; ``lb`` is a lower bound (a target).  Returns ``(colors, k, how, lb, tried)``."""
    import time

    from .greedy import dsatur, greedy_color, iterated_greedy
    from .orderings import conflict_degrees, order_vertices
    from .recolor import reduce_colors

    start = time.perf_counter()
    deadline = None if time_limit is None else start + float(time_limit)
    report = _reporter(progress, what)
    walk = (g.nv, g.ptr, g.nbr, g.optr, g.onbr, True)
    # one greedy pass visits every distance-2 neighbourhood once: Σ over other-side vertices of degree²
    walk_len = int((np.diff(g.optr).astype(np.int64) ** 2).sum())
    names = _orders_to_try(order)
    large = walk_len > BEST_ORDERS_MAX_WALK
    if order == "best" and large:
        names = LARGE_BEST_ORDERS  # large: the orderings that cost one greedy pass (tabu does better than the rest)
    if large:
        report(f"{g.nv:,} vertices, {walk_len:,} neighbour visits per greedy pass; lower bound {lb}")
    best = None
    tried = {}
    deg = None
    for name in names:
        if name == "dsatur":
            colors, k = dsatur(*walk)
        else:
            if name not in ("natural", "random") and deg is None:
                deg = conflict_degrees(g)
            colors, k = greedy_color(*walk, order_vertices(g, name, seed=seed, degrees=deg))
        tried[name] = k
        if large:
            report(f"{name}: {k} colors, {time.perf_counter() - start:.2f} s")
        if best is None or k < best[1]:
            best = (colors, k, name)
        if k <= lb:
            break
    colors, k, how = best
    if len(names) > 1 and not large:
        report(f"{how}: {k} colors (lower bound {lb}), {time.perf_counter() - start:.2f} s")
    budget = _work_budget(walk_len, effort)
    if k > lb and recolor in ("auto", "tabu"):
        c2, k2, spent = reduce_colors(g.nv, g.ptr, g.nbr, g.optr, g.onbr, True, colors, k, lb, budget,
                                      tabu_iterations, seed=seed, deadline=deadline, report=report)
        budget -= spent
        if k2 < k:
            colors, k, how = c2, k2, how + "+tabu"
    if k > lb and (recolor == "iterated" or (recolor == "auto" and budget >= 5 * walk_len)):
        # Culberson's iterated greedy: each pass costs one walk; passes come out of what is left of the budget
        # ("auto": only when that is at least 5 passes, which takes a few dozen to win anything; "iterated"
        # asked for explicitly: at least 5 passes)
        iters = min(400, int(budget // max(walk_len, 1))) if iterations is None else int(iterations)
        if recolor == "iterated" and iterations is None:
            iters = max(iters, 5)
        if deadline is not None and time.perf_counter() > deadline:
            iters = 0
        c2, k2 = iterated_greedy(*walk, colors, iters, lb, patience=max(5, iters // 4), seed=seed)
        if k2 < k:
            colors, k, how = c2, k2, how + "+iterated"
            report(f"iterated greedy: {k} colors")
    return colors, k, how, lb, tried


def color_columns(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
                  iterations: int | None = None, tabu_iterations: int | None = None, *, effort: float = 1.0,
                  time_limit: float | None = None, progress=None) -> Coloring:
    """Partial distance-2 coloring of the columns of ``pattern`` (columns sharing a row get different colors).

    ``pattern``: a :class:`~stablehlo_sparsity.SparsityPattern`, a SciPy sparse matrix or a dense array.
    ``iterations``: iterated-greedy passes (default: what the budget allows, at most 400);
    ``tabu_iterations``: tabu moves per attempt (default ``2·region + 10⁴``).
    ``effort``: the improvement phases' work budget, a multiple of the default (``0``: the greedy result;
    ``1``: about :data:`EFFORT_BASE` + :data:`EFFORT_PER_WALK` greedy passes of work, a fraction of a second
    on 10⁶ columns).  ``time_limit``: seconds after which no new improvement step starts (makes the result
    depend on the machine's speed; the work budget alone is deterministic).  ``progress``: a callable
    receiving one line per step, or ``True`` to print them to standard error (they also go to the
    ``stablehlo_sparsity.coloring`` logger at INFO level).  Never returns more colors than the greedy pass.
    """
    return _color_bipartite(as_csr(pattern), "column", order, recolor, seed, iterations, tabu_iterations, effort,
                            time_limit, progress)


def color_rows(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
               iterations: int | None = None, tabu_iterations: int | None = None, *, effort: float = 1.0,
               time_limit: float | None = None, progress=None) -> Coloring:
    """Partial distance-2 coloring of the rows of ``pattern`` (rows sharing a column get different colors);
    options as for :func:`color_columns`."""
    return _color_bipartite(as_csr(pattern), "row", order, recolor, seed, iterations, tabu_iterations, effort,
                            time_limit, progress)


def color_star(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
               iterations: int | None = None, *, effort: float = 1.0, progress=None) -> Coloring:
    """Star coloring of the symmetrized square ``pattern`` (``P ∪ Pᵀ``), for Hessians with direct recovery.

    ``recolor`` other than ``"none"`` re-runs the greedy star coloring over the color classes in shuffled
    orders (``iterations`` passes, default 30, stopping after 10 without progress) and keeps the best; star
    colorings are not monotone under that move, so each pass is accepted only if it does not use more
    colors.  The lower bound is 3 unless the graph is a star forest (2) or has no edges (1).  ``effort``
    scales the default number of passes (``0``: the greedy result); ``progress`` as for :func:`color_columns`.
    """
    from .star import greedy_star

    return _color_adjacency(pattern, "star", greedy_star, _star_lower_bound, order, recolor, seed, iterations,
                            effort=effort, progress=progress)


def color_acyclic(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
                  iterations: int | None = None, *, effort: float = 1.0, progress=None) -> Coloring:
    """Acyclic coloring of the symmetrized square ``pattern``, for Hessians recovered by substitution.

    Every two colors induce a forest (see :mod:`.acyclic`); the Hessian is recovered from ``B = H S`` by
    substitution along those trees (:func:`~.decompression.decompress`, ``sparse_hessian(mode="substitution")``).
    ``order``, ``recolor`` and ``iterations`` as for :func:`color_star`, except that the default number of
    recoloring passes shrinks on large graphs (about 5·10⁷ neighbour visits in all, at least 3 passes).
    Up to :data:`STAR_FALLBACK_MAX_VERTICES` vertices, never more colors than :func:`color_star` with the same
    options: a star coloring is acyclic, and the better of the two is returned (``order`` names the winner,
    ``star:…`` when the star coloring won; in our tests and benchmarks it never did).  The lower bound is 3
    unless the graph is a forest (2) or has no edges (1).
    """
    from .acyclic import edge_ids, greedy_acyclic
    from .star import greedy_star

    acyclic = _color_adjacency(pattern, "acyclic", greedy_acyclic, _acyclic_lower_bound, order, recolor, seed,
                               iterations, edge_ids, work_budget=50_000_000, effort=effort, progress=progress)
    if acyclic.num_colors <= acyclic.lower_bound or len(acyclic.colors) > STAR_FALLBACK_MAX_VERTICES:
        return acyclic
    star = _color_adjacency(pattern, "acyclic", greedy_star, _acyclic_lower_bound, order, recolor, seed,
                            iterations, effort=effort, progress=progress)
    if star.num_colors < acyclic.num_colors:
        tried = dict(acyclic.tried, **{f"star:{k}": v for k, v in star.tried.items()})
        return Coloring(star.colors, star.num_colors, "acyclic", star.shape, "star:" + star.order,
                        acyclic.lower_bound, tried)
    return acyclic


def _color_adjacency(pattern, kind, kernel, bound, order, recolor, seed, iterations, extra=None,
                     work_budget: int | None = None, effort: float = 1.0, progress=None) -> Coloring:
    """Greedy ``kernel`` coloring of the adjacency graph of the symmetrized ``pattern`` over the orderings,
    then iterated recoloring over the color classes (accepted only when not worse: neither star nor
    acyclic colorings are monotone under that move).  With ``work_budget`` the default number of passes
    is capped at about ``work_budget`` neighbour-of-neighbour visits (at least 3)."""
    from .orderings import conflict_degrees, order_vertices

    _check_recolor(recolor)
    csr = symmetrize(pattern)
    n = csr.shape[0]
    shape = (n, n)
    if csr.nnz == 0:
        return Coloring(np.zeros(n, np.int32), 0, kind, shape, "empty", 0)
    g = adjacency(csr)
    args = (g.nv, g.ptr, g.nbr)
    if extra is not None:
        aux = extra(*args)[0]

        def run(order_v):
            return kernel(*args, order_v, aux)
    else:
        def run(order_v):
            return kernel(*args, order_v)
    lb = bound(g)
    best = None
    tried = {}
    deg = None
    for name in _orders_to_try(order, star=True):
        if name != "natural" and name != "random" and deg is None:
            deg = conflict_degrees(g)
        colors, k = run(order_vertices(g, name, seed=seed, degrees=deg))
        tried[name] = k
        if best is None or k < best[1]:
            best = (colors, k, name)
        if k <= lb:
            break
    colors, k, how = best
    if k > lb and recolor != "none":
        rng = np.random.default_rng(seed)
        improved = False
        stall = 0
        if effort < 0:
            raise ValueError(f"effort must be non-negative, got {effort}")
        passes = round(30 * effort) if iterations is None else int(iterations)
        if iterations is None and work_budget is not None:
            deg = np.diff(g.ptr).astype(np.int64)
            walk = int(deg[g.nbr].sum())  # Σ_v Σ_{w ~ v} deg(w): one pass's neighbour-of-neighbour visits
            passes = min(passes, max(round(3 * effort), int(effort * work_budget) // max(walk, 1)))
        for it in range(passes):
            if k <= lb or stall >= 10:
                break
            rank = np.arange(k)[::-1] if it % 2 == 0 else rng.permutation(k)
            order_v = np.argsort(rank[colors], kind="stable")
            c2, k2 = run(order_v)
            stall = 0 if k2 < k else stall + 1
            if k2 <= k:
                improved |= k2 < k
                colors, k = c2, k2
        if improved:
            how += "+iterated"
            _reporter(progress, f"variables ({kind})")(f"iterated recoloring: {k} colors (greedy: {best[1]})")
    return Coloring(_canonical(colors), int(k), kind, shape, how, lb, tried)


# Defined after Coloring / Bicoloring, which they use.
from .bicoloring import color_bidirectional  # noqa: E402
from .decompression import KINDS, DecompressionPlan, compress, decompress, seed_matrix  # noqa: E402
