"""Control flow: §while, §case, §if, and §optimization_barrier.

Regions run in the interpreter on abstract values (``ctx.run_region``); they read values of the enclosing
function through the interpreter's frames, so captured values need no special handling.

``while`` runs **exact abstract iterations**: the body once per concrete iteration, on index sets instead of
numbers, with the constant lattice folding the counter of ``fori_loop``/``scan``/a constant-bounded
``while_loop`` — so index-dependent ops in the body (``dynamic_slice`` on the counter, a ``case`` on it) are
exact in every iteration, and patterns that grow each iteration (repeated ``roll``, explicit Euler steps)
come out as exactly the true global pattern.  The condition decides where the loop may stop:

* known ``True``: the loop goes on; known ``False``: it stops here (the result is this carry);
* unknown (a data-dependent exit): it *may* stop here — this carry joins the set of possible results, and
  the iteration goes on while some constant (a counter) still moves: a ``while`` with both a counter bound
  and a tolerance keeps its exact iterates up to the bound.  With no moving constant nothing could ever
  decide the exit, so the fixed point below takes over at once; it also takes over as soon as an iterate
  adds nothing to the possible exits (iterates that cycle, e.g. a rotation).

**Summaries** — loops at the speed of straight-line code.  Exact iteration interprets the body once per
trip: thousands of ops for a scan, and for a time-stepping loop a pattern re-derived every step.  When the
loop has a *plan* (:mod:`.loop_plans`: its moving integers are counters, which reach only index arithmetic,
reads of scanned arrays, writes of accumulators and the condition) and an iteration has left every other
constant unchanged, the body runs **once more, on symbols** (:meth:`ctx.interpret_symbolically`): each
element it reads — of the carry, of a captured value, of the slice a scan reads (folded: the same symbols
whatever the iteration) — is a column of its own.  The result is the body's transfer as a relation ``R``
(outputs × symbols), valid in every remaining iteration: the index-set rules are unions over groups fixed by
constants, and the constants are the same except for the counters, which only move where the reads and
writes land — integer programs evaluated for every iteration at once.  Then (:mod:`~.lattice.loops`):

* a scan applies ``R`` once per iteration as lattice moves — or, when its symbols are few (an RNN's hidden
  state), as rows of sorted arrays, one NumPy union per distinct group — reading each slice's real index
  sets and recording each write; the accumulators are assembled once at the end (last write wins);
* a loop that only carries (time stepping) whose ``R`` is a row map (a roll, a flip, a swap, elementwise
  ops) is ``P^trips``, by repeated squaring: a rotation run 10⁹ times costs thirty gathers;
* other carries iterate ``R`` with Brent's cycle check: a carry that repeats (a saturated band, a rotation
  through a captured factor) skips the remaining trips modulo its period;
* past ``max_loop_iterations`` (exact and summary steps together), the summary's fixed point
  ``J ← J ⊔ R ⊗ J`` (as below).

The summary gives the same index sets as exact iteration (tests/analysis/rules/test_loops.py checks both ways on every
loop shape they generate).  With an observer (the annotate and fold-constants passes record each op's
values in every execution), the body runs once more on a state covering every skipped iteration (the
counters unknown, each carry the union of its iterates), so what they record still holds everywhere.

Three ways out of the exact iterations (when there is no summary), all sound:

* **Early stop.**  After an iteration that leaves every index set unchanged, the carries whose constants
  still move (a counter) are widened — when nothing after the loop reads them, or the exit is
  data-dependent anyway — and the widened state is checked to be a fixed point (:func:`_settle`: the body
  run on it adds no dependency).  If it is not (the moving constant steers the pattern: a branch on the
  counter, an inner trip count), exact iteration simply goes on, retrying with an exponential back-off.
  This is what makes a 10,000-step loop with a stable carry cost a few iterations.
* **Iteration cap** ``options.max_loop_iterations``, then the fixed point below.
* **Fixed point**::

      state₀ = (possible exits so far) ⊔ carry       deps: union; consts: kept only where equal
      state_{i+1} = state_i ⊔ body(state_i)          until state_{i+1} = state_i

  The join is monotone and the lattice finite (index sets only grow, a constant can only become unknown
  once), so this terminates, and it over-approximates every state the loop can exit with.  If it does not
  settle within ``max_loop_iterations`` rounds, every carried element is made to depend on everything the
  loop can read (⊤ of the loop: a fixed point of every rule, which never invents a dependency) and a
  warning is recorded.

Calls inside a loop body are memoized by argument identity; the carry is a fresh object in every
iteration, so the summaries recorded during one iteration are dropped after it (``ctx.call_cache_trim``),
keeping memory bounded by one iteration instead of the whole trip count.  Hits within an iteration and
hits on loop-invariant values created before the loop stay.

``case``/``if``: a known branch index (clamped per §case: an out-of-range index selects the last branch)
runs one branch; otherwise the results are the join over all branches (index sets united, constants kept
only when every branch agrees).  The index itself is an integer and carries no derivative.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


import numpy as np

from ..folding.exactness import join as join_uncertainty
from ..folding.exactness import same_uncertainty
from ..folding.ranges import IntRange, known_bounds, make_range
from ...ir.helpers import functions, is_public, region_captures
from ...lattice import Deps, cheap_nnz, deps_equal
from ...lattice import loops as L
from ..values import AbstractValue, is_differentiable, same_constant
from .loop_plans import NotEvaluable, counter_values, evaluate, plan_of, trip_count
from .registry import EXACT, VALUE_AWARE, deps_rule
from .registry import RuleContext, Op, DepsResult  # the rule contract

#: Whether ``while`` may iterate a body's summary (tests compare both ways).
SUMMARIES = True

#: Carries with at most this many symbols iterate as rows of arrays (:class:`~.lattice.loops.SmallState`).
SMALL_SYMBOLS = 256



# ---------------------------------------------------------------- the join of abstract values
def _parts_subset(sub: Deps, sup: Deps) -> bool:
    """Cheap check that ``sub ⊆ sup`` because every lazy part of ``sub`` is literally a part of ``sup``."""
    if sub is sup or sub.is_empty:
        return True
    ids = {id(p) for p in sup.parts}
    return all(id(p) in ids for p in sub.parts)


def join(a: AbstractValue, b: AbstractValue) -> AbstractValue:
    """``a ⊔ b``: index sets united; the constant kept only where both agree (two different constants join
    to unknown); integer ranges (of constants too) joined to their hull (:mod:`..folding.ranges`)."""
    if a is b:
        return a
    deps = a.deps if _parts_subset(b.deps, a.deps) else (b.deps if _parts_subset(a.deps, b.deps)
                                                          else Deps.union(a.deps, b.deps))
    const = a.const if same_constant(a.const, b.const) else None
    # the same folded bits with different error bounds: widen (folding/exactness.py), so loops settle
    uncertainty = join_uncertainty(a.uncertainty, b.uncertainty) if const is not None else None
    int_range = _join_ranges(a, b) if const is None else None
    if deps is a.deps and const is a.const and uncertainty is a.uncertainty and int_range is a.int_range:
        return a
    return AbstractValue(a.type, deps, const, uncertainty, int_range)


def _join_ranges(a: AbstractValue, b: AbstractValue) -> IntRange | None:
    """The hull of two integer values' bounds (a constant is its own range), ``None`` if either is unbounded."""
    ka, kb = known_bounds(a), known_bounds(b)
    if ka is None or kb is None:
        return None
    if a.int_range is not None and b.int_range is a.int_range:
        return a.int_range
    return make_range(np.minimum(ka[0], kb[0]), np.maximum(ka[1], kb[1]), a.dtype, a.shape)


