"""The abstract interpreter: walks StableHLO functions and propagates the index-set and constant lattices.

The region engine (:mod:`.engine`) walks functions and regions and binds each SSA value to its
:class:`AbstractValue` in the scope of its region; this class evaluates one op.  For every op it (1) folds
it with NumPy when every operand is a known constant and a fold rule exists — and bounds how far XLA's value
may be from the fold (its error rule, :mod:`.folding.exactness`) — else (2) applies the op's index-set rule
from :data:`rules.registry.DEPS_RULES`.  Results of non-differentiable element types (integers, booleans)
always get empty index sets: their derivative is zero.

The interpreter is the :class:`~.rules.registry.RuleContext` every rule receives: rules ask it for types,
values, locations, calls, regions (:meth:`Interpreter.run_region`, :meth:`Interpreter.interpret_symbolically`)
and per-analysis memo tables, and never reach into its state.
"""

from __future__ import annotations

import warnings
from typing import Callable, Sequence

import numpy as np

from .engine import TERMINATORS, DecodedBlock, DecodedOp, FunctionTable, RegionEngine, Scope
from ..errors import InputError, PatternTooLargeError, SparsityError, SparsityWarning, UnsupportedOpError, warn
from ..ir.attrs import dense_array
from .folding.exactness import Undecided, literal_uncertainty, result_uncertainties
from ..ir.helpers import contains_op, region_captures
from ..lattice.budget import too_large
from ..lattice import Deps, nnz_budget
from ..lattice.core import lane_size
from .options import AnalysisOptions
from .rules.registry import (DEPS_RULES, ERROR_RULES, FOLD_RULES, RANGE_RULES, UNION_OF_OPERANDS, UNION_WHEN_UNKNOWN,
                             NotFoldable)
from .rules.structural import literal_value
from .values import AbstractValue, TensorType, tensor_type, tensor_types

__all__ = ["AnalysisOptions", "Interpreter", "TERMINATORS"]


#: :meth:`Interpreter.release` keeps a dead scalar whose set has at most this many columns (bounded memory:
#: each kept value is a set of a few integers, as its op's own operands were).
KEEP_SMALL_ROWS = 8


