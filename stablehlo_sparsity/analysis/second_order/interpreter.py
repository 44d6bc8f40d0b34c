"""The second-order walk: the first-order interpreter over ``n + n²`` columns, plus each op's local term.

:class:`SecondOrderInterpreter` is the first-order :class:`~stablehlo_sparsity.analysis.interpreter.Interpreter`
(folding, value-aware rules, exact loop iterations, calls) run on the wider rows of :mod:`.encoding`; after
each op's first-order rule it unions the op's local term (:data:`.registry.LOCAL_TERMS`; the full term for an
op without an entry) into each result.  Regions run through :meth:`run_decoded` too, so ops inside loops, branches
and callees add their terms in every abstract iteration.

One first-order shortcut is turned off: while-loop *summaries* (``rules/control_flow.py``), which run the body
once on symbols and then replay it as a relation — a relation of first-order moves, which would skip the
local terms of the body's nonlinear ops.  Loops iterate exactly (with the early stop and fixed point, which
run the body through this interpreter).
"""

from __future__ import annotations

import scipy.sparse as sp

from ...errors import PatternTooLargeError, SparsityError
from ..engine import DecodedBlock, DecodedOp
from ..interpreter import Interpreter
from ...lattice import Deps
from ...lattice.core import CsrPart, IndexPart, row_columns
from ..values import AbstractValue, is_differentiable
from .closure import Closure
from .encoding import first_order, pair_width
from .registry import LOCAL_TERMS
from .terms import full_term, no_term, scalar_pair_codes

__all__ = ["SecondOrderInterpreter"]


class _NoLoopPlans(dict):
    """The ``while_plans`` memo of the first-order while rule, answering "no plan" for every loop."""

    def __contains__(self, key) -> bool:
        return True

    def __getitem__(self, key):
        return None


#: The walk keeps every value of a function body (no last-use table, no release) when all of them together cannot
#: hold more than this many index-set entries, counted at worst: each element of each result a full row of first-order
#: and pair columns, ``n + n(n + 1)/2``.  Measured on the written-out objectives of ``benchmarks/small_programs.py``
#: (n ≤ 100, up to 2,500 ops, worst cases of 5–13 million entries): kept, they take 0.5 MB more at the peak
#: than released, and the walk costs a fifth less.  A larger program releases its dead values, as its memory
#: needs (a dense written-out objective's running total is a longer row at every add).
KEEP_ALL_ENTRIES = 1 << 24


