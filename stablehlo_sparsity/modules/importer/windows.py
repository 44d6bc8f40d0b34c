"""Windows: §reduce_window and §select_and_scatter.

A body that is one monoid of its two arguments (with an identity init value) is replayed with the ``jax.lax``
windowed reduction JAX differentiates efficiently; any other body is replayed as a Python function of its
scalar arguments (see :mod:`.reduction`)."""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from ...ir.attrs import dense_attr, enum_or, enum_text, has_attr, i64_list
from .bodies import binary_body, captures
from .core import ImportContext, Op, Values, import_rule, jax_lax
from ...dtypes import is_float
from .reduction import computation, monoid


def window_attrs(op: Op, rank: int) -> tuple[Any, ...]:
    ones = [1] * rank
    wdims = tuple(i64_list(op, "window_dimensions"))
    strides = tuple(i64_list(op, "window_strides", ones))
    base = tuple(i64_list(op, "base_dilations", ones))
    wdil = tuple(i64_list(op, "window_dilations", ones))
    if has_attr(op, "padding"):
        pad = np.asarray(dense_attr(op, "padding"), dtype=np.int64).reshape(rank, 2)
    else:
        pad = np.zeros((rank, 2), np.int64)
    return wdims, strides, base, wdil, tuple((int(a), int(b)) for a, b in pad)


@import_rule("stablehlo.reduce_window")
def _reduce_window(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§reduce_window (variadic; strides, base and window dilations, padding; any body)."""
    lax = jax_lax()
    n = len(args) // 2
    inputs, inits = args[:n], args[n:]
    wdims, strides, base, wdil, pad = window_attrs(op, np.ndim(inputs[0]))
    region = op.regions[0]
    if n == 1:
        m = monoid(region, inputs[0].dtype)
        if m is not None and isinstance(inits[0], np.ndarray) and _is_window_monoid(m, inits[0]):
            return [lax.reduce_window(inputs[0], inits[0], m, wdims, strides, pad, base, wdil)]
        if m is not None and is_float(inputs[0].dtype) and m in (lax.add, lax.max, lax.min):
            return [window_monoid_with_init(m, inputs[0], inits[0], (wdims, strides, pad, base, wdil))]
    return generic_reduce_window(ctx, op, region, inputs, inits, (wdims, strides, pad, base, wdil))


def window_monoid_with_init(m: Callable[..., Any], x: Any, init: Any, geometry: tuple[Any, ...]) -> Any:
    """A sum / max / min §reduce_window whose init value is not the monoid's identity (or not a constant), as
    the spec defines it: the padding and the base dilation's holes hold the init value, and each window's
    reduction starts from it.  So: pad with the init explicitly, reduce with JAX's windowed monoid (identity
    init, whose derivative rule is one window op — ``select_and_gather_add`` for max/min — whatever the window
    size), then combine with the init once."""
    import jax.numpy as jnp
    from jax._src.lax import lax as lax_internal

    lax = jax_lax()
    wdims, strides, pad, base, wdil = geometry
    init = jnp.asarray(init, x.dtype)
    cfg = [(lo, hi, b - 1) for (lo, hi), b in zip(pad, base)]
    padded = lax.pad(x, init, cfg) if any(c != (0, 0, 0) for c in cfg) else x
    identity = {lax.add: np.zeros((), x.dtype), lax.max: lax_internal._get_max_identity(x.dtype),
                lax.min: lax_internal._get_min_identity(x.dtype)}[m]
    ones = (1,) * np.ndim(x)
    zero_pad = ((0, 0),) * np.ndim(x)
    red = lax.reduce_window(padded, np.asarray(identity, x.dtype), m, wdims, strides, zero_pad, ones, wdil)
    return m(red, lax.broadcast(init, np.shape(red)))


def _is_window_monoid(fn: Callable[..., Any], init: Any) -> bool:
    """JAX's own windowed monoids (sum, max, min with their identity), which have derivative rules."""
    lax = jax_lax()
    from jax._src.lax import lax as lax_internal

    v = np.asarray(init)
    if fn is lax.add:
        return bool(v == 0)
    if fn is lax.max:
        return bool(v == lax_internal._get_max_identity(v.dtype))
    if fn is lax.min:
        return bool(v == lax_internal._get_min_identity(v.dtype))
    return False


