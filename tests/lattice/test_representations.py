"""Every conversion between the representations of ``Deps`` gives the sets of the general one (a dense model).

The tables are ``lattice.representations.CONVERSIONS`` (form to form, what ``Deps`` dispatches over),
``lattice.representations.PART_CONVERSIONS`` (between part kinds and into CSR) and ``lattice.core.UNION_ROUTES``
(how ``Deps.union`` joins values).  Each entry has a property test here, checked on random values against the
dense boolean model and for a canonical CSR; :func:`test_every_conversion_has_a_test` fails when an entry is
added to a table without one.
"""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

from stablehlo_sparsity.lattice import Deps
from stablehlo_sparsity.lattice import core
from stablehlo_sparsity.lattice.representations import (CONVERSIONS, CSR, LAZY_PARTS, LAZY_STACK, PART_CONVERSIONS,
                                                        ROW_LANE)
from stablehlo_sparsity.lattice.representations.csr import CsrPart, make_csr
from stablehlo_sparsity.lattice.representations.group_parts import GroupPart, combine_group_parts
from stablehlo_sparsity.lattice.representations.index_parts import IndexPart
from stablehlo_sparsity.lattice.representations.lazy_parts import csr_from_parts, gather_csr_rows
from stablehlo_sparsity.lattice.representations.materialize import _PartsRows, materialize
from stablehlo_sparsity.lattice.representations.small_unions import _scalar_union, _small_union
from stablehlo_sparsity.lattice.runs import RunPart, compact_union, csr_runs
from test_lattice_properties import MAX_N, MAX_ROWS, assert_canonical, bool_matrix, deps, index_map

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: The entries each test below covers (``test_every_conversion_has_a_test`` checks the union is every table).
COVERED: dict[str, set] = {"conversions": set(), "parts": set(), "routes": set()}


def covers(table: str, *keys):
    COVERED[table].update(keys)
    return lambda fn: fn


def _csr(model: np.ndarray) -> sp.csr_array:
    m = sp.csr_array(model.astype(bool))
    m.sort_indices()
    k, n = model.shape
    return make_csr(m.indptr.astype(np.int64), m.indices.astype(np.int64), k, n)


def _check(m: sp.csr_array, model: np.ndarray):
    assert m.shape == model.shape
    assert np.array_equal(m.toarray(), model)
    assert_canonical(Deps._materialized(m))


@st.composite
def part(draw, rows, n, kinds=("index", "csr", "csr_rowmap", "runs")):
    """One part of ``rows`` rows and its dense model: an index part, a CSR part (with or without a row map) or a
    run part."""
    kind = draw(st.sampled_from(kinds))
    if kind == "index":
        cols = draw(index_map(rows, n)) if n else np.full(rows, -1, np.int64)
        model = np.zeros((rows, n), bool)
        model[np.arange(rows)[cols >= 0], cols[cols >= 0]] = True
        return IndexPart(cols), model
    if kind == "csr_rowmap":
        k = draw(st.integers(1, MAX_ROWS))
        base = draw(bool_matrix(k, n))
        rowmap = draw(index_map(rows, k))
        return CsrPart(_csr(base), rowmap), np.where((rowmap >= 0)[:, None], base[np.maximum(rowmap, 0)], False)
    model = draw(bool_matrix(rows, n))
    if kind == "runs":
        runs = csr_runs(_csr(model), n)
        if runs is not None:
            return RunPart(runs[0], runs[1], n), model
    return CsrPart(_csr(model)), model


@st.composite
def parts(draw, rows, n, most=4, kinds=("index", "csr", "csr_rowmap", "runs")):
    items = [draw(part(rows, n, kinds)) for _ in range(draw(st.integers(1, most)))]
    return [p for p, _ in items], np.logical_or.reduce([m for _, m in items])


def lane_value(cols: set, n: int):
    """A one-row value of the row lane (or empty) and its model."""
    model = np.zeros((1, n), bool)
    model[0, sorted(cols)] = True
    d = Deps.of_row(n, frozenset(cols))
    assert d.form() == ROW_LANE or not cols
    return d, model


