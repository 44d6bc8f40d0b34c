"""§convolution: ``lax.conv_general_dilated`` with all dimension numbers, dilations, groups and reversal."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import bool_list, conv_dimension_numbers, dense_attr, i64_list, int_attr
from .core import ImportContext, Op, Values, import_rule, jax_lax
from .dot_general import precision


@import_rule("stablehlo.convolution")
def _convolution(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§convolution: ``lax.conv_general_dilated`` with the op's dimension numbers, strides, padding, lhs / rhs
    dilation and group counts; ``window_reversal`` reverses the kernel's spatial dims first."""
    lax = jax_lax()
    lhs, rhs = args
    (t,) = ctx.result_types(op)
    dn = conv_dimension_numbers(op)
    isp, ksp, osp = (list(dn.input_spatial_dimensions), list(dn.kernel_spatial_dimensions),
                     list(dn.output_spatial_dimensions))
    nsp = len(isp)
    strides = tuple(i64_list(op, "window_strides", [1] * nsp))
    pad = dense_attr(op, "padding")
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
