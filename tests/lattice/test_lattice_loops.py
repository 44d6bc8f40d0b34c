"""Property tests of the loop moves (``lattice/runs.py``, ``lattice/loops.py``) against dense boolean models.

Run-length rows: random run parts, and the values of ``test_lattice_properties`` (lazy unions of index and
CSR parts, row maps, materialized or not) turned into runs, must behave as their dense model under every
move — union (merged or lazy, with a part it already contains), row maps, stacking, materialization,
comparison and counting.  Loop moves: a summary relation applied with lattice moves and as rows of arrays
is ``R ⊗ S``; a row map raised to the ``k``-th power is ``k`` gathers; an accumulator assembled from writes
is the writes applied in order; Brent's check finds the period of a sequence that cycles after a prefix.
"""

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

from stablehlo_sparsity.lattice import Deps, IndexPart
from stablehlo_sparsity.lattice import loops as L
from stablehlo_sparsity.lattice.runs import (MAX_RUNS, RunPart, cheap_nnz, csr_runs, deps_equal,
                                            merge_runs)
from test_lattice_properties import assert_canonical, bool_matrix, deps, dense, index_map

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
MAX_ROWS, MAX_N = 7, 12


@st.composite
def banded(draw, rows, n):
    """A dense model whose rows are a few intervals (what run parts are for), possibly wrapping around."""
    m = np.zeros((rows, n), bool)
    if n == 0:
        return m
    for r in range(rows):
        for _ in range(draw(st.integers(0, 3))):
            a = draw(st.integers(0, n - 1))
            w = draw(st.integers(1, n))
            m[r, (a + np.arange(w)) % n] = True
    return m


def as_runs(model: np.ndarray) -> Deps:
    """A :class:`Deps` holding one run part with the rows of ``model``."""
    rows, n = model.shape
    if rows == 0 or n == 0 or not model.any():
        return Deps.empty(rows, n)
    s, e = csr_runs(sp.csr_array(model), n)
    return Deps(rows, n, [RunPart(s, e, n)])


@st.composite
def run_values(draw, rows, n):
    """``(Deps, model)``: a run part, or a random lattice value turned into runs by a union with one."""
    model = draw(banded(rows, n))
    d = as_runs(model)
    if draw(st.booleans()):
        other, m2 = draw(deps(rows, n, 1))
        return Deps.union(d, other), model | m2
    return d, model


shapes = st.tuples(st.integers(0, MAX_ROWS), st.integers(0, MAX_N))


# ---------------------------------------------------------------------- run-length rows
@SETTINGS
@given(st.data(), shapes)
def test_runs_round_trip_and_are_canonical(data, shape):
    rows, n = shape
    model = data.draw(banded(rows, n))
    d = as_runs(model)
    assert np.array_equal(dense(d), model)
    assert_canonical(d)
    assert cheap_nnz(d) == model.sum()


@SETTINGS
@given(st.data(), shapes)
def test_union_of_runs_is_the_elementwise_or(data, shape):
    rows, n = shape
    items = [data.draw(run_values(rows, n)) for _ in range(data.draw(st.integers(1, 4)))]
    u = Deps.union(*[d for d, _ in items])
    model = np.logical_or.reduce([m for _, m in items])
    assert np.array_equal(dense(u), model)
    assert cheap_nnz(u) == model.sum()
    assert_canonical(u)


@SETTINGS
@given(st.data(), shapes)
def test_merge_runs_is_the_or_of_its_pieces(data, shape):
    rows, n = shape
    models = [data.draw(banded(rows, n)) for _ in range(data.draw(st.integers(1, 5)))]
    pieces = []
    for m in models:
        r = csr_runs(sp.csr_array(m), n) if rows else (np.zeros((0, 0), np.int64), np.zeros((0, 0), np.int64))
        pieces.append(r)
    s, e, nnz = merge_runs(pieces, rows, n)
    model = np.logical_or.reduce(models)
    assert nnz == model.sum()
    if rows:
        assert np.array_equal(RunPart(s, e, n).to_csr().toarray(), model)
        assert s.shape[0] <= MAX_RUNS


@SETTINGS
@given(st.data(), shapes)
def test_row_maps_move_runs(data, shape):
    rows, n = shape
    d, m = data.draw(run_values(rows, n))
    k = data.draw(st.integers(0, MAX_ROWS))
    if rows == 0:
        idx = np.full(k, -1, np.int64)
        expected = np.zeros((k, n), bool)
    else:
        idx = data.draw(index_map(k, rows))
        expected = np.where((idx >= 0)[:, None], m[np.maximum(idx, 0)], False)
    g = d.gather_rows(idx)
    assert np.array_equal(dense(g), expected)
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=rows, max_size=rows)), bool)
    assert np.array_equal(dense(d.mask_rows(keep)), m & keep[:, None])


@SETTINGS
@given(st.data(), st.integers(0, MAX_N))
def test_stacked_runs_are_the_rows_one_after_the_other(data, n):
    items = [data.draw(run_values(data.draw(st.integers(0, 4)), n)) for _ in range(data.draw(st.integers(1, 4)))]
    s = Deps.vstack([d for d, _ in items])
    assert np.array_equal(dense(s), np.concatenate([m for _, m in items], axis=0))


@SETTINGS
@given(st.data(), shapes)
def test_a_part_merged_into_a_union_is_contained_in_it(data, shape):
    """The weak reference a merged run part keeps to each part it contains: a later union with that part
    is the merged part itself, and equal to the elementwise OR."""
    rows, n = shape
    a, ma = data.draw(run_values(rows, n))
    b_model = data.draw(banded(rows, n))
    b = as_runs(b_model)
    ab = Deps.union(a, b)
    again = Deps.union(ab, b)
    assert np.array_equal(dense(again), ma | b_model)
    assert deps_equal(again, ab)


