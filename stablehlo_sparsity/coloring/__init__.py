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
* :func:`color_columns_streamed`, :func:`color_rows_streamed` — the same from a stream of row blocks, in memory
  ``O(n + m + window)`` instead of ``O(nnz)`` (:mod:`.streamed`);
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

The folder:

* :mod:`.kinds` — the kinds of coloring, shared with the derivative layer;
* :mod:`.result` — what a coloring is (:class:`Coloring`, :class:`Bicoloring`) and the canonical relabelling;
* :mod:`.graph` — the graphs behind the colorings, as flat CSR index arrays;
* :mod:`.policy` — the policy: the orderings ``order="best"`` tries, the work budget, progress reports;
* :mod:`.orderings` — vertex orderings for greedy coloring;
* :mod:`.greedy` — greedy partial distance-2 coloring, and Culberson's iterated greedy;
* :mod:`.recolor` — removing colors one class at a time, by tabu search on a region around the class;
* :mod:`.distance2` — column and row coloring: the greedy pass, then the improvement phases, within the budget;
* :mod:`.star` — greedy star coloring of a symmetric pattern (direct Hessian recovery);
* :mod:`.acyclic` — acyclic coloring, and the 2-colored forest that substitution walks;
* :mod:`.symmetric` — star and acyclic coloring over the orderings, then iterated recoloring;
* :mod:`.bicoloring` — bidirectional coloring: some nonzeros from JVPs, the others from VJPs;
* :mod:`.streamed` — column and row coloring from a stream of row blocks;
* :mod:`.bounds` — lower bounds on the number of colors (where the searches stop);
* :mod:`.check` — validity of a coloring of every kind, vectorized;
* :mod:`.decompression` — seed matrices and decompression for every kind, whoever computes the products.

Rank 2 in ``tests/test_layout.py``, beside ``analysis`` (never imported): may import ``lattice`` (the pattern),
``kernels`` (the compiled kernels) and rank 0.
"""

from __future__ import annotations

from .bicoloring import color_bidirectional
from .bounds import lower_bound
from .check import InvalidColoringError, acyclic_violation, bidirectional_sources, check_coloring, star_sources
from .decompression import KINDS, DecompressionPlan, compress, decompress, seed_matrix
from .distance2 import color_columns, color_rows
from .graph import as_csr, symmetrize
from .kinds import ColoringKind
from .policy import (BEST_ORDERS, BEST_ORDERS_MAX_WALK, BEST_STAR_ORDERS, EFFORT_BASE, EFFORT_PER_WALK,
                     LARGE_BEST_ORDERS, METHODS, ORDERS, STAR_FALLBACK_MAX_VERTICES)
from .result import Bicoloring, Coloring
from .symmetric import color_acyclic, color_star

# The compiled kernels (greedy, orderings, star, streamed) run as C twins where the native library has one, else
# under numba, imported on the first kernel that needs it (:mod:`..kernels.compiled`); their modules load on first
# use, so ``import stablehlo_sparsity`` stays light.  The streamed coloring's module is all kernels: its names load
# on first access.
_STREAMED = ("color_columns_streamed", "color_rows_streamed", "stencil27_blocks")


def __getattr__(name: str):
    if name in _STREAMED:
        from . import streamed

        return getattr(streamed, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Coloring",
    "Bicoloring",
    "ColoringKind",
    "ORDERS",
    "METHODS",
    "BEST_ORDERS",
    "BEST_STAR_ORDERS",
    "BEST_ORDERS_MAX_WALK",
    "LARGE_BEST_ORDERS",
    "EFFORT_BASE",
    "EFFORT_PER_WALK",
    "STAR_FALLBACK_MAX_VERTICES",
    "color_columns",
    "color_rows",
    "color_columns_streamed",
    "color_rows_streamed",
    "stencil27_blocks",
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