class Interpreter(RegionEngine[AbstractValue]):
    """Abstract interpretation of one module over ``n`` input columns (the analysis side of the region
    engine, :mod:`.engine`: it walks regions and calls, this class evaluates one op)."""

    purpose = "analyze"
    #: The union of an elementwise op's unknown operands (``a + b``) is materialized at once for a small value
    #: (:meth:`Deps.union`'s ``eager``).  The second-order walk keeps it lazy: its rows are wide, and a chain of
    #: adds (``t1 + t2 + … + t6`` of an objective's terms) would sort every partial sum again.
    eager_unions = True

    def __init__(self, module, n_inputs: int, options: AnalysisOptions | None = None,
                 observer: Callable | None = None, function_table: FunctionTable | None = None,
                 result_filter: Callable | None = None, release_dead: bool = False):
        super().__init__(module, function_table)
        self.n = int(n_inputs)
        self.options = options or AnalysisOptions()
        self.observer = observer
        #: ``(op, results) -> results``, applied to every op's results before they are stored (the streamed
        #: detection of :mod:`.streaming` empties the rows its block does not need)
        self.result_filter = result_filter
        #: whether :attr:`release_dead` was asked for (the module is searched for a float bitcast only when a
        #: body would release: see :attr:`release_dead`)
        self.release_asked = bool(release_dead)
        self._release_dead: bool | None = None if release_dead else False
        if self.n > self.options.max_pattern_nnz:  # the inputs' own identity pattern needs n entries
            raise too_large("the differentiated inputs have", self.n, self.options.max_pattern_nnz)
        self._call_cache: dict = {}
        #: the decoded op being evaluated (its result types answer :meth:`result_types` without the bindings)
        self._current: DecodedOp | None = None
        #: a constant's literal attribute -> its results (see :meth:`evaluate`)
        self._literals: dict = {}
        self._memos: dict[str, dict] = {}
        self.warned: list[str] = []

    @property
    def release_dead(self) -> bool:
        """Empty each value's index sets after its last use in its function's body (asked for by the streamed
        detection and the second-order walk, which bound memory with it).  The value keeps its type, constant
        and range, which rules looking back through producers read (a select's predicate); only the
        float-bitcast provenance walk reads a producer's index sets, so a module with a ``bitcast_convert``
        never releases, whoever asks (the module is searched once, the first time this is read)."""
        if self._release_dead is None:
            self._release_dead = not contains_op(self.module, "stablehlo.bitcast_convert")
        return self._release_dead

    # ----------------------------------------------------------------- helpers for rules
    def result_types(self, op) -> Sequence[TensorType]:
        current = self._current
        if current is not None and current.op is op and current.types is not None:
            return current.types   # the op being evaluated: its types were decoded already
        return tensor_types([r.type for r in op.results], lambda: self.location(op))

    def warn(self, op, message: str) -> None:
        """A :class:`SparsityWarning` about ``op``, recorded in :attr:`warned`: the message names the user's line
        (:meth:`location`), Python attributes it to the user's frame (:func:`..errors.warn`)."""
        text = f"{self.location(op)}: {op.operation.name}: {message}"
        self.warned.append(text)
        warn(text, SparsityWarning)

    def call_site(self):
        """The op being evaluated when a call starts: the ``func.call`` (or §composite) that makes it."""
        return self._current

    def empty(self, rows: int) -> Deps:
        return Deps.empty(rows, self.n)

    @property
    def observing(self) -> bool:
        """Whether an observer records every op's values (the annotate and fold-constants passes)."""
        return self.observer is not None

    def run_region_unreported(self, region, args: list[AbstractValue]) -> list[AbstractValue]:
        """:meth:`run_region` for a run that is not the program's (e.g. a loop's cover run for an observer):
        its warnings are neither shown nor recorded."""
        mark = len(self.warned)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", SparsityWarning)
                return self.run_region(region, args)
        finally:
            del self.warned[mark:]

    def recover(self) -> None:
        """Forget the scopes and calls of an interpretation that raised, so that the next :meth:`call` starts
        clean (the fold-constants pass goes on with the module's other functions)."""
        self.reset()

    def memo(self, name: str) -> dict:
        """A table that lives as long as this analysis, for a rule's answers that depend only on the IR
        (e.g. what a reduction body reaches): loops re-run ops, and each answer is computed once."""
        return self._memos.setdefault(name, {})

    def interpret_symbolically(self, region, args: list[AbstractValue], outer: dict, width: int) -> list[AbstractValue]:
        """Run ``region`` in a fresh analysis over ``width`` symbolic columns: ``args`` for its block
        arguments, ``outer`` (SSA value -> abstract value) for the values it reads from outside.  What a body
        reaches is read off the results (e.g. column ``i`` = operand ``i``); warnings carry over."""
        sub = Interpreter(self.module, width, self.options, function_table=self.function_table)
        sub.enclosing_calls = self.calls_in_progress()  # (its messages name the user's line too)
        results = sub.run_region(region, args, parent=Scope(None, dict(outer)))
        self.warned.extend(sub.warned)
        return results

    # ----------------------------------------------------------------- functions
    def call(self, name: str, args: list[AbstractValue]) -> list[AbstractValue]:
        """Analyze ``@name`` on the given abstract arguments (memoized per argument lattice)."""
        key = (name, tuple((id(a.deps), id(a.const), id(a.uncertainty), id(a.int_range)) for a in args))
        hit = self._call_cache.get(key)
        if hit is not None:
            return hit[1]
        if not self._call_stack:  # the entry: every materialization below respects the nnz budget
            with nnz_budget(self.options.max_pattern_nnz):
                try:
                    results = self.invoke(name, args)
                except RecursionError:  # caught here, at the top, where the stack has room again
                    raise InputError("regions or calls nested too deeply for the analysis (Python's recursion "
                                     "limit was reached)", self.location(self.function(name))) from None
        else:
            results = self.invoke(name, args)
        self._call_cache[key] = (args, results)  # keep args alive so their ids stay unique
        return results

    def call_cache_mark(self) -> int:
        """A mark in the call-summary cache, for :meth:`call_cache_trim`."""
        return len(self._call_cache)

    def call_cache_trim(self, mark: int) -> None:
        """Forget the call summaries recorded after ``mark``.

        Loops call this after each iteration: their carry is a fresh object every time, so those summaries
        can never hit again, and keeping them would keep every iteration's values alive."""
        if len(self._call_cache) > mark:
            for key in list(self._call_cache)[mark:]:
                del self._call_cache[key]

    # ----------------------------------------------------------------- ops
    def run_op(self, op) -> list[AbstractValue]:
        return self.run_decoded(DecodedOp(op))

    def run_decoded(self, d: DecodedOp) -> list[AbstractValue]:
        return self.evaluate(d, self.operand_values(d.operands))

    def evaluate(self, d: DecodedOp, args: list[AbstractValue]) -> list[AbstractValue]:
        """The results of the decoded op ``d`` on the abstract values ``args`` of its operands (see the module
        docstring): the shortcut for one differentiable result with unknown operands
        (:meth:`_unknown_operands`), a literal (:meth:`_constant`), else the general path (:meth:`_general`)."""
        rtypes = d.types
        if rtypes is None:  # (types_of, inlined: this runs once per op)
            rtypes = d.types = self._decode_types(d)
        if args and len(rtypes) == 1:
            t = rtypes[0]
            if t.differentiable and t.size <= self.options.max_pattern_nnz:
                results = self._unknown_operands(d, args, t)
                if results is not None:
                    return results
        self._current = d
        if not args and d.name == "stablehlo.constant":
            return self._constant(d, rtypes)
        return self._general(d, args, rtypes)

    def _unknown_operands(self, d: DecodedOp, args: list[AbstractValue], t: TensorType) -> list[AbstractValue] | None:
        """The results of an op with one differentiable result ``t`` (of at most ``max_pattern_nnz`` elements)
        when an operand is unknown, without the fold, size and per-result machinery of :meth:`_general`;
        ``None``: not that case.

        Two shortcuts: the union of the unknown operands for a rule of :data:`UNION_WHEN_UNKNOWN`
        (:func:`_union_of_unknown`) — half the ops of a written-out program — and, for any other rule, the
        rule's index sets as they stand: nothing folds (a fold needs every operand known) and no range is kept
        (floats) — a written-out program's ``x[i]`` slices and its products with literals."""
        name = d.name
        rule = DEPS_RULES.get(name)
        if rule in UNION_WHEN_UNKNOWN:
            deps = _union_of_unknown(args, t.size, rule in UNION_OF_OPERANDS, self.eager_unions)
            if deps is not None:
                return self._finish(d.op, [AbstractValue(t, deps)])
        if rule is None or not _some_unknown(args, self.options.max_pattern_nnz):
            return None
        self._current = d
        op = d.op
        answer = self._apply(rule, name, op, args)
        if len(answer) == 1 and isinstance(answer[0], Deps) and answer[0].rows == t.size:
            return self._finish(op, [AbstractValue(t, answer[0])])
        return self._finish(op, self._results(name, op, args, d.types, answer))

    def _constant(self, d: DecodedOp, rtypes) -> list[AbstractValue]:
        """A §constant: one literal, one answer.  The bindings unique an attribute by its type and bits, so every
        op of the module with the same literal (a written-out program repeats ``2.0`` thousands of times) has
        the same attribute, and its fold, trust and abstract value are computed once (:attr:`_literals`)."""
        op = d.op
        try:
            literal = op.attributes["value"]
        except Exception:  # the bindings cannot even cast some literals (complex) to an attribute
            return self._general(d, [], rtypes)
        hit = self._literals.get(literal)
        if hit is not None:
            return self._finish(op, list(hit))
        if len(rtypes) == 1:
            plain = self._plain_literal(literal, rtypes[0])
            if plain is not None:
                self._literals[literal] = (plain,)
                return self._finish(op, [plain])
        return self._general(d, [], rtypes, literal)

    def _general(self, d: DecodedOp, args: list[AbstractValue], rtypes, literal=None) -> list[AbstractValue]:
        """Any op: refused or emptied when a value is too large (:meth:`_too_large`), else (1) the constant
        lattice — folded when every operand is known (:meth:`_folded`) — else (2) the index-set lattice
        (:meth:`_by_rule`).  ``literal``: a §constant's attribute, under which its folded results are kept."""
        op, name = d.op, d.name
        results = self._too_large(op, args, rtypes) if self._oversized(args, rtypes) else None
        if results is None:
            results = self._folded(op, name, args, rtypes)
            if results is not None and literal is not None:
                self._literals[literal] = tuple(results)
        if results is None:
            results = self._by_rule(op, name, args, rtypes)
        return self._finish(op, results)

    def _oversized(self, args: list[AbstractValue], rtypes) -> bool:
        """Whether a result or an operand has more than ``max_pattern_nnz`` elements."""
        limit = self.options.max_pattern_nnz
        for t in rtypes:  # (plain loops: a generator per op costs more than the small op's check)
            if t.size > limit:
                return True
        for a in args:
            if a.type.size > limit:
                return True
        return False

    def _folded(self, op, name: str, args: list[AbstractValue], rtypes) -> list[AbstractValue] | None:
        """The constant lattice: the results folded with NumPy when every operand is known and the op has a fold
        rule, each with how far XLA's values may be from the folded ones (:mod:`.folding.exactness`);
        ``None``: not folded."""
        fold = FOLD_RULES.get(name)
        if fold is None:
            return None
        known = [a.const for a in args if a.const is not None]
        if len(known) != len(args) or sum(t.size for t in rtypes) > self.options.max_fold_elements:
            return None
        try:
            consts = fold(self, op, known)
        except NotFoldable:
            return None
        if consts is None:
            return None
        consts = [_cast(c, t) for t, c in zip(rtypes, consts)]
        try:
            uncertainties = result_uncertainties(ERROR_RULES.get(name), self, op, args, consts)
        except Undecided:  # an integer/boolean result hangs on an uncertain float: unknown
            return None
        if uncertainties is None:
            return None
        return [AbstractValue(t, Deps.empty(t.size, self.n), c, u) for t, c, u in zip(rtypes, consts, uncertainties)]

    def _by_rule(self, op, name: str, args: list[AbstractValue], rtypes) -> list[AbstractValue]:
        """The index-set lattice: the op's rule of :data:`DEPS_RULES` (none: conservative, or refused)."""
        rule = DEPS_RULES.get(name)
        if rule is not None:
            out: list[Deps | AbstractValue] = self._apply(rule, name, op, args)
        elif self.options.on_unknown == "conservative":
            out = list(self._conservative(op, args, rtypes))
        else:
            raise UnsupportedOpError(name, self.location(op))
        return self._results(name, op, args, rtypes, out)

    def _plain_literal(self, literal, t: TensorType) -> AbstractValue | None:
        """A §constant of NumPy's real float, integer or boolean type as the fold below makes it — the literal's
        value (:func:`.rules.structural.literal_value`), exact unless a float is subnormal
        (:func:`.folding.exactness.literal_uncertainty`), no dependencies — from the attribute already read,
        without the generic fold's lookups (every vectorized program has a few literals, each in a new
        context).  ``None``: any other literal (bf16, complex, too large, one the bindings cannot convert)."""
        kind = t.dtype.kind
        if kind not in "fiub" or t.size > self.options.max_pattern_nnz or t.size > self.options.max_fold_elements:
            return None
        arr = dense_array(literal)
        if arr is None or arr.dtype != t.dtype:
            return None
        value = literal_value(arr, t)
        return AbstractValue(t, Deps.empty(t.size, self.n), value,
                             literal_uncertainty(value) if kind == "f" else None)

    def _apply(self, rule, name: str, op, args: list[AbstractValue]) -> list:
        """The index-set rule's answer for ``op`` (a size refusal without a location gets the op's)."""
        try:
            return list(rule(self, op, args))
        except PatternTooLargeError as e:
            if e.location is not None:
                raise
            raise PatternTooLargeError(f"'{name}': {e.message}", self.location(op)) from None

    def _results(self, name: str, op, args: list[AbstractValue], rtypes, out: list) -> list[AbstractValue]:
        """A rule's answer as the op's results: checked against the result types, emptied where a result is
        known or not differentiable, with the integer ranges of :data:`RANGE_RULES`."""
        if len(out) != len(rtypes):
            raise SparsityError(f"rule for {name} returned {len(out)} results, op has {len(rtypes)}",
                                self.location(op))
        results = []
        integral = False
        for t, o in zip(rtypes, out):
            if isinstance(o, AbstractValue):
                av = o if o.type == t else AbstractValue(t, o.deps, o.const, o.uncertainty)
            else:
                av = AbstractValue(t, o)
            if av.deps.rows != t.size:
                raise SparsityError(f"rule for {name} produced {av.deps.rows} rows for {t.size} elements",
                                    self.location(op))
            if av.const is not None or not t.differentiable:
                if not av.deps.is_empty:
                    av = av.with_deps(Deps.empty(t.size, self.n))
            integral = integral or t.integral
            results.append(av)
        range_rule = RANGE_RULES.get(name) if integral else None  # (ranges are kept for integers only)
        if range_rule is not None:
            results = self._with_ranges(range_rule, op, args, results)
        return results

    def types_of(self, d: DecodedOp) -> tuple[TensorType, ...]:
        """The result types of ``d``, decoded once (a tuple, which the rules reading result_types cannot
        change)."""
        rtypes = d.types
        if rtypes is None:
            rtypes = d.types = self._decode_types(d)
        return rtypes

    def _decode_types(self, d: DecodedOp) -> tuple[TensorType, ...]:
        """The result types of ``d`` (a refused type names the op's location)."""
        results = d.results
        if len(results) == 1:  # (nearly every op: no lists, no closure)
            try:
                return (tensor_type(results[0].type),)
            except SparsityError:
                pass  # refused: again below, with the location in the message
        return tuple(tensor_types([r.type for r in results], lambda: self.location(d.op)))

    def _finish(self, op, results: list[AbstractValue]) -> list[AbstractValue]:
        """An op's results as the streamed detection and an observer see them."""
        if self.result_filter is None and self.observer is None:
            return results
        if self.result_filter is not None:
            results = self.result_filter(op, results)
        if self.observer is not None:
            self.observer(op, results)
        return results

    # ----------------------------------------------------------------- releasing dead values (engine hooks)
    def dead_after(self, block: DecodedBlock) -> dict[int, list] | None:
        """With :attr:`release_dead`, :func:`last_uses` of a function body (loop and branch rules may read
        their regions' values after the region ran, so nested blocks release nothing)."""
        if not self.release_dead:
            return None
        dead = block.dead
        if dead is None:
            dead = block.dead = last_uses(block) if _is_function_body(block) else {}
        return dead or None

    def skipped_ops(self, block: DecodedBlock) -> frozenset[int] | None:
        """:func:`unused_ops` of a function body, unless an observer records every op's values (the annotate
        and fold-constants passes): an op no result depends on cannot change the pattern, and JAX lowers such
        ops — ``jit(keep_unused=True)``, which keeps every argument, also keeps every equation: the gradient
        program's loss, the primal outputs a ``jvp`` drops."""
        if self.observer is not None:
            return None
        unused = block.unused
        if unused is None:
            unused = block.unused = unused_ops(block, self._skippable) if _is_function_body(block) else frozenset()
        return unused or None

    def _skippable(self, d: DecodedOp) -> bool:
        """Whether ``d`` may go unrun when nothing reads it: an op with a sparsity rule (an op without one, or
        refused, still raises where it stands), not a call (a callee's ops are checked too), with regions only of
        a reduction, sort or scatter body, and with result types the analysis represents (a dynamic shape, a
        token or an unsupported element type still raises): what the walk refuses, it refuses as before."""
        name = d.name
        if name not in DEPS_RULES or name in NEVER_SKIPPED or (len(d.op.regions) and name not in SKIPPABLE_REGIONS):
            return False
        if d.types is None:
            try:
                d.types = self._decode_types(d)
            except SparsityError:
                return False
        return True

    def release(self, value: AbstractValue) -> AbstractValue:
        """A dead value keeps its type, constant and range; its index sets are emptied — unless they are a
        scalar lane's set of at most :data:`KEEP_SMALL_ROWS` columns, which costs less to keep than to
        replace (a written-out program's intermediates: ``x[i]``, ``x[i] * x[j]``)."""
        deps = value.deps
        small = lane_size(deps)
        if small is not None and small <= KEEP_SMALL_ROWS or deps.is_empty:
            return value
        return value.with_deps(Deps.empty(value.size, self.n))

    def _with_ranges(self, range_rule, op, args, results: list[AbstractValue]) -> list[AbstractValue]:
        """Integer ranges of the results the constant lattice does not know (:mod:`.folding.ranges`)."""
        if all(av.const is not None or av.int_range is not None or av.dtype.kind not in "iub" for av in results):
            return results
        try:
            ranges = range_rule(self, op, args)
        except NotFoldable:
            return results
        return [AbstractValue(av.type, av.deps, None, None, r)
                if r is not None and av.const is None and av.int_range is None and av.dtype.kind in "iub" else av
                for av, r in zip(results, ranges)]

    def _too_large(self, op, args, rtypes) -> list[AbstractValue]:
        """A value above ``max_pattern_nnz`` elements: refuse before any rule allocates per-element arrays.

        Exception: when nothing the op reads (operands and values its regions capture) depends on an input,
        no result does either — empty index sets cost no memory, so the analysis goes on."""
        captured = list(args) + [self.value(v) for v in region_captures(op)]
        if all(a.deps.is_empty for a in captured):
            return [AbstractValue(t, Deps.empty(t.size, self.n)) for t in rtypes]
        big = max([t.size for t in rtypes] + [a.size for a in args])
        raise too_large(f"'{op.operation.name}' has a value of", big, self.options.max_pattern_nnz, self.location(op))

    def _conservative(self, op, args, rtypes) -> list[Deps]:
        self.warn(op, "no sparsity rule; every result element depends on every input of its operands (conservative)")
        captured = list(args) + [self.value(v) for v in region_captures(op)]
        total = Deps.union(*[a.deps.reduce_all() for a in captured]) if captured else Deps.empty(1, self.n)
        return [total.broadcast_row(t.size) for t in rtypes]


