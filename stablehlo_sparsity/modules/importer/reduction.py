"""Reductions: §reduce.

A body that is one ``add`` / ``multiply`` / ``maximum`` / ``minimum`` / ``and`` / ``or`` / ``xor`` of its two
arguments is replayed with that ``jax.lax`` function *itself*: JAX recognizes it (with an identity init
value) as its monoid reduction, whose derivative rules are the efficient ones, and lowers it to the same
StableHLO op.  Any other body (argmax's two-operand comparison, a custom combiner) is replayed as a
Python function of its scalar arguments: ``lax.reduce`` traces it into the region of the op it emits.  The
windowed twins are in :mod:`.windows`.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...ir.attrs import i64_list
from .bodies import binary_body
from .core import ImportContext, Op, Values, import_rule, jax_lax
from ...dtypes import is_float


_MONOIDS = {"stablehlo.add": ("add", "bitwise_or"), "stablehlo.multiply": ("mul", "bitwise_and"),
            "stablehlo.maximum": ("max", "bitwise_or"), "stablehlo.minimum": ("min", "bitwise_and"),
            "stablehlo.and": ("bitwise_and", "bitwise_and"), "stablehlo.or": ("bitwise_or", "bitwise_or"),
            "stablehlo.xor": ("bitwise_xor", "bitwise_xor")}


def monoid(region: Any, dtype: Any) -> Callable[..., Any] | None:
    """The ``jax.lax`` function a two-argument body applies to ``(arg0, arg1)`` (either order), else None."""
    b = binary_body(region)
    if b is None or {b[1], b[2]} != {0, 1} or len(list(region.blocks)[0].arguments) != 2:
        return None
    names = _MONOIDS.get(b[0])
    if names is None:
        return None
    fn: Callable[..., Any] = getattr(jax_lax(), names[1] if np.dtype(dtype) == np.bool_ else names[0])
    return fn


def computation(ctx: ImportContext, op: Op, region: Any, n: int) -> Callable[..., Any]:
    """``(accumulators, elements) -> results`` as ``lax.reduce`` calls it, replaying the region."""
    fn = ctx.region_fn(region)
    if n == 1:
        return lambda a, b: fn(a, b)[0]
    return lambda a, b: tuple(fn(*a, *b))


@import_rule("stablehlo.reduce")
def _reduce(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§reduce over ``dimensions`` (variadic; any body)."""
    lax = jax_lax()
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    dims = tuple(i64_list(op, "dimensions"))
    region = op.regions[0]
    if n == 1:
        m = monoid(region, inputs[0].dtype)
        if m is not None and isinstance(inits[0], np.ndarray):  # JAX's monoid reductions (derivative rules)
            return [lax.reduce(inputs[0], inits[0], m, dims)]
    return generic_reduce(ctx, op, region, inputs, inits, dims)


def generic_reduce(ctx: ImportContext, op: Op, region: Any, inputs: Values, inits: Values,
                   dims: Sequence[int]) -> list[Any]:
    """A variadic §reduce with any body: ``lax.reduce`` emits it as is; its derivative is the JVP of a pairwise
    tree of body applications (JAX's own rule for a generic reduce, which however cannot take the integer
    operands of an argmax-style reduction)."""
    import jax

    lax = jax_lax()
    n = len(inputs)
    comp = computation(ctx, op, region, n)
    body = ctx.region_fn(region)

    m = monoid(region, inputs[0].dtype) if n == 1 else None

    @jax.custom_jvp
    def red(*xs: Any) -> tuple[Any, ...]:
        if n == 1:
            return (lax.reduce(xs[0], xs[1], m if m is not None else comp, dims),)
        return tuple(lax.reduce(tuple(xs[:n]), tuple(xs[n:]), comp, dims))

    @red.defjvp
    def red_jvp(primals: Values, tangents: Values) -> tuple[Any, Any]:
        out = red(*primals)
        diff = [i for i, p in enumerate(primals) if is_float(p.dtype)]

        def tree(*vals: Any) -> tuple[Any, ...]:
            full = list(primals)
            for i, v in zip(diff, vals):
                full[i] = v
            return tuple(tree_reduce(body, full[:n], full[n:], dims))

        _, tans = jax.jvp(tree, [primals[i] for i in diff], [tangents[i] for i in diff])
        return out, tuple(t if is_float(o.dtype) else np.zeros(np.shape(o), jax.dtypes.float0)
                          for t, o in zip(tans, out))

    return list(red(*inputs, *inits))


def tree_reduce(body: Callable[..., Any], xs: Values, inits: Values, dims: Sequence[int]) -> list[Any]:
    """§reduce as a pairwise tree of body applications over the elements (vectorized over the kept dimensions),
    then one application to the init values — the spec's schedule, in one of its admissible orders."""
    import jax

    lax = jax_lax()
    shape = np.shape(xs[0])
    keep = [d for d in range(len(shape)) if d not in dims]
    k = int(np.prod([shape[d] for d in dims], dtype=np.int64))
    new_shape = (k,) + tuple(shape[d] for d in keep)
    xs = [lax.reshape(x, new_shape, tuple(dims) + tuple(keep)) for x in xs]
    step = lambda *a: tuple(body(*a))  # noqa: E731
    for _ in range(len(keep)):
        step = jax.vmap(step)
    inits_b = [lax.broadcast(i, new_shape[1:]) for i in inits]
    if k == 0:
        return inits_b
    pair = jax.vmap(step)
    while xs[0].shape[0] > 1:
        m = xs[0].shape[0]
        h = m // 2
        a = [lax.slice_in_dim(x, 0, h) for x in xs]
        b = [lax.slice_in_dim(x, h, 2 * h) for x in xs]
        out = list(pair(*a, *b))
        if m % 2:  # the odd element waits for the next level
            out = [lax.concatenate([o, lax.slice_in_dim(x, 2 * h, m)], 0) for o, x in zip(out, xs)]
        xs = out
    return list(step(*inits_b, *[lax.squeeze(x, (0,)) for x in xs]))


