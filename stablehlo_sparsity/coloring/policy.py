"""The coloring policy: which orderings ``order="best"`` tries, the improvement phases' work budget, and how
progress is reported.  The algorithms are in their own modules (:mod:`.greedy`, :mod:`.star`,
:mod:`.acyclic`, :mod:`.recolor`, :mod:`.bicoloring`); :mod:`.distance2` and :mod:`.symmetric` apply this
policy to them."""

from __future__ import annotations

import logging

__all__ = ["ORDERS", "METHODS", "BEST_ORDERS", "BEST_STAR_ORDERS", "BEST_ORDERS_MAX_WALK", "LARGE_BEST_ORDERS",
           "EFFORT_BASE", "EFFORT_PER_WALK", "STAR_FALLBACK_MAX_VERTICES", "RECOLOR", "orders_to_try",
           "check_recolor", "reporter", "work_budget"]

#: The vertex orderings (see :mod:`.orderings`).
ORDERS = ("natural", "largest_first", "smallest_last", "incidence_degree", "dynamic_largest_first", "random")

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

#: :func:`color_acyclic` also runs :func:`color_star` (and keeps it if it needs fewer colors) up to this many
#: vertices; above, the star coloring's cost (about as much again) is not paid.
STAR_FALLBACK_MAX_VERTICES = 200_000


#: The ``recolor`` choices.
RECOLOR = ("auto", "iterated", "tabu", "none")

_log = logging.getLogger("stablehlo_sparsity.coloring")


def orders_to_try(order: str, star: bool = False) -> tuple[str, ...]:
    if order == "best":
        return BEST_STAR_ORDERS if star else BEST_ORDERS
    allowed = ORDERS if star else METHODS
    if order not in allowed:
        raise ValueError(f"unknown order {order!r}; expected 'best' or one of {', '.join(allowed)}")
    return (order,)


def check_recolor(recolor: str) -> None:
    if recolor not in RECOLOR:
        raise ValueError(f"recolor must be 'auto', 'iterated', 'tabu' or 'none', got {recolor!r}")


def reporter(progress, what: str):
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


def work_budget(walk_len: int, effort: float) -> float:
    """Work units (neighbour visits / candidate moves, a few ns each) the improvement phases may spend:
    :data:`EFFORT_BASE` plus :data:`EFFORT_PER_WALK` greedy passes' worth, times ``effort``."""
    if effort < 0:
        raise ValueError(f"effort must be non-negative, got {effort}")
    return float(effort) * (EFFORT_BASE + EFFORT_PER_WALK * walk_len)
