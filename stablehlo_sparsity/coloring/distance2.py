"""Column and row coloring (partial distance-2 coloring of the bipartite row/column graph): the orderings and
DSATUR of :mod:`.greedy`, then the improvement phases of :mod:`.recolor` and Culberson's iterated greedy,
within the work budget of :mod:`.policy`."""

from __future__ import annotations

import numpy as np

from .graph import as_csr, bipartite
from .kinds import ColoringKind
from .policy import (BEST_ORDERS_MAX_WALK, LARGE_BEST_ORDERS, check_recolor, orders_to_try, reporter,
                     work_budget)
from .result import Coloring, canonical

__all__ = ["color_columns", "color_rows", "color_bipartite", "color_distance2"]


def color_bipartite(csr, side: ColoringKind, order: str = "best", recolor: str = "auto", seed: int = 0,
                     iterations: int | None = None, tabu_iterations: int | None = None, effort: float = 1.0,
                     time_limit: float | None = None, progress=None, csc=None) -> Coloring:
    check_recolor(recolor)
    side = ColoringKind.parse(side)
    g = bipartite(csr, side.value, csc=csc)
    shape = (int(csr.shape[0]), int(csr.shape[1]))
    if csr.nnz == 0:
        return Coloring(np.zeros(g.nv, np.int32), 0, side, shape, "empty", 0)
    colors, k, how, lb, tried = color_distance2(g, g.lower_bound, order, recolor, seed, iterations,
                                                 tabu_iterations, effort, time_limit, progress, what=side.value + "s")
    return Coloring(canonical(colors), int(k), side, shape, how, lb, tried)


def color_distance2(g, lb: int, order: str, recolor: str, seed: int, iterations: int | None,
                     tabu_iterations: int | None, effort: float = 1.0, time_limit: float | None = None,
                     progress=None, what: str = "columns"):
    """Color the vertices of ``g`` (a :class:`~.graph.Bipartite` walk: ``v`` conflicts with every vertex two
    steps away through ``ptr/nbr`` then ``optr/onbr``) with the orderings, DSATUR and recoloring of
    :func:`color_columns`; ``lb`` is a lower bound (a target).  Returns ``(colors, k, how, lb, tried)``."""
    import time

    from .greedy import dsatur, greedy_color, iterated_greedy
    from .orderings import best_of_orderings
    from .recolor import reduce_colors

    start = time.perf_counter()
    deadline = None if time_limit is None else start + float(time_limit)
    report = reporter(progress, what)
    walk = (g.nv, g.ptr, g.nbr, g.optr, g.onbr, True)
    # one greedy pass visits every distance-2 neighbourhood once: Σ over other-side vertices of degree²
    walk_len = int((np.diff(g.optr).astype(np.int64) ** 2).sum())
    names = orders_to_try(order)
    large = walk_len > BEST_ORDERS_MAX_WALK
    if order == "best" and large:
        names = LARGE_BEST_ORDERS  # large: the orderings that cost one greedy pass (tabu does better than the rest)
    if large:
        report(f"{g.nv:,} vertices, {walk_len:,} neighbour visits per greedy pass; lower bound {lb}")

    def color(name, order):
        return dsatur(*walk) if name == "dsatur" else greedy_color(*walk, order())

    def on_each(name, k):
        if large:
            report(f"{name}: {k} colors, {time.perf_counter() - start:.2f} s")

    colors, k, how, tried = best_of_orderings(g, names, color, lb, seed, on_each)
    if len(names) > 1 and not large:
        report(f"{how}: {k} colors (lower bound {lb}), {time.perf_counter() - start:.2f} s")
    budget = work_budget(walk_len, effort)
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

    Raises:
        ValueError: ``pattern`` is not 2-D, an unknown ``order`` or ``recolor``, or a negative ``effort``.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity import color_columns
        >>> c = color_columns(np.array([[1, 1, 0], [0, 1, 1]]))   # columns 0 and 2 share no row
        >>> c.num_colors, c.colors.tolist(), c.lower_bound
        (2, [0, 1, 0], 2)
    """
    return color_bipartite(as_csr(pattern), ColoringKind.COLUMN, order, recolor, seed, iterations, tabu_iterations,
                           effort, time_limit, progress)


def color_rows(pattern, order: str = "best", recolor: str = "auto", seed: int = 0,
               iterations: int | None = None, tabu_iterations: int | None = None, *, effort: float = 1.0,
               time_limit: float | None = None, progress=None) -> Coloring:
    """Partial distance-2 coloring of the rows of ``pattern`` (rows sharing a column get different colors);
    options as for :func:`color_columns`.

    Raises:
        ValueError: ``pattern`` is not 2-D, an unknown ``order`` or ``recolor``, or a negative ``effort``.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity import color_rows
        >>> c = color_rows(np.array([[1, 0], [1, 1], [0, 1]]))    # rows 0 and 2 share no column
        >>> c.num_colors, c.colors.tolist()
        (2, [0, 1, 0])
    """
    return color_bipartite(as_csr(pattern), ColoringKind.ROW, order, recolor, seed, iterations, tabu_iterations,
                           effort, time_limit, progress)
