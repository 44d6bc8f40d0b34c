"""Ops that run another computation: ``func.call``, §composite, §map.

* ``func.call`` analyzes the callee on the caller's lattices (memoized per callee and argument lattice by
  the interpreter, since JAX emits the same private function many times, e.g. for ``jnp.roll``).
* §composite: the op means its ``decomposition`` function, analyzed through the same call machinery.
* §map: elementwise; the union over the operands its computation reaches (read off the body once, by a
  symbolic run).
"""

from __future__ import annotations


from ...ir.attrs import symbol_ref
from ...ir.helpers import region_captures
from ...lattice import Deps
from ..values import AbstractValue, tensor_type
from .reduction import symbolic_captures
from .registry import EXACT, deps_rule
from .registry import RuleContext, Op, DepsResult  # the rule contract


@deps_rule("func.call", kind=EXACT, note="the callee on the caller's lattices (memoized)")
def _call(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    return ctx.call(symbol_ref(op, "callee"), args)


@deps_rule("stablehlo.composite", kind=EXACT, note="its decomposition function")
def _composite(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§composite: the op *is* its ``decomposition`` function."""
    return ctx.call(symbol_ref(op, "decomposition"), args)


@deps_rule("stablehlo.map", kind=EXACT, note="union of the operands the computation reaches")
def _map(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§map: ``result[e] = computation(inputs…[e])`` — the union over the operands the computation reaches
    (found by running it once on symbolic scalars: operand ``i`` is column ``i`` of a ``k + 1``-column
    lattice, the last column standing for values captured from the enclosing region)."""
    (t,) = ctx.result_types(op)
    region = op.regions[0]
    k = len(args)
    width = k + 1
    outer_env, captured = symbolic_captures(ctx, region_captures(region), width)
    block = list(region.blocks)[0]
    sym = []
    for i, ba in enumerate(block.arguments):
        bt = tensor_type(ba.type)
        sym.append(AbstractValue(bt, Deps.identity(1, width, i).broadcast_row(bt.size)))
    (res,) = ctx.interpret_symbolically(region, sym, outer_env, width)
    reach = set(res.deps.reduce_all().to_csr().indices.tolist()) if not res.deps.is_empty else set()
    parts = [args[i].deps for i in range(k) if i in reach and not args[i].deps.is_empty]
    if k in reach:
        parts += [c.deps.reduce_all().broadcast_row(t.size) for c in captured if not c.deps.is_empty]
    return [Deps.union(*parts) if parts else ctx.empty(t.size)]
