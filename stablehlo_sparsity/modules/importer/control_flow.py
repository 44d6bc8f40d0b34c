"""Control flow: §while, §case, §if, §optimization_barrier (calls are in :mod:`.calls`)."""

from __future__ import annotations

import numpy as np

from .core import ImportContext, Op, Values, import_rule, jax_lax


@import_rule("stablehlo.while")
def _while(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§while: ``lax.while_loop`` over the tuple of operands (cond and body replayed from their regions)."""
    cond = ctx.region_fn(op.regions[0])
    body = ctx.region_fn(op.regions[1])
    out = jax_lax().while_loop(lambda c: cond(*c)[0], lambda c: tuple(body(*c)), tuple(args))
    return list(out)


@import_rule("stablehlo.case")
def _case(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§case: ``lax.switch``; an out-of-range index (negative included) runs the *last* branch, as the spec
    says, where ``lax.switch`` would clamp a negative one to the first."""
    lax = jax_lax()
    (index,) = args
    fns = [ctx.region_fn(r) for r in op.regions]
    n = len(fns)
    if n == 1:
        return list(fns[0]())
    dt = np.dtype(index.dtype)
    last = np.array(n - 1, dt)
    oob = lax.bitwise_or(lax.lt(index, np.array(0, dt)), lax.ge(index, np.array(n, dt)))
    idx = lax.select(oob, last, index)
    return list(lax.switch(idx, [lambda f=f: tuple(f()) for f in fns]))


@import_rule("stablehlo.if")
def _if(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§if: ``lax.cond`` on the predicate (branches take no operands; they read the enclosing values)."""
    (pred,) = args
    t, f = (ctx.region_fn(r) for r in op.regions)
    return list(jax_lax().cond(pred, lambda: tuple(t()), lambda: tuple(f())))


@import_rule("stablehlo.optimization_barrier")
def _optimization_barrier(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§optimization_barrier: ``lax.optimization_barrier`` (the identity, kept as a barrier)."""
    if not args:
        return []
    return list(jax_lax().optimization_barrier(tuple(args)))


