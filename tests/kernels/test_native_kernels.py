"""The C twins of the compiled kernels (``csrc/kernels.c``) against their numba kernels: identical results.

Each twin must compute exactly what its numba kernel computes — colors, counts, orderings, the random choices of
iterated greedy and tabu search — so that a process can run the twins and never import numba.  Kernels are
compared on random bipartite and symmetric patterns (rectangular, empty rows and columns, dense rows and columns,
0 to 1,000 vertices), by calling the twin (``kernel.twin``: a silent fallback to numba would compare numba with
itself) and the numba dispatcher (``kernel.dispatcher``) with the same arguments; the public colorings are compared
under ``SHS_KERNELS=auto`` and ``SHS_KERNELS=numba``.  A fresh process prepares and evaluates a sparse Jacobian and a
sparse Hessian without importing numba.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stablehlo_sparsity.kernels import compiled, native
from stablehlo_sparsity.analysis.second_order import assembly, pair_buckets, pair_marks, sorted_union
from stablehlo_sparsity.coloring import METHODS, ORDERS, color_columns, color_rows, color_star
from stablehlo_sparsity.coloring import greedy, orderings, recolor, star
from stablehlo_sparsity.coloring.bicoloring import color_fewest_products
from stablehlo_sparsity.coloring.graph import adjacency, bipartite
from stablehlo_sparsity.errors import InputError
from test_coloring import brusselator_pattern, grid

KERNELS = [greedy._greedy, greedy._iterated_greedy, greedy._dsatur, greedy._walk_lengths, greedy.split_bound,
           orderings._degrees, orderings._dynamic_order, recolor._drop_class, star._greedy_star,
           assembly._row_counts, assembly._fill, pair_buckets._bucket_pairs, pair_buckets._drop_repeats,
           pair_marks._mark_codes, sorted_union._merge_distinct]

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@pytest.fixture(autouse=True)
def _default_kernels(monkeypatch):
    monkeypatch.delenv(compiled.KERNELS_ENV, raising=False)


def test_the_library_is_built_and_every_listed_kernel_has_its_twin():
    # (without the library every comparison below would be numba against numba: this one fails instead)
    assert native.library() is not None, "the C kernels are not built: pip install -e ."
    assert sorted(f"{k.py_func.__module__}.{k.py_func.__qualname__}" for k in KERNELS) == sorted(native.TWINS)
    assert all(k.twin is not None for k in KERNELS)


# ----------------------------------------------------------------------------------------------- patterns
@st.composite
def bipartite_patterns(draw, max_side=1000, square=False):
    """A random m × n pattern: a few nonzeros per row at random or in a band, some rows or columns left empty,
    and up to two dense rows and two dense columns."""
    m = draw(st.integers(0, max_side))
    n = m if square else draw(st.integers(0, max_side))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    per_row = draw(st.sampled_from([0, 1, 2, 3, 5]))
    rows, cols = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    if m and n and per_row:
        if draw(st.booleans()):  # random positions
            rows.append(rng.integers(0, m, m * per_row))
            cols.append(rng.integers(0, n, m * per_row))
        else:  # a band around the diagonal
            r = np.repeat(np.arange(m), per_row)
            rows.append(r)
            cols.append(np.clip(r * n // m + rng.integers(-per_row, per_row + 1, len(r)), 0, n - 1))
        keep = rng.random(len(rows[-1])) >= draw(st.sampled_from([0.0, 0.3]))  # empty rows and columns
        rows[-1], cols[-1] = rows[-1][keep], cols[-1][keep]
    for _ in range(draw(st.integers(0, 2)) if m and n else 0):  # dense rows
        rows.append(np.full(n, rng.integers(m)))
        cols.append(np.arange(n))
    for _ in range(draw(st.integers(0, 2)) if m and n else 0):  # dense columns
        rows.append(np.arange(m))
        cols.append(np.full(m, rng.integers(n)))
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_array((np.ones(len(r), bool), (r, c)), shape=(m, n))


def _walk(g, wide=False):
    t = np.int64 if wide else g.ptr.dtype
    return (g.nv, g.ptr.astype(t), g.nbr.astype(t), g.optr.astype(t), g.onbr.astype(t), True)


def same(kernel, args, wide_args=None):
    """The twin's result (of ``wide_args``: the int64 CSR arrays, when given) equals the numba kernel's."""
    got = kernel.twin(*(args if wide_args is None else wide_args))
    assert got is not NotImplemented, f"{kernel} declined its arguments"
    want = kernel.dispatcher(*args)
    assert_same(got, want)
    return got


def assert_same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for a, b in zip(got, want):
            assert_same(a, b)
    elif isinstance(want, np.ndarray):
        assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)
    else:
        assert type(got) is type(want) and got == want, (got, want)


# ---------------------------------------------------------------------------------------------- the kernels
def check_distance2_kernels(p, side: str, choose) -> None:
    """Every kernel of column (row) coloring on ``p``: degrees, orderings, greedy, walk lengths, DSATUR, iterated
    greedy and tabu attempts on each region radius; ``choose(options)`` picks the options."""
    g = bipartite(p, side)
    walk, wide = _walk(g), _walk(g, wide=True)
    deg = same(orderings._degrees, walk, wide)
    by_degree = np.lexsort((-np.arange(g.nv), deg)).astype(np.int64)
    orders = [np.arange(g.nv, dtype=np.int64), np.argsort(-deg, kind="stable").astype(np.int64)]
    for key0, pick_max, delta in ((deg, False, -1), (np.zeros(g.nv, np.int64), True, 1), (deg, True, -1)):
        tail = (key0, by_degree, pick_max, delta)
        orders.append(same(orderings._dynamic_order, walk + tail, wide + tail))
    best = None
    for order in orders:
        colors, k = same(greedy._greedy, walk + (order,), wide + (order,))
        if best is None or k < best[1]:
            best = colors, k
    lengths = same(greedy._walk_lengths, walk[:4], wide[:4])
    for words32 in (2, 4):
        deg0 = np.clip(lengths, 0, choose([3, 64, 10**6])).astype(np.int32)
        colors, k = same(greedy._dsatur, walk + (words32, deg0), wide + (words32, deg0))
        if k < best[1]:
            best = colors, k
    if g.nv == 0:
        return
    colors, k = best
    lb = g.lower_bound
    seed = choose([0, 7, 2**32 - 1])
    tail = (colors, choose([1, 7, 40]), lb, choose([3, 200]), seed)
    same(greedy._iterated_greedy, walk + tail, wide + tail)
    # from singleton classes (each vertex its own color): the passes improve for a while, so the random class
    # orders (reversed, shuffled, by size with ties everywhere) decide the result
    tail = (np.arange(g.nv, dtype=np.int32), 30, lb, 30, seed)
    same(greedy._iterated_greedy, walk + tail, wide + tail)
    if k > max(lb, 1):
        drop = int(np.argmin(np.bincount(colors, minlength=k)))
        for radius, per_edge in ((2, recolor.LOCAL_WORK_PER_EDGE), (8, recolor.LOCAL_WORK_PER_EDGE), (-1, 0)):
            tail = (colors, k, drop, radius, g.nv, choose([-1, 50]), choose([10**5, 10**7]), per_edge, seed + radius)
            same(recolor._drop_class, walk + tail, wide + tail)


@settings(max_examples=40, **SETTINGS)
@given(bipartite_patterns(), st.sampled_from(["column", "row"]), st.data())
def test_distance2_kernels_equal_their_numba_kernels(p, side, data):
    check_distance2_kernels(p, side, lambda options: data.draw(st.sampled_from(options)))


@pytest.mark.parametrize("pick", [0, -1])
def test_distance2_kernels_on_the_brusselator(pick):
    # DSATUR leaves seams that tabu search repairs and iterated greedy may improve: their random draws matter
    check_distance2_kernels(brusselator_pattern(16), "column", lambda options: options[pick])


@pytest.mark.parametrize("n", [5, 9, 101])
@pytest.mark.parametrize("radius", [2, -1])
def test_tabu_search_on_odd_cycles_equals_its_numba_kernel(n, radius):
    # columns conflicting along an odd cycle: 3 colors, bound 2, so dropping a class never succeeds and the search
    # runs its budget, with one other color per vertex: every move tabu now and then (the random move)
    rows = np.repeat(np.arange(n), 2)
    p = sp.csr_array((np.ones(2 * n, bool), (rows, (rows + np.tile([0, 1], n)) % n)), shape=(n, n))
    g = bipartite(p, "column")
    colors, k = greedy._greedy.twin(*_walk(g), np.arange(n, dtype=np.int64))
    assert k == 3
    for seed in range(3):
        tail = (colors, k, int(np.argmin(np.bincount(colors))), radius, n, 300, 10**7, 0, seed)
        got = same(recolor._drop_class, _walk(g) + tail, _walk(g, wide=True) + tail)
        assert not got[1]


def test_the_random_generator_is_numbas():
    # numba's np.random after np.random.seed: doubles, integers below bounds of every width (one 32-bit draw up to
    # 2**32, two beyond), a permutation — what iterated greedy and tabu search draw
    import ctypes

    import numba

    @numba.njit(cache=True)
    def draws(seed, nrandom, ns, kperm):
        np.random.seed(seed)
        r = np.empty(nrandom)
        for i in range(nrandom):
            r[i] = np.random.random()
        out = np.empty(len(ns), np.int64)
        for i in range(len(ns)):
            out[i] = np.random.randint(ns[i])
        return r, out, np.random.permutation(kperm)

    ns = np.array([1, 2, 3, 10, 1000, 2**31 - 1, 2**31, 2**32, 2**32 + 1, 3 * 2**40 + 7, 2**62 + 1] * 40, np.int64)
    lib = native.library()
    for seed in (0, 1, 12345, 2**32 - 1, 2**32 + 5):
        r, out, perm = np.empty(700), np.empty(len(ns), np.int64), np.empty(300, np.int64)
        addr = [ctypes.c_void_p(a.ctypes.data) for a in (r, ns, out, perm)]
        assert lib.shs_rng_draws(seed, len(r), addr[0], len(ns), addr[1], addr[2], len(perm), addr[3]) == 0
        want = draws(seed, len(r), ns, len(perm))
        assert np.array_equal(r, want[0]) and np.array_equal(out, want[1]) and np.array_equal(perm, want[2])


@settings(max_examples=40, **SETTINGS)
@given(bipartite_patterns(square=True), st.integers(0, 2**32 - 1))
def test_star_kernel_equals_its_numba_kernel(p, seed):
    g = adjacency(p)
    wide = (g.ptr.astype(np.int64), g.nbr.astype(np.int64))
    empty = np.zeros(1, g.ptr.dtype)
    deg = same(orderings._degrees, (g.nv, g.ptr, g.nbr, empty, empty, False))
    orders = [np.arange(g.nv, dtype=np.int64), np.random.default_rng(seed).permutation(g.nv).astype(np.int64),
              np.argsort(-deg, kind="stable").astype(np.int64)]
    for order in orders:
        same(star._greedy_star, (g.nv, g.ptr, g.nbr, order), (g.nv, *wide, order))


@settings(max_examples=40, **SETTINGS)
@given(bipartite_patterns(max_side=300), st.integers(0, 2**32 - 1), st.sampled_from([0, 2, 5, 10**9]))
def test_split_bound_equals_its_numba_kernel(p, seed, stop):
    fwd = np.random.default_rng(seed).random(p.nnz) < 0.5
    m, n = p.shape
    same(greedy.split_bound, (m, n, p.indptr, p.indices, fwd, stop),
         (m, n, p.indptr.astype(np.int64), p.indices.astype(np.int64), fwd, stop))


@settings(max_examples=30, **SETTINGS)
@given(bipartite_patterns(max_side=400, square=True), st.sampled_from([np.int32, np.int64]))
def test_hessian_assembly_kernels_equal_their_numba_kernels(p, dtype):
    n = p.shape[0]
    u, v = sp.triu(p + p.T).nonzero()
    codes = np.unique(n + u.astype(np.int64) * n + v)
    count, lower = same(assembly._row_counts, (codes, np.int64(n)))
    indptr = np.zeros(n + 1, np.int64)
    np.cumsum(count, out=indptr[1:])
    cursors = [(indptr[:-1].copy(), indptr[:-1] + lower) for _ in range(2)]
    got, want = np.empty(int(indptr[-1]), dtype), np.empty(int(indptr[-1]), dtype)
    assert assembly._fill.twin(codes, np.int64(n), *cursors[0], got) is None
    assembly._fill.dispatcher(codes, np.int64(n), *cursors[1], want)
    assert np.array_equal(got, want)
    assert all(np.array_equal(a, b) for a, b in zip(cursors[0], cursors[1]))   # (the cursors advanced alike)
    full = sp.csr_array((np.ones(len(got), bool), got, indptr), shape=(n, n))
    assert ((full != (p + p.T).astype(bool)).nnz == 0) and full.has_sorted_indices


@settings(max_examples=60, **SETTINGS)
@given(st.integers(0, 3_000), st.integers(0, 3_000), st.integers(1, 10**12), st.integers(0, 2**32 - 1))
def test_merging_sorted_rows_equals_its_numba_kernel_and_np_union1d(la, lb, span, seed):
    rng = np.random.default_rng(seed)
    a, b = (np.unique(rng.integers(0, span, size)) for size in (la, lb))
    if seed % 3 == 0:   # (shared columns: one row a subset of the other)
        b = np.unique(np.concatenate([b, a[::2]]))
    room = len(a) + len(b) + int(seed % 2)
    outs = [np.full(room, -7, np.int64) for _ in range(2)]
    k = sorted_union._merge_distinct.twin(a, b, outs[0])
    assert k == sorted_union._merge_distinct.dispatcher(a, b, outs[1])
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0][:k], np.union1d(a, b))
    assert sorted_union._merge_distinct.twin(a.astype(np.int32), b, outs[0]) is NotImplemented   # (int64 only)
    if len(a) + len(b):   # (an output too short: refused, never overrun)
        assert sorted_union._merge_distinct.twin(a, b, outs[0][:len(a) + len(b) - 1]) is NotImplemented


@settings(max_examples=40, **SETTINGS)
@given(n=st.integers(1, 300), m=st.integers(0, 4_000), hub=st.sampled_from([None, 0, -1]), seed=st.integers(0, 2**32 - 1))
def test_pair_bucket_kernel_equals_its_numba_kernel_and_np_unique(n, m, hub, seed):
    # pair codes in any order with repeats; a hub (a node in most pairs) makes buckets longer than insertion sorts
    rng = np.random.default_rng(seed)
    u, v = rng.integers(0, n, m), rng.integers(0, n, m)
    if hub is not None:
        u[: m // 2] = hub % n
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    codes = (n + lo * n + hi).astype(np.int64)
    got, want = np.full(m, -7, np.int64), np.full(m, -7, np.int64)
    k = same(pair_buckets._bucket_pairs, (codes, np.int64(n), want), (codes, np.int64(n), got))
    assert np.array_equal(got[:k], np.unique(codes)) and np.array_equal(want[:k], got[:k])
    assert np.array_equal(pair_buckets.sorted_distinct_pairs(codes, n), np.unique(codes))


@settings(max_examples=40, **SETTINGS)
@given(st.lists(st.integers(-3, 40), max_size=300))
def test_dropping_repeats_in_place_equals_its_numba_kernel_and_np_unique(values):
    a = np.sort(np.array(values, np.int64))
    got, want = a.copy(), a.copy()
    k = same(pair_buckets._drop_repeats, (want,), (got,))
    assert np.array_equal(got[:k], np.unique(a)) and np.array_equal(want, got)
    view = pair_buckets.distinct_in_place(a.copy())
    assert np.array_equal(view, np.unique(a))
    assert pair_buckets._drop_repeats.twin(np.arange(3)[::-1].copy()[::2]) is NotImplemented  # (not contiguous)


@settings(max_examples=60, **SETTINGS)
@given(n=st.integers(1, 200), m=st.integers(0, 3_000), reach=st.integers(0, 5), spill=st.integers(0, 40),
       at=st.integers(0, 3), seed=st.integers(0, 2**32 - 1))
def test_marking_codes_equals_its_numba_kernel(n, m, reach, spill, at, seed):
    # first-order columns, "none", pairs on the band 0 … reach and a few far off it: the band ranked with a gap
    # (an offset absent from ``rank``), so codes on it, past it and beyond ``rank`` all go to the spill
    rng = np.random.default_rng(seed)
    u = rng.integers(0, n, m)
    v = np.minimum(u + rng.integers(0, reach + 1, m), n - 1)
    far = rng.random(m) < 0.02
    v[far] = rng.integers(0, n, int(far.sum()))
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    code = np.concatenate([n + lo * n + hi, rng.integers(-1, n, m // 10)]).astype(np.int64)
    rng.shuffle(code)
    rank = np.full(reach + 1, -1, np.int64)
    kept = np.flatnonzero(np.arange(reach + 1) != reach // 2)
    rank[kept] = np.arange(len(kept))
    k = np.int64(max(len(kept), 1))
    outs = [(np.zeros(n, bool), np.zeros(n * k, bool), np.full(spill + at, -7, np.int64)) for _ in range(2)]
    got = pair_marks._mark_codes.twin(code, np.int64(n), rank, k, *outs[0], np.int64(at))
    assert got is not NotImplemented
    assert_same(got, pair_marks._mark_codes.dispatcher(code, np.int64(n), rank, k, *outs[1], np.int64(at)))
    for a, b in zip(*outs):
        assert np.array_equal(a, b)
    if got >= 0:   # (the marks and the spill hold every column once at least, and nothing else)
        first, mark, spilled = outs[0]
        codes = pair_marks.codes_of_marks(np.flatnonzero(mark), n, kept, int(k)) if len(kept) else np.zeros(0)
        held = np.union1d(np.union1d(np.flatnonzero(first), codes), spilled[at:got])
        assert np.array_equal(held, np.unique(code[code >= 0]))


def test_marking_codes_stops_at_a_full_spill_and_a_code_out_of_range():
    n, rank = 3, np.zeros(1, np.int64)       # (the diagonal only: {0, 1} = 3 + 1 goes to the spill)
    for kernel in (pair_marks._mark_codes.twin, pair_marks._mark_codes.dispatcher):
        args = (np.int64(n), rank, np.int64(1), np.zeros(n, bool), np.zeros(n, bool))
        assert kernel(np.array([4], np.int64), *args, np.zeros(0, np.int64), np.int64(0)) == pair_marks.SPILL_FULL
        assert kernel(np.array([4], np.int64), *args, np.zeros(1, np.int64), np.int64(0)) == 1
        for bad in (n + n * n, -2):        # past the last pair; below "none"
            assert kernel(np.array([bad], np.int64), *args, np.zeros(1, np.int64), np.int64(0)) == \
                pair_marks.OUT_OF_RANGE


def test_distinct_in_place_keeps_no_view_of_its_buffer():
    many = np.repeat(np.arange(10, dtype=np.int64), 2)             # repeats: a copy, the buffer can go
    got = pair_buckets.distinct_in_place(many)
    assert np.array_equal(got, np.arange(10)) and got.base is None
    distinct = np.arange(1_000, dtype=np.int64)                    # all distinct: the array itself
    assert pair_buckets.distinct_in_place(distinct) is distinct


def test_pair_buckets_refuse_codes_out_of_range():
    with pytest.raises(ValueError, match="out of range"):
        pair_buckets.sorted_distinct_pairs(np.array([4, 2], np.int64), 3)   # 2 < n: a first-order column
    with pytest.raises(ValueError, match="out of range"):
        pair_buckets.sorted_distinct_pairs(np.array([3 + 9], np.int64), 3)  # n + n²: past the last pair


def test_a_twin_declines_arguments_it_was_not_written_for():
    # another dtype, layout or width: the numba kernel runs instead (it compiles what it is given)
    g = bipartite(grid(4, 4))
    walk = _walk(g)
    order = np.arange(g.nv, dtype=np.int64)
    assert greedy._greedy.twin(*walk, order) is not NotImplemented
    assert greedy._greedy.twin(*walk, order.astype(np.int32)) is NotImplemented
    assert greedy._greedy.twin(*walk, np.arange(2 * g.nv, dtype=np.int64)[::2]) is NotImplemented
    mixed = (g.nv, g.ptr.astype(np.int64), g.nbr, g.optr, g.onbr, True)
    assert greedy._greedy.twin(*mixed, order) is NotImplemented
    assert greedy._iterated_greedy.twin(*walk, np.zeros(g.nv, np.int32), 5, 1, 2, 2**64) is NotImplemented


# --------------------------------------------------------------------------------------- the public colorings
def _same_coloring(a, b):
    assert type(a) is type(b)
    assert (a.num_colors, a.order, a.lower_bound, a.tried) == (b.num_colors, b.order, b.lower_bound, b.tried)
    assert np.array_equal(a.colors, b.colors)


@settings(max_examples=15, **SETTINGS)
@given(bipartite_patterns(max_side=600), st.sampled_from(("best",) + METHODS),
       st.sampled_from(["auto", "iterated", "tabu", "none"]), st.sampled_from([0.05, 0.3]), st.integers(0, 9))
def test_public_colorings_are_the_same_under_numba(p, order, recolor_, effort, seed):
    run = dict(order=order, recolor=recolor_, effort=effort, seed=seed)
    k = min(p.shape)
    sym = sp.csr_array(p[:k, :k] + p[:k, :k].T)
    c, r = color_columns(p, **run), color_rows(p, **run)
    s = color_star(sym, order=order if order in ORDERS else "best", recolor="auto" if recolor_ == "auto" else "none",
                   effort=effort, seed=seed)
    b = color_fewest_products(p, effort=effort, seed=seed)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(compiled.KERNELS_ENV, "numba")
        _same_coloring(c, color_columns(p, **run))
        _same_coloring(r, color_rows(p, **run))
        _same_coloring(s, color_star(sym, order=order if order in ORDERS else "best",
                                     recolor="auto" if recolor_ == "auto" else "none", effort=effort, seed=seed))
        _same_coloring(b, color_fewest_products(p, effort=effort, seed=seed))


@pytest.mark.parametrize("name", ["brusselator", "2-D 9-point stencil", "random"])
def test_default_colorings_are_the_same_under_numba(name, monkeypatch):
    rng = np.random.default_rng(3)
    p = {"brusselator": lambda: brusselator_pattern(24), "2-D 9-point stencil": lambda: grid(30, 30, nine=True),
         "random": lambda: sp.random_array((400, 500), density=0.01, rng=rng, format="csr") != 0}[name]()
    square = sp.csr_array(p[:, : p.shape[0]]) if p.shape[1] > p.shape[0] else p
    got = [color_columns(p), color_rows(p), color_star(square), color_fewest_products(p)]
    monkeypatch.setenv(compiled.KERNELS_ENV, "numba")
    want = [color_columns(p), color_rows(p), color_star(square), color_fewest_products(p)]
    for a, b in zip(got, want):
        _same_coloring(a, b)


def test_shs_kernels_numba_runs_numba_and_other_values_are_refused(monkeypatch):
    def boom(*args):
        raise AssertionError("the C twin ran under SHS_KERNELS=numba")

    g = bipartite(grid(3, 3))
    kernel = compiled.Kernel(greedy._greedy.py_func)
    monkeypatch.setattr(kernel, "_twin", boom)
    monkeypatch.setenv(compiled.KERNELS_ENV, "numba")
    order = np.arange(g.nv, dtype=np.int64)
    assert_same(kernel(*_walk(g), order), greedy._greedy.twin(*_walk(g), order))
    assert not compiled.native_kernels()
    monkeypatch.setenv(compiled.KERNELS_ENV, "fortran")
    with pytest.raises(InputError, match="SHS_KERNELS='fortran'.*'numba' or 'auto'"):
        greedy.greedy_color(*_walk(g), np.arange(g.nv))


def test_without_the_library_numba_runs_silently(monkeypatch):
    g = adjacency(grid(5, 5))
    order = np.arange(g.nv, dtype=np.int64)
    want = star._greedy_star.twin(g.nv, g.ptr, g.nbr, order)
    monkeypatch.setattr(native, "_loaded", [None])  # (a source checkout that was not built)
    kernel = compiled.Kernel(star._greedy_star.py_func)
    assert kernel.twin is None and not compiled.native_kernels()
    assert_same(kernel(g.nv, g.ptr, g.nbr, order), want)


def test_kernels_start_free_with_their_twins_or_numba_loaded(monkeypatch):
    import sys

    assert compiled.kernels_start_free()                      # the twins run (the library is built)
    monkeypatch.setattr(native, "_loaded", [None])           # no twins …
    monkeypatch.setitem(sys.modules, "numba", sys.modules.get("numba", object()))
    assert compiled.kernels_start_free()                      # … but numba imported: free
    monkeypatch.delitem(sys.modules, "numba")
    assert not compiled.kernels_start_free()                  # neither: a fallback without the kernel is cheaper


# ------------------------------------------------------------------------------------------ a fresh process
def test_a_sparse_jacobian_and_hessian_never_import_numba():
    # the default path's kernels all have twins: preparing and evaluating pays no numba start-up (about 0.6 s)
    code = textwrap.dedent("""
        import sys
        import jax, jax.numpy as jnp, numpy as np
        import stablehlo_sparsity as ss
        from stablehlo_sparsity.examples import brusselator

        x = jnp.linspace(0.1, 1.0, 200)
        for f in (lambda v: v[1:] ** 2 - jnp.sin(v[:-1]) + 1, lambda v: brusselator(v, 10)):
            J = ss.sparse_jacobian(f, x)
            jax.block_until_ready(J(x))
        H = ss.sparse_hessian(lambda v: jnp.sum((v[1:] - v[:-1] ** 2) ** 2) + jnp.sum(jnp.cos(v[2:] * v[:-2])), x)
        jax.block_until_ready(H(x))
        print("numba" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["False"], "numba was imported: " + out.stdout
