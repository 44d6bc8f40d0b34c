"""Ops that are linear in every differentiable operand, or only move, pick or permute elements: nothing is
added, their first-order rule passes interactions on (StableHLO spec §reshape … §sort).

Regions that the first-order rule runs (§while, §case, §if, ``func.call``, §composite) are run by the
second-order interpreter op by op, so the ops inside add their own terms; the region op itself adds nothing.
§sort and ``chlo.top_k`` permute (the comparator only decides the order: piecewise constant); gather and
scatter indices are integers.
"""

from __future__ import annotations

from .registry import ZERO, local_term
from .terms import no_term

STRUCTURAL = ("stablehlo.reshape", "stablehlo.transpose", "stablehlo.broadcast_in_dim", "stablehlo.broadcast",
              "stablehlo.slice", "stablehlo.reverse", "stablehlo.concatenate", "stablehlo.pad", "stablehlo.iota",
              "stablehlo.constant",
              "stablehlo.dynamic_broadcast_in_dim", "stablehlo.dynamic_reshape", "stablehlo.dynamic_pad",
              "stablehlo.real_dynamic_slice", "stablehlo.set_dimension_size", "stablehlo.dynamic_iota",
              "stablehlo.get_dimension_size", "chlo.constant", "chlo.constant_like")
INDEXING = ("stablehlo.gather", "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice",
            "stablehlo.dynamic_gather", "stablehlo.torch_index_select")
ORDERING = ("stablehlo.sort", "chlo.top_k")
REGIONS = ("stablehlo.while", "stablehlo.case", "stablehlo.if", "func.call", "stablehlo.composite",
           "stablehlo.optimization_barrier")
DISTRIBUTION = ("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier", "sdy.sharding_group",
                "stablehlo.collective_permute", "stablehlo.all_gather", "stablehlo.all_to_all",
                "stablehlo.collective_broadcast", "stablehlo.replica_id", "stablehlo.partition_id",
                "stablehlo.cross-replica-sum")
SPECTRAL = ("stablehlo.fft",)
RANDOM = ("stablehlo.rng", "stablehlo.rng_bit_generator")

local_term(*STRUCTURAL, kind=ZERO, note="rows by index map")(no_term)
local_term(*INDEXING, kind=ZERO, note="static or integer indices: linear in the operand and updates")(no_term)
local_term(*ORDERING, kind=ZERO, note="a permutation (piecewise linear)")(no_term)
local_term(*REGIONS, kind=ZERO, note="its regions' ops add their own terms")(no_term)
local_term(*DISTRIBUTION, kind=ZERO, note="moves elements between devices")(no_term)
local_term(*SPECTRAL, kind=ZERO, note="linear")(no_term)
local_term(*RANDOM, kind=ZERO, note="a + (b − a)·u, a + b·z: linear in a and b")(no_term)


def _register_zero_derivative_ops() -> None:
    """Ops whose first-order rule drops every dependency (floor, compare, bit operations …: the first-order
    coverage kind ``zero-derivative``): their results depend on nothing, so nothing can be added."""
    from .. import rules  # noqa: F401  (registers every first-order rule)
    from ..rules.registry import COVERAGE, ZERO as FIRST_ORDER_ZERO
    from .registry import LOCAL_TERMS

    names = sorted(name for name, cov in COVERAGE.items() if cov.kind == FIRST_ORDER_ZERO and name not in LOCAL_TERMS)
    local_term(*names, kind=ZERO, note="zero first derivative")(no_term)


_register_zero_derivative_ops()
