"""§custom_call: re-emitted verbatim with the derivative of its family.

Custom calls are described once, in :data:`stablehlo_sparsity.ir.custom_calls.FAMILIES` (the analysis reads
the same table).  A known call is re-emitted verbatim (:mod:`.replay`), so the LAPACK / cuSOLVER kernel the
module calls computes the primal bit for bit, and differentiated with JAX's derivative of the
``jax.lax.linalg`` function that computes the same thing (the family's ``jvp``, registered here in
:data:`~.replay.REPLAY_JVPS`): ``getrf`` → ``lu``, ``potrf`` → ``cholesky``, ``trsm`` →
``triangular_solve``, ``syevd`` / ``heevd`` → ``eigh``, ``gesdd`` / ``gesvd`` → ``svd``, ``gtsv`` →
``tridiagonal_solve``.  QR's two halves, ``geqrf`` (packed reflectors and ``tau``) and ``orgqr`` / ``ungqr``
(``Q`` from them), have no JAX derivative of their own (``lax.linalg.geqrf`` / ``householder_product`` have
none): they are differentiated through a JAX transcription of LAPACK's Householder steps (``?larfg``
conventions), evaluated at the module's operands.  Families JAX cannot differentiate (Schur ``gees``,
Hessenberg ``gehrd``, tridiagonal reduction ``sytrd``, ``geev`` …) replay for values and refuse the derivative
with the family's reason, naming the target.  Sparse-matrix products (``cpu_csr_sparse_dense_ffi``, cuSPARSE /
hipSPARSE SpMV and SpMM) are differentiated through :func:`sparse_product_reference`, a segment sum of gathered rows
that is bilinear in the stored values and the dense operand (``op(A)`` of a GPU call read from its descriptor).
A module that reads a result LAPACK leaves as scratch (the overwritten input of ``gesdd``, the diagonals of
``gtsv``, the vectors of a ``gesdd`` with ``mode = N``) has no derivative either.  Sharding markers are the
identity (a shape-changing one — ``SPMDFullToShardShape`` of a sharded program — is refused, as the analysis
does); Python callbacks belong to the process that exported the module and cannot be replayed.
"""

from __future__ import annotations

from typing import Any, Sequence

import re

import numpy as np

from ...ir.attrs import attr_text, string_attr
from .core import ImportContext, ImportError_, Op, Values, import_rule
from .linalg import geqrf_reference, orgqr_reference, sym_from
from ...ir.custom_calls import Family
from .replay import REPLAY_JVPS, JvpRule, replay

#: Primal or tangent values of a replayed op (JAX arrays or tracers).
Arrays = Sequence[Any]

def _config_int(attrs: dict[str, str], key: str, default: int) -> int:
    """An integer field of the ``mhlo.backend_config`` dictionary in a replayed op's attribute text."""
    m = re.search(key + r" = (\d+)", attrs.get("mhlo.backend_config", ""))
    return int(m.group(1)) if m else default


def _getrf_jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
    import jax
    from jax.lax import linalg

    return [jax.jvp(lambda a: linalg.lu(a)[0], primals[:1], tangents[:1])[1], None, None][:len(out)]


def _potrf_jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
    """LAPACK ``potrf`` writes the factor into the ``uplo`` triangle and leaves the other one as it was."""
    import jax
    import jax.numpy as jnp
    from jax.lax import linalg

    lower = _config_int(attrs, "uplo", ord("L")) == ord("L")
    (a,), (da,) = primals[:1], tangents[:1]

    def factor(x: Any) -> Any:
        L = linalg.cholesky(sym_from(x, lower), symmetrize_input=False)
        return L if lower else jnp.swapaxes(L, -1, -2).conj()

    dL = jax.jvp(factor, (a,), (da,))[1]
    keep = jnp.tril(da, -1) if not lower else jnp.triu(da, 1)  # the untouched triangle
    tri = jnp.tril(dL) if lower else jnp.triu(dL)
    return [tri + keep, None][:len(out)]


