"""Batch normalization (spec §batch_norm_inference, §batch_norm_training, §batch_norm_grad).

``batch_norm_inference`` is elementwise per feature — exact.  ``batch_norm_training`` / ``batch_norm_grad``
are the spec's decompositions written as unions over each feature's batch/spatial elements plus that
feature's scale / offset / mean / variance — exact at generic points.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ...ir.attrs import int_attr
from ...ir.helpers import num_elements
from ...lattice import Deps, group_union, Groups
from .registry import EXACT, deps_rule
from .registry import RuleContext, Op, DepsResult  # the rule contract
from ..values import AbstractValue


def _feature_of(shape, feature_index: int) -> np.ndarray:
    """The feature (coordinate along ``feature_index``) of every element, in row-major order."""
    stride = num_elements(shape[feature_index + 1:])
    return (np.arange(num_elements(shape), dtype=np.int64) // max(stride, 1)) % max(int(shape[feature_index]), 1)


def _feature_groups(x, feature_index: int) -> Deps:
    """One row per feature: the union of the operand's elements of that feature."""
    F = int(x.shape[feature_index])
    if x.deps.is_empty or x.size == 0:
        return Deps.empty(F, x.deps.n)
    f = _feature_of(x.shape, feature_index)
    order = np.argsort(f, kind="stable")
    per = x.size // F
    groups = sp.csr_array((np.ones(x.size, bool), order, np.arange(F + 1, dtype=np.int64) * per), shape=(F, x.size))
    return group_union(x.deps, Groups.from_matrix(groups))


def _per_feature(ctx, *vals) -> Deps:
    """The union of per-feature operands (scale, offset, mean, variance: ``F`` elements each)."""
    return Deps.union(*[v.deps for v in vals])



@deps_rule("stablehlo.batch_norm_inference", kind=EXACT, note="elementwise per feature")
def _batch_norm_inference(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§batch_norm_inference: ``scale·(x − mean)/sqrt(variance + ε) + offset`` per element — exact."""
    x, scale, offset, mean, variance = args
    fi = int_attr(op, "feature_index")
    f = _feature_of(x.shape, fi)
    params = _per_feature(ctx, scale, offset, mean, variance)
    return [Deps.union(x.deps, params.gather_rows(f))]


@deps_rule("stablehlo.batch_norm_training", kind=EXACT, note="unions over each feature's elements + its scale/offset")
def _batch_norm_training(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§batch_norm_training: mean and variance of a feature depend on all of its elements; the normalized
    output on those, plus that feature's scale and offset."""
    x, scale, offset = args
    fi = int_attr(op, "feature_index")
    f = _feature_of(x.shape, fi)
    G = _feature_groups(x, fi)
    out = Deps.union(G, scale.deps, offset.deps).gather_rows(f)
    return [out, G, G]


@deps_rule("stablehlo.batch_norm_grad", kind=EXACT, note="the spec decomposition's unions per feature")
def _batch_norm_grad(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§batch_norm_grad (its spec decomposition): ``grad_operand`` depends on the feature's operand and
    ``grad_output`` elements and its scale, mean, variance; ``grad_scale`` on all but scale;
    ``grad_offset`` on the feature's ``grad_output`` only."""
    x, scale, mean, variance, gy = args
    fi = int_attr(op, "feature_index")
    f = _feature_of(x.shape, fi)
    Gx, Gy = _feature_groups(x, fi), _feature_groups(gy, fi)
    grad_scale = Deps.union(Gx, Gy, mean.deps, variance.deps)
    grad_operand = Deps.union(grad_scale, scale.deps).gather_rows(f)
    return [grad_operand, grad_scale, Gy]
