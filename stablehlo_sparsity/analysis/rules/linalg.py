"""Linear algebra and spectral ops: §triangular_solve, §cholesky, §fft — and the matrix-structure helpers that
the LAPACK / cuSOLVER ``custom_call`` table (:mod:`.custom_call`) reuses.

Every op here works on the trailing dimensions (a matrix, or the ``L`` transformed dimensions of an FFT)
independently for each index of the leading *batch* dimensions, so every rule is block diagonal across the
batch: the group of one matrix is built once with index arithmetic and repeated for every batch index.

Within one matrix:

* **fft** (every ``fft_type``): each output element depends on every element of its batch index — the DFT
  matrix has no zero entry, so this is exact.
* **triangular_solve**: the canonical problem is a lower-triangular ``L X = B`` (every other variant —
  upper, transposed, right side — is a relabelling of the indices, see :func:`triangular_solve_maps`).
  Forward substitution gives ``X[i, j]`` from ``B[:i+1, j]`` and the rows ``0..i`` of ``L``'s lower
  triangle (its diagonal only when ``unit_diagonal`` is false) — exact at generic points (``∂X[i,j]/∂L[p,q]
  = -L⁻¹[i,p]·X[q,j]``).
* **cholesky**: ``L[i,j] = (A[i,j] − Σ_{k<j} L[i,k]·L[j,k]) / L[j,j]`` gives, by induction, ``L[i,j]``
  (``i ≥ j``) from the read triangle's rows ``0..j`` and the entries ``A[i, 0..j]``.  JAX differentiates
  Cholesky as a function of a Hermitian matrix (its JVP reads both triangles of the leading ``j+1``
  block), and compressed Jacobians are evaluated with JAX's JVPs: the mirror of the leading block counts
  too — exact against ``jax.jacfwd``.  The opposite triangle is implementation defined
  (§cholesky): it depends on the whole matrix (conservative; JAX masks it away with a constant
  ``select``, which the constant lattice sees).

The groups are ``(rows × elements)`` 0/1 matrices; no Python loop over elements anywhere.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..._compat import CHOLESKY_JVP_SYMMETRIZES_BOTH_TRIANGLES
from ...ir.helpers import num_elements
from ...ir.attrs import bool_attr, enum_text, i64_list
from ...lattice.windows import positions
from ...lattice import Deps, group_union, Groups, prefix_union
from ..folding.exactness import untrusted
from .registry import EXACT, NotFoldable, deps_rule, error_rule, fold_rule
from .registry import RuleContext, Op, DepsResult, ErrorResult, FoldResult  # the rule contract
from ..values import AbstractValue


__all__ = [
    "batch_union",
    "batch_shape_of",
    "triangular_solve_deps",
    "cholesky_deps",
    "solve_columns_deps",
    "column_prefix_deps",
]


# ====================================================================== batches
def _composed_union(deps: Deps, groups) -> Deps:
    """The group union for a 0/1 matrix of groups, composed with the parts' row maps first (factor blocks
    reference few distinct rows many times): :func:`~stablehlo_sparsity.lattice.group_union`."""
    return group_union(deps, Groups.from_matrix(groups), strategy="compose")


def batch_shape_of(shapes, nb: int) -> tuple[int, ...] | None:
    """The common leading ``nb`` dims of the shapes that have at least ``nb`` dims (``None`` if they differ)."""
    heads = {tuple(s[:nb]) for s in shapes if len(s) >= nb}
    return heads.pop() if len(heads) == 1 else None


def _batch_rows(deps: Deps, size: int, B: int) -> Deps:
    """Per batch index ``b``: the union of the rows ``b*rest … (b+1)*rest - 1`` (``B`` rows)."""
    rest = size // B if B else 0
    if deps.is_empty or rest == 0:
        return Deps.empty(B, deps.n)
    if rest == 1:
        return deps
    groups = sp.csr_array((np.ones(size, bool), np.arange(size, dtype=np.int64),
                           np.arange(B + 1, dtype=np.int64) * rest), shape=(B, size))
    return _composed_union(deps, groups)


def _spread(per_batch: Deps, size: int, B: int) -> Deps:
    """Rows of a per-batch lattice repeated over the ``size // B`` elements of each batch index."""
    rest = size // B if B else 0
    if rest == 1:
        return per_batch
    return per_batch.gather_rows(np.repeat(np.arange(B, dtype=np.int64), rest))


