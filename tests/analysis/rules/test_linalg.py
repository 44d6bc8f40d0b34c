"""Linear algebra and FFT: §triangular_solve, §cholesky, §fft, and the LAPACK custom calls JAX lowers
``jnp.linalg`` to on CPU — against numerical Jacobians (``jax.jacfwd``) at random points.

The StableHLO ops ``triangular_solve`` and ``cholesky`` are what JAX emits for TPU (and GPU triangular
solves); we get them from ``jax.export(..., platforms=("tpu",))`` of the same function whose Jacobian we
evaluate on CPU.  Factorizations compute some exact zeros as roundoff (≈1e-17), so the numerical pattern
here drops entries below ``1e-9 · max|J|``.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from helpers import random_like
from stablehlo_sparsity._compat import CHOLESKY_JVP_SYMMETRIZES_BOTH_TRIANGLES
from stablehlo_sparsity import analyze_module, jacobian_sparsity, lower_and_analyze

RNG = np.random.default_rng(0)


def flat_jacobian_fn(f, argnums):
    """A jitted ``(*args) -> (m × n)`` dense Jacobian of flattened outputs w.r.t. the selected inputs."""
    argnums_t = (argnums,) if isinstance(argnums, int) else tuple(argnums)

    def flat(*args):
        jac = jax.jacfwd(f, argnums=argnums_t)(*args)
        outs = jax.tree_util.tree_leaves(jax.eval_shape(f, *args))
        per_out = jax.tree_util.tree_structure(jax.eval_shape(f, *args)).flatten_up_to(jac)
        rows = []
        for o, blk in zip(outs, per_out):
            m = int(np.prod(o.shape, dtype=np.int64))
            rows.append(jnp.concatenate([jnp.reshape(leaf, (m, -1)) for leaf in jax.tree_util.tree_leaves(blk)], 1))
        return jnp.concatenate(rows, 0)

    return jax.jit(flat)


def num_pattern(f, *args, argnums=0, points=3, seed=0, sampler=None, rtol=1e-9):
    """Union over random points of ``|J| > rtol · max|J|`` (roundoff-level entries are zeros)."""
    rng = np.random.default_rng(seed)
    argnums_t = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    jac = flat_jacobian_fn(f, argnums_t)
    acc = None
    for _ in range(points):
        pt = sampler(rng) if sampler is not None else [
            jax.tree_util.tree_map(lambda a: random_like(a, rng), a) if i in argnums_t else a
            for i, a in enumerate(args)]
        J = np.nan_to_num(np.asarray(jac(*pt)), nan=1.0)
        nz = np.abs(J) > rtol * max(1.0, float(np.abs(J).max()))
        acc = nz if acc is None else acc | nz
    return acc


def check(det, num, exact=True):
    missed = np.argwhere(num & ~det)
    assert missed.size == 0, f"missed {len(missed)} nonzeros, e.g. {missed[:5].tolist()}"
    if exact:
        extra = np.argwhere(det & ~num)
        assert extra.size == 0, f"{len(extra)} extra nonzeros, e.g. {extra[:5].tolist()}"


def spd(rng, shape):
    m = rng.standard_normal(shape)
    return jnp.asarray(m @ np.swapaxes(m, -1, -2) + shape[-1] * np.eye(shape[-1]))


def exported_pattern(f, *args, platform="tpu"):
    """The pattern of ``f`` lowered for another platform (all arguments are inputs)."""
    exp = jax.export.export(jax.jit(f), platforms=(platform,))(
        *[jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args])
    text = exp.mlir_module()
    return analyze_module(text, wrt="all").pattern.todense(), text


def block_diagonal(pattern, n_batch):
    """True when no row of batch block ``b`` touches a column of another batch block."""
    m, n = pattern.shape
    rb = np.arange(m) // (m // n_batch)
    cb = np.arange(n) // (n // n_batch)
    r, c = np.nonzero(pattern)
    return bool(np.all(rb[r] == cb[c]))


# ============================================================ stablehlo.triangular_solve (every variant)
VARIANTS = list(itertools.product([True, False], repeat=4))  # left_side, lower, transpose_a, unit_diagonal


def test_triangular_solve_op_all_variants_exact():
    """All 16 variants in one function (one export, one Jacobian compilation)."""
    a = jnp.asarray(RNG.standard_normal((2, 4, 4))) + 4 * jnp.eye(4)
    bl = jnp.asarray(RNG.standard_normal((2, 4, 3)))
    br = jnp.asarray(RNG.standard_normal((2, 3, 4)))

    def f(a, bl, br):
        return [lax.linalg.triangular_solve(a, bl if left else br, left_side=left, lower=lower,
                                            transpose_a=transpose, unit_diagonal=unit)
                for left, lower, transpose, unit in VARIANTS]

    det, text = exported_pattern(f, a, bl, br)
    assert text.count("stablehlo.triangular_solve") == 16
    check(det, num_pattern(f, a, bl, br, argnums=(0, 1, 2)))
    for k in range(16):  # each variant: block diagonal across the batch, in a and in its b
        blk = det[k * 24:(k + 1) * 24]
        assert block_diagonal(blk[:, :32], 2)
        assert block_diagonal(blk[:, 32:56], 2) and block_diagonal(blk[:, 56:], 2)


def test_triangular_solve_reads_one_triangle_and_column():
    """x[i, j] of L x = b: b[0..i, j] and L's rows 0..i (lower triangle) — nothing of the upper one."""
    a, b = jnp.ones((3, 3)), jnp.ones((3, 2))
    f = lambda a, b: lax.linalg.triangular_solve(a, b, left_side=True, lower=True)
    det, _ = exported_pattern(f, a, b)
    wrt_a, wrt_b = det[:, :9].reshape(3, 2, 3, 3), det[:, 9:].reshape(3, 2, 3, 2)
    assert not wrt_a[..., np.triu_indices(3, 1)[0], np.triu_indices(3, 1)[1]].any()
    assert wrt_a[2, 0].sum() == 6 and wrt_a[0, 1].sum() == 1
    assert wrt_b[1, 1].tolist() == [[False, True], [False, True], [False, False]]


