"""``check_jacobian`` / ``check_hessian``: every container a user holds, wrong answers of every kind, several
points, tolerances tight enough for float32, and a clear failure where the function is not finite.

The function is well scaled (entries of order 1 in every row and column) and float32, as in issue 20's
report that the old default (``rtol = 16·√eps`` ≈ 5.5e-3) accepted a whole diagonal off by 1e-3.
"""

from __future__ import annotations

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from jax.experimental import sparse as jsparse

import stablehlo_sparsity as ss
from stablehlo_sparsity import DerivativeMismatchError, InputError
from stablehlo_sparsity.derivatives.checks import RTOL_EPS

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")

F32 = np.float32
X = jnp.linspace(0.5, 1.5, 8, dtype=F32)


def f(x):
    """A periodic two-point stencil plus a smooth diagonal: J = diag(2 + 0.3 cos x) - 0.5 shift."""
    return 2.0 * x - 0.5 * jnp.roll(x, 1) + 0.3 * jnp.sin(x)


def energy(x):
    """A scalar with a tridiagonal Hessian of order-1 entries."""
    return jnp.sum(x ** 3) / 3 + jnp.sum(x[1:] * x[:-1]) + jnp.sum(jnp.cos(x))


J = np.asarray(jax.jacfwd(f)(X))
H = np.asarray(jax.hessian(energy)(X))


# ------------------------------------------------------------------------------------ containers
KINDS = ["numpy", "jax", "bcoo", "bcsr", "csr_matrix", "csr_array", "coo_array", "csc_matrix"]


def _container(kind: str, a: np.ndarray):
    """``a`` (a dense float32 matrix) in a form a user may hold it; sparse forms store exactly the nonzeros of
    ``a`` (built from SciPy's COO, so that no JAX program is compiled per sparsity structure)."""
    a = np.asarray(a, F32)
    if kind == "numpy":
        return a
    if kind == "jax":
        return jnp.asarray(a)
    coo = sp.coo_array(a)
    if kind in ("bcoo", "bcsr"):
        bcoo = jsparse.BCOO((jnp.asarray(coo.data), jnp.asarray(np.stack([coo.row, coo.col], 1))), shape=a.shape)
        if kind == "bcoo":
            return bcoo
        csr = sp.csr_array(a)
        return jsparse.BCSR((jnp.asarray(csr.data), jnp.asarray(csr.indices), jnp.asarray(csr.indptr)),
                            shape=a.shape)
    return {"csr_matrix": sp.csr_matrix, "csr_array": sp.csr_array, "coo_array": sp.coo_array,
            "csc_matrix": sp.csc_matrix}[kind](a)


def _report(obj, check=ss.check_jacobian, fn=f, **kw):
    key = "hessian" if check is ss.check_hessian else "jacobian"
    return check(fn, X, raise_on_error=False, **{key: obj}, **kw)


@pytest.mark.parametrize("kind", KINDS)
def test_a_right_matrix_passes_in_every_container(kind):
    rep = _report(_container(kind, J))
    assert rep.ok, str(rep)
    assert rep.points == 1 and "value at args only" in rep.message  # a matrix is compared at args only
    rep = _report(_container(kind, H), check=ss.check_hessian, fn=energy)
    assert rep.ok, str(rep)


def _wrong(kind_of_error: str, a: np.ndarray) -> np.ndarray:
    b = np.array(a, F32)
    if kind_of_error == "values":  # the whole diagonal off by 1e-3 (relative): issue 20's float32 example
        b[np.diag_indices(len(b))] *= 1 + 1e-3
    elif kind_of_error == "missing":  # a true nonzero dropped (an unsound pattern)
        i, j = np.argwhere(a != 0)[-1]
        b[i, j] = 0
    elif kind_of_error == "extra":  # a nonzero where the derivative is zero
        b[0, 4] = 0.25
    elif kind_of_error == "shape":
        b = b[:-1]
    return b


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("error", ["values", "missing", "extra", "shape"])
def test_a_wrong_matrix_fails_in_every_container(kind, error):
    assert J[0, 4] == 0 and H[0, 4] == 0
    for check, fn, a in ((ss.check_jacobian, f, J), (ss.check_hessian, energy, H)):
        bad = _container(kind, _wrong(error, a))
        rep = _report(bad, check=check, fn=fn)
        assert not rep.ok, (error, kind, str(rep))
        if error == "shape":
            assert rep.method == "shape" and "WRONG SHAPE" in str(rep), str(rep)
        else:
            assert rep.worst > 10, str(rep)  # not a near miss: the tolerance is far below 1e-3
        if error == "missing" and kind not in ("numpy", "jax"):
            assert rep.missing == 1, str(rep)  # the entry lies outside the stored structure
        with pytest.raises(DerivativeMismatchError):
            check(fn, X, **{("hessian" if check is ss.check_hessian else "jacobian"): bad})


