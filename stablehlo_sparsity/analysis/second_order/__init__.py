"""Hessian sparsity from the primal program: a second-order lattice at the StableHLO level.

Every value carries, per element, its first-order set ``S_e`` and a sparse symmetric set of interactions
``{u, v}`` (``∂²y_e/∂x_u∂x_v`` may be nonzero), both in one ``(k, n + n²)`` boolean matrix (:mod:`.encoding`).
The first-order rules move both parts (a linear op moves interactions exactly as it moves first-order sets,
and every op passes its operands' interactions on where its first derivative may be nonzero); each op then
adds its local term by its second-derivative class (:mod:`.registry`: zero, cross-only, full; a region's ops
add theirs).  The Hessian pattern of a scalar objective is the interaction set of its one output element.

Files, one op family each: :mod:`.elementwise`, :mod:`.contraction`, :mod:`.bodies` (reduce, scatter,
windows, map), :mod:`.linear` (structural, indexing, sorting, control flow), :mod:`.linalg` (linear algebra,
custom calls).  Around them:

* :mod:`.api` — the entry points: a parsed module's entry, or a JAX function's primal program;
* :mod:`.interpreter` — the second-order walk: the first-order interpreter over ``n + n²`` columns, plus each op's
  local term;
* :mod:`.encoding` — the column space: first-order columns and interaction (pair) columns in one matrix;
* :mod:`.registry` — second-order rules as data: per op, its local term;
* :mod:`.terms` — the building blocks of local terms: none, full, cross;
* :mod:`.closure` — closed values (every pair of their first-order sets held): the terms that would add nothing,
  skipped;
* :mod:`.pair_buckets` — sorted distinct pair codes by buckets of their first input (an interaction graph's random
  pairs, where a sort was the cost), and repeats dropped in place: compiled kernels;
* :mod:`.pair_marks` — the sorted distinct columns of pair rows on a few diagonals (a sum of local terms) by one
  compiled pass of marks over the parts' columns where they lie: no buffer of all the entries, no sort;
* :mod:`.sorted_union` — one row's sorted pair codes from several parts (a sum of sums) by a compiled merge of the
  columns alone, registered with the lattice's materialization;
* :mod:`.assembly` — the symmetric Hessian pattern from sorted pair codes, in two compiled passes;
* :mod:`.method` — which Hessian method ``hessian_sparsity(method="auto")`` takes: a fitted cost model.

Rank 2 (``analysis``) in ``tests/test_layout.py``: may import the first-order analysis (the interpreter, ``rules``),
``lattice`` and rank 0.
"""

from . import bodies, contraction, elementwise, linalg, linear  # noqa: F401  (registers every rule)
from ...errors import PatternTooLargeError
from .api import NotCovered, direct_hessian_sparsity, hessian_pattern_of_entry
from .interpreter import SecondOrderInterpreter
from .registry import KINDS, LOCAL_TERMS

__all__ = ["direct_hessian_sparsity", "hessian_pattern_of_entry", "NotCovered", "SecondOrderInterpreter",
           "LOCAL_TERMS", "KINDS", "FALLBACK_ERRORS"]

#: What ``hessian_sparsity(method="auto")`` answers by taking the gradient path instead: a custom derivative
#: rule the primal does not show, or intermediate interactions above the nonzero budget (the gradient
#: program's Jacobian may still fit: its rows hold only the final pattern).
FALLBACK_ERRORS = (NotCovered, PatternTooLargeError)