# ============================================================ LAPACK trsm (CPU custom_call)
@pytest.mark.parametrize("lower,trans,unit", [(True, 0, False), (False, 1, True), (True, 2, False), (False, 0, True)])
def test_trsm_custom_call_exact(lower, trans, unit):
    a = jnp.asarray(RNG.standard_normal((2, 4, 4))) + 4 * jnp.eye(4)
    b = jnp.asarray(RNG.standard_normal((2, 4, 3)))
    f = lambda a, b: jax.scipy.linalg.solve_triangular(a, b, lower=lower, trans=trans, unit_diagonal=unit)
    det = jacobian_sparsity(f, a, b, argnums=(0, 1)).todense()
    check(det, num_pattern(f, a, b, argnums=(0, 1)))


def test_trsm_right_side_exact():
    a = jnp.asarray(RNG.standard_normal((4, 4))) + 4 * jnp.eye(4)
    b = jnp.asarray(RNG.standard_normal((3, 4)))
    f = lambda a, b: lax.linalg.triangular_solve(a, b, left_side=False, lower=False, transpose_a=True)
    assert "lapack_dtrsm_ffi" in jax.jit(f).lower(a, b).as_text()
    check(jacobian_sparsity(f, a, b, argnums=(0, 1)).todense(), num_pattern(f, a, b, argnums=(0, 1)))


# ============================================================ Cholesky
def test_cholesky_potrf_exact_and_block_diagonal():
    a = spd(RNG, (2, 5, 5))
    f = jnp.linalg.cholesky
    det = jacobian_sparsity(f, a).todense()
    check(det, num_pattern(f, a, sampler=lambda r: [spd(r, (2, 5, 5))]))
    assert block_diagonal(det, 2)


def test_cholesky_op_matches_potrf():
    a = spd(RNG, (2, 4, 4))
    for upper in (False, True):
        f = lambda a: jax.scipy.linalg.cholesky(a, lower=not upper)
        tpu, text = exported_pattern(f, a)
        assert "stablehlo.cholesky" in text
        cpu = jacobian_sparsity(f, a).todense()
        assert np.array_equal(tpu, cpu)
        check(cpu, num_pattern(f, a, sampler=lambda r: [spd(r, (2, 4, 4))]))


