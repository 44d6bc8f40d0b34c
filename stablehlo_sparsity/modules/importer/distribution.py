"""Distribution on one device: Shardy markers, collectives over process groups of one member (the identity,
as in the analysis), §replica_id and §partition_id (re-emitted)."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import dense_attr, replica_group_sizes
from .core import ImportContext, Op, Values, import_rule
from .replay import replay


# ---------------------------------------------------------------------- sharding markers and collectives
@import_rule("sdy.sharding_constraint", "sdy.reshard", "sdy.propagation_barrier")
def _sdy_identity(ctx: ImportContext, op: Op, args: Values) -> Values:
    """Shardy markers: the identity on a single device."""
    return list(args)


@import_rule("sdy.sharding_group")
def _sdy_group(ctx: ImportContext, op: Op, args: Values) -> Values:
    """``sdy.sharding_group`` has no results."""
    return []


@import_rule("stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter", "stablehlo.all_to_all",
             "stablehlo.collective_broadcast", "stablehlo.cross-replica-sum")
def _collective(ctx: ImportContext, op: Op, args: Values) -> Values:
    """Collectives over process groups of one member (§all_reduce, §all_gather, …): each result is its
    operand.  Real communication is refused, as by the analysis."""
    sizes = replica_group_sizes(op)
    if sizes and max(sizes) > 1:
        raise ctx.error(op, "cross-device communication; import the single-device program")
    rtypes = ctx.result_types(op)
    if len(rtypes) != len(args) or any(t.shape != tuple(np.shape(a)) for t, a in zip(rtypes, args)):
        raise ctx.error(op, "changes shapes across devices")
    return list(args)


@import_rule("stablehlo.collective_permute")
def _collective_permute(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§collective_permute: with pairs ``[[0, 0]]`` the identity; a process no pair targets gets zeros."""
    pairs = dense_attr(op, "source_target_pairs")
    pairs = np.asarray(pairs).reshape(-1, 2) if pairs is not None else np.zeros((0, 2))
    (t,) = ctx.result_types(op)
    if len(pairs) == 0:
        return [np.zeros(t.shape, t.dtype)]
    if not np.all(pairs == 0):
        raise ctx.error(op, "cross-device communication; import the single-device program")
    return [args[0]]


@import_rule("stablehlo.replica_id", "stablehlo.partition_id")
def _process_id(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§replica_id, §partition_id: re-emitted verbatim (the running process's id); integer-valued."""
    return replay(ctx, op, args)