def _trsm_jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
    import jax
    from jax.lax import linalg

    def letter(key: str, default: str) -> str:
        return chr(_config_int(attrs, key, ord(default)))

    side, uplo, trans, diag = letter("side", "L"), letter("uplo", "L"), letter("trans_x", "N"), letter("diag", "N")

    def solve(a: Any, b: Any) -> Any:
        return linalg.triangular_solve(a, b, left_side=side == "L", lower=uplo == "L", transpose_a=trans != "N",
                                       conjugate_a=trans == "C", unit_diagonal=diag == "U")

    return [jax.jvp(solve, tuple(primals[:2]), tuple(tangents[:2]))[1]]


def _syevd_jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
    import jax
    from jax.lax import linalg

    lower = _config_int(attrs, "uplo", ord("L")) == ord("L")
    v, w = jax.jvp(lambda a: linalg.eigh(sym_from(a, lower), lower=True, symmetrize_input=False),
                   primals[:1], tangents[:1])[1]
    return [v, w] + [None] * (len(out) - 2)


def _svd_jvp(algorithm: str) -> JvpRule:
    """``gesdd`` / ``gesvd`` → ``(overwritten a, s, u, vt, info)``: the derivative of ``lax.linalg.svd`` with
    the same algorithm (so the singular vectors JAX's rule differentiates are the kernel's, signs included).
    ``mode`` ``A`` (full) on a square matrix is the reduced SVD; ``N`` computes singular values only (``u``
    and ``vt`` are scratch: :func:`_scratch_read` refuses a module that reads them)."""

    def jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
        import jax
        from jax.lax import linalg

        how = getattr(linalg.SvdAlgorithm, algorithm)
        mode = chr(_config_int(attrs, "mode", ord("A")))
        if mode == "N":
            ds = jax.jvp(lambda a: linalg.svd(a, full_matrices=False, compute_uv=False, algorithm=how),
                         primals[:1], tangents[:1])[1]
            return [None, ds, None, None, None]
        du, ds, dvt = jax.jvp(lambda a: linalg.svd(a, full_matrices=False, compute_uv=True, algorithm=how),
                              primals[:1], tangents[:1])[1]
        return [None, ds, du, dvt, None]

    return jvp


def _gtsv_jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
    """``gtsv`` → ``(dl, d, du overwritten by the LU factors, x, info)``: the derivative of
    ``lax.linalg.tridiagonal_solve``."""
    import jax
    from jax.lax import linalg

    dx = jax.jvp(lambda dl, d, du, b: linalg.tridiagonal_solve(dl, d, du, b), tuple(primals[:4]),
                 tuple(tangents[:4]))[1]
    return [None, None, None, dx, None]


def _geqrf_jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
    import jax

    return list(jax.jvp(geqrf_reference, primals[:1], tangents[:1])[1])


def _orgqr_jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
    import jax

    return [jax.jvp(orgqr_reference, tuple(primals[:2]), tuple(tangents[:2]))[1]]


def csr_rows(indptr: Any, nnz: int) -> Any:
    """The row of each stored value of a CSR matrix: ``i`` for ``indptr[i] ≤ k < indptr[i+1]``, ``-1`` outside
    ``[indptr[0], indptr[-1])``."""
    import jax.numpy as jnp

    k = jnp.arange(nnz, dtype=indptr.dtype)
    row = jnp.searchsorted(indptr, k, side="right") - 1
    return jnp.where((k >= indptr[0]) & (k < indptr[-1]), row, -1)


def sparse_product_reference(data: Any, out_index: Any, in_index: Any, x: Any, out_rows: int) -> Any:
    """``y[i, c] = Σ_{k : out_index[k] = i} data[k] · x[in_index[k], c]`` with JAX ops (a segment sum of
    gathered rows; an ``out_index`` outside ``[0, out_rows)`` adds nothing): the sparse-matrix products of
    :mod:`stablehlo_sparsity.analysis.rules.sparse_kernels`, differentiable in ``data`` and ``x``."""
    import jax

    terms = data.reshape(data.shape + (1,) * (x.ndim - 1)) * x[in_index]
    return jax.ops.segment_sum(terms, out_index, num_segments=out_rows)


