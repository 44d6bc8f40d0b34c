"""Contractions (StableHLO spec §dot_general, §dot): group unions laid out by position maps.

§dot_general: with batching dimensions ``B``, contracting dimensions ``C`` and the remaining (free)
dimensions ``I`` of ``lhs`` and ``J`` of ``rhs``, the result has dimensions ``B + I + J`` and

    result[b, i, j] = Σ_c lhs[b, i, c] · rhs[b, c, j].

Its derivative in ``lhs[b, i, c]`` is ``rhs[b, c, j]`` and in ``rhs[b, c, j]`` is ``lhs[b, i, c]``.  So,
for unknown operands, row ``(b, i, j)`` is ``L[b, i] ∪ R[b, j]`` where ``L`` unions the ``lhs`` rows of
one contracted slice and ``R`` those of ``rhs`` — exact for generic values.  Both are one group union over
a position map (``positions(lhs.shape)`` transposed to ``(B, I, C)``), then a row map to the output.

Constants are values (docs/explanation/guarantees.md, "Trust in folded constants"): with a known ``lhs`` (``A @ x``)
only the
taps with ``A[b, i, c] ≠ 0`` contribute, so row ``(b, i, j)`` is ``∪_{c: A[b,i,c] ≠ 0} rhs[b, c, j]`` — one sparse
``R @ S`` product whose ``R`` is built from ``A``'s nonzeros (exactly ``A``'s pattern for a vector ``x``). Symmetric
for a known ``rhs``. §dot is §dot_general contracting the last ``lhs`` dimension with the first ``rhs`` dimension."""

from __future__ import annotations

import numpy as np

from ...ir.attrs import enum_list
from ...lattice.windows import positions
from ...lattice import check_nnz, Deps, group_union, Groups
from ..folding.exactness import maybe_nonzero, sum_of_products_trust
from .registry import VALUE_AWARE, NotFoldable, deps_rule, error_rule, fold_rule
from .registry import RuleContext, Op, DepsResult, ErrorResult, FoldResult  # the rule contract
from ..values import AbstractValue

__all__ = ["contraction_deps", "contraction_np", "highest_precision"]



def _dims(op):
    """(lhs_batch, rhs_batch, lhs_contract, rhs_contract) of a dot_general or dot."""
    if op.operation.name == "stablehlo.dot":
        lhs_rank = len(op.operands[0].type.shape)
        return [], [], [lhs_rank - 1], [0]
    from ...ir.attrs import dot_dimension_numbers

    dn = dot_dimension_numbers(op)
    return (list(dn.lhs_batching_dimensions), list(dn.rhs_batching_dimensions),
            list(dn.lhs_contracting_dimensions), list(dn.rhs_contracting_dimensions))


def _layout(shape, batch, contract):
    """Positions of an operand arranged as ``(B, F, C)`` (batch, free, contracting) and the three sizes."""
    free = [d for d in range(len(shape)) if d not in batch and d not in contract]
    size = lambda ds: int(np.prod([shape[d] for d in ds], dtype=np.int64))
    pos = positions(shape).transpose(list(batch) + free + list(contract))
    return pos.reshape(size(batch), size(free), size(contract))


def _check_budget(ctx: RuleContext, op: Op, entries: int) -> None:
    check_nnz(entries, f"the index sets of {op.operation.name}")


def _known_side(ctx: RuleContext, op: Op,
                known: np.ndarray, other: Deps, other_pos: np.ndarray, I: int, J: int) -> Deps:
    """Rows ``(b, i, j)`` from a known ``(B, I, C)`` factor ``known`` and the other side's ``(B, C, J)`` positions.

    Row ``(b, i, j)`` unions ``other[other_pos[b, c, j]]`` over ``c`` with ``known[b, i, c] ≠ 0``.
    """
    B = known.shape[0]
    bb, ii, cc = np.nonzero(known != 0)
    _check_budget(ctx, op, len(bb) * J)
    rows = ((bb * I + ii)[:, None] * J + np.arange(J, dtype=np.int64)[None, :]).ravel()
    cols = other_pos[bb, cc, :].ravel()
    return group_union(other, Groups.from_pairs(rows, cols, B * I * J))