class SecondOrderInterpreter(Interpreter):
    """Abstract interpretation over first-order and pair columns (``n`` inputs, ``n + n²`` columns)."""

    eager_unions = False

    def __init__(self, module, n_inputs: int, options=None, function_table=None):
        # Dead values are released (their index sets emptied after their last use in a function body; the
        # interpreter declines in a module with a float bitcast): a written-out objective's running total is a
        # new, longer row at every add, and keeping every one alive makes memory quadratic in the terms.
        super().__init__(module, n_inputs, options, release_dead=True, function_table=function_table)
        self.n_first = int(n_inputs)
        self.n = pair_width(self.n_first)
        self._no_plans = _NoLoopPlans()
        self._first_order_cache: dict[int, tuple[Deps, sp.csr_array]] = {}
        self._first_order_bases: dict = {}
        self._keep_all: dict[DecodedBlock, bool] = {}
        self.closure = Closure(self)

    def memo(self, name: str) -> dict:
        if name == "while_plans":  # no summaries: see the module docstring
            return self._no_plans
        return super().memo(name)

    def first_order(self, av: AbstractValue) -> sp.csr_array:
        """The ``(k, n)`` first-order rows of a second-order value (cached per lattice object)."""
        hit = self._first_order_cache.get(id(av.deps))
        if hit is not None and hit[0] is av.deps:
            return hit[1]
        m = self.first_order_of(av.deps)
        self._first_order_cache[id(av.deps)] = (av.deps, m)  # keeps the lattice alive: its id stays unique
        return m

    def first_order_of(self, deps: Deps) -> sp.csr_array:
        """The first-order rows of second-order rows ``deps`` (not cached: a sample's, say)."""
        return first_order(deps, self.n_first, self._first_order_bases)

    def dead_after(self, block: DecodedBlock) -> dict[int, list] | None:
        """:meth:`Interpreter.dead_after`, or nothing when the block's values are few enough to keep
        (:data:`KEEP_ALL_ENTRIES`)."""
        if not self.release_asked:
            return None
        keep = self._keep_all.get(block)
        if keep is None:
            keep = self._keep_all[block] = self._worst_case_entries(block) <= KEEP_ALL_ENTRIES
        return None if keep else super().dead_after(block)

    def _worst_case_entries(self, block: DecodedBlock) -> float:
        """The most index-set entries the results of ``block`` can hold together (every element a full row of
        first-order and pair columns); infinite when a result type cannot be read here (the walk refuses it
        when it gets there, naming the op)."""
        n = self.n_first
        row = n + n * (n + 1) // 2
        elements = 0
        for d in block.ops:
            try:
                types = self.types_of(d)
            except Exception:  # (the walk raises it, naming the op, when it gets there)
                return float("inf")
            for t in types:
                elements += t.size
        return elements * row

    def release(self, value: AbstractValue) -> AbstractValue:
        self._first_order_cache.pop(id(value.deps), None)  # its first-order rows go with it
        return super().release(value)

    def run_decoded(self, d: DecodedOp) -> list[AbstractValue]:
        args = self.operand_values(d.operands)
        if d.name == "stablehlo.multiply":
            fused = self._scalar_product(d, args)
            if fused is not None:
                return fused
        results = self.evaluate(d, args)
        if results[0].deps.is_empty if len(results) == 1 else all(r.deps.is_empty for r in results):
            return results
        op, name = d.op, d.name
        term = LOCAL_TERMS.get(name, full_term)
        if term is no_term:  # linear: the first-order rule passed every interaction on
            self.closure.after_linear(name, args, results)
            return results
        if not self.closure.term_needed(name, args, results):  # (every pair it would add is there already)
            return results
        try:
            extra = term(self, op, args, results)
        except PatternTooLargeError as e:
            if e.location is not None:
                raise
            raise PatternTooLargeError(f"'{name}': {e.message}", self.location(op)) from None
        if len(extra) != len(results):
            raise SparsityError(f"second-order rule for {name} returned {len(extra)} results for {len(results)}",
                                self.location(op))
        out = []
        for r, local in zip(results, extra):
            if local is not None and not local.is_empty and r.const is None and is_differentiable(r.dtype):
                r = r.with_deps(Deps.union(r.deps, local, eager=False))
            out.append(r)
        self.closure.after_term(name, term, args, out)
        return out

    def _scalar_product(self, d: DecodedOp, args: list[AbstractValue]) -> list[AbstractValue] | None:
        """§multiply of two unknown one-element values of the scalar lane (a written-out objective's
        ``x_i · x_j``), when nothing watches the op's results: the first-order rule's union of the operands' sets
        (a value-aware rule, which drops nothing when no operand is known) and the cross term
        (:func:`.terms.scalar_pair_codes`) as one set.  ``None``: not that case (the rule and the term run)."""
        a, b = args
        if a.const is not None or b.const is not None or self.observer is not None \
                or self.result_filter is not None:
            return None
        ra = row_columns(a.deps)
        rb = ra if b is a else row_columns(b.deps)
        if ra is None or rb is None:
            return None
        rtypes = self.types_of(d)
        if len(rtypes) != 1 or a.type.size != 1 or b.type.size != 1:
            return None
        t = rtypes[0]
        if t.size != 1 or not t.differentiable:
            return None
        codes = scalar_pair_codes(self.n_first, ra, rb)
        if codes is None:
            return None
        return [AbstractValue(t, Deps.of_row(self.n, ra | rb | codes))]

    def interactions(self, av: AbstractValue) -> sp.csr_array:
        """The symmetric ``(n, n)`` interaction pattern of a one-element value (a scalar objective)."""
        from .encoding import pairs_to_hessian

        if av.size != 1:
            raise ValueError("interactions of a value with more than one element")
        if av.deps.is_empty:
            return sp.csr_array((self.n_first, self.n_first), dtype=bool)
        return pairs_to_hessian(_row_with_the_pairs(av.deps, self.n_first), self.n_first)


def _row_with_the_pairs(deps: Deps, n: int) -> sp.csr_array:
    """A one-row CSR holding every pair code of the one-row ``deps`` (first-order columns too, maybe): the union of
    only the parts that hold pairs.  An objective's parts are often some of pairs and some of first-order columns
    only (a linear term, ``-0.1 * sum(u)``), whose merge with millions of pair codes was a tenth of a large walk."""
    parts = deps.parts
    if len(parts) < 2:
        return deps.to_csr()
    with_pairs = [p for p in parts if _holds_pairs(p, n)]
    if not with_pairs:
        return sp.csr_array((1, deps.n), dtype=bool)
    return Deps(1, deps.n, with_pairs).to_csr() if len(with_pairs) < len(parts) else deps.to_csr()


def _holds_pairs(part, n: int) -> bool:
    """Whether a part of a one-row value may hold a pair code (a column ``≥ n``): an index part's column, a CSR
    part's row's last (greatest) column; any other part, as far as this knows."""
    if isinstance(part, IndexPart):
        return bool((part.cols >= n).any())
    if type(part) is CsrPart:
        r = 0 if part.rowmap is None else int(part.rowmap[0])
        if r < 0:
            return False
        end = int(part.base.indptr[r + 1])
        return end > int(part.base.indptr[r]) and int(part.base.indices[end - 1]) >= n
    return True
