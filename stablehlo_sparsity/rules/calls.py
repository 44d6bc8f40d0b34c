"""Calls: ``func.call`` analyzes the callee on the caller's lattices (memoized per callee and argument
lattice by the interpreter, since JAX emits the same private function many times, e.g. for ``jnp.roll``)."""

from __future__ import annotations

from jaxlib.mlir import ir

from .registry import deps_rule


@deps_rule("func.call")
def _call(ctx, op, args):
    callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
    return ctx.call(callee, args)
