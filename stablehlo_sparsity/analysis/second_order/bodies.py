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

from ...lattice import Deps
from ...lattice.core import check_nnz, make_csr
from ..values import AbstractValue
from ..rules.reduction import PIECEWISE_LINEAR_REDUCERS, body_fns
from .encoding import distinct_factor_pairs, pair_rows
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


def _linear_body(ctx, op) -> bool:
    """:func:`piecewise_linear` of every region of ``op`` (memoized per op for the analysis).  A §reduce or
    §reduce_window whose body the first-order rule already read as one op per result (a sum, a max, a
    product) is decided from that reading, without walking the body again."""
    memo = ctx.memo("second_order_bodies")
    key = op.operation
    hit = memo.get(key)
    if hit is None:
        fns = None
        if op.operation.name in ("stablehlo.reduce", "stablehlo.reduce_window"):
            fns = body_fns(ctx, op, len(op.operation.operands) // 2)
        if fns is not None:
            hit = all(fn in PIECEWISE_LINEAR_REDUCERS for fn in fns)
        else:
            hit = all(piecewise_linear(r) for r in op.regions)
        memo[key] = hit
    return hit


def _by_body(ctx, op, args, results):
    if _linear_body(ctx, op):
        return [None] * len(results)
    return full_term(ctx, op, args, results)


def _members(ctx, op, x, init):
    """Which operand elements each result element of a one-operand §reduce / §reduce_window combines: the
    first-order rule itself, run on the identity lattice of the operand (column ``i`` = element ``i``); a
    §reduce to one element (``jnp.prod(x)``) combines them all."""
    from ..interpreter import Interpreter
    from ..rules.registry import DEPS_RULES

    if op.operation.name == "stablehlo.reduce" and ctx.result_types(op)[0].size == 1:
        return make_csr(np.array([0, x.size], np.int64), np.arange(x.size, dtype=np.int64), 1, x.size)

    sub = Interpreter(ctx.module, x.size, ctx.options, function_table=ctx.function_table)
    ident = AbstractValue(x.type, Deps.identity(x.size, x.size, 0))
    known = AbstractValue(init.type, Deps.empty(init.size, x.size), init.const, init.uncertainty)
    (groups,) = DEPS_RULES[op.operation.name](sub, op, [ident, known])
    return (groups.deps if isinstance(groups, AbstractValue) else groups).to_csr()


def _product_pairs(ctx, op, x, init) -> Deps:
    """``Π_i y_i`` over each group: ``∂²/∂y_i∂y_j`` is nonzero only for ``i ≠ j`` (a product of distinct factors
    is linear in each), so each output adds ``∪_{i≠j} S_i × S_j``; every ``H(y_i)`` is passed on by the
    first-order rule (the group union)."""
    groups = _members(ctx, op, x, init)
    k_out = groups.shape[0]
    s = ctx.first_order(x)
    live = np.diff(s.indptr) > 0                             # factors that depend on something
    cols = groups.indices.astype(np.int64)
    if k_out == 1:  # (``jnp.prod(x)``: one group, built from the union of its factors' columns)
        one = distinct_factor_pairs(s, cols[live[cols]], ctx.n_first)
        if one is not None:
            return one
    rows = np.repeat(np.arange(k_out, dtype=np.int64), np.diff(groups.indptr))
    keep = live[cols]
    rows, members = rows[keep], cols[keep]
    sizes = np.bincount(rows, minlength=k_out)
    start = np.zeros(k_out + 1, np.int64)
    np.cumsum(sizes, out=start[1:])
    reps = sizes[rows]                                       # each member pairs with every member of its group
    check_nnz(int(reps.sum()), "the factor pairs of a product")
    i = np.repeat(np.arange(len(members), dtype=np.int64), reps)
    first = np.zeros(len(members), np.int64)
    np.cumsum(reps[:-1], out=first[1:])
    j = start[rows][i] + (np.arange(len(i), dtype=np.int64) - first[i])
    distinct = i != j
    i, j = i[distinct], j[distinct]
    return pair_rows(rows[i], k_out, s, members[i], s, members[j], ctx.n_first)


def _reduce(ctx, op, args, results):
    """§reduce, §reduce_window: a piecewise-linear body adds nothing; a one-operand product (``jnp.prod``,
    ``jnp.cumprod``) with a known init adds the pairs of distinct factors; any other body, the full term."""
    if _linear_body(ctx, op):  # (a sum: the common case, told first; a product's body is not linear)
        return [None] * len(results)
    if len(args) == 2 and not args[0].deps.is_empty and args[1].deps.is_empty and args[1].const is not None \
            and body_fns(ctx, op, 1) == [np.multiply]:
        return [_product_pairs(ctx, op, args[0], args[1])]
    return full_term(ctx, op, args, results)


local_term("stablehlo.reduce", "stablehlo.reduce_window", kind=BODY,
           note="nothing when the body is piecewise linear (sum, max, argmax); a product: pairs of distinct "
                "factors; else full")(_reduce)
local_term("stablehlo.scatter", "stablehlo.select_and_scatter",
           "stablehlo.map", "stablehlo.all_reduce", "stablehlo.reduce_scatter", kind=BODY,
           note="nothing when the body is piecewise linear (sum, max, overwrite), else full")(_by_body)