def _grew(old: AbstractValue, new: AbstractValue) -> bool:
    """Whether ``new = old ⊔ x`` is strictly above ``old`` (``new ⊒ old`` holds by construction)."""
    if new is old:
        return False
    if (old.const is None) != (new.const is None) or not same_uncertainty(old.uncertainty, new.uncertainty):
        return True
    if new.deps is old.deps:
        return False
    # new ⊇ old, so they are equal iff they have as many nonzeros (run parts count without writing out).
    return cheap_nnz(new.deps) != cheap_nnz(old.deps)


def _size_hint(d: Deps) -> int:
    return sum(p.nnz_upper() for p in d.parts)


def _deps_unchanged(old: list[AbstractValue], new: list[AbstractValue]) -> bool:
    """Whether every carried index set is the same after one iteration (constants may differ).

    Identity checks first; then real comparisons, which materialize, from the smallest tensor up, stopping
    at the first difference — a growing hidden state is found before a large accumulator is ever compared,
    and the materialized carry (one part instead of a product of lazy parts) is what the next iteration
    reads anyway.
    """
    pending = []
    for a, b in zip(old, new):
        if a.deps is b.deps or (a.deps.is_empty and b.deps.is_empty):
            continue
        if a.deps.is_empty != b.deps.is_empty:
            return False
        if len(a.deps.parts) == len(b.deps.parts) and all(p is q for p, q in zip(a.deps.parts, b.deps.parts)):
            continue
        pending.append(((a.deps.rows, min(_size_hint(a.deps), _size_hint(b.deps))), a.deps, b.deps))
    pending.sort(key=lambda t: t[0])
    return all(cheap_nnz(x) == cheap_nnz(y) and deps_equal(x, y) for _, x, y in pending)


# ---------------------------------------------------------------- regions
def _condition(ctx, cond, carry) -> bool | None:
    """The value of the ``cond`` region on the carry: ``True``/``False`` when known, else ``None``."""
    (res,) = ctx.run_region(cond, _without_ranges(carry))
    if res.const is None:
        return None
    return bool(np.asarray(res.const).reshape(-1)[0])


def _without_ranges(carry: list) -> list:
    """A loop's carry enters its regions without integer ranges: a range holds for one iterate, and the
    loop machinery compares iterates by index sets and constants only, so none may leak into another."""
    return [c.without_range() if isinstance(c, AbstractValue) else c for c in carry]


def _run_body(ctx, body, carry, mark):
    out = ctx.run_region(body, _without_ranges(carry))
    ctx.call_cache_trim(mark)
    return list(out)


def _mark(ctx):
    return ctx.call_cache_mark()


