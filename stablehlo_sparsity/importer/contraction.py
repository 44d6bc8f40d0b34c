"""Contractions: §dot, §dot_general, §convolution (all dimension numbers, dilations, groups, reversal)."""

from __future__ import annotations

import numpy as np

from ..attrs import bool_list, dense_array, i64_list, int_attr
from .core import import_rule


def _lax():
    from jax import lax

    return lax


def precision(op):
    """``precision_config`` as a pair of ``lax.Precision`` (None when absent)."""
    if "precision_config" not in op.attributes:
        return None
    lax = _lax()
    out = []
    for a in op.attributes["precision_config"]:
        word = str(a).rstrip(">").split()[-1]
        out.append(getattr(lax.Precision, word, lax.Precision.DEFAULT))
    return tuple(out) if out else None


@import_rule("stablehlo.dot_general")
def _dot_general(ctx, op, args):
    """§dot_general: batching and contracting dims; the result type is the preferred element type."""
    from jaxlib.mlir.dialects import stablehlo

    if "algorithm" in op.attributes:
        raise ctx.error(op, "dot_general with an explicit 'algorithm' is not supported")
    dn = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    (t,) = ctx.result_types(op)
    dims = ((tuple(dn.lhs_contracting_dimensions), tuple(dn.rhs_contracting_dimensions)),
            (tuple(dn.lhs_batching_dimensions), tuple(dn.rhs_batching_dimensions)))
    return [_lax().dot_general(args[0], args[1], dims, precision=precision(op), preferred_element_type=t.dtype)]


@import_rule("stablehlo.dot")
def _dot(ctx, op, args):
    """§dot (legacy): the last dimension of the lhs contracts with the first of the rhs."""
    (t,) = ctx.result_types(op)
    lhs, rhs = args
    dims = (((np.ndim(lhs) - 1,), (0,)), ((), ()))
    return [_lax().dot_general(lhs, rhs, dims, precision=precision(op), preferred_element_type=t.dtype)]


@import_rule("stablehlo.convolution")
def _convolution(ctx, op, args):
    """§convolution: ``lax.conv_general_dilated`` with the op's dimension numbers, strides, padding, lhs / rhs
    dilation and group counts; ``window_reversal`` reverses the kernel's spatial dims first."""
    from jaxlib.mlir.dialects import stablehlo

    lax = _lax()
    lhs, rhs = args
    (t,) = ctx.result_types(op)
    dn = stablehlo.ConvDimensionNumbers(op.attributes["dimension_numbers"])
    isp, ksp, osp = (list(dn.input_spatial_dimensions), list(dn.kernel_spatial_dimensions),
                     list(dn.output_spatial_dimensions))
    nsp = len(isp)
    strides = tuple(i64_list(op, "window_strides", [1] * nsp))
    pad = dense_array(op.attributes["padding"]) if "padding" in op.attributes else None
    pad = np.zeros((nsp, 2), np.int64) if pad is None else np.asarray(pad, np.int64).reshape(nsp, 2)
    lhs_dil = tuple(i64_list(op, "lhs_dilation", [1] * nsp))
    rhs_dil = tuple(i64_list(op, "rhs_dilation", [1] * nsp))
    rev = bool_list(op, "window_reversal", [False] * nsp) or [False] * nsp
    if any(rev):
        rhs = lax.rev(rhs, tuple(k for k, r in zip(ksp, rev) if r))
    cdn = lax.ConvDimensionNumbers((dn.input_batch_dimension, dn.input_feature_dimension, *isp),
                                   (dn.kernel_output_feature_dimension, dn.kernel_input_feature_dimension, *ksp),
                                   (dn.output_batch_dimension, dn.output_feature_dimension, *osp))
    return [lax.conv_general_dilated(lhs, rhs, strides, [(int(a), int(b)) for a, b in pad], lhs_dil, rhs_dil, cdn,
                                     feature_group_count=int_attr(op, "feature_group_count", 1),
                                     batch_group_count=int_attr(op, "batch_group_count", 1),
                                     precision=precision(op), preferred_element_type=t.dtype)]
