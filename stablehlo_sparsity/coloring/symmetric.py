"""Star and acyclic coloring of a symmetric pattern (Hessians): greedy kernels of :mod:`.star` and
:mod:`.acyclic` over the orderings of :mod:`.policy`, then iterated recoloring over the color classes."""

from __future__ import annotations

import numpy as np

from .bounds import acyclic_lower_bound, star_lower_bound
from .graph import adjacency, symmetrize
from .kinds import ColoringKind
from .policy import STAR_FALLBACK_MAX_VERTICES, check_recolor, orders_to_try, reporter
from .result import Coloring, canonical

__all__ = ["color_star", "color_acyclic"]


def color_star(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
               iterations: int | None = None, *, effort: float = 1.0, progress=None) -> Coloring:
    """Star coloring of the symmetrized square ``pattern`` (``P ∪ Pᵀ``), for Hessians with direct recovery.

    ``recolor`` other than ``"none"`` re-runs the greedy star coloring over the color classes in shuffled
    orders (``iterations`` passes, default 30, stopping after 10 without progress) and keeps the best; star
    colorings are not monotone under that move, so each pass is accepted only if it does not use more
    colors.  The lower bound is 3 unless the graph is a star forest (2) or has no edges (1).  ``effort``
    scales the default number of passes (``0``: the greedy result); ``progress`` as for :func:`color_columns`.

    Raises:
        ValueError: ``pattern`` is not square (or not 2-D), an unknown ``order`` or ``recolor``, or a negative
            ``effort``.

    Examples:
        >>> import scipy.sparse as sp
        >>> from stablehlo_sparsity import check_coloring, color_star
        >>> H = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(5, 5))   # tridiagonal
        >>> c = color_star(H)
        >>> c.num_colors, c.lower_bound, check_coloring(H, c)
        (3, 3, True)
    """
    from .star import greedy_star

    return _color_adjacency(pattern, ColoringKind.STAR, greedy_star, star_lower_bound, order, recolor, seed, iterations,
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

    Raises:
        ValueError: ``pattern`` is not square (or not 2-D), an unknown ``order`` or ``recolor``, or a negative
            ``effort``.

    Examples:
        >>> import scipy.sparse as sp
        >>> from stablehlo_sparsity import check_coloring, color_acyclic
        >>> H = sp.diags_array([1.0, 1.0, 1.0], offsets=[-1, 0, 1], shape=(5, 5))   # tridiagonal: a path
        >>> c = color_acyclic(H)
        >>> c.num_colors, str(c.kind), check_coloring(H, c)
        (2, 'acyclic', True)
    """
    from .acyclic import edge_ids, greedy_acyclic
    from .star import greedy_star

    acyclic = _color_adjacency(pattern, ColoringKind.ACYCLIC, greedy_acyclic, acyclic_lower_bound, order, recolor, seed,
                               iterations, edge_ids, work_budget=50_000_000, effort=effort, progress=progress)
    if acyclic.num_colors <= acyclic.lower_bound or len(acyclic.colors) > STAR_FALLBACK_MAX_VERTICES:
        return acyclic
    star = _color_adjacency(pattern, ColoringKind.ACYCLIC, greedy_star, acyclic_lower_bound, order, recolor, seed,
                            iterations, effort=effort, progress=progress)
    if star.num_colors < acyclic.num_colors:
        tried = dict(acyclic.tried, **{f"star:{k}": v for k, v in star.tried.items()})
        return Coloring(star.colors, star.num_colors, ColoringKind.ACYCLIC, star.shape, "star:" + star.order,
                        acyclic.lower_bound, tried)
    return acyclic


def _color_adjacency(pattern, kind, kernel, bound, order, recolor, seed, iterations, extra=None,
                     work_budget: int | None = None, effort: float = 1.0, progress=None) -> Coloring:
    """Greedy ``kernel`` coloring of the adjacency graph of the symmetrized ``pattern`` over the orderings,
    then iterated recoloring over the color classes (accepted only when not worse: neither star nor
    acyclic colorings are monotone under that move).  With ``work_budget`` the default number of passes
    is capped at about ``work_budget`` neighbour-of-neighbour visits (at least 3)."""
    from .orderings import best_of_orderings

    check_recolor(recolor)
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
    colors, k, how, tried = best_of_orderings(g, orders_to_try(order, star=True), lambda name, order_v: run(order_v()),
                                              lb, seed)
    greedy_k = k
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
            reporter(progress, f"variables ({kind})")(f"iterated recoloring: {k} colors (greedy: {greedy_k})")
    return Coloring(canonical(colors), int(k), kind, shape, how, lb, tried)