def captured_values(ctx: RuleContext, op: Op) -> list[AbstractValue]:
    """Abstract values the regions of ``op`` read from outside ``op``."""
    return [ctx.value(v) for v in region_captures(op)]


# ---------------------------------------------------------------- while
def _fixed_point(ctx: RuleContext, op: Op, cond, body, state: list[AbstractValue], mark) -> list[AbstractValue]:
    """Iterate ``state ⊔ body(state)`` to its fixed point (see the module docstring)."""
    for _ in range(max(1, ctx.options.max_loop_iterations)):
        if _condition(ctx, cond, state) is False:  # every state of the join exits here
            return state
        out = _run_body(ctx, body, state, mark)
        new = [join(s, o) for s, o in zip(state, out)]
        if not any(_grew(s, n) for s, n in zip(state, new)):
            return state
        state = new
    ctx.warn(op, f"fixed point not reached in {ctx.options.max_loop_iterations} rounds; every carried element "
                 "now depends on everything the loop reads (conservative)")
    return _loop_top(ctx, op, state)


def _loop_top(ctx: RuleContext, op: Op, state):
    """⊤ of the loop: everything the carry or the regions' captured values depend on, in every element."""
    seen = list(state) + captured_values(ctx, op)
    total = Deps.union(*[v.deps.reduce_all() for v in seen]) if seen else Deps.empty(1, ctx.n)
    return [AbstractValue(s.type, total.broadcast_row(s.size) if is_differentiable(s.dtype) else ctx.empty(s.size))
            for s in state]


def _consts_needed(op) -> list[bool]:
    """Whether the constant of each result may matter: it is read by an op after the loop (a ``return`` of
    a public function only passes it out of the analyzed program, where only index sets count)."""
    out = []
    for r in op.results:
        need = False
        for use in r.uses:
            owner = getattr(use.owner, "operation", use.owner)
            if owner.name == "func.return" and not _is_private(owner.parent):
                continue
            need = True
            break
        out.append(need)
    return out


def _is_private(fn) -> bool:
    try:
        return not is_public(fn)  # the one visibility check (ir.helpers): "private" and "nested" alike
    except Exception:  # not a function: be careful
        return True


def _settle(ctx, cond, body, state: list[AbstractValue], mark) -> list[AbstractValue] | None:
    """Fixed-point rounds from a widened state, given up (``None``) as soon as an index set grows.

    Each round that does not grow an index set loses at least one constant or ends, so this stops within
    ``len(state) + 1`` rounds; success means the widened state already is the loop's fixed point."""
    for _ in range(len(state) + 1):
        if _condition(ctx, cond, state) is False:
            return state
        out = _run_body(ctx, body, state, mark)
        new = [join(s, o) for s, o in zip(state, out)]
        if any(n.deps is not s.deps and cheap_nnz(n.deps) != cheap_nnz(s.deps) for s, n in zip(state, new)):
            return None  # an index set grew (n ⊒ s, so equal iff as many nonzeros)
        if all(n is s or (same_constant(n.const, s.const) and same_uncertainty(n.uncertainty, s.uncertainty))
               or (n.const is None and s.const is None) for s, n in zip(state, new)):
            return state
        state = new
    return None


# ---------------------------------------------------------------- while: summaries
def _plan(ctx: RuleContext, op: Op):
    """The loop's plan (:mod:`.loop_plans`), read off the IR once per op."""
    memo = ctx.memo("while_plans")
    key = op.operation if hasattr(op, "operation") else op
    if key not in memo:
        memo[key] = plan_of(op, functions(ctx.module))
    return memo[key]


def _stable(old: list[AbstractValue], new: list[AbstractValue], counters) -> bool:
    """Every constant but the counters' is the same before and after an iteration (so it stays the same:
    the plan keeps the counters away from every other carried value)."""
    for k, (a, b) in enumerate(zip(old, new)):
        if k in counters:
            continue
        if (a.const is None) != (b.const is None):
            return False
        if a.const is not None and not (same_constant(a.const, b.const)
                                        and same_uncertainty(a.uncertainty, b.uncertainty)):
            return False
    return True


class _Layout:
    """The symbol space of a body summary: blocks of symbols, each standing for a carried value, a captured
    value, or the slice a scan reads (folded: the same symbols whatever the iteration)."""

    def __init__(self):
        self.blocks: list[tuple[int, int]] = []   # (offset, size)
        self.kinds: list[tuple] = []               # ("carry", k) | ("outer", v) | ("scan", key)
        self.width = 0

    def add(self, kind, size: int) -> int:
        self.blocks.append((self.width, int(size)))
        self.kinds.append(kind)
        self.width += int(size)
        return len(self.blocks) - 1


def _starts(ctx, exprs, values, trips):
    """Each start program of ``exprs`` (``None``: not the counters') evaluated for every iteration."""
    outer = lambda v: ctx.value(v).const  # noqa: E731
    return [None if e is None else np.broadcast_to(evaluate(e, values, outer), (trips,)).astype(np.int64)
            for e in exprs]