def batch_union(ctx, args, nb: int, rtypes) -> list[Deps]:
    """Conservative within a batch, independent across it: every result element of batch index ``b``
    depends on every operand element of batch index ``b``.

    Operands / results whose leading dims are not the batch shape (scalars such as ``alpha``) are global:
    their union reaches every batch index, and such a result depends on every operand.
    """
    bshape = batch_shape_of([a.shape for a in args] or [t.shape for t in rtypes], nb)
    n = ctx.n
    if bshape is None or nb == 0:
        bshape = ()
    B = num_elements(bshape)
    nb = len(bshape)
    per_batch = []
    glob = []
    for a in args:
        if a.deps.is_empty:
            continue
        if tuple(a.shape[:nb]) == bshape and len(a.shape) >= nb and a.size:
            per_batch.append(_batch_rows(a.deps, a.size, B))
        else:
            glob.append(a.deps.reduce_all())
    if glob:
        g = Deps.union(*glob)
        per_batch.append(g.broadcast_row(B) if B != 1 else g)
    if not per_batch:
        return [Deps.empty(t.size, n) for t in rtypes]
    U = Deps.union(*per_batch) if B else Deps.empty(0, n)
    out = []
    for t in rtypes:
        if t.size == 0:
            out.append(Deps.empty(0, n))
        elif len(t.shape) >= nb and tuple(t.shape[:nb]) == bshape:
            out.append(_spread(U, t.size, B))
        else:
            out.append(U.reduce_all().broadcast_row(t.size))
    return out


def _tile_groups(rows, cols, n_rows: int, n_cols: int, B: int, shape) -> sp.csr_array:
    """A block-diagonal group matrix: the ``(rows, cols)`` entries of one matrix repeated for ``B`` batches."""
    off_r = (np.arange(B, dtype=np.int64) * n_rows)[:, None]
    off_c = (np.arange(B, dtype=np.int64) * n_cols)[:, None]
    r = (rows[None, :] + off_r).ravel()
    c = (cols[None, :] + off_c).ravel()
    return sp.csr_array((np.ones(len(r), bool), (r, c)), shape=shape)


def _lower_triangle(m: int, strict: bool):
    """Entries ``(p, q)`` of the lower triangle in row-major order and, per row ``i``, how many lie in rows
    ``0..i`` (so rows ``0..i`` are a prefix of the order)."""
    p, q = np.tril_indices(m, -1 if strict else 0)
    per_row = np.arange(m, dtype=np.int64) + (0 if strict else 1)
    return p.astype(np.int64), q.astype(np.int64), np.cumsum(per_row)


# ====================================================================== triangular solve
def triangular_solve_maps(m: int, k: int, left_side: bool, lower: bool, transpose: bool):
    """Relabel a triangular solve as the canonical lower-triangular ``L X = B`` (``X``: ``m × k``).

    Returns ``(a_map, x_map)``: ``a_map[p, q]`` is the flat index within ``a``'s matrix of ``L[p, q]``;
    ``x_map[i, j]`` the flat index within the result (and ``b``) matrix of ``X[i, j]`` (``b`` has the
    result's shape).
    """
    a_map = positions((m, m))
    lower_eff = lower
    if transpose:  # op(a) = aᵀ (or aᴴ): its lower triangle is a's upper one
        a_map = a_map.T
        lower_eff = not lower_eff
    if left_side:
        x_map = positions((m, k))
    else:  # x·op(a) = b  ⇔  op(a)ᵀ·xᵀ = bᵀ
        a_map = a_map.T
        lower_eff = not lower_eff
        x_map = positions((k, m)).T
    if not lower_eff:  # reversing both index orders turns upper-triangular into lower-triangular
        a_map = a_map[::-1, ::-1]
        x_map = x_map[::-1, :]
    return np.ascontiguousarray(a_map), np.ascontiguousarray(x_map)


