"""Contractions: §dot_general and the legacy §dot (``lax.dot_general`` with the op's dimension numbers, precision
and result type)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ...ir.attrs import dot_dimension_numbers, enum_list, has_attr
from .core import ImportContext, Op, Values, import_rule, jax_lax


def precision(op: Op) -> tuple[Any, ...] | None:
    """``precision_config`` as a pair of ``lax.Precision`` (None when absent)."""
    lax = jax_lax()
    out = [getattr(lax.Precision, word, lax.Precision.DEFAULT) for word in enum_list(op, "precision_config")]
    return tuple(out) if out else None


@import_rule("stablehlo.dot_general")
def _dot_general(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§dot_general: batching and contracting dims; the result type is the preferred element type."""
    if has_attr(op, "algorithm"):
        raise ctx.error(op, "dot_general with an explicit 'algorithm' is not supported")
    dn = dot_dimension_numbers(op)
    (t,) = ctx.result_types(op)
    dims = ((tuple(dn.lhs_contracting_dimensions), tuple(dn.rhs_contracting_dimensions)),
            (tuple(dn.lhs_batching_dimensions), tuple(dn.rhs_batching_dimensions)))
    return [jax_lax().dot_general(args[0], args[1], dims, precision=precision(op), preferred_element_type=t.dtype)]


@import_rule("stablehlo.dot")
def _dot(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§dot (legacy): the last dimension of the lhs contracts with the first of the rhs."""
    (t,) = ctx.result_types(op)
    lhs, rhs = args
    dims = (((np.ndim(lhs) - 1,), (0,)), ((), ()))
    return [jax_lax().dot_general(lhs, rhs, dims, precision=precision(op), preferred_element_type=t.dtype)]


