"""Closed values: every element's interactions already hold every pair of its first-order set.

A value is *closed* when, for each element ``e``, its pair columns contain ``S_e × S_e``.  The result of a
nonlinear elementwise op is closed (its full term is exactly that), and so is every value computed elementwise from
closed values.  An elementwise op on closed operands whose live operands have one first-order set per element
(one live operand; or ``r⁴ · r²``, both built from ``r``) adds nothing with its local term: every pair the term
would write, ``(S_a ∪ S_b)² = S_a²``, the result already holds (an elementwise op's first-order rule makes each
result row the union of some of its operands' rows, pairs included).  Its result then takes the operand's lattice
object itself when their first-order rows are equal: two closed rows with one first-order set are the same set,
``S ∪ S²``, since a pair column only ever enters a row beside both of its inputs (rules move whole rows; terms
pair the columns of the row they join).

On a vectorized objective that is most of the direct walk's terms: ``r = 1 + (x[i+k] − x[i])²`` is closed, and
``r⁻⁶ − 2r⁻³`` (multiplies and divides of ``r``'s powers) would otherwise write ``S_r²`` again at every op — as
lazy parts that the reduction into the objective's row sorts together (each a copy of the same pairs).

Soundness: a term is skipped only when it is a subset of the pairs the result already has, and a value is marked
closed only by an op that wrote (or provably has) its full square: the pattern is the same with or without this
module, which ``tests/analysis/test_second_order_closure.py`` checks against the walk without it.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..values import is_differentiable
from .elementwise import ELEMENTWISE
from .terms import full_term

__all__ = ["Closure", "ELEMENT_MOVES", "MIN_ELEMENTS"]

#: Values of fewer elements are left alone: a one-element value of the scalar lane holds its columns as a set, whose
#: union drops repeats by itself, and a written-out program's thousands of scalar ops would pay the bookkeeping
#: for nothing.
MIN_ELEMENTS = 2

#: Ops that give each result element exactly the row of one element of one operand (or nothing): they keep
#: closed operands' results closed.  (A gather or dynamic slice with unknown offsets is left out: its rule may
#: unite the rows of several positions.)
ELEMENT_MOVES = frozenset({
    "stablehlo.reshape", "stablehlo.broadcast_in_dim", "stablehlo.slice", "stablehlo.transpose",
    "stablehlo.reverse", "stablehlo.concatenate", "stablehlo.pad", "stablehlo.convert", "stablehlo.copy",
})


#: :meth:`Closure._same_first_order` compares this many sampled rows first, for values of more elements than
#: :data:`PROBE_MIN_ELEMENTS`.
PROBE_ROWS, PROBE_MIN_ELEMENTS = 64, 4096


class Closure:
    """Which values of a second-order walk are closed, by their lattice object (immutable), held weakly: a mark
    lasts while some value holds the object (several values may share one: ``1 + r`` holds ``r``'s), and goes
    with it, so it neither keeps a released value's rows alive nor outlives them (its ``id`` stays unique)."""

    #: Off: no term is skipped and no value marked (the walk as before this module: the tests compare the two).
    enabled = True

    def __init__(self, walk) -> None:
        self.walk = walk
        self._closed: weakref.WeakValueDictionary[int, object] = weakref.WeakValueDictionary()

    def __contains__(self, av) -> bool:
        """Whether ``av`` is recorded closed (a value with no columns is closed too)."""
        return av.deps.is_empty or self._closed.get(id(av.deps)) is av.deps

    def mark(self, results) -> None:
        """Record ``results`` closed; only differentiable unknowns: the walk adds no term to a constant or an
        integer result, so such a value with columns may lack the pairs of its set."""
        if not self.enabled:
            return
        for r in results:
            if not r.deps.is_empty and r.const is None and is_differentiable(r.dtype):
                self._closed[id(r.deps)] = r.deps

    def _live(self, args, results) -> list | None:
        """The operands with columns, when all of them have the result's shape; else ``None``."""
        size = results[0].size
        live = [a for a in args if not a.deps.is_empty]
        if not live or any(a.size != size for a in live):
            return None
        return live

    def _one_set(self, live) -> bool:
        """Whether the live operands have the same first-order set in every element."""
        return all(self._same_first_order(live[0], other) for other in live[1:])

    def _same_first_order(self, a, b) -> bool:
        """Whether two values have the same first-order rows (their canonical CSRs, cached by the walk).  Rows at
        :data:`PROBE_ROWS` random positions are compared first: where they differ, so do the values, and neither
        value's rows are built for a check that fails (``ux² + uy²`` of a 2-D energy: two sets of 10⁶ rows, 50 ms
        at n = 10⁶, that nothing else reads)."""
        if a.deps is b.deps:
            return True
        if a.size > PROBE_MIN_ELEMENTS:
            rows = np.random.default_rng(a.size).integers(0, a.size, PROBE_ROWS)
            x, y = (self.walk.first_order_of(v.deps.gather_rows(rows)) for v in (a, b))
            if not (np.array_equal(x.indptr, y.indptr) and np.array_equal(x.indices, y.indices)):
                return False
        x, y = self.walk.first_order(a), self.walk.first_order(b)
        return np.array_equal(x.indptr, y.indptr) and np.array_equal(x.indices, y.indices)

    def term_needed(self, name: str, args, results) -> bool:
        """``False`` when the op's local term cannot add a pair: an elementwise op (one result) whose live
        operands are closed and share one first-order set per element.  Its result is then marked closed."""
        if not self.enabled or name not in ELEMENTWISE or len(results) != 1 or results[0].size < MIN_ELEMENTS:
            return True
        live = self._live(args, results)
        if live is None or any(a not in self for a in live) or not self._one_set(live):
            return True
        results[0] = self._shared(live[0], results[0])
        self.mark(results)
        return False

    def _shared(self, operand, result):
        """``result`` with ``operand``'s lattice object when their first-order rows are the same: both closed,
        their rows are then the same set, ``S ∪ S²`` (a pair column only enters a row with both of its inputs), and
        one object keeps the objective's reduction from reading the same pairs once per op."""
        if result.deps is not operand.deps and self._same_first_order(operand, result):
            return result.with_deps(operand.deps)
        return result

    def after_term(self, name: str, term, args, results) -> None:
        """Record the results of an op whose local term ran: closed after a full term (it wrote ``S_r × S_r``); after
        an elementwise op's own term when every live operand is closed (their rows bring ``S_a²`` and ``S_b²``, the
        term the cross pairs); after ``a · b`` and ``a / b`` whose term is the full square: two factors with one
        first-order set per element (``d · d``), a divisor with a known or same-set dividend (``1 / r``)."""
        if not self.enabled or any(r.size < MIN_ELEMENTS for r in results):
            return
        if term is full_term:
            self.mark(results)
            return
        if name not in ELEMENTWISE or len(results) != 1:
            return
        live = self._live(args, results)
        if live is None:
            return
        if all(a in self for a in live) or self._square_term(name, args, live):
            self.mark(results)

    def _square_term(self, name: str, args, live) -> bool:
        """Whether the op's term was ``S_r × S_r`` itself: ``d · d``, ``1 / r``, ``r / r``."""
        if name == "stablehlo.multiply":
            return len(live) == 2 and self._one_set(live)
        if name == "stablehlo.divide":
            a, b = args
            return not b.deps.is_empty and (a.deps.is_empty or self._one_set(live))
        return False

    def after_linear(self, name: str, args, results) -> None:
        """Record the results of an op without a local term: closed when it moves rows of closed operands
        (:data:`ELEMENT_MOVES`), or is elementwise over closed operands with one first-order set per element
        (``1 + r``, ``r − r³``)."""
        if not self.enabled or len(results) != 1 or results[0].size < MIN_ELEMENTS:
            return
        if name in ELEMENT_MOVES:
            if all(a in self for a in args):
                self.mark(results)
        elif name in ELEMENTWISE:
            live = self._live(args, results)
            if live is not None and all(a in self for a in live) and self._one_set(live):
                results[0] = self._shared(live[0], results[0])
                self.mark(results)
