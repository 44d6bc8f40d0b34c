"""Linear algebra and custom calls: conservative full terms, except where linearity is known.

§triangular_solve ``x = A⁻¹ b`` is linear in ``b``: nothing with a known ``A``.  §cholesky, the batch norms
and LAPACK ``custom_call`` targets take the full term within what each result element depends on (the
first-order rule's batch structure keeps batches apart).  ``custom_call`` identity markers (``Sharding``,
``SPMDFullToShardShape`` …, see :mod:`~stablehlo_sparsity.analysis.rules.custom_call`) add nothing.
"""

from __future__ import annotations

from .registry import FULL, PER_TARGET, local_term
from .terms import full_term


@local_term("stablehlo.triangular_solve", kind=FULL, note="linear in b: nothing with a known A, else full")
def _triangular_solve(ctx, op, args, results):
    if args[0].deps.is_empty:
        return [None]
    return full_term(ctx, op, args, results)


local_term("stablehlo.cholesky", "stablehlo.batch_norm_inference", "stablehlo.batch_norm_training",
           "stablehlo.batch_norm_grad", "stablehlo.bitcast_convert", kind=FULL,
           note="nonlinear: every pair of each result element's inputs")(full_term)


@local_term("stablehlo.custom_call", kind=PER_TARGET, note="identity markers: nothing; other targets: full")
def _custom_call(ctx, op, args, results):
    from ..rules.custom_call import CUSTOM_CALL_TARGETS, target_name

    rule = CUSTOM_CALL_TARGETS.get(target_name(op))
    if getattr(rule, "kind", None) == "identity":
        return [None] * len(results)
    return full_term(ctx, op, args, results)
