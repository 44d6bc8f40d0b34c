"""Sparse Hessians: the pattern via the gradient program, star coloring, HVPs, symmetric decompression.

Values are compared with ``jax.hessian`` (float64), flattened over the selected inputs; each function's
sparse program and its dense reference are compiled as one XLA program to keep the test fast.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from jax.experimental import sparse as jsparse

from stablehlo_sparsity import (DerivativeMismatchError, InputError, check_hessian, check_jacobian,
                                hessian_coloring, hessian_sparsity, sparse_hessian, sparse_jacobian,
                                value_and_sparse_hessian)
from stablehlo_sparsity.derivatives.checks import CheckReport
from stablehlo_sparsity.coloring import check_coloring
from stablehlo_sparsity.examples import brusselator
from stablehlo_sparsity.analysis.rules import DEPS_RULES


def rosenbrock(x):
    return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def separable(x):
    return jnp.sum(jnp.sin(x) * x ** 2)


def energy_2d(u):
    gx = u[1:, :] - u[:-1, :]
    gy = u[:, 1:] - u[:, :-1]
    return jnp.sum(gx ** 2) + jnp.sum(gy ** 2) + jnp.sum(u ** 4)


def periodic_chain(x):
    return jnp.sum(jnp.cos(x - jnp.roll(x, 1)) * x)


def logsumexp(x):
    return jax.scipy.special.logsumexp(x)  # dense Hessian


A = np.random.default_rng(0).standard_normal((6, 6)) * (np.random.default_rng(1).random((6, 6)) < 0.3)


def sparse_quadratic(x):
    return x @ (jnp.asarray(A) @ x) + jnp.sum(x ** 3)


def two_args(x, y):
    return jnp.sum(x[:-1] * y[1:] ** 2) + jnp.sum(jnp.exp(x))


def dict_arg(p):
    return jnp.sum(p["a"] ** 2 * p["b"]) + jnp.sum(p["c"] ** 3)


IDX = np.array([3, 0, 5, 5, 1])


def gathered(x):
    return jnp.sum(x[IDX] * x[::-1][IDX[::-1]]) + jnp.sum(jnp.tanh(x))


def fori_energy(x):
    def step(i, u):
        return u + 0.1 * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)) - 0.01 * u ** 3

    return jnp.sum(jax.lax.fori_loop(0, 3, step, x) ** 2)


def conv_energy(x):
    w = jnp.asarray([[[0.5, -1.0, 0.25]]])
    y = jax.lax.conv_general_dilated(x[None, None, :], w, (1,), "SAME")
    return jnp.sum(y ** 2 * x)


def rand(*shape, seed=0):
    return jnp.asarray(np.random.default_rng(seed).standard_normal(shape))


CASES = {
    "rosenbrock": (rosenbrock, (rand(9),), 0, ()),
    "separable": (separable, (rand(7),), 0, ()),
    "energy_2d": (energy_2d, (rand(4, 5),), 0, ()),
    "periodic_chain": (periodic_chain, (rand(8),), 0, ()),
    "logsumexp": (logsumexp, (rand(5),), 0, ()),
    "sparse_quadratic": (sparse_quadratic, (rand(6),), 0, ("stablehlo.dot_general",)),
    "two_args": (two_args, (rand(5), rand(5, seed=1)), (0, 1), ()),
    "second_arg_only": (two_args, (rand(5), rand(5, seed=1)), 1, ()),
    "dict_arg": (dict_arg, ({"a": rand(3), "b": rand(3, seed=2), "c": rand(2, seed=3)},), 0, ()),
    "gathered": (gathered, (rand(7),), 0, ("stablehlo.gather", "stablehlo.scatter")),
    "fori_energy": (fori_energy, (rand(12),), 0, ("stablehlo.while",)),
    "conv_energy": (conv_energy, (rand(9),), 0, ("stablehlo.convolution",)),
}


def _flat_hessian(f, args, argnums):
    """Dense flattened Hessian over the selected leaves (traced inside the caller's jit)."""
    argnums_t = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    sel = tuple(args[i] for i in argnums_t)
    leaves, tree = jax.tree_util.tree_flatten(sel)
    sizes = [int(np.prod(np.shape(l), dtype=np.int64)) for l in leaves]

    def flat_f(z):
        parts, o = [], 0
        for leaf, s in zip(leaves, sizes):
            parts.append(jnp.reshape(z[o:o + s], np.shape(leaf)))
            o += s
        new = jax.tree_util.tree_unflatten(tree, parts)
        a = list(args)
        for i, v in zip(argnums_t, new):
            a[i] = v
        return f(*a)

    z = jnp.concatenate([jnp.ravel(l) for l in leaves])
    return jax.hessian(flat_f)(z)


def _dense(h, values):
    out = np.zeros(h.shape)
    rows, cols = h.pattern.to_coo()
    out[rows, cols] = np.asarray(values)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_values_equal_dense_hessian(name):
    f, args, argnums, needs = CASES[name]
    if any(op not in DEPS_RULES for op in needs):
        pytest.skip("rule missing")
    h = sparse_hessian(f, *args, argnums=argnums)
    assert check_coloring(h.pattern, h.coloring)

    @jax.jit
    def both(*a):
        return h.values(*a), _flat_hessian(f, a, argnums)

    got, want = both(*args)
    want = np.asarray(want)
    np.testing.assert_allclose(_dense(h, got), want, rtol=1e-12, atol=1e-12)
    # the detected pattern is sound and symmetric
    assert not (np.abs(want) > 0)[~h.pattern.todense()].any()
    assert (h.pattern.todense() == h.pattern.todense().T).all()


def test_patterns_are_exact_where_known():
    n = 10
    tri = np.abs(np.subtract.outer(np.arange(n), np.arange(n))) <= 1
    assert np.array_equal(hessian_sparsity(rosenbrock, jnp.ones(n)).todense(), tri)
    assert np.array_equal(hessian_sparsity(separable, jnp.ones(n)).todense(), np.eye(n, dtype=bool))
    assert hessian_sparsity(logsumexp, jnp.ones(4)).nnz == 16
    per = hessian_sparsity(periodic_chain, jnp.ones(n)).todense()
    assert per[0, n - 1] and per[n - 1, 0] and per.sum() == 3 * n


def test_colors_for_known_structures():
    assert sparse_hessian(rosenbrock, jnp.ones(50)).num_colors == 3      # path: star chromatic number 3
    assert sparse_hessian(separable, jnp.ones(50)).num_colors == 1       # diagonal: one HVP
    assert hessian_coloring(logsumexp, jnp.ones(6)).num_colors == 6      # dense: n HVPs


@pytest.mark.parametrize("output", ["bcoo", "bcsr", "scipy", "dense", "values"])
def test_output_formats(output):
    x = rand(8)
    h = sparse_hessian(rosenbrock, x, output=output)
    out = h(x)
    if output == "values":
        got = _dense(h, out)
    elif output == "scipy":
        assert isinstance(out, sp.csr_array)
        got = out.toarray()
    elif output in ("bcoo", "bcsr"):
        assert isinstance(out, (jsparse.BCOO, jsparse.BCSR))
        got = np.asarray(out.todense())
    else:
        got = np.asarray(out)
    want = np.asarray(jax.jit(jax.hessian(rosenbrock))(x))
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_value_aux_jit_and_export():
    def f(x):
        return rosenbrock(x), {"first": x[0]}

    x = rand(6)
    vh = value_and_sparse_hessian(f, x, has_aux=True, output="dense")
    (val, aux), hess = jax.jit(vh)(x)
    assert float(val) == pytest.approx(float(rosenbrock(x)), rel=1e-12)
    assert float(aux["first"]) == float(x[0])
    want = np.asarray(jax.jit(jax.hessian(rosenbrock))(x))
    np.testing.assert_allclose(np.asarray(hess), want, rtol=1e-12)
    h = sparse_hessian(rosenbrock, x)
    text = h.as_text()
    assert "stablehlo.constant" in text
    exp = h.export(platforms=("cpu", "cuda", "tpu"))
    np.testing.assert_allclose(np.asarray(exp.call(x)), np.asarray(h.values(x)), rtol=1e-15)
    with pytest.raises(InputError, match="scalar"):
        sparse_hessian(lambda v: v ** 2, x)


def test_an_output_of_one_element_in_any_shape_is_the_scalar():
    # a scalar output is taken as it is, a (1,) or (1, 1) one reshaped: the same pattern and values either way
    x = rand(6)
    want = np.asarray(jax.hessian(rosenbrock)(x))
    for shaped in (rosenbrock, lambda v: rosenbrock(v)[None], lambda v: jnp.reshape(rosenbrock(v), (1, 1))):
        for method in ("direct", "via-gradient"):
            pattern = hessian_sparsity(shaped, x, method=method)
            np.testing.assert_array_equal(pattern.todense(), want != 0)
        np.testing.assert_allclose(np.asarray(sparse_hessian(shaped, x, output="dense")(x)), want, rtol=1e-12)


# ----------------------------------------------------------------------------------------------- checks
def test_check_jacobian_and_hessian_pass_in_float32_and_float64():
    N = 8
    f = lambda x: brusselator(x, N)  # noqa: E731
    x = jnp.asarray(np.random.default_rng(0).uniform(0, 1, 2 * N * N))
    for dtype in (jnp.float64, jnp.float32):
        xd = x.astype(dtype)
        for method in ("dense", "probes"):
            rep = check_jacobian(f, xd, method=method)
            assert isinstance(rep, CheckReport) and rep.ok and rep.worst < 0.5, str(rep)
            assert rep.dtype == np.dtype(dtype).name and rep.method == method
        rep = check_hessian(rosenbrock, xd[:20], method="probes")
        assert rep.ok, str(rep)
    assert check_hessian(rosenbrock, x[:20]).method == "dense"


def test_checks_catch_a_wrong_jacobian():
    x = jnp.linspace(0.5, 1.5, 9)
    f = lambda v: v[1:] * v[:-1]  # noqa: E731
    jac = sparse_jacobian(f, x, output="values")
    # sabotage: a single color for every column conflicts in every row
    from stablehlo_sparsity.coloring import Coloring

    jac.coloring = Coloring(np.zeros(9, np.int32), 1, "column", jac.shape)
    jac.replan()
    for method in ("dense", "probes"):
        rep = check_jacobian(f, x, jacobian=jac, method=method, raise_on_error=False)
        assert not rep and rep.worst > 1
    with pytest.raises(DerivativeMismatchError) as e:
        check_jacobian(f, x, jacobian=jac)
    assert "MISMATCH" in str(e.value) and e.value.report.method == "dense"


def test_checks_report_nonzeros_outside_the_pattern():
    # a pattern that misses an entry (as an unsound rule would): take the pattern of a different function
    x = jnp.linspace(0.5, 1.5, 6)
    f = lambda v: v * jnp.roll(v, 1)  # noqa: E731
    jac = sparse_jacobian(lambda v: v * v, x, output="values")
    jac._fn = f
    rep = check_jacobian(f, x, jacobian=jac, method="dense", raise_on_error=False)
    assert not rep.ok and rep.missing == 6 and (1, 0) in rep.missing_examples
    assert "outside the detected pattern" in str(rep)


def test_hessian_with_seeds_computed_in_the_program():
    x = rand(9)
    h = sparse_hessian(energy_2d, x.reshape(3, 3), output="dense", constant_seeds=False)
    want = np.asarray(jax.jit(lambda v: _flat_hessian(energy_2d, (v,), 0))(x.reshape(3, 3)))
    np.testing.assert_allclose(np.asarray(h(x.reshape(3, 3))), want, rtol=1e-12, atol=1e-12)