def _union_of_unknown(args: list[AbstractValue], size: int, pure: bool, eager: bool) -> Deps | None:
    """The union of the unknown operands' index sets, for an op whose rule gives it (:data:`UNION_WHEN_UNKNOWN`):
    every operand has the result's ``size`` and, unless the rule is ``pure`` (:data:`UNION_OF_OPERANDS`, where a
    known operand adds nothing: ``3.0 - t``), none is known (a known zero factor drops rows).  ``None``: not
    that case, or every operand known (the fold)."""
    unknown = []
    for a in args:
        if a.type.size != size:
            return None
        if a.const is None:
            unknown.append(a.deps)
        elif not pure:
            return None
    if not unknown:
        return None
    return unknown[0] if len(unknown) == 1 else Deps.union(*unknown, eager=eager)


def _some_unknown(args: list[AbstractValue], limit: int) -> bool:
    """Whether an operand is unknown and none has more than ``limit`` elements."""
    unknown = False
    for a in args:
        if a.type.size > limit:
            return False
        if a.const is None:
            unknown = True
    return unknown


def _cast(value, t: TensorType) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype != t.dtype:
        arr = arr.astype(t.dtype)
    if arr.shape != t.shape:
        arr = np.broadcast_to(arr, t.shape).copy() if arr.size == 1 else arr.reshape(t.shape)
    return arr