def _product_jvp(data: Any, out_index: Any, in_index: Any, x: Any, ddata: Any, dx: Any, out_rows: int) -> Any:
    """The tangent of a sparse product (bilinear in ``data`` and ``x``; the indices are integers)."""
    import jax

    return jax.jvp(lambda d, v: sparse_product_reference(d, out_index, in_index, v, out_rows), (data, x),
                   (ddata, dx))[1]


def _cpu_csr_product_jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
    """``cpu_csr_sparse_dense_ffi(data, indptr, indices, rhs)``: row ``i`` holds the values ``indptr[i] ≤ k <
    indptr[i+1]``, in the columns ``indices[k]``."""
    data, indptr, indices, x = primals[:4]
    rows = csr_rows(indptr, data.shape[0])
    return [_product_jvp(data, rows, indices, x, tangents[0], tangents[3], out[0].shape[0])]


def _gpu_product_jvp(csr: bool) -> JvpRule:
    """cuSPARSE / hipSPARSE SpMV / SpMM, ``(data, indices, indptr, rhs)`` (CSR) or ``(data, row, col, rhs)``
    (COO) → ``(y, workspace)``, with ``op(A)`` read from the ``opaque`` descriptor (the import rule refuses a call
    whose descriptor leaves it open)."""

    def jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
        from ...analysis.rules.sparse_kernels import product_readings

        data, first, second, x = primals[:4]
        out_rows = out[0].shape[0]
        (transpose,) = product_readings(attrs.get("mhlo.backend_config", ""), csr, second.shape[0], out_rows,
                                        x.shape[0])
        row, col = (csr_rows(second, data.shape[0]), first) if csr else (first, second)
        out_index, in_index = (col, row) if transpose else (row, col)
        dy = _product_jvp(data, out_index, in_index, x, tangents[0], tangents[3], out_rows)
        return [dy] + [None] * (len(out) - 1)  # (the _ffi_v2 kernels have no scratch result)

    return jvp


def _special_jvp(derivative: str) -> JvpRule:
    """jaxlib's elementwise ``digamma`` / ``lgamma`` kernels: ``ẏ = f'(x)·ẋ``, ``f'`` from ``jax.lax``
    (``polygamma(1, x)`` for digamma, ``digamma(x)`` for lgamma: JAX's own rules)."""

    def jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
        from jax import lax

        (x,), (dx,) = primals[:1], tangents[:1]
        slope = lax.polygamma(np.asarray(1, x.dtype), x) if derivative == "polygamma1" else lax.digamma(x)
        return [slope * dx]

    return jvp


REPLAY_JVPS.update({"getrf": _getrf_jvp, "potrf": _potrf_jvp, "trsm": _trsm_jvp, "syevd": _syevd_jvp,
                    "gesdd": _svd_jvp("DEFAULT"), "gesvd": _svd_jvp("QR"), "gtsv": _gtsv_jvp, "geqrf": _geqrf_jvp,
                    "orgqr": _orgqr_jvp, "zero": lambda primals, tangents, attrs, out: [None] * len(out),
                    "cpu_csr_product": _cpu_csr_product_jvp, "gpu_csr_product": _gpu_product_jvp(csr=True),
                    "gpu_coo_product": _gpu_product_jvp(csr=False), "digamma": _special_jvp("polygamma1"),
                    "lgamma": _special_jvp("digamma")})


def _refusing_jvp(op_name: str, location: str, detail: str) -> JvpRule:
    """A JVP that raises: the op replays for values, and differentiating it is an error saying why."""

    def jvp(primals: Arrays, tangents: Arrays, attrs: dict[str, str], out: Arrays) -> Arrays:
        raise ImportError_(op_name, location, detail)

    return jvp


