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
* :func:`check_coloring` — validity check, vectorized.

``order`` is one of :data:`ORDERS`, ``"dsatur"`` (column/row only) or ``"best"`` (the default): try DSATUR
and the deterministic orderings, keep the fewest colors, stop early at the lower bound (the largest number of nonzeros in one row — those columns
pairwise conflict).  ``recolor`` then improves the best coloring: ``"tabu"`` removes one color at a time
with TabuCol while it succeeds within its budget, ``"iterated"`` runs Culberson's iterated greedy (never
more colors), ``"auto"`` (default) runs tabu up to :data:`TABU_MAX_VERTICES` vertices and iterated greedy
above, ``"none"`` skips it.
Everything is deterministic for a given ``seed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .check import InvalidColoringError, check_coloring, star_sources
from .graph import adjacency, as_csr, bipartite, symmetrize

# The compiled kernels (greedy, orderings, star) import numba, which takes a while to import: they are
# imported on first use, so ``import stablehlo_sparsity`` stays light.

#: The vertex orderings (see :mod:`.orderings`).
ORDERS = ("natural", "largest_first", "smallest_last", "incidence_degree", "dynamic_largest_first", "random")

__all__ = [
    "Coloring",
    "ORDERS",
    "METHODS",
    "color_columns",
    "color_rows",
    "color_star",
    "check_coloring",
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

#: ``recolor="auto"`` runs tabu search only on graphs up to this many vertices (its memory is O(n·colors)).
TABU_MAX_VERTICES = 300_000


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
        what = {"column": "columns", "row": "rows", "star": "variables (star)"}[self.kind]
        return (f"Coloring({self.num_colors} colors for {len(self.colors)} {what} of a {m}×{n} pattern, "
                f"order={self.order!r}, lower bound {self.lower_bound})")


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
    raise ValueError(f"kind must be 'column', 'row' or 'star', got {kind!r}")


def _star_lower_bound(g) -> int:
    """1 without edges; 2 for a star forest; else 3.  Two colors suffice exactly for star forests: a connected
    two-colored graph with a path on four vertices has a bicolored P4.  A graph is a star forest iff every
    edge has an endpoint of degree 1."""
    if g.nv == 0 or len(g.nbr) == 0:
        return 1
    deg = np.diff(g.ptr)
    owner = np.repeat(np.arange(g.nv), deg)
    return 2 if bool(((deg[owner] == 1) | (deg[g.nbr] == 1)).all()) else 3


def _canonical(colors: np.ndarray) -> np.ndarray:
    """Relabel colors by first appearance (vertex 0 gets color 0, …): same classes, a reproducible form."""
    if len(colors) == 0:
        return np.zeros(0, np.int32)
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


def _color_bipartite(csr, side: str, order: str, recolor: str, seed: int, iterations: int | None,
                     tabu_iterations: int | None) -> Coloring:
    from .greedy import dsatur, greedy_color, iterated_greedy, tabu_reduce
    from .orderings import conflict_degrees, order_vertices

    _check_recolor(recolor)
    g = bipartite(csr, side)
    kind = side
    shape = tuple(int(s) for s in csr.shape)
    if csr.nnz == 0:
        return Coloring(np.zeros(g.nv, np.int32), 0, kind, shape, "empty", 0)
    lb = g.lower_bound
    walk = (g.nv, g.ptr, g.nbr, g.optr, g.onbr, True)
    best = None
    tried = {}
    deg = None
    for name in _orders_to_try(order):
        if name == "dsatur":
            colors, k = dsatur(*walk)
        else:
            if name not in ("natural", "random") and deg is None:
                deg = conflict_degrees(g)
            colors, k = greedy_color(*walk, order_vertices(g, name, seed=seed, degrees=deg))
        tried[name] = k
        if best is None or k < best[1]:
            best = (colors, k, name)
        if k <= lb:
            break
    colors, k, how = best
    use_tabu = recolor == "tabu" or (recolor == "auto" and g.nv <= TABU_MAX_VERTICES)
    if k > lb and use_tabu:
        budget = 2 * g.nv + 10_000 if tabu_iterations is None else int(tabu_iterations)
        c2, k2 = tabu_reduce(g.nv, g.ptr, g.nbr, g.optr, g.onbr, colors, k, lb, budget, seed=seed)
        if k2 < k:
            colors, k, how = c2, k2, how + "+tabu"
    if k > lb and (recolor == "iterated" or (recolor == "auto" and not use_tabu)):
        # Each pass walks every distance-2 neighbourhood once: keep the default total near 10⁸ steps.
        walk_len = int((np.diff(g.optr).astype(np.int64) ** 2).sum())
        iters = (min(400, max(5, 100_000_000 // max(walk_len, 1))) if iterations is None else int(iterations))
        c2, k2 = iterated_greedy(*walk, colors, iters, lb, patience=max(5, iters // 4), seed=seed)
        if k2 < k:
            colors, k, how = c2, k2, how + "+iterated"
    return Coloring(_canonical(colors), int(k), kind, shape, how, lb, tried)


def color_columns(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
                  iterations: int | None = None, tabu_iterations: int | None = None) -> Coloring:
    """Partial distance-2 coloring of the columns of ``pattern`` (columns sharing a row get different colors).

    ``pattern``: a :class:`~stablehlo_sparsity.SparsityPattern`, a SciPy sparse matrix or a dense array.
    ``iterations``: iterated-greedy passes (default 400); ``tabu_iterations``: TabuCol moves per attempt
    (default ``2·n + 10⁴``).
    """
    return _color_bipartite(as_csr(pattern), "column", order, recolor, seed, iterations, tabu_iterations)


def color_rows(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
               iterations: int | None = None, tabu_iterations: int | None = None) -> Coloring:
    """Partial distance-2 coloring of the rows of ``pattern`` (rows sharing a column get different colors)."""
    return _color_bipartite(as_csr(pattern), "row", order, recolor, seed, iterations, tabu_iterations)


def color_star(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
               iterations: int | None = None) -> Coloring:
    """Star coloring of the symmetrized square ``pattern`` (``P ∪ Pᵀ``), for Hessians with direct recovery.

    ``recolor`` other than ``"none"`` re-runs the greedy star coloring over the color classes in shuffled
    orders (``iterations`` passes, default 30, stopping after 10 without progress) and keeps the best; star
    colorings are not monotone under that move, so each pass is accepted only if it does not use more
    colors.  The lower bound is 3 unless the graph is a star forest (2) or has no edges (1).
    """
    from .orderings import conflict_degrees, order_vertices
    from .star import greedy_star

    _check_recolor(recolor)
    csr = symmetrize(pattern)
    n = csr.shape[0]
    shape = (n, n)
    if csr.nnz == 0:
        return Coloring(np.zeros(n, np.int32), 0, "star", shape, "empty", 0)
    g = adjacency(csr)
    lb = _star_lower_bound(g)
    best = None
    tried = {}
    deg = None
    for name in _orders_to_try(order, star=True):
        if name != "natural" and name != "random" and deg is None:
            deg = conflict_degrees(g)
        colors, k = greedy_star(g.nv, g.ptr, g.nbr, order_vertices(g, name, seed=seed, degrees=deg))
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
        for it in range(30 if iterations is None else int(iterations)):
            if k <= lb or stall >= 10:
                break
            rank = np.arange(k)[::-1] if it % 2 == 0 else rng.permutation(k)
            order_v = np.argsort(rank[colors], kind="stable")
            c2, k2 = greedy_star(g.nv, g.ptr, g.nbr, order_v)
            stall = 0 if k2 < k else stall + 1
            if k2 <= k:
                improved |= k2 < k
                colors, k = c2, k2
        if improved:
            how += "+iterated"
    return Coloring(_canonical(colors), int(k), "star", shape, how, lb, tried)
