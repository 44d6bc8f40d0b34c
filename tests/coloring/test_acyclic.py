"""Acyclic coloring and Hessians by substitution.

Validity is checked three ways: the vectorized checker (``check_coloring(kind="acyclic")``), the forest the
substitution walks, and a plain reference written here (union–find per color pair).  Substitution is
compared with ``jax.hessian`` at random points, float64 and float32, inside the compiled program.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stablehlo_sparsity import InputError, hessian_coloring, sparse_hessian, value_and_sparse_hessian
from stablehlo_sparsity.coloring import (ORDERS, InvalidColoringError, check_coloring, color_acyclic, color_star,
                                         lower_bound, symmetrize)
from stablehlo_sparsity.coloring.acyclic import two_colored_forest
from stablehlo_sparsity.coloring.graph import adjacency

FAST = settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def band(n, offsets):
    return sp.csr_array(sp.diags_array([np.ones(n)] * len(offsets), offsets=offsets, shape=(n, n), dtype=bool))


def grid(nx, ny, nine=False):
    t = lambda k: band(k, [-1, 0, 1])  # noqa: E731
    if nine:
        return sp.csr_array(sp.kron(t(nx), t(ny)), dtype=bool)
    return sp.csr_array(sp.kron(t(nx), sp.identity(ny)) + sp.kron(sp.identity(nx), t(ny)), dtype=bool)


@st.composite
def symmetric_patterns(draw):
    n = draw(st.integers(0, 30))
    density = draw(st.sampled_from([0.0, 0.05, 0.1, 0.2, 0.5, 1.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    a = rng.random((n, n)) < density
    if draw(st.booleans()):
        np.fill_diagonal(a, True)
    return symmetrize(sp.csr_array(a))


def reference_is_acyclic(p, colors) -> bool:
    """Plain reference: proper, and for every color pair the induced edges form a forest (union–find)."""
    sym = symmetrize(p).tocoo()
    edges = [(int(i), int(j)) for i, j in zip(sym.row, sym.col) if i < j]
    if any(colors[i] == colors[j] for i, j in edges):
        return False
    parent = {}

    def find(x):
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for i, j in edges:
        pair = (min(colors[i], colors[j]), max(colors[i], colors[j]))
        a, b = find((pair, i)), find((pair, j))
        if a == b:
            return False  # this edge closes a two-colored cycle
        parent[a] = b
    return True


# ----------------------------------------------------------------------------------------------- validity
@FAST
@given(symmetric_patterns(), st.sampled_from(("best",) + ORDERS), st.sampled_from(["auto", "none"]))
def test_acyclic_colorings_are_valid_and_never_worse_than_star(p, order, recolor):
    c = color_acyclic(p, order=order, recolor=recolor)
    assert c.kind == "acyclic" and c.colors.dtype == np.int32 and len(c.colors) == p.shape[0]
    assert check_coloring(p, c)
    assert reference_is_acyclic(p, c.colors)
    g = adjacency(p)
    assert two_colored_forest(g.nv, g.ptr, g.nbr, c.colors) is not None
    if p.nnz:
        assert c.lower_bound <= c.num_colors == int(c.colors.max()) + 1
        assert c.num_colors <= color_star(p, order=order, recolor=recolor).num_colors
    else:
        assert c.num_colors == 0


@FAST
@given(symmetric_patterns(), st.integers(1, 5), st.integers(0, 2**31 - 1))
def test_acyclic_checker_agrees_with_the_reference_on_random_colorings(p, k, seed):
    # random colorings with few colors are mostly invalid: both checkers must say the same every time
    colors = np.random.default_rng(seed).integers(0, k, p.shape[0])
    want = reference_is_acyclic(p, colors)
    assert check_coloring(p, colors, "acyclic") == want
    g = adjacency(p)
    assert (two_colored_forest(g.nv, g.ptr, g.nbr, colors) is not None) == want
    if not want:
        with pytest.raises(InvalidColoringError, match="acyclic coloring"):
            check_coloring(p, colors, "acyclic", raise_on_error=True)


def test_hand_made_acyclic_and_not():
    path = band(4, [-1, 0, 1])                                   # 0-1-2-3
    assert check_coloring(path, np.array([0, 1, 0, 1]), "acyclic")  # a path is a tree: 2 colors suffice …
    assert not check_coloring(path, np.array([0, 1, 0, 1]), "star")  # … but not for direct recovery
    cycle = sp.lil_array(band(4, [-1, 0, 1]))
    cycle[0, 3] = cycle[3, 0] = True                             # C4
    with pytest.raises(InvalidColoringError, match="induce a cycle"):
        check_coloring(sp.csr_array(cycle), np.array([0, 1, 0, 1]), "acyclic", raise_on_error=True)
    with pytest.raises(InvalidColoringError, match="share color"):
        check_coloring(path, np.array([0, 0, 1, 2]), "acyclic", raise_on_error=True)
    assert check_coloring(sp.csr_array(cycle), np.array([0, 1, 0, 2]), "acyclic")


# ----------------------------------------------------------------------------------------------- counts
@pytest.mark.parametrize("w", [1, 2, 3, 4])
def test_banded_hessians_take_half_bandwidth_plus_one(w):
    # a band of half-width w holds cliques of w + 1 variables, and w + 1 colors are reached
    p = band(500, list(range(-w, w + 1)))
    a, s = color_acyclic(p), color_star(p)
    assert a.num_colors == w + 1 < s.num_colors, (a, s)


def test_grids_and_counts():
    assert color_acyclic(grid(40, 40)).num_colors < color_star(grid(40, 40)).num_colors
    assert color_acyclic(grid(30, 30, nine=True)).num_colors < color_star(grid(30, 30, nine=True)).num_colors
    star = sp.lil_array((6, 6), dtype=bool)
    star[0, :] = star[:, 0] = True
    assert color_acyclic(star).num_colors == 2 == lower_bound(star, "acyclic")   # a tree
    assert lower_bound(band(5, [-1, 0, 1]), "acyclic") == 2                      # a path is a tree
    assert lower_bound(np.ones((3, 3)), "acyclic") == 3                          # a triangle
    assert lower_bound(sp.identity(3, format="csr"), "acyclic") == 1
    assert color_acyclic(sp.csr_array((4, 4), dtype=bool)).num_colors == 0
    assert "acyclic" in repr(color_acyclic(band(5, [-1, 0, 1])))


# ----------------------------------------------------------------------------------------------- substitution
def banded_energy(x):
    return jnp.sum(jnp.sin(x[2:] * x[:-2])) + jnp.sum(x[1:] ** 2 * x[:-1]) + jnp.sum(x ** 4)


def grid_energy(x):
    u = x.reshape(12, 10)
    return (jnp.sum((u[1:] - u[:-1]) ** 2 * u[1:]) + jnp.sum(jnp.cos(u[:, 1:] * u[:, :-1])) + jnp.sum(u ** 3)
            + jnp.sum(u[1:, 1:] * u[:-1, :-1]))


def tridiagonal_chain(x):
    return jnp.sum(jnp.exp(0.3 * x[1:] * x[:-1])) + jnp.sum(jnp.cosh(x))


@pytest.mark.parametrize("dtype,tol", [(jnp.float64, 1e-12), (jnp.float32, 2e-5)])
@pytest.mark.parametrize("f,n", [(banded_energy, 200), (grid_energy, 120), (tridiagonal_chain, 300)])
def test_substitution_matches_jax_hessian(f, n, dtype, tol):
    hs = sparse_hessian(f, jnp.ones(n, dtype), mode="substitution", output="dense")
    hd = sparse_hessian(f, jnp.ones(n, dtype), mode="direct", output="values")
    assert hs.mode == "substitution" and hs.coloring.kind == "acyclic"
    assert hs.num_colors < hd.num_colors and hs.longest_chain > 1 and hd.longest_chain == 1
    both = jax.jit(lambda x: (hs(x), jax.hessian(f)(x)))
    rng = np.random.default_rng(0)
    for _ in range(3):
        x = jnp.asarray(rng.uniform(-1, 1, n), dtype)
        got, want = both(x)
        assert got.dtype == dtype
        scale = float(jnp.max(jnp.abs(want)))
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=tol * scale)


def test_substitution_modes_and_containers():
    x = jnp.linspace(-1.0, 1.0, 60)
    auto = sparse_hessian(tridiagonal_chain, x, mode="auto")
    assert auto.mode == "substitution" and auto.num_colors == 2
    assert "by substitution" in repr(auto)
    assert hessian_coloring(tridiagonal_chain, x).num_colors == 3               # the default stays direct (star)
    # auto keeps star coloring when substitution saves nothing (a diagonal Hessian: one color either way)
    assert hessian_coloring(lambda v: jnp.sum(v ** 3), x, mode="auto").kind == "star"
    # … and when the chains are too long for the dtype: a path of 7,000 has a chain of 3,500 > 1/√eps(f32)
    assert hessian_coloring(tridiagonal_chain, jnp.ones(7000, jnp.float32), mode="auto").kind == "star"
    assert hessian_coloring(tridiagonal_chain, jnp.ones(7000, jnp.float64), mode="auto").kind == "acyclic"
    np.testing.assert_allclose(auto(x).todense(), jax.hessian(tridiagonal_chain)(x), atol=1e-12)
    # value and Hessian, under vmap: one Hessian per point
    xs = jnp.stack([x, 0.5 * x])
    vals, hs = jax.vmap(value_and_sparse_hessian(tridiagonal_chain, x, mode="substitution", output="dense"))(xs)
    np.testing.assert_allclose(vals[1], tridiagonal_chain(0.5 * x))
    np.testing.assert_allclose(hs[1], jax.hessian(tridiagonal_chain)(0.5 * x), atol=1e-12)
    assert hessian_coloring(tridiagonal_chain, x, mode="substitution").num_colors == 2


def test_given_colorings_and_bad_modes():
    x = jnp.ones(20)
    star = hessian_coloring(tridiagonal_chain, x)
    # a star coloring is acyclic: substitution accepts it
    h = sparse_hessian(tridiagonal_chain, x, mode="substitution", coloring=star, output="dense")
    np.testing.assert_allclose(h(x + 0.1), jax.hessian(tridiagonal_chain)(x + 0.1), atol=1e-12)
    acyclic = hessian_coloring(tridiagonal_chain, x, mode="substitution")
    with pytest.raises(InputError, match="star Coloring"):
        sparse_hessian(tridiagonal_chain, x, coloring=acyclic)                   # direct needs a star coloring
    with pytest.raises(InputError, match="mode must be"):
        sparse_hessian(tridiagonal_chain, x, mode="indirect")
    bad = type(acyclic)(np.zeros(20, np.int32), 1, "acyclic", (20, 20))
    with pytest.raises(InvalidColoringError):
        sparse_hessian(tridiagonal_chain, x, mode="substitution", coloring=bad)
