"""``stablehlo.custom_call`` (§custom_call): rules as data, keyed by ``call_target_name``.

A custom call is opaque to StableHLO, so its semantics come from the table of known targets,
:data:`stablehlo_sparsity.ir.custom_calls.FAMILIES` (shared with the importer), whose ``analysis`` key names
one of the rules here (:data:`ANALYSIS_RULES`):

* **linear-algebra kernels** that JAX lowers ``jnp.linalg`` / ``jax.scipy.linalg`` to — LAPACK on CPU
  (``lapack_{s,d,c,z}<routine>_ffi``), cuSOLVER / hipSOLVER / cuSPARSE on GPU, and XLA's TPU expanders
  (``LuDecomposition``, ``Qr``, ``Eigh`` …).  They work on matrices in the trailing two dims, independently
  for each index of the leading (batch) dims (``num_batch_dims`` in ``mhlo.frontend_attributes`` when JAX
  sets it, else rank − 2), so every rule is block diagonal across the batch.  Within a matrix:

  - ``trsm`` (triangular solve) and ``potrf`` (Cholesky) are exact, with the structure of §triangular_solve
    and §cholesky (:mod:`.linalg`); ``potrf`` leaves the opposite triangle untouched (LAPACK: "not
    referenced"), so there it is the identity;
  - tridiagonal solves (``gtsv``): column ``j`` of the solution depends on the three diagonals and column
    ``j`` of the right-hand side only;
  - LU with partial pivoting (``getrf``, cuSOLVER's, XLA's TPU ``LuDecomposition``) and Householder QR
    (``geqrf`` / ``orgqr``, TPU's ``Qr`` / ``ProductOfElementaryHouseholderReflectors``) are exact, column by
    column: the same mathematics whichever library computes it;
  - every other factorization (eigen- and singular value decompositions, Schur, Hessenberg, tridiagonal
    reduction, cuSOLVER's sparse QR solve ``csrlsvqr``) is **conservative**: each output element of a batch
    index depends on every input element of that batch index.  Pivots, permutations and ``info`` are
    integers and get no dependencies anyway.

* **sparse-matrix kernels** (:mod:`.sparse_kernels`): ``cpu_csr_sparse_dense_ffi`` (a ``BCSR`` product on CPU)
  and the cuSPARSE / hipSPARSE SpMV, SpMM and to-dense calls — exact where the indices are constants.

* **identity markers**: ``Sharding``, ``SPMDFullToShardShape``, ``SPMDShardToFullShape``,
  ``annotate_device_placement`` (shape-preserving; a shape change — a real shard — is refused).
* **selections**: ``ApproxTopK`` (``jax.lax.approx_max_k`` on TPU) — each value depends on its row along
  ``reduction_dim``, as ``chlo.top_k``;
* **no derivative**: ``AllocateBuffer`` (``lax.empty``: uninitialized), random-bit kernels
  (``cu_threefry2x32_ffi``…), ``shape_assertion``.
* **Python callbacks** (``jax.pure_callback``, ``io_callback``, ``jax.debug.callback`` / ``print`` on CPU
  and GPU): every result element depends on every operand element (the function is Python's, opaque);
  tokens of ordered effects carry nothing; one warning per source line.  (On TPU, JAX lowers callbacks to
  ``send``/``recv`` host transfers, which are refused.)

Unknown targets raise :class:`~stablehlo_sparsity.errors.UnsupportedOpError` naming the target and its
location; with ``on_unknown="conservative"`` every result element depends on every operand element instead
(warns).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import scipy.sparse as sp

from ...ir.attrs import dict_attr, string_attr
from ...ir.custom_calls import FAMILIES
from ...errors import UnsupportedOpError
from ...lattice import Deps, Groups, group_union
from ..values import is_differentiable
from .linalg import batch_union, cholesky_deps, column_prefix_deps, solve_columns_deps, triangular_solve_deps
from .sparse_kernels import cpu_csr_product, gpu_coo_product, gpu_coo_todense, gpu_csr_product, gpu_csr_todense
from .registry import PER_TARGET, deps_rule
from .registry import RuleContext, Op, DepsResult  # the rule contract
from ..values import AbstractValue

__all__ = ["CUSTOM_CALL_TARGETS", "ANALYSIS_RULES", "target_name", "custom_call_rule"]


# ====================================================================== attribute access
def target_name(op) -> str:
    return string_attr(op, "call_target_name")


def _num_batch_dims(op, args, core_rank: int = 2) -> int:
    """``num_batch_dims`` from JAX's frontend attributes, else (max operand rank) − ``core_rank``."""
    fa = dict_attr(op, "mhlo.frontend_attributes")
    if "num_batch_dims" in fa:
        try:
            return max(int(fa["num_batch_dims"]), 0)
        except ValueError:
            pass
    ranks = [len(a.shape) for a in args] or [0]
    return max(max(ranks) - core_rank, 0)


