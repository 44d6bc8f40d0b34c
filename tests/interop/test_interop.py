"""SciPy, IPOPT and lineax layouts against dense references (``jax.jacfwd`` / ``jax.hessian``)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

from stablehlo_sparsity.interop import ipopt
from stablehlo_sparsity.interop import scipy as si
from stablehlo_sparsity.derivatives.prepared.inputs import flat

RNG = np.random.default_rng(11)


def chain(x, p):
    return jnp.concatenate([x[1:] * jnp.sin(x[:-1]) * p, jnp.exp(x[:3])])


def test_scipy_callables_match_dense_ad():
    x, p = RNG.uniform(0.5, 1.5, 9), np.float64(1.3)
    want = np.asarray(jax.jacfwd(chain)(x, p))
    for fmt, cls in (("csr", sp.csr_matrix), ("csc", sp.csc_matrix)):
        jac = si.least_squares_jacobian(chain, x, p, format=fmt)
        J = jac(x, p)
        assert isinstance(J, cls) and J.has_sorted_indices
        np.testing.assert_allclose(J.toarray(), want, rtol=1e-13)
    rhs = lambda t, y: chain(y, t)  # noqa: E731
    J = si.ivp_jacobian(rhs, 0.7, x)(0.7, x)
    assert isinstance(J, sp.csc_matrix)
    np.testing.assert_allclose(J.toarray(), np.asarray(jax.jacfwd(rhs, argnums=1)(0.7, x)), rtol=1e-13)
    pat = si.jac_sparsity(chain, x, p)
    assert np.array_equal(pat.toarray() != 0, si.least_squares_jacobian(chain, x, p).pattern.todense())
    op = si.jacobian_operator(chain, x, p)
    v, u = RNG.standard_normal(9), RNG.standard_normal(11)
    np.testing.assert_allclose(op.matvec(v), want @ v, rtol=1e-12)
    np.testing.assert_allclose(op.rmatvec(u), want.T @ u, rtol=1e-12)


def objective(x):
    return jnp.sum((x[1:] - x[:-1] ** 2) ** 2) + jnp.sum(jnp.cos(x) * x)


def constraints(x):
    return {"a": x[:-2] * x[2:], "b": jnp.sum(x ** 2)[None]}


def test_ipopt_constraint_jacobian_triplets_match_dense():
    x = RNG.uniform(0.5, 1.5, 7)
    cj = ipopt.sparse_constraint_jacobian(constraints, x)
    rows, cols = cj.structure()
    dense = np.asarray(jax.jacfwd(lambda v: flat(constraints(v)))(x))
    rebuilt = np.zeros_like(dense)
    rebuilt[rows, cols] = cj(x)
    np.testing.assert_allclose(rebuilt, dense, rtol=1e-13)
    assert len(set(zip(rows.tolist(), cols.tolist()))) == len(rows)  # no duplicate triplets


def test_ipopt_lagrangian_hessian_lower_triangle_matches_dense():
    x = RNG.uniform(0.5, 1.5, 7)
    lam, sigma = RNG.standard_normal(6), 0.7
    H = ipopt.sparse_lagrangian_hessian(objective, constraints, x)
    rows, cols = H.structure()
    assert (rows >= cols).all()
    lag = lambda v: sigma * objective(v) + jnp.vdot(lam, flat(constraints(v)))  # noqa: E731
    dense = np.tril(np.asarray(jax.hessian(lag)(x)))
    rebuilt = np.zeros_like(dense)
    rebuilt[rows, cols] = H(x, lam, sigma)
    np.testing.assert_allclose(rebuilt, dense, rtol=1e-12, atol=1e-12)
    # the structure holds for every multiplier: all of the objective's and the constraints' entries
    obj_only = np.tril(np.asarray(jax.hessian(objective)(x))) != 0
    assert obj_only[rows, cols].sum() == obj_only.sum()
    problem = ipopt.IpoptProblem(objective, constraints, x)
    assert problem.m == 6 and problem.n == 7
    np.testing.assert_allclose(problem.hessian(x, lam, sigma), H(x, lam, sigma))
    np.testing.assert_allclose(problem.gradient(x), np.asarray(jax.grad(objective)(x)), rtol=1e-13)


def test_lineax_operator_solver_and_root_finders():
    lx = pytest.importorskip("lineax")
    optx = pytest.importorskip("optimistix")
    from stablehlo_sparsity.interop.lineax import SparseChord, SparseDirect, SparseNewton, sparse_jacobian_operator

    def fn(y, args):
        return y ** 3 + 0.5 * jnp.roll(y, 1) - args["b"] * y[0] - 1.0

    y = jnp.asarray(RNG.uniform(0.5, 1.5, 8))
    args = {"b": jnp.asarray(0.3), "unused_static": "text"}
    op = sparse_jacobian_operator(fn, y, args)
    J = np.asarray(jax.jacfwd(fn)(y, args))
    np.testing.assert_allclose(np.asarray(op.as_matrix()), J, rtol=1e-13)
    v = jnp.asarray(RNG.standard_normal(8))
    np.testing.assert_allclose(np.asarray(op.mv(v)), J @ np.asarray(v), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(op.T.mv(v)), J.T @ np.asarray(v), rtol=1e-13)
    np.testing.assert_allclose(np.asarray(lx.diagonal(op)), np.diag(J), rtol=1e-13)
    sol = lx.linear_solve(op, v, SparseDirect())
    np.testing.assert_allclose(np.asarray(sol.value), np.linalg.solve(J, np.asarray(v)), rtol=1e-10)
    solT = jax.jit(lambda o, b: lx.linear_solve(o.T, b, SparseDirect()).value)(op, v)
    np.testing.assert_allclose(np.asarray(solT), np.linalg.solve(J.T, np.asarray(v)), rtol=1e-10)
    # the same preparation is reused (cached), so loops carry one operator structure
    assert sparse_jacobian_operator(fn, y + 1, args).ref == op.ref

    target = {"b": jnp.asarray(0.3), "unused_static": "text"}
    y0 = jnp.full(8, 2.0)
    dense = optx.root_find(fn, optx.Newton(rtol=1e-12, atol=1e-12), y0, target)
    for solver in (SparseNewton(rtol=1e-12, atol=1e-12), SparseChord(rtol=1e-12, atol=1e-12)):
        got = jax.jit(lambda y0: optx.root_find(fn, solver, y0, target, max_steps=200).value)(y0)
        np.testing.assert_allclose(np.asarray(got), np.asarray(dense.value), rtol=1e-9, atol=1e-12)
    assert float(jnp.abs(fn(dense.value, target)).max()) < 1e-10