def test_cholesky_op_other_triangle_is_conservative():
    """§cholesky leaves the other triangle implementation-defined: it depends on the whole matrix."""
    text = """
    func.func @main(%a: tensor<3x3xf64>) -> tensor<3x3xf64> {
      %0 = stablehlo.cholesky %a, lower = true : tensor<3x3xf64>
      return %0 : tensor<3x3xf64>
    }"""
    det = analyze_module(text).pattern.todense().reshape(3, 3, 3, 3)
    assert det[0, 2].all()  # strictly upper: everything
    # the factor: rows 0..j of the triangle and A[i, 0..j]; before JAX 0.11.2 its JVP also reads the mirrored
    # block (a symmetric derivative), from 0.11.2 on only the lower triangle, as potrf does
    assert det[2, 0].tolist() == [[True, False, False], [False, False, False], [True, False, False]]
    if CHOLESKY_JVP_SYMMETRIZES_BOTH_TRIANGLES:
        assert det[1, 1].sum() == 4 and det[2, 1].sum() == 6 and det[2, 2].sum() == 9
    else:
        assert det[1, 1].tolist() == [[True, False, False], [True, True, False], [False, False, False]]
        assert det[2, 1].sum() == 5 and det[2, 2].tolist() == np.tril(np.ones((3, 3), bool)).tolist()


# ============================================================ factorizations (LAPACK custom_calls)
def test_batched_solve_is_block_diagonal_and_exact():
    a = jnp.asarray(RNG.standard_normal((3, 4, 4)))
    b = jnp.asarray(RNG.standard_normal((3, 4, 2)))
    f = jnp.linalg.solve
    det = jacobian_sparsity(f, a, b, argnums=(0, 1)).todense()
    check(det, num_pattern(f, a, b, argnums=(0, 1)))
    # x[k, :, j] depends on all of a[k] and on b[k, :, j] only
    assert det.sum() == 3 * 4 * 2 * (16 + 4)
    assert block_diagonal(det[:, :48], 3) and block_diagonal(det[:, 48:], 3)


def test_factorizations_batched_exact():
    """inv, det, slogdet, eigh, svd, qr, pinv, Cholesky solves: exact and block diagonal (one function,
    one Jacobian compilation)."""
    a = jnp.asarray(RNG.standard_normal((2, 4, 4)))

    def f(a):
        sym = a + jnp.swapaxes(a, -1, -2)
        pd = a @ jnp.swapaxes(a, -1, -2) + 4 * jnp.eye(4)
        return {
            "inv": jnp.linalg.inv(a),
            "det": jnp.linalg.det(a),
            "slogdet": jnp.linalg.slogdet(a)[1],
            "eigh": jnp.linalg.eigh(sym)[0],
            "eigvalsh": jnp.linalg.eigvalsh(sym),
            "svd": jnp.linalg.svd(a, compute_uv=False),
            "qr": jnp.linalg.qr(a),
            "pinv": jnp.linalg.pinv(a),
            "cho_solve": jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(pd, lower=True), jnp.ones((2, 4, 1))),
        }

    an = lower_and_analyze(f, a)
    det = an.pattern.todense()
    check(det, num_pattern(f, a))
    start = 0
    for shape in an.output_shapes:
        size = int(np.prod(shape))
        assert block_diagonal(det[start:start + size], 2), shape
        start += size


def test_lu_factor_exact():
    """LU with partial pivoting: exact for the global pattern (every row must get its turn as pivot)."""
    a = jnp.ones((2, 4, 4))
    f = lambda a: jax.scipy.linalg.lu_factor(a)[0]
    det = jacobian_sparsity(f, a).todense()
    check(det, num_pattern(f, a, points=40))
    assert block_diagonal(det, 2)


