"""§sort with any comparator, and ``chlo.top_k``.

``lax.sort`` only knows JAX's own lexicographic comparator, while a module may hold any (descending,
``FLOAT`` instead of ``TOTALORDER``, a key built from several operands).  So the sort is replayed in two
steps: a primitive, ``shs_sort_permutation``, sorts the operands plus an ``iota`` with the module's
comparator (replayed into the comparator region at lowering time) and returns the permutation; each result
is then the operand gathered by that permutation — the same values, and JAX differentiates the gather.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import bool_attr, int_attr
from .bodies import captures
from .core import ImportContext, Op, Values, import_rule

_PRIM = None


class _Comparator:
    """A hashable handle on a comparator function (primitive parameters must hash)."""

    def __init__(self, fn):
        self.fn = fn

    def __hash__(self):
        return id(self)

    def __eq__(self, other):
        return self is other


def _prim():
    global _PRIM
    if _PRIM is not None:
        return _PRIM
    from jax._src.interpreters import mlir
    from jax.core import ShapedArray
    from jax.extend.core import Primitive
    from jax._src.interpreters import ad
    from jax.interpreters import batching
    from jaxlib.mlir import ir
    from jaxlib.mlir.dialects import stablehlo as hlo

    p = Primitive("shs_sort_permutation")

    def impl(*args, **params):
        from jax._src import dispatch

        return dispatch.apply_primitive(p, *args, **params)

    p.def_impl(impl)
    p.def_abstract_eval(lambda *ops, dimension, is_stable, comparator: ShapedArray(ops[0].shape, np.int32))

    def lowering(ctx, *operands, dimension, is_stable, comparator):
        shape = ctx.avals_in[0].shape
        iota_aval = ShapedArray(shape, np.int32)
        iota = hlo.iota(mlir.aval_to_ir_type(ctx.module_context, iota_aval), mlir.i64_attr(dimension))
        ops = list(operands) + [iota]
        avals = list(ctx.avals_in) + [iota_aval]
        sort = hlo.SortOp([mlir.aval_to_ir_type(ctx.module_context, a) for a in avals], ops,
                          dimension=mlir.i64_attr(dimension), is_stable=ir.BoolAttr.get(is_stable))
        scalars = [ShapedArray((), a.dtype) for a in avals]
        types = [mlir.aval_to_ir_type(ctx.module_context, a) for a in scalars]
        block = sort.comparator.blocks.append(*[t for t in types for _ in (0, 1)])
        with ir.InsertionPoint(block):
            k = len(operands)
            fn = mlir.lower_fun(lambda *xs: comparator.fn(*xs), multiple_results=False)
            in_avals = [a for a in scalars[:k] for _ in (0, 1)]
            sub = ctx.replace(primitive=None, avals_in=in_avals, avals_out=[ShapedArray((), np.bool_)])
            out = fn(sub, *list(block.arguments)[:2 * k])
            flat, _ = mlir.ir_tree_registry.flatten(out)
            hlo.return_(flat)
        return [sort.results[-1]]

    mlir.register_lowering(p, lowering)
    ad.defjvp_zero(p)

    def batch_rule(args, dims, *, dimension, is_stable, comparator):
        size = next(a.shape[d] for a, d in zip(args, dims) if d is not batching.not_mapped)
        from jax import lax

        moved = [lax.broadcast(a, (size,)) if d is batching.not_mapped else batching.moveaxis(a, d, 0)
                 for a, d in zip(args, dims)]
        return p.bind(*moved, dimension=dimension + 1, is_stable=is_stable, comparator=comparator), 0

    batching.primitive_batchers[p] = batch_rule
    _PRIM = p
    return p


@import_rule("stablehlo.sort")
def _sort(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§sort along ``dimension`` with the module's comparator: the permutation, then one gather per operand."""
    import jax.numpy as jnp
    from jax import lax

    region = op.regions[0]
    if captures(region):
        raise ctx.error(op, "the comparator reads values from outside its region")
    rank = np.ndim(args[0])
    dim = int_attr(op, "dimension", -1)
    dim = dim + rank if dim < 0 else dim
    stable = bool_attr(op, "is_stable")
    fn = ctx.region_fn(region)
    keys = [lax.stop_gradient(a) for a in args]
    perm = _prim().bind(*keys, dimension=dim, is_stable=stable, comparator=_Comparator(lambda *xs: fn(*xs)[0]))
    return [jnp.take_along_axis(a, perm, axis=dim, mode="promise_in_bounds") if np.size(a) else a for a in args]


@import_rule("chlo.top_k")
def _top_k(ctx: ImportContext, op: Op, args: Values) -> Values:
    """``chlo.top_k``: the ``k`` largest along the last dimension, and their indices (``lax.top_k``)."""
    from jax import lax

    values, idx = lax.top_k(args[0], int_attr(op, "k"))
    (_, it) = ctx.result_types(op)
    return [values, lax.convert_element_type(idx, it.dtype)]
