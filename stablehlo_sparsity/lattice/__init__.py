"""The index-set lattice, vectorized: :class:`Deps` and its moves.

* :mod:`.core` — :class:`Deps`: the row moves (``gather_rows``, ``mask_rows``, ``union``, ``vstack``,
  ``broadcast_row``), the full reduction (``reduce_all``) and the two tables it dispatches over (the conversions
  between representations, the routes of ``union``); it re-exports the representations' names;
* :mod:`.representations` — one module per representation, each with its invariants: the row lane (a scalar as
  a set), the lazy vstack, lazy parts, index parts, CSR parts; the small unions and the block-wise
  materialization that turn them into CSR; the table of conversions;
* :mod:`.budget` — the memory budget: what a nonzero costs, the default limit, the nonzero budget of the
  running analysis (``nnz_budget``, ``check_nnz``);
* :mod:`.groups` — the group union (``R @ S``) for groups described any way the rules have them;
* :mod:`.runs` — run-length rows (a few column intervals per row): bands that widen step by step stay
  ``O(rows)``;
* :mod:`.windows` — group unions with structure: windows along dimensions, reductions over dimensions, slice
  unions, prefix unions;
* :mod:`.loops` — loop moves: iterating a ``while`` body's *summary* instead of the body;
* :mod:`.pattern` — :class:`~.pattern.SparsityPattern`, the result of a detection (the analysis makes it, the
  coloring and the derivatives read it: siblings above the lattice).

Rules build on these moves and never on the representation.

Rank 1 in ``tests/test_layout.py``, beside ``ir`` and ``kernels`` (neither imported): may import only rank 0
(``errors``, ``dtypes``, ``_compat``).
"""

from .core import (MAX_LAZY_PARTS, SMALL_ROWS, CsrPart, Deps, IndexPart, check_nnz, csr_from_parts,  # noqa: F401
                   gather_csr_rows, nnz_budget, register_compact_moves)
from .groups import Groups, group_union  # noqa: F401
from .runs import RunPart, cheap_nnz, compact_union, deps_equal, stack_runs  # noqa: F401
from .windows import positions, prefix_union, reduce_dims, relation_along, slice_union, window_union  # noqa: F401

# The plug-in point of the core: run-length rows take part in unions and stacks (lattice/runs.py).
register_compact_moves(union=compact_union, vstack=stack_runs)