def test_qr_and_lu_follow_column_order():
    """Householder QR: R[i, j] (i ≤ j) reads the columns 0..i and j; LU's U[i, j] the columns 0..i-1 and j."""
    a = jnp.ones((4, 4))
    r = jacobian_sparsity(lambda a: jnp.linalg.qr(a)[1], a).todense().reshape(4, 4, 4, 4)
    assert r[0, 2].any(axis=0).tolist() == [True, False, True, False]
    assert r[1, 3].any(axis=0).tolist() == [True, True, False, True]
    lu = jacobian_sparsity(lambda a: lax.linalg.lu(a)[0], a).todense().reshape(4, 4, 4, 4)
    assert lu[0, 2].any(axis=0).tolist() == [False, False, True, False]
    assert lu[3, 1].any(axis=0).tolist() == [True, True, False, False]


def test_rectangular_qr_lu_sound():
    for shape in ((3, 5), (5, 3)):
        a = jnp.ones(shape)
        f = lambda a: (jnp.linalg.qr(a, mode="complete"), lax.linalg.lu(a)[0])
        check(jacobian_sparsity(f, a).todense(), num_pattern(f, a, points=20), exact=False)


def test_lu_scipy_sound():
    a = jnp.asarray(RNG.standard_normal((2, 4, 4)))
    f = lambda a: jax.scipy.linalg.lu(a[0])[1:]
    check(jacobian_sparsity(f, a).todense(), num_pattern(f, a, points=5), exact=False)


def test_eig_and_svd_vectors_sound_and_block_diagonal():
    a = jnp.asarray(RNG.standard_normal((2, 3, 3)))
    f = lambda a: jnp.linalg.svd(a)[0]
    det = jacobian_sparsity(f, a).todense()
    check(det, num_pattern(f, a), exact=False)
    assert block_diagonal(det, 2)
    eig = jacobian_sparsity(lambda a: jnp.abs(jnp.linalg.eigvals(a)), a).todense()
    assert block_diagonal(eig, 2) and eig.sum() == 2 * 3 * 9


def test_tridiagonal_solve_columns():
    d = jnp.asarray(RNG.standard_normal((2, 3, 5)))
    b = jnp.asarray(RNG.standard_normal((2, 5, 2)))
    f = lambda d, b: lax.linalg.tridiagonal_solve(d[:, 0], d[:, 1] + 5.0, d[:, 2], b)
    det = jacobian_sparsity(f, d, b, argnums=(0, 1)).todense()
    check(det, num_pattern(f, d, b, argnums=(0, 1)), exact=False)
    wrt_b = det[:, 30:].reshape(2, 5, 2, 2, 5, 2)
    assert not wrt_b[0, :, 0, 0, :, 1].any() and wrt_b[0, :, 0, 0, :, 0].all()  # columns stay apart
    assert not wrt_b[0, :, :, 1].any()  # batches stay apart


def test_gpu_and_tpu_lowerings_have_the_cpu_patterns():
    """cuSOLVER / hipSOLVER / TPU custom calls: same (block-diagonal) patterns as the LAPACK ones."""
    a = jnp.asarray(RNG.standard_normal((2, 4, 4)))
    for f in (jnp.linalg.inv, lambda a: jnp.linalg.qr(a)[1], lambda a: jnp.linalg.eigh(a)[0],
              jnp.linalg.cholesky):
        cpu = jacobian_sparsity(f, a).todense()
        for platform in ("cuda", "rocm", "tpu"):
            det, _ = exported_pattern(f, a, platform=platform)
            assert det.shape == cpu.shape
            assert (det >= cpu).all(), platform  # contains the exact pattern
            assert block_diagonal(det, 2), platform
            if f is jnp.linalg.inv or f is jnp.linalg.cholesky:
                assert np.array_equal(det, cpu), platform


# ============================================================ FFT
def test_fft_dense_only_along_transformed_dims():
    """Every fft_type, over various axes: exact (one function, one Jacobian compilation)."""
    x = jnp.asarray(RNG.standard_normal((3, 4, 5)))

    def f(x):
        return {
            "fft": jnp.abs(jnp.fft.fft(x)),
            "ifft": jnp.fft.ifft(x).real,
            "rfft": jnp.abs(jnp.fft.rfft(x)),  # (the imaginary part of the DC bin is identically 0)
            "irfft": jnp.fft.irfft(x[..., :3] * (1 + 1j), n=5),  # odd n: no cosine vanishes
            "fft2": jnp.abs(jnp.fft.fft2(x)),
            "rfft2": jnp.abs(jnp.fft.rfft2(x, axes=(0, 2))),
            "irfftn": jnp.fft.irfftn(x + 0j, s=(3, 5), axes=(0, 2)),
            "fft_axis0": jnp.fft.fft(x, axis=0).real,
            "hfft": jnp.fft.hfft(x + 2j * x, n=9),
        }

    det = jacobian_sparsity(f, x).todense()
    check(det, num_pattern(f, x))