lane_sets = st.integers(1, MAX_N).flatmap(lambda n: st.tuples(st.just(n), st.sets(st.integers(0, n - 1), min_size=1)))


# ---------------------------------------------------------------------------------------- CONVERSIONS
@covers("conversions", (ROW_LANE, LAZY_PARTS), (ROW_LANE, CSR))
@SETTINGS
@given(lane_sets)
def test_row_lane_to_parts_and_to_csr(case):
    n, cols = case
    d, model = lane_value(cols, n)
    p = CONVERSIONS[ROW_LANE, LAZY_PARTS](d)
    _check(Deps(1, n, p).to_csr(), model)
    d, _ = lane_value(cols, n)
    _check(CONVERSIONS[ROW_LANE, CSR](d), model)
    assert d._row == frozenset(cols)  # (the set stays: the value is still a lane value)


@st.composite
def stack_items(draw):
    n = draw(st.integers(1, MAX_N))
    items = []
    for _ in range(draw(st.integers(2, 4))):
        if draw(st.booleans()):   # a scalar of the lane, as ``x[i]`` gives them
            cols = draw(st.sets(st.integers(0, n - 1), max_size=4))
            items.append(lane_value(cols, n))
        else:
            items.append(draw(deps(draw(st.integers(0, MAX_ROWS)), n, depth=2)))
    return n, items


@covers("conversions", (LAZY_STACK, LAZY_PARTS), (LAZY_STACK, CSR))
@SETTINGS
@given(stack_items())
def test_lazy_stack_to_parts_and_to_csr(case):
    n, items = case
    model = np.vstack([m for _, m in items])
    for target in (LAZY_PARTS, CSR):
        stacked = Deps.vstack([d for d, _ in items])
        if stacked.form() != LAZY_STACK:   # all empty, or kept as runs by the compact vstack
            _check(stacked.to_csr(), model)
            continue
        out = CONVERSIONS[LAZY_STACK, target](stacked)
        assert stacked._stack is None      # (the items are let go)
        _check(Deps(len(model), n, out).to_csr() if target == LAZY_PARTS else out, model)


@covers("conversions", (LAZY_PARTS, CSR))
@SETTINGS
@given(st.tuples(st.integers(0, MAX_ROWS), st.integers(0, MAX_N)).flatmap(lambda s: parts(*s)))
def test_lazy_parts_to_csr(case):
    ps, model = case
    rows, n = model.shape
    d = Deps(rows, n, ps)
    assert d.form() == LAZY_PARTS
    _check(CONVERSIONS[LAZY_PARTS, CSR](d), model)
    assert len(d._parts) <= 1                    # a union keeps its one materialized (or merged) part


@covers("conversions", (LAZY_PARTS, ROW_LANE))
@SETTINGS
@given(st.integers(1, MAX_N).flatmap(lambda n: parts(1, n)))
def test_one_row_parts_to_lane(case):
    ps, model = case
    d = Deps(1, model.shape[1], ps)
    lane = CONVERSIONS[LAZY_PARTS, ROW_LANE](d)
    if any(type(p) is RunPart for p in ps):
        assert lane is None                      # runs: the general union
    else:
        assert lane == frozenset(np.flatnonzero(model[0]).tolist())


# ---------------------------------------------------------------------------------------- PART_CONVERSIONS
shapes = st.tuples(st.integers(0, MAX_ROWS), st.integers(1, MAX_N))


@covers("parts", ("index parts", "csr"))
@SETTINGS
@given(shapes.flatmap(lambda s: parts(*s, most=6, kinds=("index",))))
def test_index_parts_to_csr(case):
    ps, model = case
    rows, n = model.shape
    _check(csr_from_parts(ps, rows, n), model)
    _check(materialize([_PartsRows(ps, rows, n)], n), model)   # (the sorting-network path, not the small union)


@covers("parts", ("csr part", "csr"))
@SETTINGS
@given(shapes.flatmap(lambda s: part(*s, kinds=("csr_rowmap",))))
def test_csr_part_through_its_row_map_to_csr(case):
    p, model = case
    _check(p.to_csr(), model)
    _check(gather_csr_rows(p.base, p.rowmap), model)


