"""The public seeds and decompression: every coloring kind round-trips a random matrix on a random
pattern (hypothesis), with products from SciPy, from JAX JVPs/VJPs/HVPs, and inside ``jax.jit``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stablehlo_sparsity import hessian_sparsity, jacobian_sparsity
from stablehlo_sparsity.coloring import (KINDS, DecompressionPlan, InvalidColoringError, color_acyclic,
                                         color_bidirectional, color_columns, color_rows, color_star, compress,
                                         decompress, seed_matrix, symmetrize)

FAST = settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])

COLOR = {"column": color_columns, "row": color_rows, "star": color_star, "acyclic": color_acyclic,
         "bidirectional": color_bidirectional}


@st.composite
def problems(draw):
    """A kind, a random pattern for it (square for star/acyclic; dense rows/columns sometimes) and random
    values on it (symmetric for star/acyclic)."""
    kind = draw(st.sampled_from(KINDS))
    m = draw(st.integers(0, 25))
    n = m if kind in ("star", "acyclic") else draw(st.integers(0, 25))
    density = draw(st.sampled_from([0.0, 0.05, 0.15, 0.4, 1.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    a = rng.random((m, n)) < density
    if m and n and draw(st.booleans()):
        a[rng.integers(m), :] = True
        a[:, rng.integers(n)] = True
    p = sp.csr_array(a)
    if kind in ("star", "acyclic"):
        p = symmetrize(p)
        v = sp.csr_array((rng.standard_normal(p.nnz), p.indices, p.indptr), shape=p.shape)
        mat = sp.csr_array(v + v.T)
    else:
        mat = sp.csr_array((rng.standard_normal(p.nnz), p.indices, p.indptr), shape=p.shape)
    return kind, p, mat


@FAST
@given(problems())
def test_every_kind_round_trips(problem):
    kind, p, mat = problem
    c = COLOR[kind](p)
    compressed = compress(mat, c)
    got = decompress(compressed, p, c)
    assert got.shape == mat.shape
    np.testing.assert_allclose(got.toarray(), mat.toarray(), rtol=0, atol=1e-12)
    plan = DecompressionPlan(p, c)
    assert plan.num_products == c.num_colors and plan.nnz == p.nnz
    # the same products through the seeds: B = M S (and C = S_rᵀ M)
    seeds = seed_matrix(c)
    if kind == "bidirectional":
        s_c, s_r = seeds
        again = (mat @ s_c, (mat.T @ s_r).T)
        assert s_c.shape == (p.shape[1], c.num_column_colors) and s_r.shape == (p.shape[0], c.num_row_colors)
    elif kind == "row":
        again = (mat.T @ seeds).T
        assert seeds.shape == (p.shape[0], c.num_colors)
    else:
        again = mat @ seeds
        assert seeds.shape == (p.shape[1], c.num_colors)
    np.testing.assert_allclose(plan.values(again), plan(compressed).data, rtol=1e-14, atol=1e-14)


def test_float32_products_keep_their_dtype_and_substitution_accumulates_in_double():
    n = 400
    p = sp.csr_array(sp.diags_array([np.ones(n)] * 5, offsets=[-2, -1, 0, 1, 2], shape=(n, n), dtype=bool))
    rng = np.random.default_rng(0)
    v = sp.csr_array((rng.standard_normal(p.nnz), p.indices, p.indptr), shape=p.shape)
    h = sp.csr_array(v + v.T)
    c = color_acyclic(p)
    plan = DecompressionPlan(p, c)
    assert plan.longest_chain > 10
    b32 = compress(h, c).astype(np.float32)
    got = plan.values(b32)
    assert got.dtype == np.float32
    # error bound: the float32 rounding of the products, summed along the longest chain
    err = np.abs(got - plan.values(compress(h, c))).max()          # against float64 products
    assert err <= 4 * np.finfo(np.float32).eps * plan.longest_chain * np.abs(b32).max()


def test_products_from_jax_and_decompression_inside_jit():
    # the user computes the products with JAX (vmap over the seeds gives one product per row: transpose)
    def f(x):
        return jnp.concatenate([jnp.sum(x ** 2)[None], x[1:] * jnp.sin(x[:-1]) + x[0]])

    x = jnp.linspace(0.2, 1.1, 40)
    pat = jacobian_sparsity(f, x)
    c = color_bidirectional(pat)
    assert c.num_colors <= 4
    s_c, s_r = seed_matrix(c)
    y, vjp = jax.vjp(f, x)
    jvps = jax.vmap(lambda t: jax.jvp(f, (x,), (t,))[1])(jnp.asarray(s_c.T))   # (kc, m)
    vjps = jax.vmap(lambda w: vjp(w)[0])(jnp.asarray(s_r.T))                    # (kr, n)
    want = np.asarray(jax.jacfwd(f)(x))
    np.testing.assert_allclose(decompress((np.asarray(jvps).T, np.asarray(vjps)), pat, c).toarray(), want,
                               rtol=1e-13, atol=1e-13)
    plan = DecompressionPlan(pat, c)
    in_jit = jax.jit(lambda b, cc: plan.jax_values((b, cc)))(jvps.T, vjps)
    np.testing.assert_allclose(in_jit, plan.values((np.asarray(jvps).T, np.asarray(vjps))), rtol=1e-14)

    # Hessian-vector products and substitution, on the host and in jit
    def g(x):
        return jnp.sum(jnp.exp(0.2 * x[1:] * x[:-1])) + jnp.sum(x[2:] * x[:-2] ** 2)

    hp = hessian_sparsity(g, x)
    ca = color_acyclic(hp)
    s = jnp.asarray(seed_matrix(ca))
    hvps = jax.vmap(lambda t: jax.jvp(jax.grad(g), (x,), (t,))[1])(s.T).T       # (n, k)
    want = np.asarray(jax.hessian(g)(x))
    np.testing.assert_allclose(decompress(np.asarray(hvps), hp, ca).toarray(), want, atol=1e-13)
    plan = DecompressionPlan(hp, ca)
    np.testing.assert_allclose(jax.jit(plan.jax_values)(hvps), plan.values(np.asarray(hvps)), rtol=1e-13,
                               atol=1e-14)


def test_seed_matrices():
    c = color_columns(np.eye(3) + np.eye(3, k=1))
    np.testing.assert_array_equal(seed_matrix(c), c.seed_matrix())
    s = seed_matrix(c, sparse=True, dtype=np.float32)
    assert sp.issparse(s) and s.dtype == np.float32
    np.testing.assert_array_equal(s.toarray(), c.seed_matrix())
    assert seed_matrix(np.array([0, 1, 0]), kind="column").shape == (3, 2)
    s_c, s_r = seed_matrix((np.array([0, -1]), np.array([-1, 0, 1])), kind="bidirectional")
    assert s_c.tolist() == [[1.0], [0.0]] and s_r.shape == (3, 2) and s_r[0].sum() == 0


def test_bad_inputs():
    p = sp.csr_array(np.eye(4) + np.eye(4, k=1))
    c = color_columns(p)
    with pytest.raises(ValueError, match="must have shape"):
        decompress(np.zeros((4, 5)), p, c)
    with pytest.raises(ValueError, match="kind must be"):
        decompress(np.zeros((4, 2)), p, np.array([0, 1, 0, 1]))
    with pytest.raises(InvalidColoringError):
        decompress(np.zeros((4, 1)), p, np.zeros(4, int), kind="column")
    b = color_bidirectional(p)
    with pytest.raises(ValueError, match="pair"):
        decompress(np.zeros((4, 2)), p, b)
    with pytest.raises(InvalidColoringError, match="induce a cycle"):
        cyc = sp.csr_array(np.roll(np.eye(4), 1, axis=1) + np.eye(4))
        DecompressionPlan(cyc, np.array([0, 1, 0, 1]), kind="acyclic")
    assert "substitution" in repr(DecompressionPlan(p, color_acyclic(p)))