def contraction_deps(ctx: RuleContext, op: Op, lhs, rhs, lb, rb, lc, rc) -> Deps:
    """Index sets of a §dot_general result in ``(batch, lhs free, rhs free)`` row-major order."""
    L = _layout(lhs.shape, lb, lc)              # (B, I, C)
    R = _layout(rhs.shape, rb, rc)              # (B, J, C)
    B, I, C = L.shape
    J = R.shape[1]
    out = B * I * J
    parts = []
    # A known operand without (certain) zeros prunes nothing: the generic (lazy, smaller) path gives the same
    # sets.  Only exact zeros prune (folding/exactness.py): ``maybe_nonzero`` is the operand's nonzero mask.
    lhs_nz = maybe_nonzero(lhs) if lhs.const is not None else None
    rhs_nz = maybe_nonzero(rhs) if rhs.const is not None else None
    lhs_known = lhs_nz is not None and not np.all(lhs_nz)
    rhs_known = rhs_nz is not None and not np.all(rhs_nz)
    # Contributions of lhs's elements (their derivative is a value of rhs, and vice versa).
    if not lhs.deps.is_empty:
        if rhs_known:
            assert rhs_nz is not None
            known = rhs_nz.reshape(-1)[R]                                           # (B, J, C)
            parts.append(_known_rows_lhs(ctx, op, known, lhs.deps, L, I, J))
        else:
            grouped = group_union(lhs.deps, Groups.member_major(L.transpose(2, 0, 1).reshape(C, B * I)))
            row = np.arange(out, dtype=np.int64) // J                               # (b, i, j) -> b*I + i
            parts.append(grouped.gather_rows(row))
    if not rhs.deps.is_empty:
        if lhs_known:
            assert lhs_nz is not None
            known = lhs_nz.reshape(-1)[L]                                           # (B, I, C)
            parts.append(_known_side(ctx, op, known, rhs.deps, R.transpose(0, 2, 1), I, J))
        else:
            grouped = group_union(rhs.deps, Groups.member_major(R.transpose(2, 0, 1).reshape(C, B * J)))
            o = np.arange(out, dtype=np.int64)
            row = (o // (I * J)) * J + o % J                                         # (b, i, j) -> b*J + j
            parts.append(grouped.gather_rows(row))
    if not parts:
        return ctx.empty(out)
    return Deps.union(*parts)


def _known_rows_lhs(ctx: RuleContext, op: Op,
                    known_bjc: np.ndarray, lhs_deps: Deps, L: np.ndarray, I: int, J: int) -> Deps:
    """Rows ``(b, i, j)`` = ∪ ``lhs[L[b, i, c]]`` over ``c`` with ``rhs[b, c, j] ≠ 0`` (``known_bjc[b, j, c]``)."""
    B = known_bjc.shape[0]
    bb, jj, cc = np.nonzero(known_bjc != 0)
    _check_budget(ctx, op, len(bb) * I)
    # Output row (b, i, j) for every i: (b*I + i)*J + j.
    rows = ((bb * I * J + jj)[:, None] + (np.arange(I, dtype=np.int64) * J)[None, :]).ravel()
    cols = L[bb, :, cc].ravel()                                                     # (nnz, I)
    return group_union(lhs_deps, Groups.from_pairs(rows, cols, B * I * J))


@deps_rule("stablehlo.dot_general", kind=VALUE_AWARE,
           note="group union over the contracted slice; a known operand's exact zeros drop taps")
@deps_rule("stablehlo.dot", kind=VALUE_AWARE, note="as dot_general")
def _dot_general(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§dot_general / §dot: row ``(b, i, j)`` = contracted lhs slice ∪ contracted rhs slice (known factors prune)."""
    lhs, rhs = args
    lb, rb, lc, rc = _dims(op)
    return [contraction_deps(ctx, op, lhs, rhs, lb, rb, lc, rc)]


def contraction_np(lhs: np.ndarray, rhs: np.ndarray, lb, rb, lc, rc, dtype=None) -> np.ndarray:
    """§dot_general with NumPy: ``einsum`` with shared letters for batch and contracting dimensions."""
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    ls: list[str | None] = [None] * lhs.ndim
    rs: list[str | None] = [None] * rhs.ndim
    for a, b in zip(list(lb) + list(lc), list(rb) + list(rc)):
        ls[a] = rs[b] = next(letters)
    for d in range(lhs.ndim):
        if ls[d] is None:
            ls[d] = next(letters)
    for d in range(rhs.ndim):
        if rs[d] is None:
            rs[d] = next(letters)
    out = [ls[d] for d in lb] + [ls[d] for d in range(lhs.ndim) if d not in lb and d not in lc] \
        + [rs[d] for d in range(rhs.ndim) if d not in rb and d not in rc]
    if dtype is not None:
        lhs, rhs = lhs.astype(dtype, copy=False), rhs.astype(dtype, copy=False)
    spec = f"{''.join(map(str, ls))},{''.join(map(str, rs))}->{''.join(map(str, out))}"
    return np.einsum(spec, lhs, rhs, optimize=True)


@fold_rule("stablehlo.dot_general", "stablehlo.dot")
def _dot_general_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    lhs, rhs = (np.asarray(c) for c in consts)
    (t,) = ctx.result_types(op)
    if lhs.dtype == np.bool_ or t.dtype == np.bool_:
        raise NotFoldable  # boolean dot products (or-of-ands) are not worth special-casing
    lb, rb, lc, rc = _dims(op)
    with np.errstate(all="ignore"):
        return [contraction_np(lhs, rhs, lb, rb, lc, rc, t.dtype)]


@error_rule("stablehlo.dot_general", "stablehlo.dot")
def _dot_general_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """A sum of products in a backend-chosen order (on TPU, of ``bf16``-rounded inputs by default)."""
    lhs, rhs = args
    lb, rb, lc, rc = _dims(op)
    n = int(np.prod([lhs.shape[d] for d in lc], dtype=np.int64))

    def contract(a, b):
        return contraction_np(a, b, lb, rb, lc, rc, np.float64)

    return [sum_of_products_trust(lhs, rhs, consts[0], contract, n, highest=highest_precision(op))]


def highest_precision(op) -> bool:
    """Whether both operands of a dot/convolution ask for ``HIGHEST`` precision (``precision_config``; an
    explicit ``algorithm`` is not read: the default error model applies)."""
    if "precision_config" not in op.attributes or "algorithm" in op.attributes:
        return False
    words = enum_list(op, "precision_config")
    return len(words) == 2 and all(w == "HIGHEST" for w in words)