@pytest.mark.parametrize("kind", ["numpy", "bcoo", "csr_array"])
def test_the_probes_method_takes_every_container_too(kind):
    """``method="probes"`` (large problems): matrix-vector products against JVPs/VJPs (``H v`` for Hessians)."""
    assert _report(_container(kind, J), method="probes").ok
    rep = _report(_container(kind, _wrong("values", J)), method="probes")
    assert not rep.ok and rep.method == "probes" and rep.worst > 10, str(rep)
    assert _report(_container(kind, H), check=ss.check_hessian, fn=energy, method="probes").ok
    assert not _report(_container(kind, _wrong("extra", H)), check=ss.check_hessian, fn=energy, method="probes")


def test_float32_catches_a_diagonal_off_by_1e3_in_a_prepared_jacobian():
    """Issue 20: rtol 0.0055 accepted it.  Here through a prepared object of a slightly different function."""
    off = ss.sparse_jacobian(lambda x: f(x) + 2e-3 * x, X, output="values")  # diagonal ≈ 2: off by ≈ 1e-3
    rep = ss.check_jacobian(f, X, jacobian=off, raise_on_error=False, points=1)
    assert not rep.ok and rep.worst > 10, str(rep)
    assert rep.rtol == pytest.approx(RTOL_EPS * np.finfo(F32).eps)
    assert ss.check_jacobian(f, X, jacobian=ss.sparse_jacobian(f, X)).worst < 0.5


def test_another_function_that_agrees_at_args_fails_at_the_points_near_them():
    """Issue 20's example: ``f(x) + ½(x - x0)²`` has the same Jacobian as ``f`` at ``x0`` only."""
    other = ss.sparse_jacobian(lambda x: f(x) + 0.5 * (x - X) ** 2, X)
    assert ss.check_jacobian(f, X, jacobian=other, points=1)  # at x0 alone it is right
    rep = ss.check_jacobian(f, X, jacobian=other, raise_on_error=False)
    assert not rep.ok and rep.points == 3 and rep.point > 0 and "near args" in rep.where, str(rep)
    with pytest.raises(DerivativeMismatchError, match="random point"):
        ss.check_jacobian(f, X, jacobian=other)
    # the same through the SciPy wrapper, and for a Hessian (third-order term vanishing at x0)
    from stablehlo_sparsity.interop.scipy import least_squares_jacobian

    assert not ss.check_jacobian(f, X, jacobian=least_squares_jacobian(lambda x: f(x) + 0.5 * (x - X) ** 2, X),
                                 raise_on_error=False)
    hes = ss.sparse_hessian(lambda x: energy(x) + jnp.sum((x - X) ** 3) / 6, X)
    assert ss.check_hessian(energy, X, hessian=hes, points=1)
    assert not ss.check_hessian(energy, X, hessian=hes, raise_on_error=False)


def test_explicit_points_and_matrices_at_one_point_only():
    prepared = ss.sparse_jacobian(f, X, output="values")
    rep = ss.check_jacobian(f, X, jacobian=prepared, points=[(X,), (X + 0.25,), (-X,)])
    assert rep.ok and rep.points == 3
    other = ss.sparse_jacobian(lambda x: f(x) + 0.5 * (x - X) ** 2, X)
    rep = ss.check_jacobian(f, X, jacobian=other, points=[(X,), (X + 0.25,)], raise_on_error=False)
    assert not rep.ok and rep.point == 1 and rep.where == "points[1]", str(rep)
    with pytest.raises(InputError, match="at args only"):
        ss.check_jacobian(f, X, jacobian=J, points=3)
    with pytest.raises(InputError, match="at least 1"):
        ss.check_jacobian(f, X, jacobian=prepared, points=0)