# ====================================================================== rule kinds
def _batched(core_rank: int = 2):
    """Conservative within each matrix, independent across the batch."""

    def rule(ctx, op, args):
        """Factorizations (LU/QR on TPU, eigen- and singular value decompositions, Schur, Hessenberg,
        tridiagonal reduction …): every output element of a batch index depends on every input element of
        that batch index — conservative within a matrix, independent across the batch."""
        return batch_union(ctx, args, _num_batch_dims(op, args, core_rank), ctx.result_types(op))

    rule.kind = "conservative"  # type: ignore[attr-defined]
    return rule


def _trsm(ctx, op, args):
    """LAPACK ``?trsm``: ``op(a)·x = α·b`` (side ``L``) or ``x·op(a) = α·b`` (side ``R``); exact."""
    cfg = dict_attr(op, "mhlo.backend_config")
    a, b = args[0], args[1]
    rtypes = ctx.result_types(op)
    x = triangular_solve_deps(a, b, left_side=cfg.get("side", ord("L")) == ord("L"),
                              lower=cfg.get("uplo", ord("L")) == ord("L"),
                              transpose=cfg.get("trans_x", ord("N")) != ord("N"),
                              unit_diagonal=cfg.get("diag", ord("N")) == ord("U"), n=ctx.n)
    extra = [a for a in args[2:] if not a.deps.is_empty]  # a scalar alpha, if any, scales every element
    if extra:
        x = Deps.union(x, *[e.deps.reduce_all().broadcast_row(x.rows) for e in extra])
    return [x if t.shape == tuple(b.shape) else ctx.empty(t.size) for t in rtypes]


_trsm.kind = "exact"  # type: ignore[attr-defined]


def _potrf(ctx, op, args):
    """LAPACK / cuSOLVER ``potrf``: the Cholesky factor in the ``uplo`` triangle (exact); the other triangle
    is not referenced, so it keeps the input's dependencies."""
    cfg = dict_attr(op, "mhlo.backend_config")
    (a,) = args[:1]
    lower = cfg.get("uplo", ord("L")) == ord("L")
    out = []
    for t in ctx.result_types(op):
        out.append(cholesky_deps(a, lower=lower, other="input", n=ctx.n) if t.shape == tuple(a.shape)
                   else ctx.empty(t.size))
    return out


_potrf.kind = "exact"  # type: ignore[attr-defined]


