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

Three ways out of the exact iterations, all sound:

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

import numpy as np

from ..folding.exactness import join as join_uncertainty
from ..folding.exactness import same_uncertainty
from ..irtools import region_captures
from ..lattice import Deps, cheap_nnz, deps_equal
from ..values import AbstractValue, is_differentiable, same_constant
from .registry import EXACT, VALUE_AWARE, deps_rule



# ---------------------------------------------------------------- the join of abstract values
def _parts_subset(sub: Deps, sup: Deps) -> bool:
    """Cheap check that ``sub ⊆ sup`` because every lazy part of ``sub`` is literally a part of ``sup``."""
    if sub is sup or sub.is_empty:
        return True
    ids = {id(p) for p in sup.parts}
    return all(id(p) in ids for p in sub.parts)


def join(a: AbstractValue, b: AbstractValue) -> AbstractValue:
    """``a ⊔ b``: index sets united; the constant kept only where both agree (two different constants join
    to unknown)."""
    if a is b:
        return a
    deps = a.deps if _parts_subset(b.deps, a.deps) else (b.deps if _parts_subset(a.deps, b.deps)
                                                          else Deps.union(a.deps, b.deps))
    const = a.const if same_constant(a.const, b.const) else None
    # the same folded bits with different error bounds: widen (folding/exactness.py), so loops settle
    uncertainty = join_uncertainty(a.uncertainty, b.uncertainty) if const is not None else None
    if deps is a.deps and const is a.const and uncertainty is a.uncertainty:
        return a
    return AbstractValue(a.type, deps, const, uncertainty)


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
    (res,) = ctx.run_region(cond, carry)
    if res.const is None:
        return None
    return bool(np.asarray(res.const).reshape(-1)[0])


def _run_body(ctx, body, carry, mark):
    out = ctx.run_region(body, carry)
    ctx.call_cache_trim(mark)
    return list(out)


def _mark(ctx):
    return ctx.call_cache_mark()


def captured_values(ctx, op) -> list[AbstractValue]:
    """Abstract values the regions of ``op`` read from outside ``op``."""
    return [ctx.value(v) for v in region_captures(op)]


# ---------------------------------------------------------------- while
def _fixed_point(ctx, op, cond, body, state: list[AbstractValue], mark) -> list[AbstractValue]:
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


def _loop_top(ctx, op, state):
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
        return "sym_visibility" in fn.attributes and "private" in str(fn.attributes["sym_visibility"])
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


@deps_rule("stablehlo.while", kind=VALUE_AWARE, note="exact iterations while the condition is a known constant, else a fixed point (sound)")
def _while(ctx, op, args):
    """§while: exact abstract iterations; possible exits joined; early stop, cap and fixed point as in the
    module docstring."""
    cond, body = op.regions[0], op.regions[1]
    carry = list(args)
    mark = _mark(ctx)
    cap = ctx.options.max_loop_iterations
    needed = None
    exits = None  # join of the carries at which the loop may stop (the condition was unknown there)
    steps, next_try, retry = 0, 0, 1  # exponential back-off after a failed attempt to settle

    def with_exits(state):
        return state if exits is None else [join(e, c) for e, c in zip(exits, state)]

    while True:
        go = _condition(ctx, cond, carry)
        if go is False:
            return with_exits(carry)
        if go is None:
            grown = with_exits(carry)
            if exits is not None and not any(_grew(e, g) for e, g in zip(exits, grown)):
                # This iterate adds nothing to the possible exits (the iterates cycle, or the pattern is
                # full): the fixed point from here covers every later one.
                return _fixed_point(ctx, op, cond, body, grown, mark)
            exits = grown
        if steps >= cap:
            break
        new = _run_body(ctx, body, carry, mark)
        steps += 1
        moving = [not same_constant(a.const, b.const) and not (a.const is None and b.const is None)
                  for a, b in zip(carry, new)]
        if exits is not None and not any(moving):
            # A data-dependent exit and no constant that could ever decide it: exact iterates would only
            # re-derive the fixed point (and could cycle, e.g. a repeated roll), so go there directly.
            return _fixed_point(ctx, op, cond, body, with_exits(new), mark)
        if _deps_unchanged(carry, new) and steps >= next_try:
            if needed is None:
                needed = _consts_needed(op)
            if exits is not None or not any(m and nd for m, nd in zip(moving, needed)):
                settled = _settle(ctx, cond, body, [join(a, b) for a, b in zip(carry, new)], mark)
                if settled is not None:
                    return with_exits(settled)
            next_try, retry = steps + retry, retry * 2
        carry = new
    return _fixed_point(ctx, op, cond, body, with_exits(carry), mark)


# ---------------------------------------------------------------- case / if
def _join_branches(ctx, regions) -> list[AbstractValue]:
    outs = [ctx.run_region(r, []) for r in regions]
    result = list(outs[0])
    for o in outs[1:]:
        result = [join(a, b) for a, b in zip(result, o)]
    return result


@deps_rule("stablehlo.case", kind=VALUE_AWARE, note="a known index runs one branch, else the join of the branches")
def _case(ctx, op, args):
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
def _if(ctx, op, args):
    """§if: a known predicate selects ``true_branch`` or ``false_branch``; else their join."""
    (pred,) = args
    true_branch, false_branch = op.regions[0], op.regions[1]
    if pred.const is not None:
        return ctx.run_region(true_branch if bool(np.asarray(pred.const).reshape(-1)[0]) else false_branch, [])
    return _join_branches(ctx, [true_branch, false_branch])


# ---------------------------------------------------------------- optimization_barrier
@deps_rule("stablehlo.optimization_barrier", kind=EXACT, note="identity")
def _optimization_barrier(ctx, op, args):
    """§optimization_barrier: the identity on every operand (index sets and constants pass through)."""
    return list(args)


__all__ = ["join", "captured_values"]