# ------------------------------------------------------------------------------------ wrappers and prepared
def test_right_answers_from_every_wrapper_pass_and_wrong_ones_fail():
    from stablehlo_sparsity.interop.ipopt import sparse_constraint_jacobian, sparse_lagrangian_hessian
    from stablehlo_sparsity.interop.lineax import sparse_jacobian_operator
    from stablehlo_sparsity.interop.scipy import ivp_jacobian, least_squares_jacobian

    for fmt in ("csr", "csc"):
        assert ss.check_jacobian(f, X, jacobian=least_squares_jacobian(f, X, format=fmt))
    rhs = lambda t, y: f(y) * (1 + t)  # noqa: E731
    t0 = np.asarray(0.5, F32)
    assert ss.check_jacobian(rhs, t0, X, jacobian=ivp_jacobian(rhs, t0, X))
    with pytest.raises(InputError, match="argnums"):  # the wrapper differentiates y (argument 1)
        ss.check_jacobian(rhs, t0, X, jacobian=ivp_jacobian(rhs, t0, X), argnums=0)
    assert not ss.check_jacobian(lambda t, y: f(y) * (1 + 2 * t), t0, X, jacobian=ivp_jacobian(rhs, t0, X),
                                 raise_on_error=False)
    assert ss.check_jacobian(f, X, jacobian=sparse_constraint_jacobian(f, X))
    assert not ss.check_jacobian(lambda x: 2 * f(x), X, jacobian=sparse_constraint_jacobian(f, X),
                                 raise_on_error=False)
    # IPOPT's Lagrangian Hessian holds the lower triangle: mirrored before the comparison
    lh = sparse_lagrangian_hessian(energy, f, X)
    lam, sigma = jnp.linspace(-1, 1, 8, dtype=F32), jnp.asarray(0.7, F32)
    lagrangian = lambda x, lam, s: s * energy(x) + jnp.vdot(lam, f(x))  # noqa: E731
    assert ss.check_hessian(lagrangian, X, lam, sigma, hessian=lh)
    assert not ss.check_hessian(lambda x, lam, s: s * energy(x) + 2 * jnp.vdot(lam, f(x)), X, lam, sigma,
                                hessian=lh, raise_on_error=False)
    # a lineax operator is a value at its point
    op = sparse_jacobian_operator(lambda y, a: f(y), X, None)
    assert ss.check_jacobian(f, X, jacobian=op)
    assert not ss.check_jacobian(jnp.sin, X, jacobian=op, raise_on_error=False)
    assert ss.check_jacobian(f, X, jacobian=op.transpose().transpose())


@pytest.mark.parametrize("output", ["bcoo", "bcsr", "dense", "values", "scipy"])
def test_prepared_objects_of_every_output_are_checked_through_their_values(output):
    assert ss.check_jacobian(f, X, jacobian=ss.sparse_jacobian(f, X, output=output))


def test_a_prepared_object_with_a_dropped_nonzero_reports_it_missing():
    wrong = ss.sparse_jacobian(f, X, output="values")
    lil = wrong.pattern.to_scipy().tolil()
    lil[3, 2] = False  # as an unsound rule would: a true dependency dropped
    damaged = ss.SparsityPattern(sp.csr_array(lil.tocsr()))
    wrong.pattern = damaged
    wrong.coloring = ss.color_columns(damaged)
    wrong.replan()
    rep = ss.check_jacobian(f, X, jacobian=wrong, raise_on_error=False)
    assert not rep.ok and rep.missing == 1 and rep.missing_examples == [(3, 2)], str(rep)
    assert "outside the detected pattern" in str(rep)


def test_an_unsupported_object_is_an_input_error():
    with pytest.raises(InputError, match="cannot check a dict"):
        ss.check_jacobian(f, X, jacobian={"J": J})
    with pytest.raises(InputError, match="numbers"):
        ss.check_jacobian(f, X, jacobian=np.array([["a"] * 8] * 8))


def test_a_jacfwd_shaped_dense_array_is_read_as_output_by_input():
    g = lambda u: 2.0 * u + u[::-1, :]  # noqa: E731
    u = jnp.linspace(0.1, 1.0, 6, dtype=F32).reshape(2, 3)
    eye = np.eye(6, dtype=F32).reshape(2, 3, 2, 3)
    full = 2.0 * eye + eye[::-1]  # jax.jacfwd(g)(u): (2, 3, 2, 3)
    assert ss.check_jacobian(g, u, jacobian=full)
    assert not ss.check_jacobian(g, u, jacobian=full * 1.01, raise_on_error=False)


