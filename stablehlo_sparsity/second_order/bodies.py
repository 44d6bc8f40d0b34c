"""Ops whose arithmetic is a region: §reduce, §reduce_window, §scatter, §select_and_scatter, §map, and the
collectives' reductions.

The op applies its body to elements; if the body is *piecewise linear* — built only from add, subtract,
negate, max, min, select, compare, convert, constants and the logical ops (a sum, a max-pool, argmax's
value/index pair, a scatter that overwrites or adds) — the result element is locally a linear combination of
the elements it reads, and its interactions are the union of theirs, which the first-order rule already
computed.  Any other body (a product, ``jnp.prod``, a logsumexp written as a body) takes the full term.
"""

from __future__ import annotations

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


local_term("stablehlo.reduce", "stablehlo.reduce_window", "stablehlo.scatter", "stablehlo.select_and_scatter",
           "stablehlo.map", "stablehlo.all_reduce", "stablehlo.reduce_scatter", kind=BODY,
           note="nothing when the body is piecewise linear (sum, max, overwrite), else full")(_by_body)