def generic_reduce_window(ctx: ImportContext, op: Op, region: Any, inputs: Values, inits: Values,
                          geometry: tuple[Any, ...]) -> list[Any]:
    """A §reduce_window with any body (a product, argmax-style pairs, a runtime init): ``lax.reduce_window``
    emits it as is; its derivative is the JVP of the spec's definition written out — pad with the init (edge
    and base dilation), the windows' reductions by :func:`windows_by_doubling` (a number of body applications
    logarithmic in the window size), then the body applied to the init (JAX's generic reduce_window JVP cannot
    be batched by ``vmap``)."""
    import jax

    lax = jax_lax()
    n = len(inputs)
    wdims, strides, pad, base, wdil = geometry
    comp = computation(ctx, op, region, n)
    body = ctx.region_fn(region)
    m = monoid(region, inputs[0].dtype) if n == 1 else None

    @jax.custom_jvp
    def red(*xs: Any) -> tuple[Any, ...]:
        if n == 1:
            return (lax.reduce_window(xs[0], xs[1], m if m is not None else comp, wdims, strides, pad, base, wdil),)
        return tuple(lax.reduce_window(tuple(xs[:n]), tuple(xs[n:]), comp, wdims, strides, pad, base, wdil))

    @red.defjvp
    def red_jvp(primals: Values, tangents: Values) -> tuple[Any, Any]:
        out = red(*primals)
        diff = [i for i, p in enumerate(primals) if is_float(p.dtype)]
        out_shape = np.shape(out[0])

        def spelled_out(*vals: Any) -> tuple[Any, ...]:
            full = list(primals)
            for i, v in zip(diff, vals):
                full[i] = v
            xs, inits_ = full[:n], full[n:]
            cfg = [(lo, hi, b - 1) for (lo, hi), b in zip(pad, base)]
            padded = [lax.pad(x, i, cfg) for x, i in zip(xs, inits_)]
            res = windows_by_doubling(lambda *a: tuple(body(*a)), padded, wdims, wdil, strides, out_shape)
            flat = int(np.prod(out_shape, dtype=np.int64))
            step = jax.vmap(lambda *a: tuple(body(*a)))
            init_b = [lax.broadcast(i, (flat,)) for i in inits_]
            res = list(step(*init_b, *[lax.reshape(r, (flat,)) for r in res]))
            return tuple(lax.reshape(r, out_shape) for r in res)

        _, tans = jax.jvp(spelled_out, [primals[i] for i in diff], [tangents[i] for i in diff])
        return out, tuple(t if is_float(o.dtype) else np.zeros(np.shape(o), jax.dtypes.float0)
                          for t, o in zip(tans, out))

    return list(red(*inputs, *inits))


def windows_by_doubling(step: Callable[..., Any], padded: Values, wdims: Sequence[int], wdil: Sequence[int],
                        strides: Sequence[int], out_shape: Sequence[int]) -> list[Any]:
    """Every window's reduction of the (already padded) operands, one dimension after the other, each by binary
    lifting: reductions of 2, 4, 8 … consecutive taps are built by one application of the body each, and a
    window of ``w`` taps combines the blocks of ``w``'s binary digits — O(log w) body applications per
    dimension instead of ``w`` (the body is associative and commutative, as §reduce_window's schedule
    requires).  Returns the strided windows, shaped ``out_shape``."""
    import jax

    lax = jax_lax()
    vstep = jax.vmap(step)

    def apply(a: Values, b: Values) -> list[Any]:
        shape = np.shape(a[0])
        flat = int(np.prod(shape, dtype=np.int64))
        out = vstep(*[lax.reshape(x, (flat,)) for x in a], *[lax.reshape(x, (flat,)) for x in b])
        return [lax.reshape(o, shape) for o in out]

    cur_all = list(padded)
    for d, (w, dil) in enumerate(zip(wdims, wdil)):
        length = np.shape(cur_all[0])[d]
        dense = length - (w - 1) * dil
        if dense <= 0 or w == 1:
            continue
        block, size, offset = list(cur_all), 1, 0
        acc: list[Any] | None = None
        remaining = w
        while remaining:
            if remaining & 1:
                piece = [lax.slice_in_dim(x, offset * dil, offset * dil + dense, axis=d) for x in block]
                acc = piece if acc is None else apply(acc, piece)
                offset += size
            remaining >>= 1
            if remaining:
                m = np.shape(block[0])[d] - size * dil
                block = apply([lax.slice_in_dim(x, 0, m, axis=d) for x in block],
                              [lax.slice_in_dim(x, size * dil, size * dil + m, axis=d) for x in block])
                size *= 2
        assert acc is not None  # w >= 2 has a set bit
        cur_all = acc
    limit = [s0 + (o - 1) * st + 1 if o else 0 for s0, o, st in zip([0] * len(out_shape), out_shape, strides)]
    return [lax.slice(x, [0] * len(out_shape), limit, strides) for x in cur_all]


def _select_direction(region: Any) -> str | None:
    """``"GE"`` / ``"LE"`` (…) when the select body is ``compare DIR arg0, arg1`` (FLOAT or TOTALORDER)."""
    b = binary_body(region)
    if b is None or b[0] != "stablehlo.compare" or (b[1], b[2]) != (0, 1):
        return None
    cmp = b[3]
    ctype = enum_or(cmp, "compare_type", "FLOAT")
    if ctype != "FLOAT":
        return None
    return enum_text(cmp, "comparison_direction")


@import_rule("stablehlo.select_and_scatter")
def _select_and_scatter(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§select_and_scatter.  The max/min-pooling gradient form (select ``GE`` / ``LE``, scatter ``add``, init 0)
    is JAX's ``select_and_scatter_add`` (with derivative rules); any other bodies replay as the generic op."""
    from jax._src.lax import windowed_reductions as wr

    lax = jax_lax()
    operand, source, init = args
    rank = np.ndim(operand)
    wdims, strides, _, _, pad = window_attrs(op, rank)
    select, scatter = op.regions[0], op.regions[1]
    direction = _select_direction(select)
    add = binary_body(scatter)
    zero_init = isinstance(init, np.ndarray) and not np.any(init)
    if direction in ("GE", "LE") and add is not None and add[0] == "stablehlo.add" and zero_init \
            and not captures(select) and not captures(scatter):
        prim = lax.ge_p if direction == "GE" else lax.le_p
        return [wr._select_and_scatter_add(source, operand, prim, wdims, strides, pad)]
    sel = ctx.region_fn(select)
    sca = ctx.region_fn(scatter)
    return [wr._select_and_scatter(operand, lambda a, b: sel(a, b)[0], wdims, strides, pad, source, init,
                                   lambda a, b: sca(a, b)[0])]