def triangular_solve_deps(a, b, *, left_side: bool, lower: bool, transpose: bool, unit_diagonal: bool,
                          n: int) -> Deps:
    """Index sets of the solution of a (batched) triangular solve; ``a``, ``b`` are abstract values."""
    m = a.shape[-1]
    if left_side:
        k = b.shape[-1]
    else:
        k = b.shape[-2]
    bshape = tuple(b.shape[:-2])
    B = num_elements(bshape)
    mm, xk = m * m, m * k
    a_map, x_map = triangular_solve_maps(m, k, left_side, lower, transpose)
    parts = []
    # canonical row of every result element (for the lazy gather of the running union of L's rows)
    canon_row = np.empty(xk, np.int64)
    canon_row[x_map.ravel()] = np.repeat(np.arange(m, dtype=np.int64), k)
    boff = np.arange(B, dtype=np.int64)[:, None]
    if not a.deps.is_empty and m:
        # V[p] = ∪ of L's row p (its triangle part); U[i] = V[0] ∪ … ∪ V[i]
        P, Q, _ = _lower_triangle(m, strict=unit_diagonal)
        V = _composed_union(a.deps, _tile_groups(P, a_map[P, Q], m, mm, B, (B * m, B * mm)))
        U = prefix_union(V, m)
        parts.append(U.gather_rows((boff * m + canon_row[None, :]).ravel()))
    if not b.deps.is_empty and xk:
        # X[i, j] = B[0, j] ∪ … ∪ B[i, j]: a running union down each column of B (in canonical order)
        by_column = b.deps.gather_rows((boff[:, :, None] * xk + x_map.T[None, :, :]).ravel())
        Z = prefix_union(by_column, m)
        where = np.empty(xk, np.int64)  # canonical (i, j) -> row j*m + i of Z (per batch)
        ii, jj = np.divmod(np.arange(xk, dtype=np.int64), k)
        where[x_map.ravel()] = jj * m + ii
        parts.append(Z.gather_rows((boff * xk + where[None, :]).ravel()))
    if not parts:
        return Deps.empty(B * xk, n)
    return Deps.union(*parts)


@deps_rule("stablehlo.triangular_solve", kind=EXACT,
           note="forward/back substitution structure per matrix, block diagonal across the batch")