def test_a_custom_vjp_function_is_checked_against_reverse_mode():
    """``jax.jacfwd`` cannot differentiate a ``custom_vjp``: the reference falls back to dense VJPs (and to
    reverse over reverse for a Hessian) instead of failing with JAX's TypeError; the probes ``J v`` are transposed
    VJPs (:mod:`stablehlo_sparsity.derivatives.prepared.products`)."""
    @jax.custom_vjp
    def g(x):
        return 2 * jnp.sin(x)

    g.defvjp(lambda x: (g(x), x), lambda x, ct: (2 * jnp.cos(x) * ct,))
    h = lambda x: g(x[1:]) * x[:-1]  # noqa: E731
    assert ss.check_jacobian(h, X, mode="reverse")
    assert not ss.check_jacobian(lambda x: 1.001 * h(x), X, jacobian=ss.sparse_jacobian(h, X, mode="reverse"),
                                 raise_on_error=False)
    dense_h = np.asarray(jax.hessian(lambda x: jnp.sum(jnp.cos(x) * x))(X))  # (no custom_vjp: the matrix)
    assert ss.check_hessian(lambda x: jnp.sum(g(x) * x) / 2 - jnp.sum(jnp.sin(x) * x) + jnp.sum(jnp.cos(x) * x),
                            X, hessian=dense_h)
    assert ss.check_jacobian(h, X, method="probes")
    report = ss.check_jacobian(lambda x: 1.001 * h(x), X, jacobian=ss.sparse_jacobian(h, X), method="probes",
                               raise_on_error=False)
    assert not report and report.kind == "Jacobian"


def test_a_while_loop_without_reverse_mode_is_checked_forward_only():
    """Issue 20's fixed-point solve: JAX has no VJP of this loop, so the spread and the ``uᵀJ`` probes are
    left out, never an error (the old probes raised JAX's ValueError)."""
    def solve(x):
        c = lambda s: (s[1] < 50) & (jnp.max(jnp.abs(s[0] - .5 * jnp.cos(s[0]) - x)) > 1e-6)  # noqa: E731
        y, _ = jax.lax.while_loop(c, lambda s: (.5 * jnp.cos(s[0]) + x, s[1] + 1), (x, 0))
        return y[1:] * y[:-1]

    x = jnp.linspace(0, 1, 12, dtype=F32)
    jac = ss.sparse_jacobian(solve, x, output="values")
    for method in ("dense", "probes"):
        assert ss.check_jacobian(solve, x, jacobian=jac, method=method)
        assert not ss.check_jacobian(lambda v: 1.001 * solve(v), x, jacobian=jac, method=method,
                                     raise_on_error=False)


# ------------------------------------------------------------------------------------ not finite
def test_a_function_that_is_not_finite_at_args_fails_and_says_so():
    x = jnp.asarray([-1.0, 0.5, 2.0], F32)
    rep = ss.check_jacobian(jnp.log, x, raise_on_error=False)
    assert not rep.ok and not rep.finite, str(rep)
    assert "NOT FINITE" in str(rep) and "the function is not finite there" in str(rep)
    with pytest.raises(DerivativeMismatchError, match="not finite"):
        ss.check_jacobian(jnp.log, x)
    # a finite function whose dense derivative is not: sqrt at 0
    rep = ss.check_jacobian(jnp.sqrt, jnp.asarray([0.0, 1.0], F32), raise_on_error=False)
    assert not rep.ok and "dense Jacobian of the function is not finite" in str(rep), str(rep)
    # at random points near args where log is undefined the point moves closer, or is skipped
    y = jnp.asarray([1e-3, 1.0, 2.0], F32)
    rep = ss.check_jacobian(jnp.log, y, points=6)
    assert rep.ok and rep.points + rep.skipped == 6


def test_check_jacobian_module_says_the_cholesky_module_is_not_finite_at_random_points():
    """Issue 25: JAX's exported Cholesky module is NaN outside the positive-definite set."""
    jnp.linalg.cholesky(jnp.eye(2)).block_until_ready()  # register the LAPACK kernels first (TOOLCHAIN.md)
    from jax._src.internal_test_util.export_back_compat_test_data import cpu_cholesky_lapack_potrf as potrf

    data = potrf.data_2024_05_31["f32"]
    blob = data["mlir_module_serialized"]
    jac = ss.sparse_jacobian_module(blob, output="values")
    rep = ss.check_jacobian_module(blob, jacobian=jac, points=1, raise_on_error=False)
    assert not rep.ok and not rep.finite, str(rep)
    assert "the function is not finite there" in str(rep) and "random point 0" in str(rep), str(rep)
    assert "worst error/tolerance inf" not in str(rep)
    with pytest.raises(DerivativeMismatchError, match="NOT FINITE"):
        ss.check_jacobian_module(blob, jacobian=jac, points=1)
    rep = ss.check_jacobian_module(blob, jacobian=jac, args=data["inputs"])  # positive definite: defined
    assert rep.ok and rep.points == 3, str(rep)
    spd = data["inputs"][0]
    rep = ss.check_jacobian_module(blob, jacobian=jac, points=[(spd,), (spd + 3 * np.eye(4, dtype=F32),)])
    assert rep.ok and rep.points == 2, str(rep)


