"""Cross-platform lowerings (issue 49): every program of a corpus exported with ``jax.export`` for ``cpu``, ``cuda``,
``rocm`` and ``tpu`` (on this CPU-only machine), each module analyzed; the pattern must hold every nonzero of the
numerical Jacobian (``jax.jacfwd`` on CPU, at random points, computed once per program) and equal the CPU
module's pattern — or be listed in :data:`COARSER` with the reason.  0 missed nonzeros, 0 errors on every
platform.  :data:`COARSER`, :data:`INJECTION_REFUSED` and the corpus size are rendered into
``docs/reference/coverage.md`` ("Cross-platform lowerings") by ``scripts/coverage_table.py``, which reads them
from this file's source.

The corpus: a sample of the soundness suite's programs (:data:`SUITE_SAMPLE`, imported, not copied) and
:data:`PROGRAMS` — linear algebra, sorts, FFT, scans, loops, conditionals, cumulative ops, segment sums, sharding
markers, random numbers and sparse arrays (``BCOO`` / ``BCSR`` products with respect to ``x`` and to the stored
values, ``sparse.sparsify``, and the cuSPARSE / hipSPARSE kernels with ``jax_bcoo_cusparse_lowering``, see
``rules/test_sparse_kernels.py``).  Injected derivatives of a few modules per platform are built and
re-analyzed (:func:`test_injected_derivative_for_another_platform`).

``SHS_LONG=1``: more points and bigger sizes (:func:`test_cross_platform_long`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import warnings
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.experimental import sparse
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from stablehlo_sparsity import analyze_module
from stablehlo_sparsity.errors import SparsityError
from test_linalg import check, num_pattern, spd
from test_soundness_suite import CASES
from test_sparse_kernels import DATA, X, XM, XT, bcoo, bcsr, cusparse_lowering, export_text, legacy_csr

PLATFORMS = ("cpu", "cuda", "rocm", "tpu")
LONG = bool(os.environ.get("SHS_LONG"))
RNG = np.random.default_rng(49)


@dataclass(frozen=True)
class Program:
    """A function, example arguments, the arguments differentiated, and where it is exported."""

    f: Callable
    args: tuple
    argnums: tuple[int, ...] = (0,)
    platforms: tuple[str, ...] = PLATFORMS  # where JAX lowers it (TPU has no eig, tridiagonal reduction …)
    sampler: Callable | None = None  # random points for the numerical Jacobian (SPD matrices …)
    points: int = 3
    cusparse: bool = False  # exported for cuda / rocm with the cuSPARSE / hipSPARSE lowering
    same: Callable | None = None  # the same function for jax.jacfwd, where f has no batching rule
    calls: tuple[str, ...] = ()  # custom-call targets the exports must contain (what the program is here for)


def rand(*shape):
    return jnp.asarray(RNG.standard_normal(shape))


#: the soundness suite's programs taken as they are (plain array arguments)
SUITE_SAMPLE = ("lap1d_roll", "brusselator_2d", "upwind_select", "conv1d", "cumsum", "softmax_rows", "take_argmax",
                "batched_matmul", "sparse_const_matvec", "conv2d_strided_dilated", "fori_euler", "scan_recurrence",
                "gather_const", "scatter_add", "sort", "cond_branch", "dynamic_slice_const", "max_pool",
                "clamp_operand_and_bounds")

A2, B2 = rand(2, 4, 4), rand(2, 4, 2)
WIDE, TALL = rand(3, 5), rand(5, 3)
MESH = Mesh(np.array(jax.devices()[:1]), ("x",))


def _spd_sampler(shape, *rest):
    return lambda r: [spd(r, shape), *[jnp.asarray(r.standard_normal(s)) for s in rest]]


def _triangular_solves(a, b):
    return [lax.linalg.triangular_solve(a + 4 * jnp.eye(4), b if left else jnp.swapaxes(b, -1, -2), left_side=left,
                                        lower=lower, transpose_a=trans)
            for left, lower, trans in ((True, True, False), (True, False, True), (False, True, True))]


def _while_until(x):
    """A trip count that depends on the values."""
    return lax.while_loop(lambda c: c[1] < 3 + (jnp.sum(c[0] ** 2) > 50), lambda c: (jnp.roll(c[0], 1) * 1.1 + c[0],
                                                                                       c[1] + 1), (x, 0))[0]


def _sharded(x):
    return lax.with_sharding_constraint(jnp.sin(x), NamedSharding(MESH, PartitionSpec("x"))) * x


def _shard_map(x):
    try:
        from jax import shard_map
    except ImportError:  # JAX 0.10
        from jax.experimental.shard_map import shard_map
    return shard_map(lambda y: jnp.roll(y, 1, axis=1) * y, mesh=MESH, in_specs=PartitionSpec("x"),
                     out_specs=PartitionSpec("x"))(x)


PROGRAMS: dict[str, Program] = {
    # ------------------------------------------------------------ linear algebra
    "solve": Program(jnp.linalg.solve, (A2, B2), (0, 1), calls=("lapack_dgetrf_ffi", "cusolver_getrf_ffi",
                                                                "hipsolver_getrf_ffi", "LuDecomposition",
                                                                "cu_lu_pivots_to_permutation",
                                                                "hip_lu_pivots_to_permutation")),
    "cholesky": Program(jnp.linalg.cholesky, (spd(RNG, (2, 4, 4)),), sampler=_spd_sampler((2, 4, 4)),
                        calls=("lapack_dpotrf_ffi", "cusolver_potrf_ffi", "hipsolver_potrf_ffi")),
    "cho_solve": Program(lambda a, b: jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a), b),
                         (spd(RNG, (4, 4)), B2[0]), (0, 1), sampler=_spd_sampler((4, 4), (4, 2))),
    "qr": Program(jnp.linalg.qr, (A2,), calls=("lapack_dgeqrf_ffi", "lapack_dorgqr_ffi", "cusolver_geqrf_ffi",
                                               "cusolver_orgqr_ffi", "hipsolver_geqrf_ffi", "Qr",
                                               "ProductOfElementaryHouseholderReflectors")),
    "qr_wide_r": Program(lambda a: jnp.linalg.qr(a)[1], (WIDE,)),
    "qr_tall_complete": Program(lambda a: jnp.linalg.qr(a, mode="complete"), (TALL,)),
    "lu": Program(lambda a: lax.linalg.lu(a)[0], (A2,)),
    "lu_factor": Program(lambda a: jax.scipy.linalg.lu_factor(a)[0], (A2[0],)),
    "eigh": Program(lambda a: jnp.linalg.eigh(a + jnp.swapaxes(a, -1, -2)), (A2,),
                    calls=("lapack_dsyevd_ffi", "cusolver_syevd_ffi", "hipsolver_syevd_ffi", "Eigh")),
    "svd": Program(lambda a: jnp.linalg.svd(a, compute_uv=False), (A2,),
                   calls=("lapack_dgesdd_ffi", "cusolver_gesvdj_ffi", "hipsolver_gesvdj_ffi")),
    "svd_vectors": Program(lambda a: jnp.linalg.svd(a, full_matrices=False), (TALL,)),
    "triangular_solve": Program(_triangular_solves, (A2[0], B2[0]), (0, 1), calls=("lapack_dtrsm_ffi",)),
    "tridiagonal_solve": Program(lambda d, b: lax.linalg.tridiagonal_solve(d[0], d[1] + 6.0, d[2], b),
                                 (rand(3, 5), rand(5, 2)), (0, 1),
                                 calls=("lapack_dgtsv_ffi", "cusparse_gtsv2_ffi", "hipsparse_gtsv2_ffi")),
    "expm": Program(jax.scipy.linalg.expm, (A2[0] / 4,)),
    "det": Program(jnp.linalg.det, (A2,)),
    "slogdet": Program(lambda a: jnp.linalg.slogdet(a)[1], (A2,)),
    "inv": Program(jnp.linalg.inv, (A2,)),
    "lstsq": Program(lambda a, b: jnp.linalg.lstsq(a, b)[0], (TALL, rand(5)), (0, 1)),
    "pinv": Program(jnp.linalg.pinv, (WIDE,)),
    # ------------------------------------------------------------ sorts, FFT, scans, loops, conditionals
    "argsort_take": Program(lambda x: x[jnp.argsort(x[:, 0])] * x, (rand(5, 3),)),
    "top_k": Program(lambda x: lax.top_k(x, 2)[0], (rand(3, 6),)),
    "sort_by_key": Program(lambda k, v: lax.sort((k, v), num_keys=1)[1], (rand(6), rand(6)), (0, 1)),
    "median": Program(lambda x: jnp.median(x, axis=1), (rand(3, 5),)),
    "fft": Program(lambda x: jnp.abs(jnp.fft.fft(x)), (rand(3, 5),)),
    "rfft2_irfft": Program(lambda x: (jnp.abs(jnp.fft.rfft2(x)), jnp.fft.irfft(x, n=7)), (rand(4, 4),)),
    "scan_nonlinear": Program(lambda x: lax.scan(lambda c, xi: (jnp.sin(c) * xi + c, c * xi), 1.0, x)[1],
                              (rand(6),)),
    "associative_scan": Program(lambda x: lax.associative_scan(lambda a, b: a * b + b, x), (rand(7),)),
    "while_value_dependent": Program(_while_until, (rand(5),)),
    "cond": Program(lambda x: lax.cond(x[0] > 0, lambda v: jnp.roll(v, 1) * v, lambda v: jnp.sin(v), x), (rand(5),)),
    "switch": Program(lambda x: lax.switch(jnp.clip(jnp.floor(x[0]).astype(int), 0, 2),
                                           [jnp.sin, lambda v: v[::-1] * v, lambda v: jnp.cumsum(v)], x), (rand(5),)),
    "cumsum_cumprod": Program(lambda x: (jnp.cumsum(x, axis=0), jnp.cumprod(x, axis=1)), (rand(3, 4),)),
    "cummax_logcumsumexp": Program(lambda x: (lax.cummax(x, axis=1), lax.cumlogsumexp(x, axis=0)), (rand(3, 4),)),
    "segment_sum": Program(lambda x: jax.ops.segment_sum(x ** 2, jnp.array([0, 0, 2, 1, 2, 2]), 3), (rand(6, 2),)),
    "segment_max": Program(lambda x: jax.ops.segment_max(x, jnp.array([0, 1, 1, 2, 2]), 3), (rand(5),)),
    # ------------------------------------------------------------ markers, random numbers
    "sharding_constraint": Program(_sharded, (rand(4, 3),)),
    "shard_map": Program(_shard_map, (rand(4, 3),)),
    "random_noise": Program(lambda x: x * jax.random.normal(jax.random.key(0), x.shape) + jnp.roll(x, 1),
                            (rand(6),)),
    # ------------------------------------------------------------ sparse arrays
    "bcoo_matvec": Program(lambda d, x: bcoo(d) @ x, (DATA, X), (0, 1)),
    "bcoo_matmat": Program(lambda d, x: bcoo(d) @ x, (DATA, XM), (0, 1)),
    "bcoo_vecmat": Program(lambda d, x: x @ bcoo(d), (DATA, XT), (0, 1)),
    "bcsr_matvec": Program(lambda d, x: bcsr(d) @ x, (DATA, X), (0, 1), calls=("cpu_csr_sparse_dense_ffi",)),
    "bcsr_matmat": Program(lambda d, x: jnp.tanh(bcsr(d) @ x), (DATA, XM), (0, 1)),
    "sparsify": Program(lambda d, x: sparse.sparsify(lambda m, v: jnp.sin(m @ v) + m.sum(0)[:5] * v[:5])(bcoo(d), x),
                        (DATA, X), (0, 1)),
    "bcsr_matvec_cusparse": Program(lambda d, x: bcsr(d) @ x, (DATA, X), (0, 1), cusparse=True,
                                    calls=("cusparse_csr_matvec_ffi", "hipsparse_csr_matvec_ffi")),
    "bcsr_matmat_cusparse": Program(lambda d, x: bcsr(d) @ x, (DATA, XM), (0, 1), cusparse=True,
                                    calls=("cusparse_csr_matmat_ffi", "hipsparse_csr_matmat_ffi")),
    "bcoo_matvec_cusparse": Program(lambda d, x: bcoo(d) @ x, (DATA, X), (0, 1), cusparse=True,
                                    calls=("cusparse_coo_matvec_ffi", "hipsparse_coo_matvec_ffi")),
    "bcoo_vecmat_cusparse": Program(lambda d, x: x @ bcoo(d), (DATA, XT), (0, 1), cusparse=True),
    "bcoo_matmat_cusparse": Program(lambda d, x: bcoo(d) @ x, (DATA, XM), (0, 1), cusparse=True,
                                    calls=("cusparse_coo_matmat_ffi", "hipsparse_coo_matmat_ffi")),
    "csr_legacy_cusparse": Program(lambda d, x: legacy_csr(d) @ x, (DATA, X), (0, 1), cusparse=True,
                                   same=lambda d, x: bcoo(d) @ x),
}

def _random_sparse(rows: int, cols: int, density: float, seed: int):
    """Sorted (row, column) indices of a random sparse matrix (int32, as cuSPARSE wants them)."""
    mask = np.random.default_rng(seed).random((rows, cols)) < density
    return np.argwhere(mask).astype(np.int32)


BIG_INDICES = _random_sparse(60, 50, 0.05, 1)
BIG_DATA, BIG_X = rand(len(BIG_INDICES)), rand(50)


def big_bcoo(d):
    return sparse.BCOO((d, jnp.asarray(BIG_INDICES)), shape=(60, 50), indices_sorted=True, unique_indices=True)


def big_bcsr(d):
    m = sparse.BCSR.from_bcoo(big_bcoo(jnp.zeros(len(BIG_INDICES))))
    return sparse.BCSR((d, m.indices.astype(jnp.int32), m.indptr.astype(jnp.int32)), shape=(60, 50))


#: ``SHS_LONG=1``: bigger sizes (cuSOLVER and the TPU expanders switch algorithms above 32 × 32, batches)
LONG_PROGRAMS: dict[str, Program] = {
    "long:solve": Program(jnp.linalg.solve, (rand(3, 12, 12), rand(3, 12, 4)), (0, 1)),
    "long:qr": Program(jnp.linalg.qr, (rand(40, 33),)),
    "long:qr_wide": Program(lambda a: jnp.linalg.qr(a)[1], (rand(9, 14),)),
    "long:lu": Program(lambda a: lax.linalg.lu(a)[0], (rand(3, 10, 10),)),
    "long:cholesky": Program(jnp.linalg.cholesky, (spd(RNG, (3, 10, 10)),), sampler=_spd_sampler((3, 10, 10))),
    "long:eigh": Program(lambda a: jnp.linalg.eigh(a + a.T)[0], (rand(36, 36),)),
    "long:svd": Program(lambda a: jnp.linalg.svd(a, compute_uv=False), (rand(40, 36),)),
    "long:inv": Program(jnp.linalg.inv, (rand(4, 9, 9),)),
    "long:fft": Program(lambda x: jnp.abs(jnp.fft.fft2(x)), (rand(3, 6, 8),)),
    "long:bcsr": Program(lambda d, x: jnp.sin(big_bcsr(d) @ x), (BIG_DATA, BIG_X), (0, 1)),
    "long:bcoo": Program(lambda d, x: jnp.sin(big_bcoo(d) @ x), (BIG_DATA, BIG_X), (0, 1)),
    "long:bcsr_cusparse": Program(lambda d, x: big_bcsr(d) @ x, (BIG_DATA, BIG_X), (0, 1), cusparse=True),
    "long:bcoo_vecmat_cusparse": Program(lambda d, x: x @ big_bcoo(d), (BIG_DATA, rand(60)), (0, 1), cusparse=True),
}

#: ``(program, platform)``: why that platform's pattern is coarser than the CPU one (it still holds every
#: numerical nonzero)
COARSER: dict[tuple[str, str], str] = {
    ("tridiagonal_solve", "cuda"): "cuSPARSE gtsv2 requires dl[0] = du[n-1] = 0 and is taken to read them; LAPACK's "
                                   "gtsv (CPU) and JAX's own lowering (TPU) never read them",
    ("tridiagonal_solve", "rocm"): "as cuda (hipSPARSE gtsv2)",
    ("sparsify", "cuda"): "JAX lowers cumsum for GPUs to chlo.scan, exported as a composite whose decomposition is a "
                          "while loop; the BCOO index bookkeeping calls it twice, and the analysis keeps no constants "
                          "through a function holding a while loop that is called with two different constants, so "
                          "the gather of the summed duplicates reads unknown indices",
    ("sparsify", "rocm"): "as cuda",
}

#: the JAX release from which a :data:`COARSER` entry applies (before it, the pattern equals the CPU one)
COARSER_FROM_JAX: dict[tuple[str, str], str] = {("sparsify", "cuda"): "0.11.2", ("sparsify", "rocm"): "0.11.2"}

#: ``(program, platform)`` whose injected derivative the importer refuses, with the reason it gives
INJECTION_REFUSED: dict[tuple[str, str], str] = {
    ("qr", "cuda"): "cusolver_geqrf_ffi: a GPU kernel whose derivative is not mapped",
    ("qr", "rocm"): "hipsolver_geqrf_ffi: a GPU kernel whose derivative is not mapped",
    ("qr", "tpu"): "Qr: an XLA TPU expander whose derivative is not mapped",
    ("eigh", "tpu"): "Eigh: an XLA TPU expander whose derivative is not mapped",
}

#: ``(program, platform)`` pairs whose injected derivative is built and re-analyzed
INJECTED = tuple((p, platform) for p in ("solve", "cholesky", "qr", "eigh", "bcsr_matvec", "bcsr_matvec_cusparse",
                                        "cond", "scan_nonlinear")
                 for platform in ("cuda", "rocm", "tpu") if not (p.endswith("cusparse") and platform == "tpu"))


# ============================================================================== the corpus
def _suite_program(name: str) -> Program:
    case = CASES[name]
    argnums = (case.argnums,) if isinstance(case.argnums, int) else tuple(case.argnums)
    return Program(case.f, tuple(case.args), argnums, points=max(case.points, 2))


def corpus() -> dict[str, Program]:
    return {**{f"suite:{n}": _suite_program(n) for n in SUITE_SAMPLE}, **PROGRAMS, **LONG_PROGRAMS}


def regular() -> list[str]:
    return [name for name in corpus() if not name.startswith("long:")]


def _platforms(p: Program) -> tuple[str, ...]:
    return tuple(x for x in p.platforms if not (p.cusparse and x == "tpu"))


@functools.lru_cache(maxsize=None)
def exported(name: str, platform: str) -> str:
    p = corpus()[name]
    with cusparse_lowering() if p.cusparse else contextlib.nullcontext():
        return export_text(p.f, *p.args, platform=platform)


def numerical(p: Program, points: int, seed: int = 0) -> np.ndarray:
    return num_pattern(p.same or p.f, *p.args, argnums=p.argnums, points=points, seed=seed, sampler=p.sampler)


def analyzed(text: str, argnums) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # conservative steps say so; the patterns are checked below
        return analyze_module(text, wrt=list(argnums)).pattern.todense()


def targets_of(text: str) -> set[str]:
    return set(re.findall(r"custom_call @([\w.$]+)", text)) | set(re.findall(r'call_target_name = "([^"]+)"', text))


def _release(version: str | None = None) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version or jax.__version__)[:3])


def cross_check(name: str, points: int) -> list[str]:
    """Every failure of one program on every platform (an empty list when it passes)."""
    p = corpus()[name]
    num = numerical(p, points)
    patterns, seen, failures = {}, set(), []
    for platform in _platforms(p):
        try:
            text = exported(name, platform)
            seen |= targets_of(text)
            patterns[platform] = det = analyzed(text, p.argnums)
        except SparsityError as e:
            failures.append(f"{platform}: {type(e).__name__}: {e}")
            continue
        missed = np.argwhere(num & ~det)
        if missed.size:
            failures.append(f"{platform}: missed {len(missed)} nonzeros, e.g. {missed[:4].tolist()}")
    cpu = patterns.get("cpu")
    for platform, det in patterns.items():
        if cpu is None or platform == "cpu":
            continue
        listed = (name, platform) in COARSER and _release() >= _release(COARSER_FROM_JAX.get((name, platform), "0"))
        if np.array_equal(det, cpu) and listed:
            failures.append(f"{platform}: listed in COARSER but equal to the CPU pattern now")
        elif not np.array_equal(det, cpu) and not listed:
            extra, fewer = int((det & ~cpu).sum()), int((cpu & ~det).sum())
            failures.append(f"{platform}: differs from the CPU pattern ({extra} more, {fewer} fewer nonzeros) "
                            "and is not listed in COARSER")
    missing = [t for t in p.calls if t not in seen and t + "_v2" not in seen]  # (cuSPARSE's _ffi_v2: JAX 0.12.1)
    if missing:
        failures.append(f"the exports call none of {missing} (they test nothing of those targets)")
    return failures


# ============================================================================== tests
@pytest.mark.parametrize("name", regular())
def test_cross_platform(name):
    """One export per platform, one numerical Jacobian per program (``-n 2`` splits the programs)."""
    failures = cross_check(name, corpus()[name].points)
    assert not failures, f"{name}:\n  " + "\n  ".join(failures)


def test_tables_name_programs_and_platforms_of_the_corpus():
    for table in (COARSER, INJECTION_REFUSED):
        for name, platform in table:
            assert name in regular() and platform in _platforms(corpus()[name]), (name, platform)
    assert all(reason.strip() for reason in (*COARSER.values(), *INJECTION_REFUSED.values()))
    assert set(COARSER_FROM_JAX) <= set(COARSER)


def test_multi_platform_export_is_the_union_of_the_platforms():
    """``platforms=(cpu, cuda, rocm, tpu)`` at once: a leading ``_platform_index`` argument selects the lowering
    (a ``case``); analyzed with respect to the real arguments (indices shifted by one), the pattern is the union of
    the per-platform ones."""
    name = "solve"
    p = corpus()[name]
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in p.args]
    text = jax.export.export(jax.jit(p.f), platforms=PLATFORMS)(*structs).mlir_module()
    assert "_platform_index" in text
    det = analyzed(text, [i + 1 for i in p.argnums])
    union = np.logical_or.reduce([analyzed(exported(name, x), p.argnums) for x in PLATFORMS])
    assert np.array_equal(det, union)
    check(det, numerical(p, 2), exact=False)


def test_a_module_of_one_accelerator_is_differentiated_for_it():
    """``platform="auto"`` resolves, from the module's own calls, which rules lower its derivative."""
    from stablehlo_sparsity.modules.importer.platforms import accelerator_of

    assert accelerator_of({"cusolver_getrf_ffi", "cu_lu_pivots_to_permutation", "Sharding"}) == "cuda"
    assert accelerator_of({"hipsparse_csr_matvec_ffi"}) == "rocm"
    assert accelerator_of({"LuDecomposition", "Qr"}) == "tpu"
    assert accelerator_of({"lapack_dgetrf_ffi"}) is None  # the CPU: lowered portably, as before
    assert accelerator_of({"cusolver_getrf_ffi", "lapack_dtrsm_ffi"}) is None  # two platforms: runs nowhere


