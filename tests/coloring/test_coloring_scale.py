"""Coloring at scale: the region tabu search that removes classes (coloring/recolor.py), the work budget
(``effort``), ``time_limit``, progress reports, and the shortcuts of ``color_fewest_products``.

Every coloring is checked for validity; the improvement phases must never return more colors than the greedy
pass they start from.  Timings are measured by ``benchmarks/coloring.py`` and ``benchmarks/scale.py``, not
asserted here.
"""

import logging

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

from stablehlo_sparsity.coloring import (Bicoloring, check_coloring, color_acyclic, color_bidirectional,
                                         color_columns, color_rows, color_star)
from stablehlo_sparsity.coloring.bicoloring import color_fewest_products
from stablehlo_sparsity.coloring.graph import bipartite
from stablehlo_sparsity.coloring.greedy import dsatur, greedy_color
from stablehlo_sparsity.coloring.recolor import reduce_colors
from test_coloring import brusselator_pattern, grid


@st.composite
def patterns(draw):
    m = draw(st.integers(1, 40))
    n = draw(st.integers(1, 40))
    density = draw(st.sampled_from([0.05, 0.1, 0.2, 0.4]))
    seed = draw(st.integers(0, 2**31 - 1))
    rng = np.random.default_rng(seed)
    return sp.csr_array(rng.random((m, n)) < density)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(), st.sampled_from(["natural", "random", "largest_first"]), st.integers(0, 3),
       st.sampled_from([0, 1e3, 1e5, 1e7]), st.sampled_from([None, 5, 200]))
def test_reduce_colors_returns_a_proper_coloring_never_worse(p, order, seed, budget, moves):
    g = bipartite(p, "column")
    from stablehlo_sparsity.coloring.orderings import order_vertices

    colors, k = greedy_color(g.nv, g.ptr, g.nbr, g.optr, g.onbr, True, order_vertices(g, order, seed=seed))
    lb = g.lower_bound
    got, k2, spent = reduce_colors(g.nv, g.ptr, g.nbr, g.optr, g.onbr, True, colors, k, lb, budget, moves,
                                   seed=seed)
    assert lb <= k2 <= k and spent >= 0
    assert got.min() >= 0 and got.max() < max(k2, 1) or g.nv == 0
    assert check_coloring(p, got, "column")
    if budget == 0:
        assert k2 == k and np.array_equal(got, colors)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patterns(), st.sampled_from([0.0, 0.01, 1.0]), st.sampled_from(["auto", "tabu", "iterated", "none"]))
def test_effort_never_loses_to_the_greedy_result(p, effort, recolor):
    for fn, kind in ((color_columns, "column"), (color_rows, "row")):
        c = fn(p, effort=effort, recolor=recolor)
        assert check_coloring(p, c, kind)
        assert c.num_colors <= min(c.tried.values(), default=0)


def test_effort_zero_is_the_greedy_result():
    p = brusselator_pattern(32)
    g = bipartite(p, "column")
    _, k = dsatur(g.nv, g.ptr, g.nbr, g.optr, g.onbr, True)
    c0 = color_columns(p, order="dsatur", effort=0)
    assert c0.num_colors == k and c0.order == "dsatur"
    c1 = color_columns(p, order="dsatur")
    assert c1.num_colors < k and "+tabu" in c1.order and check_coloring(p, c1)
    # a deadline already passed: no improvement step starts
    assert color_columns(p, order="dsatur", time_limit=0).num_colors == k
    with pytest.raises(ValueError, match="effort"):
        color_columns(p, effort=-1)


def test_same_seed_same_coloring():
    p = brusselator_pattern(48)
    a, b = color_columns(p, seed=3), color_columns(p, seed=3)
    assert np.array_equal(a.colors, b.colors) and a.order == b.order


def test_brusselator_512_takes_at_most_8_colors():
    """The issue's target: the 2-D Brusselator at N = 512 (524,288 columns) with at most 8 colors (bound 6;
    DSATUR alone: 10)."""
    p = brusselator_pattern(512)
    c = color_fewest_products(p)
    assert c.kind == "column" and c.num_colors <= 8, c
    assert check_coloring(p, c)


def test_a_million_column_stencil_reaches_the_bound():
    p = grid(1000, 1000, nine=True)
    c = color_columns(p)
    assert c.num_colors == c.lower_bound == 9 and check_coloring(p, c)


def test_progress_is_reported(caplog, capsys):
    p = brusselator_pattern(32)
    lines = []
    with caplog.at_level(logging.INFO, logger="stablehlo_sparsity.coloring"):
        c = color_columns(p, order="dsatur", progress=lines.append)
    assert any("tabu:" in line for line in lines), lines
    assert lines[-1].startswith("coloring columns: ")
    assert [r.getMessage() for r in caplog.records if r.name == "stablehlo_sparsity.coloring"] == lines
    color_columns(p, order="dsatur", progress=True)
    err = capsys.readouterr().err
    assert "coloring columns: tabu:" in err and f"{c.num_colors} colors" in err
    color_star(grid(20, 20, nine=True), progress=lines.append, effort=0.5)


def test_symmetric_patterns_are_colored_in_one_direction_only():
    """A structurally symmetric pattern's row coloring is its column coloring: not computed again."""
    sym = brusselator_pattern(16)
    b = color_bidirectional(sym)
    assert "forward" in b.tried and "reverse" not in b.tried
    asym = sym.tolil()
    asym[0, 1] = False  # (1, 0) stays: no longer symmetric, the reverse coloring may differ
    asym = sp.csr_array(asym)
    b = color_bidirectional(asym)
    assert "reverse" in b.tried and check_coloring(asym, b)
    assert isinstance(b, Bicoloring)


def test_star_and_acyclic_accept_effort():
    p = grid(30, 30, nine=True)
    for fn in (color_star, color_acyclic):
        c0 = fn(p, effort=0)
        c1 = fn(p)
        kind = "star" if fn is color_star else "acyclic"
        assert check_coloring(p, c0, kind) and check_coloring(p, c1, kind)
        assert c1.num_colors <= c0.num_colors and "+iterated" not in c0.order


@settings(max_examples=80, deadline=None)
@given(patterns(), st.integers(1, 70), st.integers(0, 2**31 - 1))
def test_fast_validity_check_agrees_with_the_sort(p, k, seed):
    """check_coloring's O(nnz) path (one bit per color, OR per row) against the sort of (row, color) keys."""
    from stablehlo_sparsity.coloring.check import _rows_have_distinct_colors, _unique_in_row

    colors = np.random.default_rng(seed).integers(0, k, p.shape[1])
    rows = np.repeat(np.arange(p.shape[0]), np.diff(p.indptr))
    want = bool(_unique_in_row(rows, colors[p.indices], int(colors.max()) + 1).all())
    if colors.max() < 63:
        assert _rows_have_distinct_colors(p, colors) == want
    assert check_coloring(p, colors, "column") == want


def test_convolution_rows_reach_the_bound_on_a_large_graph():
    """Above BEST_ORDERS_MAX_WALK, order="best" still tries the natural order: it reaches the bound (72) on
    the rows of a 3×3, 8-channel convolution, where DSATUR takes 81."""
    import jax.numpy as jnp

    import stablehlo_sparsity as ss
    from stablehlo_sparsity.coloring import lower_bound
    from stablehlo_sparsity.examples import make_conv2d

    conv, n = make_conv2d()
    p = ss.jacobian_sparsity(conv, jnp.ones(n))
    c = color_rows(p)
    assert c.num_colors == lower_bound(p, "row") == 72 and c.tried["dsatur"] > 72
    assert check_coloring(p, c, "row")
