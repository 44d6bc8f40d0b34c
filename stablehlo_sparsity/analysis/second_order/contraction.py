"""Contractions (StableHLO spec §dot_general, §dot, §convolution): bilinear, so cross terms only.

``result[b, i, j] = Σ_c lhs[b, i, c] · rhs[b, c, j]`` has ``∂²/∂lhs[b,i,c]∂rhs[b,c,j] = 1`` and no other second
derivative: row ``(b, i, j)`` adds ``∪_c S_lhs[b,i,c] × S_rhs[b,c,j]`` (and the transpose).  With a known
operand (``A @ x``) the contraction is linear and adds nothing.  §convolution is bilinear too; with two
unknown operands each output pairs every ``lhs`` element it reads with every ``rhs`` element it reads (sound,
cross-only; coarser than the taps' exact pairing).
"""

from __future__ import annotations

import numpy as np

from ...lattice.windows import positions
from ...lattice.core import check_nnz
from .encoding import pair_rows
from .registry import CROSS, local_term
from .terms import full_term

__all__ = ["dot_general_pairs", "convolution_pairs"]


def _dims(op):
    """(lhs_batch, rhs_batch, lhs_contract, rhs_contract) of a §dot_general or §dot."""
    if op.operation.name == "stablehlo.dot":
        return [], [], [len(op.operands[0].type.shape) - 1], [0]
    from ...ir.attrs import dot_dimension_numbers

    dn = dot_dimension_numbers(op)
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


def _conv_members(ctx, op, lhs, rhs):
    """Which ``lhs`` and ``rhs`` elements each output element of a §convolution reads: the first-order rule
    itself, run on identity lattices (``lhs`` element ``i`` = column ``i``, ``rhs`` element ``j`` = column
    ``len(lhs) + j``)."""
    from ..interpreter import Interpreter
    from ...lattice import Deps
    from ..rules.registry import DEPS_RULES
    from ..values import AbstractValue

    width = lhs.size + rhs.size
    sub = Interpreter(ctx.module, width, ctx.options, function_table=ctx.function_table)
    args = [AbstractValue(lhs.type, Deps.identity(lhs.size, width, 0)),
            AbstractValue(rhs.type, Deps.identity(rhs.size, width, lhs.size))]
    (res,) = DEPS_RULES[op.operation.name](sub, op, args)
    return (res.deps if isinstance(res, AbstractValue) else res).to_csr()


def convolution_pairs(ctx, op, lhs, rhs):
    """Every ``lhs`` element an output reads times every ``rhs`` element it reads (a superset of the taps'
    products: sound, and cross-only — a convolution is linear in each operand)."""
    groups = _conv_members(ctx, op, lhs, rhs)
    k_out = groups.shape[0]
    sl, sr = ctx.first_order(lhs), ctx.first_order(rhs)
    rows = np.repeat(np.arange(k_out, dtype=np.int64), np.diff(groups.indptr))
    cols = groups.indices.astype(np.int64)
    is_l = cols < lhs.size
    live = np.where(is_l, np.diff(sl.indptr)[np.where(is_l, cols, 0)] > 0,
                    np.diff(sr.indptr)[np.where(is_l, 0, cols - lhs.size)] > 0)
    rows_l, a = rows[is_l & live], cols[is_l & live]
    rows_r, b = rows[~is_l & live], cols[~is_l & live] - lhs.size
    n_l = np.bincount(rows_l, minlength=k_out)
    n_r = np.bincount(rows_r, minlength=k_out)
    start_r = np.zeros(k_out + 1, np.int64)
    np.cumsum(n_r, out=start_r[1:])
    reps = n_r[rows_l]                                   # each lhs member meets every rhs member of its output
    check_nnz(int(reps.sum()), f"the products of {op.operation.name}")
    i = np.repeat(np.arange(len(a), dtype=np.int64), reps)
    first = np.zeros(len(a), np.int64)
    np.cumsum(reps[:-1], out=first[1:])
    j = start_r[rows_l[i]] + (np.arange(len(i), dtype=np.int64) - first[i])
    del n_l
    return pair_rows(rows_l[i], k_out, sl, a[i], sr, b[j], ctx.n_first)


@local_term("stablehlo.convolution", "stablehlo.dynamic_conv", kind=CROSS,
            note="nothing with a known operand; else every lhs element an output reads × every rhs element")
def _convolution(ctx, op, args, results):
    lhs, rhs = args[0], args[1]
    if lhs.deps.is_empty or rhs.deps.is_empty:
        return [None]
    if op.operation.name != "stablehlo.convolution":
        return full_term(ctx, op, args, results)
    return [convolution_pairs(ctx, op, lhs, rhs)]