def _offsets(shape, dims, starts) -> np.ndarray:
    """Flat offset, per iteration, of the element a read or write takes along the counter ``dims`` (clamped
    as §dynamic_slice / §dynamic_update_slice clamp their start indices; the counter dims take size 1)."""
    shape = tuple(int(s) for s in shape)
    strides = np.cumprod((1,) + shape[::-1][:-1])[::-1]
    off = 0
    for d in dims:
        off = off + np.clip(starts[d], 0, shape[d] - 1) * int(strides[d])
    return np.asarray(off, np.int64)


@dataclass
class _SummaryStart:
    """Where a summary takes over: the counters' values, the other known carries, and how many iterations
    remain (``trips``; ``budget`` of them may be run one by one)."""

    start: dict[int, int]
    slots: dict[int, np.ndarray]
    trips: int
    budget: int
    values: dict  #: slot -> value, the counters' for every iteration when a scan or accumulator needs them
    scanned: dict  #: scan key -> the reads of the plan


@dataclass
class _SymbolSpace:
    """The symbolic run's inputs: a block of symbols per carried value, captured value and scanned slice."""

    layout: _Layout
    carried_block: dict[int, int]  #: carried value k -> its block
    outer_block: dict  #: captured value -> its block
    scan_inner: dict  #: scan key -> flat offsets, within the array, of the slice's elements
    sym_args: list[AbstractValue]
    outer_env: dict


@dataclass
class LoopSummary:
    """One symbolic run of a ``while`` body as data: for each carried value ``k`` (and accumulator
    ``("acc", k)``), the relation giving its next index sets from the symbol blocks; where each scan reads
    and each accumulator writes in every iteration."""

    layout: _Layout
    carried_block: dict[int, int]
    rels: dict  #: k | ("acc", k) -> lattice.loops.Relation over the symbol blocks
    scan_inner: dict  #: scan key -> flat offsets of the slice's elements
    scan_offs: dict  #: scan key -> per read, the flat offset of the slice in every iteration
    acc_info: dict  #: accumulator k -> (flat offsets of a write's elements, offset per iteration)


@dataclass
class _LoopRun:
    """The real index sets a summary is iterated on, and what the iterations produce."""

    current: dict  #: carried value k -> its index sets now
    fixed: dict  #: block of a captured value -> its index sets
    sources: dict  #: scan key -> the index sets of the scanned array
    acc_initial: dict  #: accumulator k -> its index sets before the loop
    acc_writes: dict  #: accumulator k -> [(rows written, their index sets)] per iteration
    cover: dict | None  #: for an observer: carried value k -> the union of its iterates


def _summarize(ctx: RuleContext, op: Op, plan, state: list[AbstractValue], steps: int):
    """The remaining iterations from ``state`` through the body's summary, or ``None`` when the values do not
    allow one (see the module docstring)."""
    begin = _summary_start(ctx, plan, state, steps)
    if begin is None:
        return None
    space = _symbol_space(ctx, op, plan, state, begin.scanned)
    summary = _summarize_body(ctx, op, plan, state, begin, space)
    if summary is None:
        return None
    run = _LoopRun(current={k: state[k].deps for k in summary.carried_block},
                   fixed={b: ctx.value(v).deps for v, b in space.outer_block.items()},
                   sources={key: _scan_source(ctx, state, key).deps for key in begin.scanned},
                   acc_initial={k: state[k].deps for k in plan.accums},
                   acc_writes={k: [] for k in plan.accums},
                   cover={k: state[k].deps for k in summary.carried_block} if ctx.observing else None)
    if summary.layout.width <= SMALL_SYMBOLS and (begin.scanned or plan.accums):
        final = _iterate_small(summary, run, begin.trips, ctx.n)
    else:
        final = _iterate(ctx, op, summary, run, begin.trips, begin.budget)
        if final is None:
            return None
    result = list(state)
    for k, c in counter_values(plan, begin.start, begin.trips).items():
        result[k] = AbstractValue(state[k].type, ctx.empty(state[k].size), np.asarray(c).reshape(state[k].shape))
    for k in summary.carried_block:
        result[k] = AbstractValue(state[k].type, final[k])
    for k in plan.accums:
        result[k] = AbstractValue(state[k].type, final[("acc", k)])
    if run.cover is not None:
        _cover_run(ctx, op, plan, state, result, summary, run)
    return result


def _scan_source(ctx: RuleContext, state: list[AbstractValue], key) -> AbstractValue:
    """The array a scan reads: a carried slot or a captured value."""
    return state[key[1]] if key[0] == "slot" else ctx.value(key[1])


def _summary_start(ctx: RuleContext, plan, state: list[AbstractValue], steps: int) -> _SummaryStart | None:
    """The counters' start, the trip count and the iteration budget; ``None`` when the values do not allow a
    summary (an unknown counter, too few trips, a known scanned array whose slices may steer the body)."""
    if any(state[k].const is None for k in plan.counters):
        return None
    start = {k: int(np.asarray(state[k].const).reshape(())) for k in plan.counters}
    slots = {k: s.const for k, s in enumerate(state) if s.const is not None and k not in plan.counters}
    outer = lambda v: ctx.value(v).const  # noqa: E731
    budget = max(ctx.options.max_loop_iterations - steps, 0)
    trips = trip_count(plan, start, slots, outer, max(budget, 1_000_000))
    if trips is None or trips < 2:
        return None
    scanned = dict(plan.scanned)
    if (trips > budget and (scanned or plan.accums)) or \
            any(state[k].const is not None for k in plan.accums) or \
            any(_scan_source(ctx, state, key).const is not None for key in scanned):
        return None  # a known scanned array: its slices are constants that may steer the body
    # the counters in every iteration: only loops that read or write at them need these (trips ≤ budget)
    values = dict(slots)
    if scanned or plan.accums:
        values.update(counter_values(plan, start, np.arange(trips, dtype=np.int64)))
    return _SummaryStart(start, slots, trips, budget, values, scanned)


