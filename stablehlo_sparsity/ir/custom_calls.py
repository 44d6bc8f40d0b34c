"""The ``stablehlo.custom_call`` targets the project knows, described once (§custom_call).

A custom call is opaque to StableHLO: what it computes is a fact about the runtime that registers it.  Both
sides of the project read those facts from :data:`FAMILIES`:

* the analysis (:mod:`.rules.custom_call`) picks each target's dependency rule by :attr:`Family.analysis`;
* the importer (:mod:`.importer.custom_call`) re-emits the call verbatim (so the module's own kernel computes the
  primal, bit for bit) and differentiates it with the ``jax.lax.linalg`` function named by
  :attr:`Family.jvp`, passes a sharding marker through, or refuses the derivative with
  :attr:`Family.refused`.

Roles of operands and results (``Family.operands`` / ``Family.results``): ``"matrix"`` and ``"rhs"`` are
data, ``"workspace"`` a result the kernel leaves behind as scratch (LAPACK overwrites its input and JAX never
reads it: the importer gives it no derivative and refuses to differentiate a module that reads it),
``"info"`` / ``"pivots"`` integers.  Matrices are the two trailing dims; the leading ones are the batch
(``num_batch_dims`` in ``mhlo.frontend_attributes`` when JAX sets it): ``Family.core_rank``.

This module holds data only (no JAX, no MLIR import).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Family", "FAMILIES", "family_of", "all_targets"]


@dataclass(frozen=True)
class Family:
    """One kind of custom call: the targets that compute the same thing (element types, vendors)."""

    #: what it computes, e.g. ``"geqrf"`` (LAPACK's routine name where there is one)
    name: str
    #: every ``call_target_name`` of the family
    targets: tuple[str, ...]
    #: the analysis rule (a key of ``rules.custom_call.ANALYSIS_RULES``)
    analysis: str
    #: operand and result roles (see the module docstring); empty where they vary or do not matter
    operands: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    #: rank of one problem in the trailing dims (the rest are batch dims)
    core_rank: int = 2
    #: a sharding / placement marker: the identity on its operands
    sharding_marker: bool = False
    #: the importer's derivative: a key of ``importer.replay.REPLAY_JVPS`` (registered by ``importer.custom_call``)
    jvp: str | None = None
    #: the JAX function computing the same thing (whose derivative ``jvp`` is, where JAX has one)
    jax_function: str | None = None
    #: why the importer cannot differentiate it (``None`` when it can, or when its derivative is zero)
    refused: str | None = None
    #: every floating-point result has a zero derivative (random bits, uninitialized buffers, assertions)
    zero_derivative: bool = False
    #: a Python callback of the exporting process
    callback: bool = False


def _lapack(real: str, complex_: str | None = None) -> tuple[str, ...]:
    """``lapack_{s,d}<real>_ffi`` and ``lapack_{c,z}<complex>_ffi`` (Hermitian names for complex routines)."""
    c = complex_ or real
    return tuple(f"lapack_{p}{real}_ffi" for p in "sd") + tuple(f"lapack_{p}{c}_ffi" for p in "cz")


def _gpu_solver(routine: str) -> tuple[str, ...]:
    return (f"cusolver_{routine}_ffi", f"hipsolver_{routine}_ffi")


def _gpu_sparse(*kernels: str) -> tuple[str, ...]:
    """``{cu,hip}sparse_<kernel>_ffi`` (jaxlib's cuSPARSE / hipSPARSE kernels, ``jax/experimental/sparse``) and
    their ``_ffi_v2`` successors (JAX 0.12.1): the same operands, a ``transpose`` attribute in place of the
    ``opaque`` descriptor, and no scratch result."""
    return tuple(f"{p}sparse_{k}_ffi{v}" for k in kernels for p in ("cu", "hip") for v in ("", "_v2"))


def _special(name: str) -> tuple[str, ...]:
    """``{cpu,cu,hip}_<name>_ffi``: jaxlib's elementwise special functions (JAX 0.12.1 lowers ``lax.<name>`` to
    them on every platform but TPU)."""
    return tuple(f"{p}_{name}_ffi" for p in ("cpu", "cu", "hip"))


_NO_JAX_JVP = "JAX defines no derivative for {} ({}); the importer replays it for values only"
_NOT_MAPPED = "not mapped onto a JAX linear-algebra function with a derivative yet"
_GPU = "a GPU kernel: its derivative is not mapped (import on the platform the module was exported for)"
_TPU = "an XLA TPU expander: its derivative is not mapped"

FAMILIES: tuple[Family, ...] = (
    # ------------------------------------------------------------------ LAPACK on CPU (jaxlib)
    Family("trsm", _lapack("trsm"), "trsm", ("matrix", "rhs", "alpha"), ("solution",), jvp="trsm",
           jax_function="lax.linalg.triangular_solve"),
    Family("potrf", _lapack("potrf"), "potrf", ("matrix",), ("factor", "info"), jvp="potrf",
           jax_function="lax.linalg.cholesky"),
    Family("getrf", _lapack("getrf"), "getrf", ("matrix",), ("factor", "pivots", "info"), jvp="getrf",
           jax_function="lax.linalg.lu"),
    Family("syevd", _lapack("syevd", "heevd"), "dense", ("matrix",), ("vectors", "values", "info"), jvp="syevd",
           jax_function="lax.linalg.eigh"),
    Family("gesdd", _lapack("gesdd"), "dense", ("matrix",), ("workspace", "values", "u", "vt", "info"),
           jvp="gesdd", jax_function="lax.linalg.svd"),
    Family("gesvd", _lapack("gesvd"), "dense", ("matrix",), ("workspace", "values", "u", "vt", "info"),
           jvp="gesvd", jax_function="lax.linalg.svd(algorithm=SvdAlgorithm.QR)"),
    Family("gtsv", _lapack("gtsv"), "gtsv", ("lower", "diagonal", "upper", "rhs"),
           ("workspace", "workspace", "workspace", "solution", "info"), jvp="gtsv",
           jax_function="lax.linalg.tridiagonal_solve"),
    Family("geqrf", _lapack("geqrf"), "geqrf", ("matrix",), ("reflectors", "tau"), jvp="geqrf",
           jax_function="importer.linalg.geqrf_reference (LAPACK's ?geqr2 in JAX; lax.linalg.geqrf has no derivative)"),
    Family("orgqr", _lapack("orgqr", "ungqr"), "orgqr", ("reflectors", "tau"), ("q",), jvp="orgqr",
           jax_function="importer.linalg.orgqr_reference (LAPACK's ?org2r in JAX; householder_product has no "
                        "derivative)"),
    Family("gees", _lapack("gees"), "dense", ("matrix",),
           refused=_NO_JAX_JVP.format("the Schur decomposition", "lax.linalg.schur")),
    Family("gehrd", _lapack("gehrd"), "dense", ("matrix",), ("reflectors", "tau", "info"),
           refused=_NO_JAX_JVP.format("the Hessenberg reduction", "lax.linalg.hessenberg")),
    Family("sytrd", _lapack("sytrd", "hetrd"), "dense", ("matrix",),
           refused=_NO_JAX_JVP.format("the tridiagonal reduction", "lax.linalg.tridiagonal")),
    Family("geev", _lapack("geev"), "dense", ("matrix",),
           refused="JAX differentiates eigenvalues only (lax.linalg.eig); " + _NOT_MAPPED),
    Family("geqp3", _lapack("geqp3"), "dense", ("matrix",), refused=_NOT_MAPPED),
    Family("ormqr", _lapack("ormqr", "unmqr"), "dense", refused=_NOT_MAPPED),
    # ------------------------------------------------------------------ cuSOLVER / hipSOLVER (GPU)
    Family("gpu getrf", _gpu_solver("getrf"), "getrf", jvp="getrf", jax_function="lax.linalg.lu"),
    Family("gpu potrf", _gpu_solver("potrf"), "potrf", jvp="potrf", jax_function="lax.linalg.cholesky"),
    Family("gpu syevd", _gpu_solver("syevd"), "dense", jvp="syevd", jax_function="lax.linalg.eigh"),
    Family("gpu geqrf", _gpu_solver("geqrf"), "geqrf", refused=_GPU),
    Family("gpu orgqr", _gpu_solver("orgqr"), "orgqr", refused=_GPU),
    Family("gpu factorizations", sum((_gpu_solver(r) for r in ("ormqr", "gesvd", "gesvdj", "gesvdp", "gesdd",
                                                               "sytrd", "geev", "syrk")), ()),
           "dense", refused=_GPU),
    Family("gpu dense kernels", tuple(f"{p}{r}" for p in ("cu", "hip") for r in (
        "hybrid_eig_real", "hybrid_eig_comp", "hybrid_geqp3", "_cholesky_update_ffi")), "dense", refused=_GPU),
    Family("gpu tridiagonal solve", tuple(f"{p}{r}" for p in ("cu", "hip") for r in (
        "_tridiagonal_solve_perturbed", "sparse_gtsv2_ffi")) + ("tridiagonal_solve_perturbed_ffi",), "gtsv",
           refused=_GPU),
    Family("gpu integer kernels", tuple(f"{p}{r}" for p in ("cu", "hip") for r in (
        "_lu_pivots_to_permutation", "_threefry2x32_ffi")), "zero", zero_derivative=True),
    Family("gpu sparse solve", ("cusolver_csrlsvqr_ffi",), "dense", ("data", "indices", "indptr", "rhs"),
           ("solution",), refused=_GPU),
    # ------------------------------------------------------------------ XLA's TPU linear algebra
    # (the same factorizations as LAPACK's: LU with partial pivoting, Householder QR and its Q)
    Family("tpu lu", ("LuDecomposition",), "getrf", ("matrix",), ("factor", "pivots", "permutation"), jvp="getrf",
           jax_function="lax.linalg.lu"),
    Family("tpu geqrf", ("Qr",), "geqrf", ("matrix",), ("reflectors", "tau"), refused=_TPU),
    Family("tpu orgqr", ("ProductOfElementaryHouseholderReflectors",), "orgqr", ("reflectors", "tau"), ("q",),
           refused=_TPU),
    Family("tpu eigh", ("Eigh",), "dense", ("matrix",), ("vectors", "values"), refused=_TPU),
    # ------------------------------------------------------------------ sparse arrays (jax.experimental.sparse)
    Family("csr sparse-dense product", ("cpu_csr_sparse_dense_ffi",), "cpu_csr_product",
           ("data", "indptr", "indices", "rhs"), ("product",), jvp="cpu_csr_product",
           jax_function="importer.custom_call.sparse_product_reference (data[k]·rhs[indices[k]] summed by row)"),
    Family("gpu csr product", _gpu_sparse("csr_matvec", "csr_matmat"), "gpu_csr_product",
           ("data", "indices", "indptr", "rhs"), ("product", "workspace"), jvp="gpu_csr_product",
           jax_function="importer.custom_call.sparse_product_reference (op(A) from the opaque descriptor)"),
    Family("gpu coo product", _gpu_sparse("coo_matvec", "coo_matmat"), "gpu_coo_product",
           ("data", "row", "col", "rhs"), ("product", "workspace"), jvp="gpu_coo_product",
           jax_function="importer.custom_call.sparse_product_reference (op(A) from the opaque descriptor)"),
    Family("gpu sparse to dense", _gpu_sparse("csr_todense"), "gpu_csr_todense", ("data", "indices", "indptr"),
           ("dense", "workspace"), refused=_GPU),
    Family("gpu coo to dense", _gpu_sparse("coo_todense"), "gpu_coo_todense", ("data", "row", "col"),
           ("dense", "workspace"), refused=_GPU),
    Family("gpu dense to sparse", _gpu_sparse("csr_fromdense", "coo_fromdense"), "dense", ("matrix",),
           refused="a GPU kernel whose stored values sit where the matrix is nonzero (value-dependent "
                   "positions): its derivative is not mapped"),
    # ------------------------------------------------------------------ elementwise special functions (jaxlib)
    Family("digamma", _special("digamma"), "elementwise", ("x",), ("y",), core_rank=0, jvp="digamma",
           jax_function="lax.digamma"),
    Family("lgamma", _special("lgamma"), "elementwise", ("x",), ("y",), core_rank=0, jvp="lgamma",
           jax_function="lax.lgamma"),
    # ------------------------------------------------------------------ markers, selections, effects
    Family("sharding markers", ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
                                "annotate_device_placement"), "identity", sharding_marker=True),
    Family("approx top-k", ("ApproxTopK",), "approx_top_k", core_rank=1,
           refused="a TPU kernel (jax.lax.approx_max_k): its derivative is not mapped"),
    Family("no data", ("AllocateBuffer", "shape_assertion"), "zero", zero_derivative=True),
    Family("python callbacks", ("xla_python_cpu_callback", "xla_ffi_python_cpu_callback", "xla_python_gpu_callback",
                                "xla_ffi_python_gpu_callback", "xla_ffi_partitioned_python_cpu_callback",
                                "xla_ffi_partitioned_python_gpu_callback"), "python_callback", callback=True,
           refused="a Python callback of the process that wrote the module; it cannot be replayed"),
)

_BY_TARGET: dict[str, Family] = {t: f for f in FAMILIES for t in f.targets}


def family_of(target: str) -> Family | None:
    """The family of a ``call_target_name`` (``None`` for an unknown target)."""
    return _BY_TARGET.get(target)


def all_targets() -> list[str]:
    """Every known ``call_target_name``, in table order."""
    return list(_BY_TARGET)