def test_check_jacobian_module_compares_with_the_given_module_not_the_prepared_ones():
    """A Jacobian prepared from another module that agrees with this one at ``args`` (issue 20's example, as
    StableHLO) fails: the reference is the import of ``module``, at ``args`` and at points near them."""
    x0 = np.asarray(X)
    text_f = jax.jit(f).lower(X).as_text()
    text_g = jax.jit(lambda x: f(x) + 0.5 * (x - x0) ** 2).lower(X).as_text()
    other = ss.sparse_jacobian_module(text_g, output="values")
    assert ss.check_jacobian_module(text_g, jacobian=other, args=(x0,))
    assert ss.check_jacobian_module(text_f, jacobian=other, args=(x0,), points=1)  # right at x0 alone
    rep = ss.check_jacobian_module(text_f, jacobian=other, args=(x0,), raise_on_error=False)
    assert not rep.ok and rep.point > 0, str(rep)
    assert not ss.check_jacobian_module(text_f, jacobian=other, raise_on_error=False)  # random points
    with pytest.raises(InputError, match="argument index 1 out of range"):
        ss.check_jacobian_module(text_f, wrt=1, jacobian=other)


def test_check_hessian_module_says_the_function_is_not_finite():
    text = """
    func.func @main(%x: tensor<5xf32>) -> tensor<f32> {
      %l = stablehlo.log %x : tensor<5xf32>
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %s = stablehlo.reduce(%l init: %z) applies stablehlo.add across dimensions = [0]
          : (tensor<5xf32>, tensor<f32>) -> tensor<f32>
      return %s : tensor<f32>
    }"""
    rep = ss.check_hessian_module(text, points=2, raise_on_error=False)  # standard normal: some x < 0
    assert not rep.ok and not rep.finite and "not finite" in str(rep), str(rep)
    assert ss.check_hessian_module(text, args=(np.linspace(0.5, 2, 5).astype(F32),))


# ------------------------------------------------------------------------------------ margin
def test_correct_derivatives_pass_with_margin():
    """The tolerance (64 eps against the row/column magnitudes, plus dense AD's spread) is far above what
    right float32 and float64 answers need: measured worst ratio 0.02 over the soundness suite (SHS_LONG=1
    runs all of it), so a 1e-3 error (≈ 100 tolerances) is caught with room on both sides."""
    from stablehlo_sparsity.examples import brusselator

    x = jnp.asarray(np.random.default_rng(3).uniform(0, 1, 32), F32)
    rep = ss.check_jacobian(lambda v: brusselator(v, 4), x)
    assert rep.ok and rep.worst < 0.25, str(rep)
    rep = ss.check_hessian(lambda v: jnp.sum(brusselator(v, 4) ** 2), x)
    assert rep.ok and rep.worst < 0.25, str(rep)


@pytest.mark.skipif(not LONG, reason="every soundness-suite function twice: SHS_LONG=1")
def test_correct_derivatives_of_the_soundness_suite_pass_with_margin():
    import warnings

    import test_soundness_suite as suite

    for name, case in suite.CASES.items():
        if case.kwargs:
            continue  # (keywords named like library keywords: issue 20's keyword contract)
        for dt in (np.float32, np.float64):
            rng = np.random.default_rng(1)

            def cast(a):
                a = jnp.asarray(a)
                return jnp.asarray(rng.uniform(0.5, 1.5, a.shape), dt) if jnp.issubdtype(a.dtype, jnp.floating) else a

            args = tuple(jax.tree_util.tree_map(cast, a) for a in case.args)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    rep = ss.check_jacobian(case.f, *args, argnums=case.argnums, has_aux=case.has_aux,
                                            raise_on_error=False)
                except InputError:
                    continue  # (a function that refuses float32 inputs)
            assert rep.ok and rep.worst < 0.25, (name, str(rep))