@SETTINGS
@given(st.data(), shapes)
def test_equality_and_counts_without_materializing(data, shape):
    rows, n = shape
    (a, ma), (b, mb) = data.draw(run_values(rows, n)), data.draw(run_values(rows, n))
    assert deps_equal(a, b) == np.array_equal(ma, mb)
    assert deps_equal(a, as_runs(ma))
    assert cheap_nnz(a) == ma.sum()


def test_a_widening_band_stays_one_run_per_row():
    """The point of run parts: ``u ← u ∪ roll(u, ±1)`` keeps at most two runs per row (one where the band
    wraps around), whatever its width, and never writes the band out."""
    n = 1000
    u = Deps.identity(n, n, 0)
    for _ in range(300):
        u = Deps.union(u, u.gather_rows(np.roll(np.arange(n), 1)), u.gather_rows(np.roll(np.arange(n), -1)))
    (part,) = u.parts
    assert isinstance(part, RunPart) and part.starts.shape[0] <= 2 and part._csr is None
    assert cheap_nnz(u) == n * 601


def test_union_of_index_parts_becomes_runs_only_when_compact():
    n = 400
    rows = np.arange(n)
    band = Deps.union(*[Deps(n, n, [IndexPart((rows + k) % n)]) for k in range(30)])
    band.to_csr()
    assert isinstance(band.parts[0], RunPart)  # 30 neighbours: one run per row (two where it wraps)
    scattered = Deps.union(*[Deps(n, n, [IndexPart((rows * (k + 2)) % n)]) for k in range(30)])
    scattered.to_csr()
    assert not isinstance(scattered.parts[0], RunPart)  # 30 scattered columns: CSR is smaller


# ---------------------------------------------------------------------- summaries: R ⊗ S
@st.composite
def relation_and_blocks(draw):
    sizes = draw(st.lists(st.integers(0, 4), min_size=1, max_size=3))
    blocks, off = [], 0
    for s in sizes:
        blocks.append((off, s))
        off += s
    width = off
    rows = draw(st.integers(0, 5))
    R = draw(bool_matrix(rows, width)) if width else np.zeros((rows, 0), bool)
    return R, blocks, width


@SETTINGS
@given(st.data(), relation_and_blocks(), st.integers(0, MAX_N))
def test_applying_a_summary_is_the_group_union(data, rel, n):
    R, blocks, width = rel
    rows = R.shape[0]
    values = [data.draw(deps(size, n, 1)) for _, size in blocks]
    sym = np.vstack([m for _, m in values]) if width else np.zeros((0, n), bool)
    expected = (R.astype(int) @ sym.astype(int)) > 0
    relation = L.Relation.split(Deps.from_csr(sp.csr_array(R)) if R.size else Deps.empty(rows, width), blocks)
    got = L.apply(relation, [d for d, _ in values], n)
    assert np.array_equal(dense(got), expected)
    small = L.SmallState([relation], blocks)
    symbol_rows = [row for d, _ in values for row in L.rows_of(d)]
    if width:
        (out,) = small.step(symbol_rows)
        assert np.array_equal(dense(L.deps_of_rows(out, n)) if rows else np.zeros((0, n), bool), expected)


@SETTINGS
@given(st.data(), st.integers(1, 9), st.integers(0, 70))
def test_row_map_power_is_repeated_gathers(data, k, power):
    p = data.draw(index_map(k, k))
    expected = np.arange(k)
    for _ in range(power):
        expected = np.where(expected >= 0, p[np.maximum(expected, 0)], -1)
    assert np.array_equal(L.row_map_power(p, power), expected)


@SETTINGS
@given(st.data(), st.integers(1, 6), st.integers(0, MAX_N))
def test_assembled_accumulator_is_the_writes_in_order(data, rows, n):
    init, model = data.draw(deps(rows, n, 1))
    model = model.copy()
    writes = []
    for _ in range(data.draw(st.integers(0, 5))):
        k = data.draw(st.integers(1, rows))
        where = np.array(data.draw(st.permutations(range(rows)))[:k], np.int64)
        d, m = data.draw(deps(k, n, 1))
        writes.append((where, d))
        model[where] = m
    assert np.array_equal(dense(L.assemble_writes(init, writes)), model)
    arrays = [(w, L.rows_of(d)) for w, d in writes]
    assert np.array_equal(dense(L.assemble_rows(L.rows_of(init), arrays, n)), model)


@given(st.integers(0, 20), st.integers(1, 9))
@settings(max_examples=60, deadline=None)
def test_cycle_check_finds_the_period_after_a_prefix(prefix, period):
    n = 16
    states = [Deps(1, n, [IndexPart(np.array([i % n]))]) for i in range(prefix)]
    cycle = [Deps(1, n, [IndexPart(np.array([(prefix + j) % n], np.int64))]) for j in range(period)]
    check = L.CycleCheck()
    found = None
    for t in range(1, 4 * (prefix + period) + 4):
        s = states[t - 1] if t - 1 < prefix else cycle[(t - 1 - prefix) % period]
        found = check.see(t, [s])
        if found is not None:
            break
    # the prefix states never equal cycle states here (distinct columns) when prefix + period <= n
    if prefix + period <= n:
        assert found == period
    else:
        assert found is not None and found % period == 0