def test_fft_structure_and_folding():
    x = jnp.ones((2, 6))
    det = jacobian_sparsity(lambda x: jnp.fft.rfft(x).real, x).todense()
    assert det.shape == (8, 12) and block_diagonal(det, 2) and det.sum() == 2 * 4 * 6
    text = """
    func.func @main(%a: tensor<4xf64>) -> tensor<3xcomplex<f64>> {
      %c = stablehlo.constant dense<[1.0, 2.0, 0.0, -1.0]> : tensor<4xf64>
      %0 = stablehlo.fft %c, type = RFFT, length = [4] : (tensor<4xf64>) -> tensor<3xcomplex<f64>>
      return %0 : tensor<3xcomplex<f64>>
    }"""
    (r,) = analyze_module(text).results
    np.testing.assert_allclose(r.const, np.fft.rfft([1.0, 2.0, 0.0, -1.0]))


# ============================================================ the helpers' vectorized unions vs a dense model
def test_running_and_lazy_group_unions_match_a_dense_model():
    import scipy.sparse as sp

    from stablehlo_sparsity import Deps
    from stablehlo_sparsity.lattice import Groups, group_union, prefix_union

    rng = np.random.default_rng(1)
    for _ in range(60):
        nseg, length, n = (int(v) for v in rng.integers(1, 5, 3) + np.array([0, 0, 3]))
        k = nseg * length
        dense = rng.random((k, n)) < rng.random()
        d = Deps.from_csr(sp.csr_array(dense))
        want = np.zeros_like(dense)
        for r in range(k):
            s0 = (r // length) * length
            want[r] = dense[s0:r + 1].any(axis=0)
        got = prefix_union(d, length).to_csr()
        assert np.array_equal(got.toarray(), want)
        assert all(np.all(np.diff(got.indices[got.indptr[r]:got.indptr[r + 1]]) > 0) for r in range(k))
        # a lazily row-mapped value (broadcast / gathered), grouped without materializing it
        rowmap = rng.integers(-1, k, 7)
        lazy = d.gather_rows(rowmap)
        groups = sp.csr_array(rng.random((4, 7)) < 0.4)
        model = np.array([[lazy.to_csr().toarray()[groups.toarray()[i]].any(axis=0) if groups.toarray()[i].any()
                           else np.zeros(n, bool)] for i in range(4)]).reshape(4, n)
        got = group_union(d.gather_rows(rowmap), Groups.from_matrix(groups), strategy="compose")
        assert np.array_equal(got.to_csr().toarray(), model)


def test_more_linalg_sound_and_block_diagonal():
    """expm, lstsq, matrix_power, cond, eigvals: sound (one Jacobian compilation); Schur, Hessenberg and
    tridiagonal reduction (no JAX derivative): dense per matrix, block diagonal."""
    a = jnp.asarray(RNG.standard_normal((2, 4, 4)))

    def f(a):
        return {
            "expm": jax.scipy.linalg.expm(a),
            "lstsq": jnp.linalg.lstsq(a[0], a[1, :, 0])[0],
            "matrix_power": jnp.linalg.matrix_power(a, -2),
            "cond": jnp.linalg.cond(a),
            "eigvals": jnp.abs(jnp.linalg.eigvals(a)),
        }

    check(jacobian_sparsity(f, a).todense(), num_pattern(f, a), exact=False)
    for g in (lambda a: lax.linalg.tridiagonal(a + jnp.swapaxes(a, -1, -2))[0],
              lambda a: jnp.stack([jax.scipy.linalg.schur(a[0])[0], jax.scipy.linalg.hessenberg(a[1])])):
        det = jacobian_sparsity(g, a).todense()
        assert block_diagonal(det, 2) and det.any(axis=1).sum() >= 24