def _symbol_space(ctx: RuleContext, op: Op, plan, state: list[AbstractValue], scanned: dict) -> _SymbolSpace:
    """A block of symbols for every carried value the body may move, every captured value with index sets,
    and every scanned slice (folded along the counter dims); the body's arguments and captures over them."""
    lay = _Layout()
    carried_block = {}
    for k, s in enumerate(state):
        if ("slot", k) in scanned or k in plan.accums or k in plan.counters or s.const is not None \
                or not is_differentiable(s.dtype):
            continue
        carried_block[k] = lay.add(("carry", k), s.size)
    captures = region_captures(op)
    outer_block = {}
    for v in captures:
        av = ctx.value(v)
        if ("outer", v) not in scanned and not av.deps.is_empty:
            outer_block[v] = lay.add(("outer", v), av.size)
    scan_block = {}
    for key in scanned:
        src = _scan_source(ctx, state, key)
        dims = plan.scan_dims[key]
        k_rest = int(np.prod([s for d, s in enumerate(src.shape) if d not in dims], dtype=np.int64))
        scan_block[key] = lay.add(("scan", key), k_rest)
    space = _SymbolSpace(lay, carried_block, outer_block, {}, [], {})
    W = lay.width

    def blank(av):
        return AbstractValue(av.type, Deps.empty(av.size, W), av.const, av.uncertainty)

    def scanned_symbols(key, av):
        deps, inner = L.folded_symbols(av.shape, plan.scan_dims[key], W, lay.blocks[scan_block[key]][0])
        space.scan_inner[key] = inner
        return AbstractValue(av.type, deps)

    for k, s in enumerate(state):
        if k in carried_block:
            space.sym_args.append(AbstractValue(s.type, L.symbols(s.size, W, lay.blocks[carried_block[k]][0])))
        elif ("slot", k) in scanned:
            space.sym_args.append(scanned_symbols(("slot", k), s))
        elif k in plan.accums:
            space.sym_args.append(AbstractValue(s.type, Deps.empty(s.size, W)))
        else:
            space.sym_args.append(blank(s))
    for v in captures:
        av = ctx.value(v)
        if v in outer_block:
            space.outer_env[v] = AbstractValue(av.type, L.symbols(av.size, W, lay.blocks[outer_block[v]][0]))
        elif ("outer", v) in scanned:
            space.outer_env[v] = scanned_symbols(("outer", v), av)
        else:
            space.outer_env[v] = blank(av)
    return space


def _constants_kept(plan, state: list[AbstractValue], outs: list[AbstractValue], scanned: dict) -> bool:
    """Every carried constant (but the counters, scans and accumulators) comes out of the body unchanged,
    and no unknown carry becomes a constant."""
    for k, (s, o) in enumerate(zip(state, outs)):
        if k in plan.counters or ("slot", k) in scanned or k in plan.accums:
            continue
        if s.const is not None:
            if not (same_constant(s.const, o.const) and same_uncertainty(s.uncertainty, o.uncertainty)):
                return False
        elif o.const is not None:
            return False
    return True


def _summarize_body(ctx: RuleContext, op: Op, plan, state: list[AbstractValue], begin: _SummaryStart,
                    space: _SymbolSpace) -> LoopSummary | None:
    """Run the body once on symbols and read off the relations, the scans' and the accumulators' offsets."""
    try:
        outs = ctx.interpret_symbolically(op.regions[1], space.sym_args, space.outer_env, space.layout.width)
    except NotEvaluable:
        return None
    if not _constants_kept(plan, state, outs, begin.scanned):
        return None
    try:
        reads = {key: [(_starts(ctx, r.starts, begin.values, begin.trips), r) for r in rs]
                 for key, rs in begin.scanned.items()}
        writes = {k: _starts(ctx, w.starts, begin.values, begin.trips) for k, w in plan.accums.items()}
    except NotEvaluable:
        return None
    lay = space.layout
    rels: dict = {k: L.Relation.split(outs[k].deps, lay.blocks) for k in space.carried_block}
    acc_info = {}
    for k in plan.accums:
        dims = tuple(d for d, e in enumerate(plan.accums[k].starts) if e is not None)
        _, inner = L.folded_symbols(state[k].shape, dims, 1, 0)
        offs = _offsets(state[k].shape, dims, writes[k])
        acc_info[k] = (inner, offs)
        y = outs[k].deps.gather_rows(offs[0] + inner)
        rels[("acc", k)] = L.Relation.split(y, lay.blocks)
    scan_offs = {}
    for key, rs in reads.items():
        src = _scan_source(ctx, state, key)
        scan_offs[key] = [_offsets(src.shape, plan.scan_dims[key], starts) for starts, _ in rs]
    return LoopSummary(lay, space.carried_block, rels, space.scan_inner, scan_offs, acc_info)


