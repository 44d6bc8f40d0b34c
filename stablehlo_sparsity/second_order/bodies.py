"""Ops whose arithmetic is a region: §reduce, §reduce_window, §scatter, §select_and_scatter, §map, and the
collectives' reductions.

The op applies its body to elements; if the body is *piecewise linear* — built only from add, subtract,
negate, max, min, select, compare, convert, constants and the logical ops (a sum, a max-pool, argmax's
value/index pair, a scatter that overwrites or adds) — the result element is locally a linear combination of
the elements it reads, and its interactions are the union of theirs, which the first-order rule already
computed.  Any other body (a product, ``jnp.prod``, a logsumexp written as a body) takes the full term.
"""

from __future__ import annotations

import numpy as np

from ..attrs import i64_list
from ..lattice import Deps
from ..lattice.core import check_nnz
from ..rules.reduction import simple_body
from .encoding import pair_rows
from .registry import BODY, local_term
from .terms import full_term

__all__ = ["PIECEWISE_LINEAR_BODY_OPS", "piecewise_linear"]

#: Ops a piecewise-linear body may contain (terminators included).
PIECEWISE_LINEAR_BODY_OPS = frozenset({
    "stablehlo.add", "stablehlo.subtract", "stablehlo.negate", "stablehlo.maximum", "stablehlo.minimum",
    "stablehlo.select", "stablehlo.compare", "stablehlo.convert", "stablehlo.constant", "stablehlo.and",
    "stablehlo.or", "stablehlo.xor", "stablehlo.not", "stablehlo.return", "stablehlo.clamp", "stablehlo.abs",
    "stablehlo.real", "stablehlo.imag", "stablehlo.complex", "stablehlo.broadcast_in_dim", "stablehlo.reshape",
})


def piecewise_linear(region) -> bool:
    """Every op of the region (nested regions included) is in :data:`PIECEWISE_LINEAR_BODY_OPS`."""
    for block in region.blocks:
        for op in block.operations:
            if op.operation.name not in PIECEWISE_LINEAR_BODY_OPS:
                return False
            for inner in op.regions:
                if not piecewise_linear(inner):
                    return False
    return True


def _by_body(ctx, op, args, results):
    memo = ctx.memo("second_order_bodies")
    key = op.operation
    if key not in memo:
        memo[key] = all(piecewise_linear(r) for r in op.regions)
    if memo[key]:
        return [None] * len(results)
    return full_term(ctx, op, args, results)


def _product_pairs(ctx, op, x) -> Deps:
    """``Π_i y_i`` over each group of a §reduce: ``∂²/∂y_i∂y_j`` is nonzero only for ``i ≠ j`` (a product of
    distinct factors is linear in each), so each output adds ``∪_{i≠j} S_i × S_j``; every ``H(y_i)`` is passed
    on by the first-order rule (the group union)."""
    dims = [int(d) for d in i64_list(op, "dimensions")]
    shape = tuple(x.shape)
    keep = [d for d in range(len(shape)) if d not in dims]
    out_shape = tuple(shape[d] for d in keep)
    k_out = int(np.prod(out_shape, dtype=np.int64))
    idx = np.indices(shape).reshape(len(shape), -1)
    group = np.ravel_multi_index(idx[keep], out_shape) if keep else np.zeros(x.size, np.int64)
    s = ctx.first_order(x)
    live = np.flatnonzero(np.diff(s.indptr) > 0)           # factors that depend on something
    g = group[live]
    order = np.argsort(g, kind="stable")
    members, g = live[order], g[order]
    sizes = np.bincount(g, minlength=k_out)
    start = np.zeros(k_out + 1, np.int64)
    np.cumsum(sizes, out=start[1:])
    reps = sizes[g]                                          # each member pairs with every member of its group
    check_nnz(int(reps.sum()), "the factor pairs of a product")
    i = np.repeat(np.arange(len(members), dtype=np.int64), reps)
    first = np.zeros(len(members), np.int64)
    np.cumsum(reps[:-1], out=first[1:])
    j = start[g][i] + (np.arange(len(i), dtype=np.int64) - first[i])
    distinct = i != j
    i, j = i[distinct], j[distinct]
    return pair_rows(g[i], k_out, s, members[i], s, members[j], ctx.n_first)


def _reduce(ctx, op, args, results):
    """§reduce: a piecewise-linear body adds nothing; a one-operand product (``jnp.prod``) with a known init
    adds the pairs of distinct factors; any other body, the full term."""
    k = len(args) // 2
    if k == 1 and not args[0].deps.is_empty and args[1].deps.is_empty \
            and simple_body(op.regions[0], 1) == [np.multiply]:
        return [_product_pairs(ctx, op, args[0])]
    return _by_body(ctx, op, args, results)


local_term("stablehlo.reduce", kind=BODY,
           note="nothing when the body is piecewise linear (sum, max, argmax); a product: pairs of distinct "
                "factors; else full")(_reduce)
local_term("stablehlo.reduce_window", "stablehlo.scatter", "stablehlo.select_and_scatter",
           "stablehlo.map", "stablehlo.all_reduce", "stablehlo.reduce_scatter", kind=BODY,
           note="nothing when the body is piecewise linear (sum, max, overwrite), else full")(_by_body)