def _is_function_body(block: DecodedBlock) -> bool:
    """Whether ``block`` is a ``func.func``'s body (not a loop's, a branch's or a reduction's)."""
    return block.block.owner.operation.name == "func.func"


#: Ops that :meth:`Interpreter.skipped_ops` always runs: calls, whose callees may hold ops to refuse, and custom
#: calls (host callbacks and effects of their own).
NEVER_SKIPPED = frozenset({"func.call", "stablehlo.composite", "stablehlo.custom_call"})

#: The ops with regions :meth:`Interpreter.skipped_ops` may leave unrun: their bodies combine elements.
SKIPPABLE_REGIONS = frozenset({"stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.sort", "stablehlo.scatter",
                               "stablehlo.select_and_scatter", "stablehlo.map"})


def unused_ops(block: DecodedBlock, skippable: Callable[[DecodedOp], bool] = lambda d: True) -> frozenset[int]:
    """Positions of the ops of ``block`` that ``skippable`` allows and whose results no op that runs reads (reads
    from inside nested regions counted) and the terminator does not return: found backwards from the terminator
    in one pass.  An op without results (an effect of its own) runs."""
    ops = block.ops
    if not ops:
        return frozenset()
    live = set(ops[-1].operands)
    unused = []
    for position in range(len(ops) - 2, -1, -1):
        d = ops[position]
        if d.results and not any(r in live for r in d.results) and skippable(d):
            unused.append(position)
            continue
        live.update(d.operands)
        if len(d.op.regions):
            live.update(region_captures(d.op))
    return frozenset(unused)


def last_uses(block: DecodedBlock) -> dict[int, list]:
    """Position of an op in ``block`` -> the values of the block (its arguments and results) that no later op
    reads, counting reads from inside nested regions; values the terminator returns are never listed."""
    last: dict = {}
    own = set(block.arguments)  # values of an enclosing block may be read again (a loop body runs many times)
    ops = block.ops
    for position, d in enumerate(ops):
        op = d.op
        for v in d.operands + (tuple(region_captures(op)) if len(op.regions) else ()):
            if v in own:
                last[v] = position
        for r in d.results:
            own.add(r)
            last.setdefault(r, position)
    for v in ops[-1].operands if ops else ():
        last.pop(v, None)
    out: dict[int, list] = {}
    for v, position in last.items():
        out.setdefault(position, []).append(v)
    return out
