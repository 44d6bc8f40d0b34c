"""Coloring from streamed row blocks (``coloring/streamed.py``): valid for the whole pattern whatever the cut
into blocks, the same colors as the in-memory natural-order greedy pass (two-pass mode), memory set by the
window and not by ``nnz``, and a clear error — never a wrong coloring — when the stream breaks its promises."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stablehlo_sparsity.coloring import (check_coloring, color_columns, color_columns_streamed, color_rows,
                                         color_rows_streamed, stencil27_blocks)
from stablehlo_sparsity.errors import InputError

FAST = settings(max_examples=100, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


def split(csr, cuts):
    """``(r0, block)`` pairs of ``csr`` cut before the rows ``cuts``."""
    m = csr.shape[0]
    edges = [0] + sorted({c for c in cuts if 0 < c < m}) + [m]
    return [(a, csr[a:b]) for a, b in zip(edges[:-1], edges[1:])]


@st.composite
def blocked_patterns(draw):
    m = draw(st.integers(0, 40))
    n = draw(st.integers(0, 40))
    density = draw(st.sampled_from([0.0, 0.03, 0.1, 0.3, 1.0]))
    banded = draw(st.booleans())
    rng = np.random.default_rng(draw(st.integers(0, 2**31 - 1)))
    a = rng.random((m, n)) < density
    if banded:  # a local pattern: entries within a band, the case the window is for
        i, j = np.indices((m, n))
        a &= np.abs(i - j) <= draw(st.integers(0, 6))
    cuts = draw(st.lists(st.integers(0, max(m, 1)), max_size=12))
    return sp.csr_array(a), cuts


def natural(csr, side):
    fn = color_columns if side == "column" else color_rows
    return fn(csr, order="natural", recolor="none")


@FAST
@given(blocked_patterns(), st.sampled_from(["column", "row"]))
def test_two_pass_is_the_natural_greedy_pass(pc, side):
    csr, cuts = pc
    blocks = split(csr, cuts)
    fn = color_columns_streamed if side == "column" else color_rows_streamed
    c = fn(blocks, csr.shape)
    assert check_coloring(csr, c)
    assert c.kind == side and c.shape == csr.shape
    ref = natural(csr, side)
    assert c.num_colors == ref.num_colors
    if csr.nnz:
        np.testing.assert_array_equal(c.colors, ref.colors)
        assert c.lower_bound == ref.lower_bound


@FAST
@given(blocked_patterns(), st.sampled_from(["column", "row"]), st.integers(0, 8))
def test_far_columns_on_their_own_colors_stay_valid(pc, side, max_span):
    csr, cuts = pc
    fn = color_columns_streamed if side == "column" else color_rows_streamed
    c = fn(split(csr, cuts), csr.shape, max_span=max_span)
    assert check_coloring(csr, c)
    assert c.num_colors >= c.lower_bound


@FAST
@given(blocked_patterns(), st.sampled_from(["column", "row"]), st.integers(0, 45))
def test_one_pass_is_valid_or_refuses(pc, side, span):
    """One pass on the promise ``span``: a valid coloring when the promise holds, InputError when it does not
    — never an invalid coloring."""
    csr, cuts = pc
    fn = color_columns_streamed if side == "column" else color_rows_streamed
    coo = csr.tocoo()
    first = np.full(csr.shape[1], csr.shape[0])
    np.minimum.at(first, coo.col, coo.row)
    holds = bool(np.all(coo.row - first[coo.col] <= span))
    if holds:
        c = fn(iter(split(csr, cuts)), csr.shape, span=span)
        assert check_coloring(csr, c)
    else:
        with pytest.raises(InputError, match="span"):
            fn(iter(split(csr, cuts)), csr.shape, span=span)


@pytest.mark.parametrize("L", [5, 9])
def test_stencil27_reaches_the_bound_like_the_in_memory_coloring(L):
    n = L ** 3
    blocks = stencil27_blocks(L, 37)
    full = sp.csr_array(sp.vstack([b for _, b in blocks()]))
    assert full.nnz == sum(min(3, i + 2, L - i + 1) for i in range(L)) ** 3  # 27 n minus the boundary
    best = color_columns(full)
    for c in (color_columns_streamed(blocks, (n, n)),
              color_columns_streamed(blocks(), (n, n), span=2 * (L * L + L + 1)),
              color_rows_streamed(blocks, (n, n))):
        assert check_coloring(full, c)
        assert c.num_colors == best.num_colors == c.lower_bound == 27


def test_memory_is_set_by_the_window_not_by_nnz():
    """A 3-D stencil of 40³ = 64 k rows and 1.7 M nonzeros in blocks of 1000 rows: everything the coloring
    allocates (the window of about 4300 rows, the per-column arrays, each block as it is built) stays under
    40 % of what the pattern's int64 column indices alone take (it is 33 %).  Holding the whole pattern would
    exceed it."""
    L = 40
    n = L ** 3
    blocks = stencil27_blocks(L, 1000)
    nnz = sum(b.nnz for _, b in blocks())
    color_columns_streamed(stencil27_blocks(4, 10), (64, 64))  # compile the kernels outside the measurement
    color_rows_streamed(stencil27_blocks(4, 10), (64, 64))
    for fn in (color_columns_streamed, color_rows_streamed):
        tracemalloc.start()
        c = fn(blocks, (n, n))
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert c.num_colors == 27
        assert peak < 0.4 * nnz * 8, (fn.__name__, peak, nnz)


def test_bad_streams_are_clear_errors():
    a = sp.csr_array(np.eye(6, dtype=bool))
    blocks = split(a, [2, 4])
    with pytest.raises(InputError, match="one-shot iterator"):
        color_columns_streamed(iter(blocks), (6, 6))
    with pytest.raises(InputError, match="row order"):
        color_columns_streamed([blocks[1], blocks[0]], (6, 6))
    with pytest.raises(InputError, match="columns"):
        color_columns_streamed([(0, a[:, :5])], (6, 6))
    with pytest.raises(InputError, match="only 4"):
        color_rows_streamed(blocks, (4, 6))
    with pytest.raises(InputError, match="pair"):
        color_columns_streamed([a], (6, 6))
    with pytest.raises(InputError, match="shape"):
        color_columns_streamed(blocks, 6)
    with pytest.raises(InputError, match="span"):
        color_columns_streamed(blocks, (6, 6), span=-1)
    # a source that changes between the two passes
    passes = iter([split(a, [3]), [(0, sp.csr_array(np.ones((6, 6), bool)))]])
    with pytest.raises(InputError, match="second pass"):
        color_columns_streamed(lambda: next(passes), (6, 6))
    fewer = sp.csr_array(np.diag([1, 1, 1, 1, 1, 0]).astype(bool))  # a nonzero fewer: no entry out of place
    passes = iter([split(a, [3]), split(fewer, [3])])
    with pytest.raises(InputError, match="second pass"):
        color_rows_streamed(lambda: next(passes), (6, 6))


def test_a_dense_row_far_away_costs_one_color_per_column_and_stays_valid():
    """An arrowhead (diagonal plus a dense last row) needs ``n`` column colors anyway; with ``max_span`` below
    its reach, every column goes on a color of its own and the window never holds the whole pattern."""
    n = 50
    a = sp.lil_array((n, n), dtype=bool)
    a.setdiag(True)
    a[n - 1, :] = True
    a = sp.csr_array(a)
    c = color_columns_streamed(split(a, range(0, n, 7)), (n, n), max_span=10)
    assert check_coloring(a, c) and c.num_colors == n and "far columns" in c.order
    # rows: each row holding a far column goes on a color of its own (valid, dearer than the 2 colors the
    # default max_span finds)
    r = color_rows_streamed(split(a, range(0, n, 7)), (n, n), max_span=10)
    assert check_coloring(a, r) and r.num_colors == n - 11 + 2
    r = color_rows_streamed(split(a, range(0, n, 7)), (n, n))
    assert check_coloring(a, r) and r.num_colors == color_rows(a).num_colors == 2


def test_blocks_with_duplicates_unsorted_or_bad_indices():
    """CSR blocks are used as they come: duplicate and unsorted column indices change nothing, an explicit
    zero is not a nonzero, and an index out of range is an InputError (the kernels index per-column arrays)."""
    a = sp.csr_array(np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]], bool))
    messy = sp.csr_array((np.ones(3, bool), np.array([1, 0, 1]), np.array([0, 3])), shape=(1, 3))  # {1, 0, 1}
    zero = sp.csr_array((np.array([1.0, 1, 0]), np.array([2, 1, 0]), np.array([0, 3])), shape=(1, 3))  # {2, 1}
    c = color_columns_streamed([(0, messy), (1, zero), (2, a[2:])], (3, 3))
    assert check_coloring(a, c) and c.num_colors == 3
    bad = sp.csr_matrix((np.ones(1, bool), np.array([3]), np.array([0, 1])), shape=(1, 3))
    with pytest.raises(InputError, match="outside"):
        color_columns_streamed([(0, bad)], (1, 3))


def test_colors_the_shards_of_the_blocked_detection(tmp_path):
    """The pieces together: the blocked detection writes NPZ shards, the coloring reads them twice, and the
    coloring is valid for (and as good as the in-memory coloring of) the whole detected pattern."""
    import jax.numpy as jnp

    from stablehlo_sparsity import jacobian_sparsity
    from stablehlo_sparsity.derivatives.shard_io import read_pattern_shards
    from stablehlo_sparsity.analysis.streaming import write_pattern_shards

    L = 6

    def f(x):
        u = jnp.pad(x.reshape(L, L, L), 1)
        out = sum(u[a:a + L, b:b + L, c:c + L] * (1 + a + 3 * b + 9 * c)
                  for a in range(3) for b in range(3) for c in range(3))
        return (out + x.reshape(L, L, L) ** 3).ravel()

    x = jnp.ones(L ** 3)
    write_pattern_shards(tmp_path, f, x, rows_per_block=50)
    pattern = jacobian_sparsity(f, x)
    c = color_columns_streamed(lambda: read_pattern_shards(tmp_path), pattern.shape)
    assert check_coloring(pattern, c) and c.num_colors == color_columns(pattern).num_colors == 27
    r = color_rows_streamed(lambda: read_pattern_shards(tmp_path), pattern.shape)
    assert check_coloring(pattern, r) and r.num_colors == 27