def _block_deps(lay, current, fixed, scan_rows_t):
    out = []
    for b, kind in enumerate(lay.kinds):
        if kind[0] == "carry":
            out.append(current[kind[1]])
        elif kind[0] == "outer":
            out.append(fixed[b])
        else:
            out.append(scan_rows_t[kind[1]])
    return out


def _scan_slice(sources, scan_inner, scan_offs, key, t):
    """The real index sets of the slice a scan reads in iteration ``t`` (the union over its reads)."""
    parts = [sources[key].gather_rows(offs[t] + scan_inner[key]) for offs in scan_offs[key]]
    return parts[0] if len(parts) == 1 else Deps.union(*parts)


def _iterate(ctx: RuleContext, op: Op, summary: LoopSummary, run: _LoopRun, trips: int, budget: int):
    """Iterate the summary with lattice moves: a row map is raised to the trip count, a cycling carry skips
    whole periods, and a carry that does neither past the budget gets the summary's fixed point."""
    scans = bool(summary.scan_offs) or bool(summary.acc_info)
    if not scans and not summary.carried_block:
        return {}
    if not scans and run.cover is None:
        powered = _row_map_power(summary, run.current, trips)
        if powered is not None:
            return powered
    current = run.current
    check = None if scans else L.CycleCheck()
    t = 0
    while t < trips:
        if t >= budget and not scans:
            return _summary_fixed_point(ctx, op, summary, current, run.fixed, run.cover)
        current = _step(summary, run, current, t, ctx.n)
        t += 1
        if check is not None:
            period = check.see(t, [current[k] for k in summary.carried_block])
            if period is not None:
                trips = t + (trips - t) % period
                check = None
    final = dict(current)
    for k in summary.acc_info:
        final[("acc", k)] = L.assemble_writes(run.acc_initial[k], run.acc_writes[k])
    return final


def _row_map_power(summary: LoopSummary, current: dict, trips: int) -> dict | None:
    """All iterations at once when every carried row reads at most one carried symbol: the stacked row map
    raised to the trip count (``None`` otherwise)."""
    stacked = _functional(summary.layout, summary.rels, summary.carried_block)
    if stacked is None:
        return None
    order, offsets, pmap = stacked
    total = L.row_map_power(pmap, trips)
    allrows = Deps.vstack([current[k] for k in order]).gather_rows(total)
    return {k: allrows.gather_rows(np.arange(off, off + current[k].rows)) for k, off in zip(order, offsets)}


def _step(summary: LoopSummary, run: _LoopRun, current: dict, t: int, n: int) -> dict:
    """Iteration ``t``: the next carry from the symbol blocks (carry, captures, this iteration's scanned
    slices); the accumulators' writes and the observer's cover recorded in ``run``."""
    scan_t = {key: _scan_slice(run.sources, summary.scan_inner, summary.scan_offs, key, t)
              for key in summary.scan_offs}
    blocks = _block_deps(summary.layout, current, run.fixed, scan_t)
    new = {k: L.apply(summary.rels[k], blocks, n) for k in summary.carried_block}
    for k, (inner, offs) in summary.acc_info.items():
        run.acc_writes[k].append((offs[t] + inner, L.apply(summary.rels[("acc", k)], blocks, n)))
    if run.cover is not None:
        for k in summary.carried_block:
            run.cover[k] = Deps.union(run.cover[k], new[k])
    return new


def _functional(lay, rels, carried_block):
    """The stacked row map of a carry whose every row reads at most one carried symbol (and nothing else)."""
    order = list(carried_block)
    offsets, total = [], 0
    for k in order:
        offsets.append(total)
        total += lay.blocks[carried_block[k]][1]
    pmap = np.full(total, -1, np.int64)
    block_off = {carried_block[k]: off for k, off in zip(order, offsets)}
    for k, off in zip(order, offsets):
        rel = rels[k]
        row = None
        for b, g in enumerate(rel.groups):
            if g is None:
                continue
            if b not in block_off or g.table is None or g.table.shape[1] != 1:
                return None
            if row is not None:
                return None  # rows reading two blocks (each at most one row, but maybe both)
            row = np.where(g.table[:, 0] >= 0, g.table[:, 0] + block_off[b], -1)
        if row is not None:
            pmap[off:off + rel.rows] = row
    return order, offsets, pmap