def _gtsv(ctx, op, args):
    """Tridiagonal solve ``(dl, d, du, b)``: the solution's column ``j`` depends on the three diagonals and on
    ``b[..., :, j]``; the other results (the overwritten diagonals) are conservative per batch index.  LAPACK's
    ``?gtsv`` (``lapack_*gtsv_ffi``) never reads ``dl[..., 0]`` and ``du[..., n-1]`` (outside the matrix); the
    GPU kernels, which only require them to be zero, are taken to read them."""
    dl, d, du, b = args[:4]
    if target_name(op).startswith("lapack_") and d.shape and d.shape[-1]:
        n = d.shape[-1]
        dl = _View(dl.shape, dl.deps.mask_rows(np.tile(np.arange(n) != 0, dl.size // n)))
        du = _View(du.shape, du.deps.mask_rows(np.tile(np.arange(n) != n - 1, du.size // n)))
    nb = len(b.shape) - 2
    rtypes = ctx.result_types(op)
    out = []
    for t in rtypes:
        if t.shape == tuple(b.shape) and len(b.shape) >= 2:
            out.append(solve_columns_deps(ctx, [dl, d, du], b, nb))
        else:
            out.extend(batch_union(ctx, [dl, d, du, b], nb, [t]))
    return out


_gtsv.kind = "exact"  # type: ignore[attr-defined]


def _getrf(ctx, op, args):
    """LU with partial pivoting (``getrf``), packed ``L\\U``: step ``k`` picks a pivot in column ``k`` and
    eliminates with it, so ``U[i, j]`` (``i ≤ j``) depends on the columns ``0..i-1`` and ``j``, and
    ``L[i, j]`` (``i > j``) on the columns ``0..j`` — every row of them, since the pivot rows depend on the
    values.  Exact for the global pattern; pivots and ``info`` are integers."""
    (a,) = args[:1]
    nb = len(a.shape) - 2
    return [column_prefix_deps(a, nb, t.shape, lambda i, j: np.minimum(i - 1, j), True)
            if tuple(t.shape) == tuple(a.shape) else ctx.empty(t.size) for t in ctx.result_types(op)]


_getrf.kind = "exact"  # type: ignore[attr-defined]


def _geqrf(ctx, op, args):
    """Householder QR (``geqrf``), packed ``R`` + reflectors: ``R[i, j]`` (``i ≤ j``) depends on the columns
    ``0..i`` and ``j``; the reflector stored below the diagonal in column ``j`` and ``tau[j]`` on the
    columns ``0..j``.  A real matrix with ``m ≤ n``: the last reflector acts on one element, so it is ``±1``
    (``tau`` is 0 — LAPACK's ``dlarfg`` of an empty vector, cuSOLVER, XLA's TPU expander — or 2, piecewise
    constant either way): row ``m-1`` of ``R`` reads the columns ``0..m-2`` and ``j`` only, ``tau[m-1]``
    nothing.  (A complex one rotates the phase of that element: no such cap.)"""
    (a,) = args[:1]
    nb = len(a.shape) - 2
    m = a.shape[-2]
    big = np.iinfo(np.int64).max
    cap = m - 2 if np.dtype(a.dtype).kind == "f" and m <= a.shape[-1] else big
    out = []
    for t in ctx.result_types(op):
        if tuple(t.shape) == tuple(a.shape):
            out.append(column_prefix_deps(a, nb, t.shape, lambda i, j: np.minimum(np.minimum(i, j), cap), True))
        elif len(t.shape) == nb + 1 and tuple(t.shape[:nb]) == tuple(a.shape[:nb]):  # tau[..., k]
            out.append(column_prefix_deps(a, nb, tuple(t.shape[:nb]) + (1, t.shape[-1]),
                                          lambda i, j: np.where(j > cap, -1, j), False))
        else:
            out.append(ctx.empty(t.size))
    return out


_geqrf.kind = "exact"  # type: ignore[attr-defined]


def _orgqr(ctx, op, args):
    """``Q`` from Householder reflectors (``orgqr`` / ``ungqr``): ``Q[:, j] = H_0 ⋯ H_min(j, k-1) e_j``
    depends on the reflectors (the strictly lower part of the columns) and ``tau`` entries
    ``0..min(j, k-1)``."""
    a, tau = args[0], args[1]
    nb = len(a.shape) - 2
    m, ncol = a.shape[-2], a.shape[-1]
    k = tau.shape[-1]
    below = np.tile((np.arange(m)[:, None] > np.arange(ncol)[None, :]).ravel(), max(a.size // max(m * ncol, 1), 1))
    reflectors = _View(a.shape, a.deps.mask_rows(below) if a.size else a.deps)
    out = []
    for t in ctx.result_types(op):
        if len(t.shape) != nb + 2 or tuple(t.shape[:nb]) != tuple(a.shape[:nb]):
            out.extend(batch_union(ctx, args, nb, [t]))
            continue
        pref = (lambda i, j: np.minimum(j, k - 1))
        parts = [column_prefix_deps(reflectors, nb, t.shape, pref, False)]
        if not tau.deps.is_empty:
            parts.append(column_prefix_deps(_View(tuple(tau.shape[:-1]) + (1, k), tau.deps), nb, t.shape, pref, False))
        out.append(Deps.union(*parts))
    return out


_orgqr.kind = "exact"  # type: ignore[attr-defined]


class _View:
    """An operand seen with another shape of the same elements, or other index sets."""

    def __init__(self, shape, deps):
        self.shape = tuple(shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.deps = deps


def _identity(ctx, op, args):
    """A marker: results are the operands (shape-preserving)."""
    rtypes = ctx.result_types(op)
    if len(rtypes) != len(args) or any(t.shape != tuple(a.shape) for t, a in zip(rtypes, args)):
        raise UnsupportedOpError("stablehlo.custom_call", ctx.location(op),
                                 f"target '{target_name(op)}' changes shapes (a sharded program); analyze the "
                                 "single-device program instead", conservative_helps=False)
    return [a.deps for a in args]


_identity.kind = "identity"  # type: ignore[attr-defined]


def _elementwise(ctx, op, args):
    """An elementwise function of one or more same-shaped operands (jaxlib's ``digamma`` / ``lgamma`` kernels):
    result element ``e`` depends on element ``e`` of every operand — the union move of §abs … §xor (integer
    operands carry no index sets)."""
    rtypes = ctx.result_types(op)
    if len(rtypes) != 1 or any(tuple(a.shape) != rtypes[0].shape for a in args):
        return _every_on_every(ctx, args, rtypes)  # (not the elementwise call it names: dense)
    return [Deps.union(*[a.deps for a in args]) if args else ctx.empty(rtypes[0].size)]


_elementwise.kind = "exact"  # type: ignore[attr-defined]


def _no_derivative(ctx, op, args):
    """Results carry no dependence on differentiable inputs (uninitialized buffers, random bits, integer
    permutations, assertions)."""
    return [ctx.empty(t.size) for t in ctx.result_types(op)]


_no_derivative.kind = "zero-derivative"  # type: ignore[attr-defined]


def _python_callback(ctx, op, args):
    """A Python host callback — ``jax.pure_callback``, ``io_callback``, ``jax.debug.callback`` / ``print``
    (``xla_ffi_python_{cpu,gpu}_callback`` and their partitioned and legacy variants).  Its results are an
    arbitrary function of its operands, computed by Python: every result element depends on every operand
    element.  Tokens (``ordered=True`` effects) carry no data: a token operand adds nothing, a token result
    depends on nothing.  Sound, not exact (the callback may ignore operands); one warning per source line
    when a dependency goes through it."""
    rtypes = ctx.result_types(op)
    live = [a.deps.reduce_all() for a in args if not a.deps.is_empty]
    total = Deps.union(*live) if live else None
    out = [total.broadcast_row(t.size) if total is not None and is_differentiable(t.dtype) and t.size
           else ctx.empty(t.size) for t in rtypes]
    if total is not None and any(not d.is_empty for d in out):
        where = ctx.location(op)
        seen = ctx.memo("python callback warnings")
        if where not in seen:
            seen[where] = True
            ctx.warn(op, f"Python callback '{target_name(op)}': every result element depends on every operand "
                         "element (its function is opaque to the analysis)")
    return out


_python_callback.kind = "conservative"  # type: ignore[attr-defined]


def _approx_top_k(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """XLA's ``ApproxTopK`` (``jax.lax.approx_max_k`` / ``approx_min_k`` on TPU): ``N`` inputs then their ``N``
    scalar init values; result ``j`` keeps some elements of input ``j`` along ``reduction_dim`` (chosen by the
    comparator, the same positions for every input), padded with init ``j``.  Which element lands where
    depends on the values, so each result element depends on its input's whole row along that dimension and
    on the init value — as ``chlo.top_k`` along its last dimension."""
    n = len(args) // 2
    dim = int(dict_attr(op, "mhlo.backend_config").get("reduction_dim", -1))
    out = []
    for x, init, t in zip(args[:n], args[n:], ctx.result_types(op)):
        if not is_differentiable(t.dtype) or (x.deps.is_empty and init.deps.is_empty):
            out.append(ctx.empty(t.size))
            continue
        d = dim % len(x.shape)
        m = x.shape[d]
        other = x.shape[:d] + x.shape[d + 1:]
        rows = int(np.prod(other, dtype=np.int64))
        members = np.moveaxis(np.arange(x.size, dtype=np.int64).reshape(x.shape), d, -1).reshape(rows, m)
        grouping = sp.csr_array((np.ones(members.size, bool), members.ravel(), np.arange(rows + 1) * m),
                                shape=(rows, x.size))
        row_of = np.broadcast_to(np.expand_dims(np.arange(rows, dtype=np.int64).reshape(other), d), t.shape)
        parts = [group_union(x.deps, Groups.from_matrix(grouping)).gather_rows(row_of.ravel())]
        if not init.deps.is_empty:
            parts.append(init.deps.reduce_all().broadcast_row(t.size))
        out.append(Deps.union(*parts) if len(parts) > 1 else parts[0])
    return out


_approx_top_k.kind = "exact"  # type: ignore[attr-defined]


def _unknown(ctx, op, args, detail: str | None = None):
    name = target_name(op)
    if ctx.options.on_unknown != "conservative":
        raise UnsupportedOpError("stablehlo.custom_call", ctx.location(op),
                                 detail or f"unknown custom_call target '{name}'")
    ctx.warn(op, f"unknown custom_call target '{name}': every result element depends on every operand "
                 "element (conservative)")
    return _every_on_every(ctx, args, ctx.result_types(op))


def _every_on_every(ctx, args, rtypes) -> list[Deps]:
    """Every result element depends on every operand element (the conservative reading of a call)."""
    live = [a.deps.reduce_all() for a in args if not a.deps.is_empty]
    if not live:
        return [ctx.empty(t.size) for t in rtypes]
    total = Deps.union(*live)
    return [total.broadcast_row(t.size) for t in rtypes]


# ====================================================================== the table
#: the analysis rule of each ``custom_calls.Family.analysis`` key
ANALYSIS_RULES: dict[str, Callable] = {
    "dense": _batched(2), "trsm": _trsm, "potrf": _potrf, "gtsv": _gtsv, "getrf": _getrf, "geqrf": _geqrf,
    "orgqr": _orgqr, "identity": _identity, "elementwise": _elementwise, "approx_top_k": _approx_top_k,
    "zero": _no_derivative,
    "python_callback": _python_callback, "cpu_csr_product": cpu_csr_product, "gpu_csr_product": gpu_csr_product,
    "gpu_coo_product": gpu_coo_product, "gpu_csr_todense": gpu_csr_todense, "gpu_coo_todense": gpu_coo_todense,
}


def _build_table() -> dict[str, Callable]:
    """Every target of :data:`~stablehlo_sparsity.ir.custom_calls.FAMILIES` with its family's analysis rule."""
    return {target: ANALYSIS_RULES[fam.analysis] for fam in FAMILIES for target in fam.targets}


#: call_target_name -> rule ``fn(ctx, op, args)``; each rule has a ``kind`` for the coverage table.
CUSTOM_CALL_TARGETS: dict[str, Callable] = _build_table()


@deps_rule("stablehlo.custom_call", kind=PER_TARGET,
           note="see the custom_call table below; unknown targets: error or conservative opt-in")
def custom_call_rule(ctx: RuleContext, op: Op, args: list[AbstractValue]) -> DepsResult:
    """§custom_call: dispatch on ``call_target_name`` through :data:`CUSTOM_CALL_TARGETS`."""
    rule = CUSTOM_CALL_TARGETS.get(target_name(op))
    if rule is None:
        return _unknown(ctx, op, args)
    return rule(ctx, op, args)
