"""Contractions (StableHLO spec §dot_general, §dot, §convolution): bilinear, so cross terms only.

``result[b, i, j] = Σ_c lhs[b, i, c] · rhs[b, c, j]`` has ``∂²/∂lhs[b,i,c]∂rhs[b,c,j] = 1`` and no other second
derivative: row ``(b, i, j)`` adds ``∪_c S_lhs[b,i,c] × S_rhs[b,c,j]`` (and the transpose).  With a known
operand (``A @ x``) the contraction is linear and adds nothing.  §convolution is bilinear too; with two
unknown operands it takes the full term (sound, coarser: the pairs of each output's window are not split by
side).
"""

from __future__ import annotations

import numpy as np

from ..attrs import positions
from ..lattice.core import check_nnz
from .encoding import pair_rows
from .registry import CROSS, local_term
from .terms import full_term

__all__ = ["dot_general_pairs"]


def _dims(op):
    """(lhs_batch, rhs_batch, lhs_contract, rhs_contract) of a §dot_general or §dot."""
    if op.operation.name == "stablehlo.dot":
        return [], [], [len(op.operands[0].type.shape) - 1], [0]
    from jaxlib.mlir.dialects import stablehlo

    dn = stablehlo.DotDimensionNumbers(op.attributes["dot_dimension_numbers"])
    return (list(dn.lhs_batching_dimensions), list(dn.rhs_batching_dimensions),
            list(dn.lhs_contracting_dimensions), list(dn.rhs_contracting_dimensions))


def _layout(shape, batch, contract) -> np.ndarray:
    """Element positions of an operand arranged as ``(batch, free, contracting)``."""
    free = [d for d in range(len(shape)) if d not in batch and d not in contract]
    size = lambda ds: int(np.prod([shape[d] for d in ds], dtype=np.int64))  # noqa: E731
    pos = positions(tuple(shape)).transpose(list(batch) + free + list(contract))
    return pos.reshape(size(batch), size(free), size(contract)).astype(np.int64)


def dot_general_pairs(ctx, op, lhs, rhs):
    """The cross term of a §dot_general of two operands that both depend on inputs."""
    lb, rb, lc, rc = _dims(op)
    L = _layout(lhs.shape, lb, lc)   # (B, I, C)
    R = _layout(rhs.shape, rb, rc)   # (B, J, C)
    B, I, C = L.shape
    J = R.shape[1]
    sl, sr = ctx.first_order(lhs), ctx.first_order(rhs)
    l_live = np.diff(sl.indptr)[L] > 0          # (B, I, C)
    r_live = np.diff(sr.indptr)[R] > 0          # (B, J, C)
    # only the (b, i, j, c) where both factors depend on something add pairs
    both = l_live[:, :, None, :] & r_live[:, None, :, :]   # (B, I, J, C)
    check_nnz(int(both.size), f"the products of {op.operation.name}")
    b, i, j, c = np.nonzero(both)
    out = (b * I + i) * J + j
    return pair_rows(out, B * I * J, sl, L[b, i, c], sr, R[b, j, c], ctx.n_first)


@local_term("stablehlo.dot_general", "stablehlo.dot", kind=CROSS,
            note="Σ_c S_lhs × S_rhs over the contraction; nothing with a known operand")
def _dot_general(ctx, op, args, results):
    lhs, rhs = args
    if lhs.deps.is_empty or rhs.deps.is_empty:
        return [None]
    return [dot_general_pairs(ctx, op, lhs, rhs)]


@local_term("stablehlo.convolution", "stablehlo.dynamic_conv", kind=CROSS,
            note="nothing with a known operand; two unknown operands: full (conservative)")
def _convolution(ctx, op, args, results):
    if args[0].deps.is_empty or args[1].deps.is_empty:
        return [None]
    return full_term(ctx, op, args, results)