def _summary_fixed_point(ctx: RuleContext, op: Op, summary: LoopSummary, current: dict, fixed: dict,
                         cover: dict | None):
    """``J ← J ⊔ R ⊗ J`` from the current carry until nothing grows (sound for every later iterate)."""
    n = ctx.n
    lay, rels, carried_block = summary.layout, summary.rels, summary.carried_block
    state = dict(current)
    for _ in range(max(1, ctx.options.max_loop_iterations)):
        blocks = _block_deps(lay, state, fixed, {})
        new = {k: Deps.union(state[k], L.apply(rels[k], blocks, n)) for k in carried_block}
        if all(cheap_nnz(new[k]) == cheap_nnz(state[k]) for k in carried_block):
            if cover is not None:
                for k in carried_block:
                    cover[k] = Deps.union(cover[k], state[k])
            return state
        state = new
    ctx.warn(op, f"fixed point not reached in {ctx.options.max_loop_iterations} rounds; every carried element "
                 "now depends on everything the loop reads (conservative)")
    seen = [v for v in state.values()] + [v for v in fixed.values()]
    total = Deps.union(*[d.reduce_all() for d in seen]) if seen else Deps.empty(1, n)
    out = {k: total.broadcast_row(state[k].rows) for k in carried_block}
    if cover is not None:
        cover.update(out)
    return out


def _iterate_small(summary: LoopSummary, run: _LoopRun, trips: int, n: int):
    """:func:`_iterate` for a small symbol space: rows as sorted arrays, one union per distinct group."""
    carried_block, acc_info, cover = summary.carried_block, summary.acc_info, run.cover
    keys = list(summary.rels)
    engine = L.SmallState([summary.rels[k] for k in keys], summary.layout.blocks)
    rows = {k: L.rows_of(run.current[k]) for k in carried_block}
    fixed_rows = {b: L.rows_of(d) for b, d in run.fixed.items()}
    source_rows = {key: L.rows_of(d) for key, d in run.sources.items()}
    slot = {k: i for i, k in enumerate(keys)}
    for t in range(trips):
        out = engine.step(_symbol_rows(summary, rows, fixed_rows, source_rows, t))
        for k in carried_block:
            rows[k] = out[slot[k]]
        for k, (inner, offs) in acc_info.items():
            run.acc_writes[k].append((offs[t] + inner, out[slot[("acc", k)]]))
        if cover is not None:
            for k in carried_block:
                cover[k] = Deps.union(cover[k], L.deps_of_rows(rows[k], n))
    final: dict = {k: L.deps_of_rows(rows[k], n) for k in carried_block}
    for k in acc_info:
        final[("acc", k)] = L.assemble_rows(L.rows_of(run.acc_initial[k]), run.acc_writes[k], n)
    return final


def _symbol_rows(summary: LoopSummary, rows: dict, fixed_rows: dict, source_rows: dict, t: int) -> list:
    """The real rows of every symbol in iteration ``t``, block after block (carry, capture, scanned slice)."""
    symbol_rows: list = []
    for b, kind in enumerate(summary.layout.kinds):
        if kind[0] == "carry":
            symbol_rows.extend(rows[kind[1]])
        elif kind[0] == "outer":
            symbol_rows.extend(fixed_rows[b])
        else:
            key = kind[1]
            src = source_rows[key]
            inner = summary.scan_inner[key]
            reads = [offs[t] + inner for offs in summary.scan_offs[key]]
            if len(reads) == 1:
                symbol_rows.extend(src[i] for i in reads[0])
            else:
                symbol_rows.extend(L.union_rows([src[r[j]] for r in reads]) for j in range(len(inner)))
    return symbol_rows


def _cover_run(ctx: RuleContext, op: Op, plan, state: list[AbstractValue], result: list[AbstractValue],
               summary: LoopSummary, run: _LoopRun) -> None:
    """For an observer (the annotate and fold-constants passes record every op's values): run the condition
    and the body once on a state that covers every iteration the summary skipped — the counter unknown, each
    carry the union of its iterates, each accumulator the union of its writes — so what they record holds
    at every execution.  Its warnings (reads at an unknown counter) are the cover's, not the program's."""
    cover, acc_writes = run.cover, run.acc_writes
    assert cover is not None
    cover_state = list(state)
    for k in plan.counters:
        cover_state[k] = AbstractValue(state[k].type, ctx.empty(state[k].size))
    for k in summary.carried_block:
        cover_state[k] = AbstractValue(state[k].type, Deps.union(cover[k], result[k].deps))
    for k in plan.accums:
        initial = run.acc_initial[k]
        parts = [initial, result[k].deps]
        for rows, d in acc_writes[k]:
            if isinstance(d, list):
                d = L.deps_of_rows(d, ctx.n)
            m = np.full(initial.rows, -1, np.int64)
            m[rows] = np.arange(len(rows))
            parts.append(d.gather_rows(m))
        cover_state[k] = AbstractValue(state[k].type, Deps.union(*parts))
    ctx.run_region_unreported(op.regions[0], cover_state)
    ctx.run_region_unreported(op.regions[1], cover_state)


@deps_rule("stablehlo.while", kind=VALUE_AWARE,
           note="exact iterations while the condition is a known constant (a summary of the body iterated when "
                "its counters only index scans), else a fixed point (sound)")