def _triangular_solve(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§triangular_solve: exact per matrix (forward / back substitution), block diagonal across the batch."""
    a, b = args
    left_side = _bool_attr(op, "left_side")
    lower = _bool_attr(op, "lower")
    unit = _bool_attr(op, "unit_diagonal")
    transpose = enum_text(op, "transpose_a") != "NO_TRANSPOSE"
    return [triangular_solve_deps(a, b, left_side=left_side, lower=lower, transpose=transpose,
                                  unit_diagonal=unit, n=ctx.n)]


def _bool_attr(op, name: str) -> bool:
    return bool_attr(op, name)


# ====================================================================== cholesky
def cholesky_deps(a, *, lower: bool, other: str, n: int) -> Deps:
    """Index sets of a (batched) Cholesky factor of ``a`` (an abstract value).

    ``other`` says what the opposite triangle holds: ``"any"`` (implementation defined — the whole matrix,
    §cholesky) or ``"input"`` (left untouched, as LAPACK's ``potrf`` does).
    """
    m = a.shape[-1]
    mm = m * m
    B = num_elements(a.shape[:-2])
    if a.deps.is_empty or m == 0:
        return Deps.empty(a.size, n)
    # canonical: the lower factor of M with M[p, q] = a[a_map[p, q]]; result position of L[i, j] is r_map[i, j]
    a_map = positions((m, m)) if lower else positions((m, m)).T
    r_map = a_map
    boff = np.arange(B, dtype=np.int64)[:, None]
    # (1) W[j] = ∪ rows 0..j of the read triangle, with their mirrors before JAX 0.11.2: JAX differentiates
    # Cholesky as a function of a Hermitian matrix — L̇ = L·φ(L⁻¹ Ȧ L⁻ᴴ) reads Ȧ[r, s] for r, s ≤ j — and
    # compressed Jacobians are evaluated with JAX's JVPs (this matches jax.jacfwd exactly on every release).
    # From JAX 0.11.2 on the JVP reads the factor's triangle only (Ȧ ← tril(Ȧ) + tril(Ȧ, -1)ᴴ, as potrf itself
    # reads only that triangle): W[j] is then the read triangle's rows 0..j without their mirrors.
    P, Q, _ = _lower_triangle(m, strict=False)
    if CHOLESKY_JVP_SYMMETRIZES_BOTH_TRIANGLES:
        groups, members = np.concatenate([P, P]), np.concatenate([a_map[P, Q], a_map[Q, P]])
    else:
        groups, members = P, a_map[P, Q]
    V = _composed_union(a.deps, _tile_groups(groups, members, m, mm, B, (B * m, B * mm)))
    W = prefix_union(V, m)
    # (2) Z[i, j] = M[i, 0] ∪ … ∪ M[i, j]: a running union along each row of M
    Z = prefix_union(a.deps.gather_rows((boff * mm + a_map.ravel()[None, :]).ravel()), m)
    oi, oj = np.tril_indices(m)  # every factor entry L[i, j], i >= j
    oi, oj = oi.astype(np.int64), oj.astype(np.int64)
    w_of = np.full(mm, -1, np.int64)
    z_of = np.full(mm, -1, np.int64)
    w_of[r_map[oi, oj]] = oj
    z_of[r_map[oi, oj]] = oi * m + oj
    w_rows = np.where(w_of[None, :] >= 0, boff * m + w_of[None, :], -1).ravel()
    z_rows = np.where(z_of[None, :] >= 0, boff * mm + z_of[None, :], -1).ravel()
    factor = Deps.union(W.gather_rows(w_rows), Z.gather_rows(z_rows))
    opp_all = np.tile(w_of < 0, B)
    if other == "input":
        rest = a.deps.mask_rows(opp_all)
    else:
        rest = _spread(_batch_rows(a.deps, a.size, B), a.size, B).mask_rows(opp_all)
    return Deps.union(factor, rest)


@deps_rule("stablehlo.cholesky", kind=EXACT,
           note="factor exact (JAX's symmetric derivative); the implementation-defined other triangle: whole matrix")
def _cholesky(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§cholesky: exact in the factor's triangle, the whole matrix in the implementation-defined other one."""
    (a,) = args
    lower = _bool_attr(op, "lower") if "lower" in op.attributes else False
    return [cholesky_deps(a, lower=lower, other="any", n=ctx.n)]


# ====================================================================== solves with right-hand-side columns
def solve_columns_deps(ctx, matrix_args, rhs, nb: int) -> Deps:
    """``X = f(matrices) ⁻¹ · B`` for a dense inverse: ``X[b, :, j]`` depends on every matrix operand of
    batch ``b`` and on the column ``B[b, :, j]`` (e.g. tridiagonal solves)."""
    B = num_elements(rhs.shape[:nb])
    m, k = rhs.shape[-2], rhs.shape[-1]
    (mat,) = batch_union(ctx, list(matrix_args), nb, [_T(tuple(rhs.shape))])
    if rhs.deps.is_empty or m == 0:
        return mat
    # column union: X[b, i, j] <- B[b, p, j] for every p — one union per (b, j), then spread down the column
    per = m * k
    j_of = np.arange(rhs.size, dtype=np.int64)
    groups = sp.csr_array((np.ones(rhs.size, bool), ((j_of // per) * k + j_of % k, j_of)), shape=(B * k, rhs.size))
    col = _composed_union(rhs.deps, groups)
    return Deps.union(mat, col.gather_rows((j_of // per) * k + j_of % k))


class _T:
    """A stand-in result type (shape and size) for :func:`batch_union`."""

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.size = num_elements(shape)


# ====================================================================== column-ordered factorizations
def column_unions(x, nb: int) -> Deps:
    """Per batch index and column ``c`` of the trailing ``m × n`` matrices: the union of that column
    (``B·n`` rows, batch-major)."""
    import scipy.sparse as sp

    m, ncol = x.shape[-2], x.shape[-1]
    B = num_elements(x.shape[:nb])
    if x.deps.is_empty or x.size == 0:
        return Deps.empty(B * ncol, x.deps.n)
    # element (b, r, c) -> group b*n + c
    g = (np.arange(B, dtype=np.int64)[:, None, None] * ncol + np.arange(ncol, dtype=np.int64)[None, None, :]
         + np.zeros((1, m, 1), np.int64)).ravel()
    groups = sp.csr_array((np.ones(x.size, bool), (g, np.arange(x.size, dtype=np.int64))), shape=(B * ncol, x.size))
    return _composed_union(x.deps, groups)


def column_prefix_deps(x, nb: int, shape, prefix_of, own_column: bool) -> Deps:
    """A result of shape ``(batch…, rows, cols)`` whose element ``(b, i, j)`` depends on the columns
    ``0..prefix_of(i, j)`` (all rows) of ``x``'s batch ``b`` (nothing where the prefix is ``-1``), plus
    column ``j`` when ``own_column``.  Columnwise factorizations (LU with partial pivoting, Householder QR)
    have this shape: step ``k`` reads only the columns ``0..k``."""
    ncol = x.shape[-1]
    B = num_elements(x.shape[:nb])
    rows, cols = shape[-2], shape[-1]
    size = B * rows * cols
    if x.deps.is_empty or size == 0:
        return Deps.empty(size, x.deps.n)
    cu = column_unions(x, nb)
    pre = prefix_union(cu, ncol)  # out[b, c] = ∪_{c' ≤ c} cu[b, c'] per batch index
    ii, jj = np.divmod(np.arange(rows * cols, dtype=np.int64), cols)
    p = np.minimum(prefix_of(ii, jj), ncol - 1)
    boff = (np.arange(B, dtype=np.int64) * ncol)[:, None]
    parts = [pre.gather_rows(np.where(p[None, :] >= 0, boff + p[None, :], -1).ravel())]
    if own_column:
        parts.append(cu.gather_rows(np.where(jj[None, :] < ncol, boff + jj[None, :], -1).ravel()))
    return Deps.union(*parts)


# ====================================================================== fft
@deps_rule("stablehlo.fft", kind=EXACT,
           note="dense along the transformed trailing dims, independent across the leading ones")
def _fft(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§fft (FFT, IFFT, RFFT, IRFFT): dense along the ``len(fft_length)`` trailing dims — the DFT matrix has
    no zero entry — and independent across the leading ones.  Exact."""
    (x,) = args
    L = len(i64_list(op, "fft_length"))
    return batch_union(ctx, [x], len(x.shape) - L, ctx.result_types(op))


@error_rule("stablehlo.fft")
def _fft_trust(ctx: RuleContext, op: Op, args: list[AbstractValue], consts: list[np.ndarray]) -> ErrorResult:
    """§fft: rounded sums of rounded twiddle products in a backend-chosen order: decides nothing."""
    return untrusted(ctx, op, args, consts)


@fold_rule("stablehlo.fft")
def _fft_fold(ctx: RuleContext, op: Op, consts: list[np.ndarray]) -> FoldResult:
    (x,) = consts
    (t,) = ctx.result_types(op)
    lengths = i64_list(op, "fft_length")
    axes = tuple(range(x.ndim - len(lengths), x.ndim))
    kind = enum_text(op, "fft_type")
    y: np.ndarray
    if kind == "FFT":
        y = np.fft.fftn(x, axes=axes)
    elif kind == "IFFT":
        y = np.fft.ifftn(x, axes=axes)
    elif kind == "RFFT":
        y = np.fft.rfftn(x, s=lengths, axes=axes)
    elif kind == "IRFFT":
        y = np.fft.irfftn(x, s=lengths, axes=axes)
    else:  # pragma: no cover
        raise NotFoldable
    return [np.asarray(y).astype(t.dtype)]
