"""Bidirectional coloring: JVPs and VJPs together.

Every produced coloring passes both the vectorized checker and a plain reference written here; random
colorings are judged the same by both.  Sparse Jacobians in ``mode="bidirectional"`` are compared with
``jax.jacfwd`` (float64) at random points; the arrowhead (n = 2,000) takes at most 4 products.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stablehlo_sparsity import InputError, jacobian_coloring, sparse_jacobian, value_and_sparse_jacobian
from stablehlo_sparsity.coloring import (Bicoloring, InvalidColoringError, check_coloring, color_bidirectional,
                                         color_columns, color_rows, lower_bound)
from stablehlo_sparsity.coloring.bicoloring import color_fewest_products, split_candidates

FAST = settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def patterns(draw):
    """Random patterns, some with dense rows and columns (where bidirectional coloring wins)."""
    m = draw(st.integers(0, 30))
    n = draw(st.integers(0, 30))
    density = draw(st.sampled_from([0.0, 0.05, 0.1, 0.3, 1.0]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    a = rng.random((m, n)) < density
    if m and n:
        for _ in range(draw(st.integers(0, 2))):
            a[rng.integers(m), :] = True
        for _ in range(draw(st.integers(0, 2))):
            a[:, rng.integers(n)] = True
        if m == n and draw(st.booleans()):
            np.fill_diagonal(a, True)
    return sp.csr_array(a)


def arrowhead(n):
    a = sp.lil_array((n, n), dtype=bool)
    a[0, :] = a[:, 0] = True
    a.setdiag(True)
    return sp.csr_array(a)


def reference_is_valid(p, column_colors, row_colors) -> bool:
    """Plain reference: every nonzero isolated by its column color in its row (among colored columns) or by
    its row color in its column (among colored rows)."""
    d = p.toarray() != 0
    for i, j in zip(*np.nonzero(d)):
        c = column_colors[j]
        fwd = c >= 0 and all(column_colors[jj] != c for jj in np.flatnonzero(d[i]) if jj != j)
        r = row_colors[i]
        rev = r >= 0 and all(row_colors[ii] != r for ii in np.flatnonzero(d[:, j]) if ii != i)
        if not (fwd or rev):
            return False
    return True


# ----------------------------------------------------------------------------------------------- validity
@FAST
@given(patterns(), st.sampled_from(["best", "natural", "dsatur", "smallest_last"]),
       st.sampled_from(["auto", "none"]))
def test_bidirectional_colorings_are_valid_and_never_worse(p, order, recolor):
    b = color_bidirectional(p, order=order, recolor=recolor)
    m, n = p.shape
    assert isinstance(b, Bicoloring) and b.kind == "bidirectional" and b.shape == (m, n)
    assert check_coloring(p, b)
    assert reference_is_valid(p, b.column_colors, b.row_colors)
    cc, rc = b.column_colors, b.row_colors
    assert cc.dtype == np.int32 and rc.dtype == np.int32 and len(cc) == n and len(rc) == m
    assert b.num_column_colors == len(np.unique(cc[cc >= 0])) and b.num_row_colors == len(np.unique(rc[rc >= 0]))
    assert b.num_colors == b.num_column_colors + b.num_row_colors
    assert b.num_colors <= min(color_columns(p, order=order, recolor=recolor).num_colors,
                               color_rows(p, order=order, recolor=recolor).num_colors)
    if p.nnz:
        assert 1 <= b.lower_bound <= b.num_colors
    else:
        assert b.num_colors == 0
    # the unified color space: columns then rows shifted by num_column_colors
    np.testing.assert_array_equal(b.colors, np.concatenate([cc, np.where(rc >= 0, rc + b.num_column_colors, -1)]))


@FAST
@given(patterns(), st.integers(0, 2**31 - 1))
def test_checker_agrees_with_the_reference_on_random_bicolorings(p, seed):
    rng = np.random.default_rng(seed)
    m, n = p.shape
    cc = rng.integers(-1, 3, n)
    rc = rng.integers(-1, 3, m)
    want = reference_is_valid(p, cc, rc)
    assert check_coloring(p, (cc, rc), "bidirectional") == want
    if not want:
        with pytest.raises(InvalidColoringError, match="isolated neither"):
            check_coloring(p, (cc, rc), "bidirectional", raise_on_error=True)


def test_hand_made_bicolorings():
    a = arrowhead(5)
    none = np.full(5, -1)
    # dense column 0 forward, the others in no seed; dense row 0 and the diagonal in reverse
    good = (np.array([0, -1, -1, -1, -1]), np.array([0, 1, 1, 1, 1]))
    assert check_coloring(a, good, "bidirectional")
    assert not check_coloring(a, (none, np.array([0, 1, 1, 1, 1])), "bidirectional")   # column 0 unread
    assert not check_coloring(a, (np.array([0, -1, -1, -1, -1]), np.array([0, 0, 1, 1, 1])), "bidirectional")
    assert not check_coloring(a, (np.zeros(5, int), none), "bidirectional")              # row 0: 5 of color 0
    with pytest.raises(InvalidColoringError, match="column colors"):
        check_coloring(a, (np.zeros(4, int), none), "bidirectional")
    with pytest.raises(InvalidColoringError, match=">= -1"):
        check_coloring(a, (np.full(5, -2), none), "bidirectional")
    with pytest.raises(InvalidColoringError, match="pair"):
        check_coloring(a, np.zeros(5, int), "bidirectional")
    b = Bicoloring.from_sides(*good, (5, 5))
    assert b.num_colors == 3 and b.mode == "bidirectional" and "1 JVPs" in repr(b)
    s_c, s_r = b.seed_matrix()
    assert s_c.shape == (5, 1) and s_r.shape == (5, 2) and s_c.sum() == 1 and s_r.sum() == 5


# ----------------------------------------------------------------------------------------------- counts
def test_arrowhead_2000_takes_at_most_4_products():
    p = arrowhead(2000)
    assert color_columns(p).num_colors == color_rows(p).num_colors == 2000
    b = color_bidirectional(p)
    assert b.num_colors <= 4 and check_coloring(p, b), b
    assert b.num_colors == 3  # 1 JVP (dense column) + 2 VJPs (dense row; the diagonal)
    assert lower_bound(p, "bidirectional") == 2


def test_bordered_block_diagonal():
    # 50 dense 4×4 blocks bordered by 2 dense rows and 2 dense columns (a KKT-like matrix)
    a = sp.lil_array(sp.block_diag([np.ones((4, 4))] * 50).astype(bool))
    a[:2, :] = True
    a[:, :2] = True
    a = sp.csr_array(a)
    b = color_bidirectional(a)
    assert check_coloring(a, b) and b.num_colors <= 8 < color_columns(a).num_colors


def test_fewest_products():
    tri = sp.csr_array(sp.diags_array([np.ones(50)] * 3, offsets=[-1, 0, 1], shape=(50, 50), dtype=bool))
    c = color_fewest_products(tri)
    assert c.kind == "column" and c.num_colors == 3                             # ties go forward
    dense_row = sp.lil_array(tri)
    dense_row[-1, :] = True                                                     # forward 50, reverse 4
    assert color_fewest_products(sp.csr_array(dense_row)).kind == "row"
    # an arrowhead: the splits are colored first, and the one-direction colorings (n colors, quadratic
    # work) are skipped: their lower bounds (n) already lose
    out = color_fewest_products(arrowhead(100_000))
    assert isinstance(out, Bicoloring) and out.num_colors == 3
    assert "forward" not in out.tried and "reverse" not in out.tried
    names = [name for name, _ in split_candidates(arrowhead(100))]
    assert names[:2] == ["denser-side/tie-reverse", "denser-side/tie-forward"]
    assert color_bidirectional(sp.csr_array((3, 4), dtype=bool)).num_colors == 0


# ----------------------------------------------------------------------------------------------- Jacobians
def arrow_fn(x):
    return jnp.concatenate([jnp.sum(jnp.sin(x) * x[::-1])[None], jnp.cos(x[1:]) * x[0] + x[1:] ** 3])


def test_sparse_jacobian_bidirectional_arrowhead_2000():
    n = 2000
    rng = np.random.default_rng(0)
    jac = sparse_jacobian(arrow_fn, jnp.ones(n), output="dense")                 # auto chooses it
    assert jac.mode == "bidirectional" and jac.num_colors <= 4, jac
    assert "JVP" in repr(jac) and "VJPs" in repr(jac)
    both = jax.jit(lambda x: (jac(x), jax.jacfwd(arrow_fn)(x)))
    for _ in range(2):
        got, want = both(jnp.asarray(rng.uniform(-1, 1, n)))
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


@pytest.mark.parametrize("constant_seeds", [True, False])
def test_bidirectional_with_pytrees_aux_and_values(constant_seeds):
    # two input leaves, two output leaves, a dense row (the sum) and a dense column (the scalar p)
    def f(d):
        x, p = d["x"], d["p"]
        return (jnp.sum(x ** 2 * p)[None], x[1:] * x[:-1] + p * jnp.sin(x[1:])), jnp.sum(x)

    args = {"x": jnp.linspace(0.1, 1.0, 12), "p": jnp.asarray(0.7)}
    vj = value_and_sparse_jacobian(f, args, mode="bidirectional", has_aux=True, output="dense",
                                   constant_seeds=constant_seeds)
    assert vj.mode == "bidirectional"
    (y, aux), jd = vj(args)
    jref = jax.jacfwd(lambda d: f(d)[0])(args)
    flat = np.concatenate([np.concatenate([np.asarray(jref[o]["x"]).reshape(-1, 12),
                                           np.asarray(jref[o]["p"]).reshape(-1, 1)], axis=1) for o in (0, 1)])
    # columns are the flattened leaves in tree order: "p" (scalar) before "x"
    np.testing.assert_allclose(jd, np.concatenate([flat[:, 12:], flat[:, :12]], axis=1), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(aux, jnp.sum(args["x"]))
    np.testing.assert_allclose(y[1], f(args)[0][1])


def test_modes_and_given_bicolorings():
    x = jnp.linspace(0.5, 1.5, 30)
    c = jacobian_coloring(arrow_fn, x, mode="bidirectional")
    assert isinstance(c, Bicoloring) and c.num_colors == 3
    jac = sparse_jacobian(arrow_fn, x, coloring=c, output="bcoo")
    np.testing.assert_allclose(jac(x).todense(), jax.jacfwd(arrow_fn)(x), rtol=1e-13, atol=1e-13)
    # forced direction when bidirectional cannot win: a bidirectional request still works (JVPs only)
    tri = sparse_jacobian(lambda v: v[1:] * v[:-1], x, mode="bidirectional", output="dense")
    assert tri.mode == "bidirectional" and tri.coloring.num_row_colors == 0
    np.testing.assert_allclose(tri(x), jax.jacfwd(lambda v: v[1:] * v[:-1])(x))
    assert sparse_jacobian(lambda v: v[1:] * v[:-1], x).mode == "forward"          # auto stays forward
    bad = Bicoloring.from_sides(np.zeros(30, int), np.full(30, -1), (30, 30))
    with pytest.raises(InvalidColoringError):
        sparse_jacobian(arrow_fn, x, coloring=bad)
    with pytest.raises(InputError, match="coloring is for"):
        sparse_jacobian(arrow_fn, x, coloring=Bicoloring.from_sides(np.zeros(3, int), np.zeros(3, int), (3, 3)))