def _scratch_read(ctx: ImportContext, op: Op, fam: Family) -> str | None:
    """Why the derivative of this call is refused because of what the module reads (``None`` if it is not):
    a result the kernel leaves as scratch, or full singular vectors of a non-square matrix."""
    roles = list(fam.results)
    if fam.name in ("gesdd", "gesvd"):
        mode = chr(_config_int({"mhlo.backend_config": _attr_text(op)}, "mode", ord("A")))
        rtypes = ctx.result_types(op)
        if mode == "N":
            roles[2:4] = ["workspace", "workspace"]
        elif mode == "A" and rtypes[2].shape[-1] != rtypes[3].shape[-1]:
            return ("it computes full singular vectors of a non-square matrix, and JAX differentiates the "
                    "reduced SVD only (lax.linalg.svd with full_matrices=False)")
    for role, r in zip(roles, op.results):
        if role == "workspace" and any(True for _ in r.uses):
            return ("the module reads a result the kernel leaves as scratch (LAPACK overwrites it), which has no "
                    "derivative")
    return None


def _sparse_product_refusal(ctx: ImportContext, op: Op, args: Values, fam: Family) -> str | None:
    """Why a sparse product cannot be differentiated (``None`` if it can): a buffer in another layout than the
    row-major one the JAX reference assumes, or a GPU descriptor that does not settle ``A`` against ``Aᵀ``."""
    if fam.jvp not in ("cpu_csr_product", "gpu_csr_product", "gpu_coo_product"):
        return None
    from ...analysis.rules.sparse_kernels import product_readings, row_major_layouts

    if not row_major_layouts(op):
        return "a buffer in another layout than row-major"
    if fam.jvp == "cpu_csr_product":
        return None
    readings = product_readings(_attr_text(op), fam.jvp == "gpu_csr_product", int(np.size(args[2])),
                                ctx.result_types(op)[0].shape[0], int(np.shape(args[3])[0]))
    if len(readings) == 1:
        return None
    return "its opaque descriptor does not say whether it multiplies by the matrix or by its transpose"


def _attr_text(op: Op) -> str:
    return attr_text(op, "mhlo.backend_config")


@import_rule("stablehlo.custom_call")
def _custom_call(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§custom_call: the targets of :data:`~stablehlo_sparsity.ir.custom_calls.FAMILIES`, re-emitted with their
    family's derivative; sharding markers pass their operands through; unknown targets and Python callbacks
    are refused."""
    from ...ir.custom_calls import family_of

    target = string_attr(op, "call_target_name")
    fam = family_of(target)
    if fam is None:
        raise ctx.error(op, f"unknown custom_call target '{target}'")
    if fam.sharding_marker:
        rtypes = ctx.result_types(op)
        if len(rtypes) > len(args) or any(tuple(t.shape) != tuple(np.shape(a)) for t, a in zip(rtypes, args)):
            raise ctx.error(op, f"custom_call target '{target}' changes shapes (a sharded program); import the "
                                "single-device program instead")
        return list(args)[:len(op.results)]
    if target == "shape_assertion":
        return []
    if fam.callback:
        raise ctx.error(op, f"custom_call target '{target}' is {fam.refused}")
    reason = None if fam.jvp is None else _scratch_read(ctx, op, fam) or _sparse_product_refusal(ctx, op, args, fam)
    if fam.jvp is not None and reason is None:
        return replay(ctx, op, args, jvp=fam.jvp)
    if fam.zero_derivative:
        return replay(ctx, op, args, jvp="zero")
    detail = f"custom_call target '{target}' has no derivative rule: {reason or fam.refused}"
    key = f"refused {target} at {ctx.location(op)}: {detail}"
    REPLAY_JVPS.setdefault(key, _refusing_jvp(op.operation.name, ctx.location(op), detail))
    return replay(ctx, op, args, jvp=key)