@covers("parts", ("parts", "csr", "small"))
@SETTINGS
@given(shapes.flatmap(lambda s: parts(*s, kinds=("index", "csr", "csr_rowmap"))))
def test_small_union_to_csr(case):
    ps, model = case
    m = _small_union(ps, *model.shape)
    assert m is not None
    _check(m, model)


@covers("parts", ("parts", "csr", "one row"))
@SETTINGS
@given(st.integers(1, 3 * core.MAX_INSERTED).flatmap(lambda n: parts(1, n, most=6, kinds=("index", "csr",
                                                                                           "csr_rowmap"))))
def test_one_row_union_to_csr(case):
    ps, model = case
    m = _scalar_union(ps, model.shape[1])
    assert m is not None
    _check(m, model)


@covers("parts", ("parts", "csr", "blocks"))
@SETTINGS
@given(shapes.flatmap(lambda s: parts(*s)))
def test_blocks_to_csr(case):
    ps, model = case
    rows, n = model.shape
    plain = [p for p in ps if type(p) is not RunPart] + [CsrPart(p.to_csr()) for p in ps if type(p) is RunPart]
    _check(materialize([_PartsRows(plain, rows, n)], n), model)


@covers("parts", ("parts", "runs"), ("run part", "csr"))
@SETTINGS
@given(shapes.flatmap(lambda s: parts(*s)))
def test_parts_to_runs_and_runs_to_csr(case):
    ps, model = case
    rows, n = model.shape
    for materializing in (False, True):
        merged = compact_union(ps, rows, n, materializing)
        if merged is not None:
            _check(merged.to_csr(), model)
    for p in ps:
        if type(p) is RunPart:
            assert_canonical(Deps(rows, n, [p]))


@st.composite
def group_part(draw, rows, n, source):
    """A lazy :class:`GroupPart` of ``rows`` rows over a ``source`` (value, model): random groups, ``-1`` members."""
    src, model = source
    sizes = draw(st.lists(st.integers(0, 4), min_size=rows, max_size=rows))
    indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    members = np.array(draw(st.lists(st.integers(-1, src.rows - 1), min_size=int(indptr[-1]),
                                     max_size=int(indptr[-1]))), np.int64)
    want = np.zeros((rows, n), bool)
    for i in range(rows):
        for j in members[indptr[i]:indptr[i + 1]]:
            if j >= 0:
                want[i] |= model[j]
    return GroupPart(src, indptr, members), want


@covers("parts", ("group part", "csr"), ("group parts", "group part"))
@SETTINGS
@given(st.data(), shapes, st.integers(1, MAX_ROWS))
def test_group_parts_to_csr_and_combined(data, shape, k):
    """A group part's rows are the unions of its groups (built block by block); the group parts of one source
    combine into one part with the same rows as their union, and the full reduction reads the source."""
    rows, n = shape
    source = data.draw(deps(k, n))
    (a, ma), (b, mb) = data.draw(group_part(rows, n, source)), data.draw(group_part(rows, n, source))
    _check(a.to_csr(), ma)
    assert a.built and combine_group_parts([a, b]) == [a, b]   # (a built part is read as a CSR)
    c, mc = data.draw(group_part(rows, n, source))
    (joined,) = combine_group_parts([b, c])
    _check(joined.to_csr(), mb | mc)
    d, md = data.draw(group_part(rows, n, source))
    value = Deps(rows, n, [d])
    assert np.array_equal(value.reduce_all().to_csr().toarray()[0], md.any(axis=0))
    assert not d.built


# ---------------------------------------------------------------------------------------- UNION_ROUTES
def _routes():
    return {route for value_routes, part_routes in core.UNION_ROUTES.values() for route in (*value_routes,
                                                                                           *part_routes)}