def _while(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§while: exact abstract iterations, or the body's summary once the loop's plan and constants allow;
    possible exits joined; early stop, cap and fixed point as in the module docstring.  Results carry no
    integer ranges (see :func:`_without_ranges`)."""
    return _without_ranges(list(_while_iterates(ctx, op, args)))


@dataclass
class _WhileRun:
    """The state of the exact iterations of one ``while``: the join of the possible exits so far, the plan
    (dropped once the values rule a summary out), and the back-off of the attempts to settle."""

    plan: Any
    exits: list | None = None  #: join of the carries at which the loop may stop (the condition was unknown)
    needed: list | None = None  #: per result, whether its constant may matter (computed on first use)
    steps: int = 0
    next_try: int = 0
    retry: int = 1  #: exponential back-off after a failed attempt to settle

    def with_exits(self, state: list[AbstractValue]) -> list[AbstractValue]:
        return state if self.exits is None else [join(e, c) for e, c in zip(self.exits, state)]


def _while_iterates(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    cond, body = op.regions[0], op.regions[1]
    carry = _without_ranges(list(args))
    mark = _mark(ctx)
    w = _WhileRun(plan=_plan(ctx, op) if SUMMARIES else None)
    while True:
        go = _condition(ctx, cond, carry)
        if go is False:
            return w.with_exits(carry)
        if go is None:
            done = _possible_exit(ctx, op, w, carry, mark)
            if done is not None:
                return done
        if w.steps >= ctx.options.max_loop_iterations:
            break
        new = _run_body(ctx, body, carry, mark)
        w.steps += 1
        done = _after_iteration(ctx, op, w, carry, new, go, mark)
        if done is not None:
            return done
        carry = new
    return _fixed_point(ctx, op, cond, body, w.with_exits(carry), mark)


def _possible_exit(ctx: RuleContext, op: Op, w: _WhileRun, carry: list[AbstractValue], mark):
    """The loop may stop here (unknown condition): join the carry into the exits; when it adds nothing (the
    iterates cycle, or the pattern is full) the fixed point from here covers every later one."""
    grown = w.with_exits(carry)
    if w.exits is not None and not any(_grew(e, g) for e, g in zip(w.exits, grown)):
        return _fixed_point(ctx, op, op.regions[0], op.regions[1], grown, mark)
    w.exits = grown
    return None


def _after_iteration(ctx: RuleContext, op: Op, w: _WhileRun, carry: list[AbstractValue],
                     new: list[AbstractValue], go: bool | None, mark):
    """After one exact iteration: the body's summary when the plan and the values allow it, the fixed point
    when nothing could ever decide a data-dependent exit, a settled state when the index sets stopped
    moving; ``None`` to go on iterating."""
    moving = [not same_constant(a.const, b.const) and not (a.const is None and b.const is None)
              for a, b in zip(carry, new)]
    if w.plan is not None and go is True and w.exits is None and _stable(carry, new, w.plan.counters):
        summarized = _summarize(ctx, op, w.plan, new, w.steps)
        if summarized is not None:
            return summarized
        w.plan = None  # the values do not allow a summary: iterate exactly
    if w.exits is not None and not any(moving):
        # A data-dependent exit and no constant that could ever decide it: exact iterates would only
        # re-derive the fixed point (and could cycle, e.g. a repeated roll), so go there directly.
        return _fixed_point(ctx, op, op.regions[0], op.regions[1], w.with_exits(new), mark)
    if _deps_unchanged(carry, new) and w.steps >= w.next_try:
        if w.needed is None:
            w.needed = _consts_needed(op)
        if w.exits is not None or not any(m and nd for m, nd in zip(moving, w.needed)):
            settled = _settle(ctx, op.regions[0], op.regions[1], [join(a, b) for a, b in zip(carry, new)], mark)
            if settled is not None:
                return w.with_exits(settled)
        w.next_try, w.retry = w.steps + w.retry, w.retry * 2
    return None


# ---------------------------------------------------------------- case / if
def _join_branches(ctx, regions) -> list[AbstractValue]:
    outs = [ctx.run_region(r, []) for r in regions]
    result = list(outs[0])
    for o in outs[1:]:
        result = [join(a, b) for a, b in zip(result, o)]
    return result


@deps_rule("stablehlo.case", kind=VALUE_AWARE, note="a known index runs one branch, else the join of the branches")
def _case(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§case: a known index selects one branch (out of range ⇒ the last); else the join over branches."""
    branches = list(op.regions)
    (index,) = args
    if index.const is not None:
        i = int(np.asarray(index.const).reshape(-1)[0])
        if not 0 <= i < len(branches):
            i = len(branches) - 1
        return ctx.run_region(branches[i], [])
    return _join_branches(ctx, branches)


@deps_rule("stablehlo.if", kind=VALUE_AWARE, note="a known predicate runs one branch, else the join")
def _if(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§if: a known predicate selects ``true_branch`` or ``false_branch``; else their join."""
    (pred,) = args
    true_branch, false_branch = op.regions[0], op.regions[1]
    if pred.const is not None:
        return ctx.run_region(true_branch if bool(np.asarray(pred.const).reshape(-1)[0]) else false_branch, [])
    return _join_branches(ctx, [true_branch, false_branch])


# ---------------------------------------------------------------- optimization_barrier
@deps_rule("stablehlo.optimization_barrier", kind=EXACT, note="identity")
def _optimization_barrier(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§optimization_barrier: the identity on every operand (index sets and constants pass through)."""
    return list(args)


__all__ = ["join", "captured_values"]
