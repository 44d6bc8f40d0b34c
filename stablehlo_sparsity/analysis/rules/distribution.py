"""Distribution: Shardy sharding markers and the collectives of a single-device program.

* Sharding (``sdy.sharding_constraint``, ``sdy.reshard``, ``sdy.propagation_barrier``): identity.
* Collectives (§all_reduce, §all_gather, §reduce_scatter, §all_to_all, §collective_permute,
  §collective_broadcast): identity when every process group has a single member (a single-device
  program, e.g. ``shard_map`` on a 1-device mesh); real cross-device communication is refused.
* §replica_id, §partition_id: integers.
"""

from __future__ import annotations

import numpy as np

from ...ir.attrs import dense_attr, replica_group_sizes
from ...errors import UnsupportedOpError
from .registry import EXACT, ZERO, deps_rule
from .registry import RuleContext, Op, DepsResult  # the rule contract
from ..values import AbstractValue


# ====================================================================== sharding markers (Shardy)
def _identity(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    rtypes = ctx.result_types(op)
    if len(rtypes) != len(args) or any(t.shape != tuple(a.shape) for t, a in zip(rtypes, args)):
        raise UnsupportedOpError(op.operation.name, ctx.location(op), "changes shapes")
    return [a.deps for a in args]


deps_rule("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier", kind=EXACT,
          note="identity")(_identity)


@deps_rule("sdy.sharding_group", kind=EXACT, note="no results")
def _sharding_group(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    return []


# ====================================================================== collectives (single-device programs)
def _single_participant(ctx: RuleContext, op: Op) -> bool:
    sizes = replica_group_sizes(op)
    if sizes:
        return max(sizes) <= 1
    if "source_target_pairs" in op.attributes:
        return True  # collective_permute: checked by its rule
    # no groups: every process of the grid takes part; fine only on a 1 x 1 grid
    attrs = ctx.module.operation.attributes
    try:
        reps = int(str(attrs["mhlo.num_replicas"]).split(":")[0])
        parts = int(str(attrs["mhlo.num_partitions"]).split(":")[0])
    except (KeyError, ValueError):
        return False
    return reps * parts == 1


def _collective_identity(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """A collective over process groups of one member: each result is its operand."""
    if not _single_participant(ctx, op):
        raise UnsupportedOpError(op.operation.name, ctx.location(op),
                                 "cross-device communication; analyze the single-device program")
    rtypes = ctx.result_types(op)
    live = [a for a in args if "token" not in str(a.type)]
    if len(rtypes) != len(live) or any(t.shape != tuple(a.shape) for t, a in zip(rtypes, live)):
        raise UnsupportedOpError(op.operation.name, ctx.location(op), "changes shapes across devices")
    return [a.deps for a in live]


@deps_rule("stablehlo.collective_permute", kind=EXACT,
           note="identity when every process group has one member; cross-device: error")
def _collective_permute(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§collective_permute: with pairs ``[[0, 0]]`` the identity; a process no pair targets gets zeros."""
    pairs = dense_attr(op, "source_target_pairs")
    pairs = np.asarray(pairs).reshape(-1, 2) if pairs is not None else None
    (t,) = ctx.result_types(op)
    if pairs is None or len(pairs) == 0:
        return [ctx.empty(t.size)]
    if not np.all(pairs == 0):
        raise UnsupportedOpError(op.operation.name, ctx.location(op),
                                 "cross-device communication; analyze the single-device program")
    return [args[0].deps]


deps_rule(*(f"stablehlo.{name}" for name in ("all_reduce", "all_gather", "reduce_scatter", "all_to_all",
                                            "collective_broadcast", "cross-replica-sum")),
          kind=EXACT, note="identity when every process group has one member; cross-device: error")(
    _collective_identity)


@deps_rule("stablehlo.replica_id", "stablehlo.partition_id", kind=ZERO, note="integer")
def _process_id(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    return [ctx.empty(t.size) for t in ctx.result_types(op)]