@covers("routes", *_routes())
@SETTINGS
@given(st.data(), st.integers(0, MAX_ROWS), st.integers(1, MAX_N), st.booleans())
def test_every_union_route_gives_the_union(data, rows, n, eager):
    """Each route of ``Deps.union`` that answers gives the union of its operands (lane values among them)."""
    items = []
    for _ in range(data.draw(st.integers(2, 3))):
        if rows == 1 and data.draw(st.booleans()):
            items.append(lane_value(data.draw(st.sets(st.integers(0, n - 1), min_size=1, max_size=4)), n))
        else:
            items.append(data.draw(deps(rows, n, depth=1)))
    model = np.logical_or.reduce([m for _, m in items])
    values = [d for d, _ in items if not d.is_empty]
    if len(values) < 2:
        return
    value_routes, part_routes = core.UNION_ROUTES[rows == 1]
    for route in value_routes:
        out = route(values, n)
        if out is not None:
            _check(out.to_csr(), model)
    for route in part_routes:
        out = route(core.distinct_parts(values), rows, n, eager)
        if out is not None:
            _check(out.to_csr(), model)
    _check(Deps.union(*[d for d, _ in items], eager=eager).to_csr(), model)


@SETTINGS
@given(lane_sets, lane_sets)
def test_the_pair_of_lane_values(a, b):
    """The two-value lane union (before any route): the union, one of its operands when it contains the other."""
    n = min(a[0], b[0])
    sa, sb = {c for c in a[1] if c < n} or {0}, {c for c in b[1] if c < n} or {0}
    (x, mx), (y, my) = lane_value(sa, n), lane_value(sb, n)
    out = Deps.union(x, y)
    assert out.form() == ROW_LANE and out._row == sa | sb
    assert out is x if sb <= sa else out is y if sa <= sb else True
    _check(out.to_csr(), mx | my)


def test_every_conversion_has_a_test():
    assert COVERED["conversions"] == set(CONVERSIONS)
    assert COVERED["parts"] == set(PART_CONVERSIONS)
    assert COVERED["routes"] == _routes()


@pytest.mark.parametrize("make, form", [
    (lambda: Deps.of_row(5, frozenset({1, 3})), ROW_LANE),
    (lambda: Deps.vstack([Deps.identity(2, 5, 0), Deps.identity(3, 5, 1)]), LAZY_STACK),
    (lambda: Deps.identity(3, 5, 0), LAZY_PARTS),
    (lambda: Deps.empty(3, 5), LAZY_PARTS),
])
def test_form_names_the_representation(make, form):
    d = make()
    assert d.form() == form
    d.to_csr()
    assert d.form() == (ROW_LANE if form == ROW_LANE else LAZY_PARTS)


@SETTINGS
@given(st.lists(st.lists(st.integers(0, 10**12), max_size=60), min_size=1, max_size=5), st.booleans(),
       st.booleans())
def test_one_wide_row_of_parts_merged_by_the_kernel(rows, kernel, index_part):
    """One row of several parts in a column space too wide for ``int32`` (a second-order value's pair codes) is
    materialized by the merge the second-order lattice registers (:data:`ROW_UNIONS`:
    :func:`~stablehlo_sparsity.analysis.second_order.sorted_union.union_of_sorted`, forced here at any size) into
    the exact union, the merge's output being the row itself."""
    from stablehlo_sparsity.analysis.second_order import sorted_union
    from stablehlo_sparsity.lattice.representations.materialize import ROW_UNIONS

    assert sorted_union.union_of_sorted in ROW_UNIONS

    n = 10**12 + 1
    cols = [np.unique(np.array(r, np.int64)) for r in rows]
    ps = [CsrPart(make_csr(np.array([0, len(c)], np.int64), c, 1, n)) for c in cols]
    if index_part:
        ps.append(IndexPart(np.array([cols[0][0] if len(cols[0]) else -1], np.int64)))
    before = sorted_union.MIN_KERNEL_ENTRIES
    sorted_union.MIN_KERNEL_ENTRIES = 0 if kernel else 1 << 62
    try:
        m = materialize([_PartsRows(ps, 1, n)], n)
    finally:
        sorted_union.MIN_KERNEL_ENTRIES = before
    want = np.unique(np.concatenate(cols))
    assert m.shape == (1, n) and np.array_equal(m.indices, want) and list(m.indptr) == [0, len(want)]
    assert m.has_canonical_format and m.data.all()
