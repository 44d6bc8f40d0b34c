"""Coloring: validity on random patterns (hypothesis), lower bounds on stencils, star decompression, peers.

Color counts are asserted exactly where the optimum is known (1-D and 2-D stencils reach the lower bound,
the largest number of nonzeros in one row); elsewhere against asdex's greedy (never worse) and the issue's
Brusselator target (≤ 8, bound 6).
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stablehlo_sparsity.coloring import (METHODS, ORDERS, Coloring, InvalidColoringError, check_coloring,
                                         color_columns, color_rows, color_star, lower_bound, star_sources,
                                         symmetrize)
from stablehlo_sparsity.coloring.graph import adjacency, bipartite
from stablehlo_sparsity.coloring.orderings import order_vertices
from helpers import peer


# ----------------------------------------------------------------------------------------------- patterns
def band(n, offsets, m=None):
    m = n if m is None else m
    offsets = [o for o in offsets if -m < o < n]
    return sp.csr_array(sp.diags_array([np.ones(n)] * len(offsets), offsets=offsets, shape=(m, n), dtype=bool))


def tri(n):
    return band(n, [-1, 0, 1])


def grid(nx, ny, nine=False, periodic=False):
    def t(k):
        a = sp.lil_array(band(k, [-1, 0, 1]))
        if periodic:
            a[0, k - 1] = a[k - 1, 0] = True
        return sp.csr_array(a)
    if nine:
        return sp.csr_array(sp.kron(t(nx), t(ny)), dtype=bool)
    return sp.csr_array(sp.kron(t(nx), sp.identity(ny)) + sp.kron(sp.identity(nx), t(ny)), dtype=bool)


def brusselator_pattern(N):
    """The 2-D periodic Brusselator Jacobian: two species, periodic 5-point Laplacian each, coupled pointwise."""
    L = grid(N, N, periodic=True).astype(np.int8)
    I = sp.identity(N * N, dtype=np.int8)
    return sp.csr_array(sp.block_array([[L, I], [I, L]]), dtype=bool)


@st.composite
def patterns(draw, square=False):
    m = draw(st.integers(0, 30))
    n = m if square else draw(st.integers(0, 30))
    density = draw(st.sampled_from([0.0, 0.05, 0.15, 0.4, 1.0]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    a = rng.random((m, n)) < density
    if square and draw(st.booleans()):
        np.fill_diagonal(a, True)
    return sp.csr_array(a)


FAST = settings(max_examples=120, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])


# ----------------------------------------------------------------------------------------------- validity
@FAST
@given(patterns(), st.sampled_from(("best",) + METHODS), st.sampled_from(["auto", "none", "iterated", "tabu"]))
def test_column_and_row_colorings_are_valid(p, order, recolor):
    for fn, kind, nv in ((color_columns, "column", p.shape[1]), (color_rows, "row", p.shape[0])):
        c = fn(p, order=order, recolor=recolor)
        assert c.kind == kind and len(c.colors) == nv and c.colors.dtype == np.int32
        assert check_coloring(p, c)
        if p.nnz:
            assert c.num_colors == int(c.colors.max()) + 1
            assert c.lower_bound <= c.num_colors <= nv
        else:
            assert c.num_colors == 0


@FAST
@given(patterns(square=True), st.sampled_from(("best",) + ORDERS), st.sampled_from(["auto", "none"]))
def test_star_colorings_are_valid_and_decompress(p, order, recolor):
    c = color_star(p, order=order, recolor=recolor)
    assert check_coloring(p, c)
    sym = symmetrize(p)
    if sym.nnz == 0:
        assert c.num_colors == 0
        return
    # A random symmetric matrix on the pattern, compressed by HVP-like products B = H S, is recovered exactly.
    rng = np.random.default_rng(0)
    a = sp.csr_array((rng.standard_normal(sym.nnz), sym.indices, sym.indptr), shape=sym.shape)
    h = sp.csr_array(a + a.T)
    b = h @ c.seed_matrix()
    src = star_sources(p, c)
    assert (src >= 0).all()
    rows = np.repeat(np.arange(sym.shape[0]), np.diff(sym.indptr))
    want = h.toarray()[rows, sym.indices]
    np.testing.assert_allclose(b.ravel()[src], want, rtol=0, atol=1e-12)


@FAST
@given(patterns(square=True), st.booleans())
def test_symmetrize_is_the_union_with_the_transpose(p, make_symmetric):
    """Both branches (a pattern symmetric already comes back as it is, any other as the sum): canonical bool
    CSR equal to the dense union."""
    if make_symmetric:
        p = sp.csr_array((p + p.T).astype(bool))
    dense = p.toarray().astype(bool)
    sym = symmetrize(p)
    assert sym.dtype == bool and sym.has_canonical_format
    np.testing.assert_array_equal(sym.toarray(), dense | dense.T)


@FAST
@given(patterns(), st.sampled_from(["column", "row"]))
def test_invalid_colorings_are_rejected(p, kind):
    nv = p.shape[1] if kind == "column" else p.shape[0]
    other = p if kind == "column" else sp.csr_array(p.T)
    counts = np.diff(other.indptr)
    c = (color_columns if kind == "column" else color_rows)(p)
    assert check_coloring(p, c.colors, kind)
    if counts.max(initial=0) >= 2:
        # one color for everything conflicts inside the fullest row (column)
        assert not check_coloring(p, np.zeros(nv, np.int32), kind)
        with pytest.raises(InvalidColoringError):
            check_coloring(p, np.zeros(nv, np.int32), kind, raise_on_error=True)


def test_star_check_rejects_a_bicolored_path():
    p = band(4, [-1, 0, 1])                     # path 0-1-2-3
    assert check_coloring(p, np.array([0, 1, 2, 0]), "star")
    assert not check_coloring(p, np.array([0, 1, 0, 1]), "star")   # P4 with two colors
    assert not check_coloring(p, np.array([0, 0, 1, 2]), "star")   # adjacent equal colors
    with pytest.raises(InvalidColoringError, match="not directly recoverable"):
        check_coloring(p, np.array([0, 1, 0, 1]), "star", raise_on_error=True)


@pytest.mark.parametrize("order", ORDERS)
def test_orderings_are_permutations(order):
    p = sp.csr_array(np.random.default_rng(1).random((40, 30)) < 0.1)
    for g in (bipartite(p, "column"), bipartite(p, "row"), adjacency(sp.csr_array(p[:30, :30]))):
        o = order_vertices(g, order, seed=3)
        assert sorted(o.tolist()) == list(range(g.nv))


@FAST
@given(patterns(square=True))
def test_smallest_last_order_respects_the_degeneracy(p):
    # Matula & Beck: in smallest-last order each vertex has at most `degeneracy` neighbours before it, where
    # the degeneracy is the largest minimum degree met while peeling minimum-degree vertices.
    g = adjacency(p)
    order = order_vertices(g, "smallest_last")
    pos = np.empty(g.nv, np.int64)
    pos[order] = np.arange(g.nv)
    nbrs = [g.nbr[g.ptr[v]:g.ptr[v + 1]] for v in range(g.nv)]
    earlier = [int((pos[nb] < pos[v]).sum()) for v, nb in enumerate(nbrs)]
    # the degeneracy, by peeling
    deg = np.diff(g.ptr).astype(int)
    alive = np.ones(g.nv, bool)
    degeneracy = 0
    for _ in range(g.nv):
        v = int(np.argmin(np.where(alive, deg, np.iinfo(int).max)))
        degeneracy = max(degeneracy, int(deg[v]))
        alive[v] = False
        deg[nbrs[v]] -= 1
    assert max(earlier, default=0) <= degeneracy


def test_largest_first_puts_the_hub_first():
    arrow = sp.lil_array((6, 6), dtype=bool)
    arrow[3, :] = arrow[:, 3] = True
    g = adjacency(sp.csr_array(arrow))
    assert order_vertices(g, "largest_first")[0] == 3
    assert order_vertices(g, "dynamic_largest_first")[0] == 3


# ----------------------------------------------------------------------------------------------- counts
def test_docstring_example():
    c = color_columns(tri(6))
    assert c.num_colors == 3 and c.colors.tolist() == [0, 1, 2, 0, 1, 2]
    assert "3 colors" in repr(c)


@pytest.mark.parametrize("offsets", [[0], [-1, 0, 1], [-2, -1, 0, 1, 2], [0, 1, 2], [-3, -2, -1, 0, 1, 2, 3]])
@pytest.mark.parametrize("n", [1, 7, 50, 1001])
def test_1d_stencils_reach_the_lower_bound(offsets, n):
    p = band(n, offsets)
    for fn, kind in ((color_columns, "column"), (color_rows, "row")):
        c = fn(p)
        assert c.num_colors == lower_bound(p, kind), (c, c.tried)


@pytest.mark.parametrize("shape", [(2, 2), (5, 5), (13, 7), (40, 41), (64, 64), (100, 37)])
@pytest.mark.parametrize("nine", [False, True])
def test_2d_stencils_reach_the_lower_bound(shape, nine):
    p = grid(*shape, nine=nine)
    c = color_columns(p)
    assert check_coloring(p, c)
    assert c.num_colors == c.lower_bound == lower_bound(p), (c, c.tried)


@pytest.mark.parametrize("n", [5, 10, 40])
def test_periodic_5_point_stencil_reaches_the_bound_when_n_is_a_multiple_of_5(n):
    c = color_columns(grid(n, n, periodic=True))
    assert c.num_colors == 5, c.tried


def test_brusselator_64_takes_at_most_8_colors_quickly():
    p = brusselator_pattern(64)
    assert p.shape == (8192, 8192) and lower_bound(p) == 6
    color_columns(brusselator_pattern(8))  # warm-up (numba cache load)
    t0 = time.process_time()
    c = color_columns(p)
    elapsed = time.process_time() - t0
    assert check_coloring(p, c)
    assert c.num_colors <= 8, (c, c.tried)
    assert min(c.tried.values()) >= c.num_colors
    assert elapsed < 3.0  # ~0.1 s on an idle core; generous for loaded CI machines


def test_stencil_with_a_million_columns():
    p = grid(1000, 1000)
    color_columns(grid(10, 10))  # warm-up
    t0 = time.process_time()
    c = color_columns(p)
    elapsed = time.process_time() - t0
    assert c.num_colors == 5
    assert elapsed < 3.0  # ~0.3 s on an idle core


def test_star_coloring_counts():
    assert color_star(sp.identity(6, format="csr")).num_colors == 1
    assert color_star(tri(50)).num_colors == 3                      # a path needs 3 (a P4 needs 3)
    arrow = sp.lil_array((8, 8), dtype=bool)
    arrow[0, :] = arrow[:, 0] = True
    arrow.setdiag(True)
    assert color_star(arrow).num_colors == 2                        # a star: hub + leaves
    g = grid(12, 12)
    c = color_star(g)
    assert check_coloring(g, c) and c.num_colors <= 6
    # lower bounds: no edge 1, a star forest 2, anything with a path on four vertices 3
    assert lower_bound(sp.identity(4, format="csr"), "star") == 1
    assert lower_bound(arrow, "star") == 2
    assert lower_bound(band(3, [-1, 0, 1]), "star") == 2          # P3 is a star
    assert lower_bound(band(4, [-1, 0, 1]), "star") == 3
    assert lower_bound(np.ones((3, 3)), "star") == 3               # a triangle


def test_empty_and_degenerate_patterns():
    for p in (sp.csr_array((0, 0), dtype=bool), sp.csr_array((3, 0), dtype=bool), sp.csr_array((0, 4), dtype=bool),
              sp.csr_array((3, 4), dtype=bool)):
        assert color_columns(p).num_colors == 0
        assert color_rows(p).num_colors == 0
    assert color_star(sp.csr_array((5, 5), dtype=bool)).num_colors == 0
    full = sp.csr_array(np.ones((4, 6), bool))
    assert color_columns(full).num_colors == 6 and color_rows(full).num_colors == 4
    assert color_columns(np.eye(3)).num_colors == 1                  # dense arrays are accepted


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown order"):
        color_columns(tri(4), order="bogus")
    with pytest.raises(ValueError, match="recolor"):
        color_columns(tri(4), recolor="bogus")
    with pytest.raises(ValueError, match="unknown order"):
        color_star(tri(4), order="dsatur")
    with pytest.raises(ValueError, match="square"):
        color_star(sp.csr_array(np.ones((2, 3), bool)))
    with pytest.raises(InvalidColoringError, match="expected 4 colors"):
        check_coloring(tri(4), np.zeros(3, np.int32))


def test_coloring_object_helpers():
    c = color_columns(tri(5))
    groups = c.groups()
    assert sorted(np.concatenate(groups).tolist()) == list(range(5))
    s = c.seed_matrix()
    assert s.shape == (5, 3) and (s.sum(axis=1) == 1).all()
    b = tri(5).astype(float) @ s
    assert (b != 0).sum() == tri(5).nnz  # every nonzero lands in its own slot
    assert isinstance(c, Coloring)


# ----------------------------------------------------------------------------------------------- peers
def _asdex_counts(p):
    asdex = peer()
    r, c = p.nonzero()
    sp_ = asdex.SparsityPattern.from_coo(r.astype(np.int32), c.astype(np.int32), p.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        star = asdex.color_symmetric(sp_)[1] if p.shape[0] == p.shape[1] else None
        return asdex.color_cols(sp_)[1], asdex.color_rows(sp_)[1], star


@pytest.mark.peer
@pytest.mark.parametrize("name,p", [
    ("tridiagonal", tri(200)),
    ("2-D 5-point", grid(30, 30)),
    ("2-D 9-point", grid(20, 20, nine=True)),
    ("Brusselator N=16", brusselator_pattern(16)),
    ("random 5%", sp.csr_array(np.random.default_rng(0).random((150, 150)) < 0.05)),
    ("random 20%", sp.csr_array(np.random.default_rng(1).random((60, 80)) < 0.2)),
    ("irregular band", band(300, [-3, 0, 2])),
    ("irregular band 2", band(300, [0, 1, 5, 9])),
])
def test_never_more_colors_than_asdex(name, p):
    a_cols, a_rows, a_star = _asdex_counts(p)
    assert color_columns(p).num_colors <= a_cols
    assert color_rows(p).num_colors <= a_rows
    if p.shape[0] == p.shape[1]:
        sym = symmetrize(p)
        a_star = _asdex_counts(sym)[2]
        assert color_star(sym).num_colors <= a_star