@pytest.mark.parametrize("name,platform", INJECTED)
def test_injected_derivative_for_another_platform(name, platform):
    """``sparsity-jacobian`` on a module exported for an accelerator: the derivative is lowered with that
    platform's rules (no CPU kernel enters a GPU or TPU module), records the module's pattern, and re-analyzes
    without error; or the importer refuses it with a SparsityError listed in INJECTION_REFUSED."""
    from stablehlo_sparsity import parse_module, read_injected
    from stablehlo_sparsity.modules.importer.platforms import custom_call_targets, is_platform_specific
    from stablehlo_sparsity.passes import inject_jacobian

    p = corpus()[name]
    text = exported(name, platform)
    module = parse_module(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn = inject_jacobian(module, wrt=list(p.argnums))
    except SparsityError as e:
        assert (name, platform) in INJECTION_REFUSED, f"refused, and not listed in INJECTION_REFUSED: {e}"
        assert "no derivative rule" in str(e) and str(e).count("\n") == 0, str(e)
        return
    assert (name, platform) not in INJECTION_REFUSED, "listed as refused, but the derivative was built"
    record = read_injected(module, fn)
    assert np.array_equal(record.pattern().toarray(), analyzed(text, p.argnums))
    foreign = {t for t in custom_call_targets(module) - custom_call_targets(parse_module(text))
               if is_platform_specific(t)}
    assert not foreign, f"the derivative of a {platform} module calls {sorted(foreign)}"
    out = analyze_module(str(module), entry=fn, wrt=list(p.argnums))  # the injected function re-analyzes
    assert out.pattern.shape == (record.nnz, record.shape[1])


@pytest.mark.skipif(not LONG, reason="the exhaustive version: SHS_LONG=1")
@pytest.mark.parametrize("name", list(corpus()))
def test_cross_platform_long(name):
    """More random points (8), so rarely taken branches and pivot orders show, and :data:`LONG_PROGRAMS` (bigger
    sizes)."""
    failures = cross_check(name, 8)
    assert not failures, f"{name}:\n  " + "\n  ".join(failures)
