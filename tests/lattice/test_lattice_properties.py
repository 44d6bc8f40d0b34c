"""Property tests of the lattice moves against a dense boolean reference model.

Random :class:`Deps` values are built by random sequences of the moves themselves (so lazy unions of index
and CSR parts, row maps over row maps, materialized and not), each paired with the dense ``(rows, n)`` bool
matrix it must equal.  Every law is then checked on the model: union is the elementwise OR (commutative,
associative, idempotent), ``gather_rows`` composes, ``mask_rows`` clears rows, the group union is ``R @ S``
whatever the description of its groups and its strategy, the windowed unions (windows along dimensions,
reductions over dimensions, slice and prefix unions) follow their definitions, ``to_csr`` is canonical, and
the lazy and materialized forms agree — also past ``MAX_LAZY_PARTS`` and on zero-size shapes.
"""

from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

from stablehlo_sparsity.lattice import groups as groups_module
from stablehlo_sparsity.lattice import (MAX_LAZY_PARTS, CsrPart, Deps, Groups, IndexPart, group_union, prefix_union,
                                       reduce_dims, relation_along, slice_union, window_union)

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

MAX_ROWS, MAX_N = 7, 9


def dense(d: Deps) -> np.ndarray:
    return d.to_csr().toarray()


def assert_canonical(d: Deps):
    """``to_csr`` is a canonical bool CSR: right shape, sorted unique columns per row, only True stored."""
    m = d.to_csr()
    assert m.shape == (d.rows, d.n)
    assert m.dtype == bool and np.all(m.data)
    indptr = np.asarray(m.indptr)
    assert indptr[0] == 0 and np.all(np.diff(indptr) >= 0) and indptr[-1] == len(m.indices)
    for r in range(d.rows):
        row = m.indices[indptr[r]:indptr[r + 1]]
        assert np.all(np.diff(row) > 0)
        assert np.all((row >= 0) & (row < d.n))


# ---------------------------------------------------------------- random values paired with their model
@st.composite
def index_map(draw, k_out, k_in):
    """An index map of length ``k_out`` into ``k_in`` rows (-1 = empty row)."""
    return np.array(draw(st.lists(st.integers(-1, k_in - 1), min_size=k_out, max_size=k_out)), np.int64)


@st.composite
def bool_matrix(draw, rows, cols, p=None):
    flat = draw(st.lists(st.booleans(), min_size=rows * cols, max_size=rows * cols))
    return np.array(flat, bool).reshape(rows, cols)


LEAVES = ["empty", "full", "identity", "index", "csr", "csr_rowmap"]
NODES = ["union", "gather", "mask", "group", "group_dense", "vstack", "broadcast", "materialize"]


@st.composite
def deps(draw, rows, n, depth=2):
    """A (Deps, dense model) pair of shape (rows, n), built by up to ``depth`` levels of moves."""
    kind = draw(st.sampled_from(LEAVES + (NODES if depth > 0 else [])))
    if kind == "empty":
        return Deps.empty(rows, n), np.zeros((rows, n), bool)
    if kind == "full":
        return Deps.full(rows, n), np.ones((rows, n), bool)
    if kind == "identity":
        if rows > n:
            return draw(deps(rows, n, 0))
        off = draw(st.integers(0, n - rows))
        model = np.zeros((rows, n), bool)
        model[np.arange(rows), off + np.arange(rows)] = True
        return Deps.identity(rows, n, off), model
    if kind == "index":
        if n == 0:
            return Deps.empty(rows, n), np.zeros((rows, n), bool)
        cols = draw(index_map(rows, n))
        model = np.zeros((rows, n), bool)
        model[np.arange(rows)[cols >= 0], cols[cols >= 0]] = True
        return Deps(rows, n, [IndexPart(cols)]), model
    if kind == "csr":
        model = draw(bool_matrix(rows, n))
        return Deps.from_csr(sp.csr_array(model)), model
    if kind == "csr_rowmap":  # a CSR part seen through a row map, never materialized
        k = draw(st.integers(1, MAX_ROWS))
        base = draw(bool_matrix(k, n))
        rowmap = draw(index_map(rows, k))
        model = np.where((rowmap >= 0)[:, None], base[np.maximum(rowmap, 0)], False)
        m = sp.csr_array(base)
        m.sort_indices()
        return Deps(rows, n, [CsrPart(m, rowmap)] if m.nnz else []), model
    if kind == "union":
        items = [draw(deps(rows, n, depth - 1)) for _ in range(draw(st.integers(1, 3)))]
        return Deps.union(*[d for d, _ in items]), np.logical_or.reduce([m for _, m in items])
    if kind == "gather":
        k = draw(st.integers(0, MAX_ROWS))
        d, m = draw(deps(k, n, depth - 1))
        if k == 0:
            return d.gather_rows(np.full(rows, -1, np.int64)), np.zeros((rows, n), bool)
        idx = draw(index_map(rows, k))
        model = np.where((idx >= 0)[:, None], m[np.maximum(idx, 0)], False)
        return d.gather_rows(idx), model
    if kind == "mask":
        d, m = draw(deps(rows, n, depth - 1))
        keep = np.array(draw(st.lists(st.booleans(), min_size=rows, max_size=rows)), bool)
        return d.mask_rows(keep), m & keep[:, None]
    if kind == "group":
        k = draw(st.integers(0, MAX_ROWS))
        d, m = draw(deps(k, n, depth - 1))
        R = draw(bool_matrix(rows, k))
        return group_union(d, Groups.from_matrix(sp.csr_array(R))), (R.astype(int) @ m.astype(int)) > 0
    if kind == "group_dense":
        k = draw(st.integers(1, MAX_ROWS))
        d, m = draw(deps(k, n, depth - 1))
        g = draw(st.integers(0, 4))
        table = np.array([draw(index_map(g, k)) for _ in range(rows)], np.int64).reshape(rows, g)
        return group_union(d, Groups.from_table(table)), _table_model(m, table, n)
    if kind == "vstack":
        cut = draw(st.integers(0, rows))
        (a, ma), (b, mb) = draw(deps(cut, n, depth - 1)), draw(deps(rows - cut, n, depth - 1))
        return Deps.vstack([a, b]), np.vstack([ma, mb])
    if kind == "broadcast":
        d, m = draw(deps(1, n, depth - 1))
        return d.broadcast_row(rows), np.repeat(m, rows, axis=0)
    # materialize
    d, m = draw(deps(rows, n, depth - 1))
    d.to_csr()
    return d, m


def _table_model(m, table, n):
    out = np.zeros((table.shape[0], n), bool)
    for i, row in enumerate(table):
        for j in row:
            if j >= 0:
                out[i] |= m[j]
    return out


shapes = st.tuples(st.integers(0, MAX_ROWS), st.integers(0, MAX_N))


# ---------------------------------------------------------------- laws
@SETTINGS
@given(st.data(), shapes)
def test_every_construction_matches_its_model_and_is_canonical(data, shape):
    d, m = data.draw(deps(*shape, depth=3))
    assert (d.rows, d.n) == shape
    assert np.array_equal(dense(d), m)
    assert_canonical(d)
    assert d.nnz == m.sum()
    assert np.array_equal(d.row_nonempty(), m.any(axis=1))
    assert d.is_empty == (not d.parts)
    if d.is_empty:
        assert not m.any()


@SETTINGS
@given(st.data(), shapes)
def test_union_is_commutative_associative_idempotent(data, shape):
    (a, ma), (b, mb), (c, mc) = [data.draw(deps(*shape)) for _ in range(3)]
    assert Deps.union(a, b) == Deps.union(b, a)
    assert np.array_equal(dense(Deps.union(a, b)), ma | mb)
    assert Deps.union(Deps.union(a, b), c) == Deps.union(a, Deps.union(b, c)) == Deps.union(a, b, c)
    assert Deps.union(a, a) == a
    assert Deps.union(a, Deps.empty(*shape)) == a


@SETTINGS
@given(st.data(), st.integers(0, MAX_ROWS), st.integers(1, MAX_ROWS), st.integers(0, MAX_ROWS), st.integers(0, MAX_N))
def test_gather_rows_composes(data, k0, k1, k2, n):
    """gather(gather(S, i), j) == gather(S, i∘j), with -1 absorbing."""
    d, m = data.draw(deps(k1, n))
    i = data.draw(index_map(k0 or 1, k1))[:k0] if k0 else np.zeros(0, np.int64)
    j = data.draw(index_map(k2, k0)) if k0 else np.full(k2, -1, np.int64)
    composed = np.where(j >= 0, i[np.maximum(j, 0)] if k0 else -1, -1)
    assert d.gather_rows(i).gather_rows(j) == d.gather_rows(composed)
    want = np.where((composed >= 0)[:, None], m[np.maximum(composed, 0)], False)
    assert np.array_equal(dense(d.gather_rows(composed)), want)


@SETTINGS
@given(st.data(), shapes)
def test_mask_rows_clears_exactly_the_dropped_rows(data, shape):
    d, m = data.draw(deps(*shape))
    keep = np.array(data.draw(st.lists(st.booleans(), min_size=shape[0], max_size=shape[0])), bool)
    assert np.array_equal(dense(d.mask_rows(keep)), m & keep[:, None])
    assert d.mask_rows(np.ones(shape[0], bool)) == d
    assert d.mask_rows(np.zeros(shape[0], bool)).nnz == 0


@SETTINGS
@given(st.data(), st.integers(0, MAX_ROWS), st.integers(0, MAX_ROWS), st.integers(0, MAX_N))
def test_group_union_is_boolean_matrix_product(data, k_out, k, n):
    """Every description of the same groups (matrix, lists, pairs, table when uniform) and every strategy
    gives ``R @ S``."""
    d, m = data.draw(deps(k, n))
    R = data.draw(bool_matrix(k_out, k))
    want = (R.astype(int) @ m.astype(int)) > 0
    rows, cols = np.nonzero(R)
    order = data.draw(st.permutations(range(len(rows)))) if len(rows) else []
    indptr = np.concatenate([[0], np.cumsum(R.sum(axis=1))]).astype(np.int64)
    for groups in (Groups.from_matrix(sp.csr_array(R)), Groups.from_lists(indptr, cols),
                   Groups.from_pairs(rows[list(order)], cols[list(order)], k_out)):
        for strategy in ("auto", "compose"):
            got = group_union(d, groups, strategy=strategy)
            assert np.array_equal(dense(got), want), strategy
            assert_canonical(got)
        assert groups.as_matrix(k).toarray().tolist() == R.tolist()


@SETTINGS
@given(st.data(), st.integers(0, MAX_ROWS), st.integers(0, MAX_N), st.integers(0, MAX_LAZY_PARTS + 6))
def test_one_group_is_the_union_of_its_members(data, k, n, g):
    """One output row (a contraction to a scalar) over a long value takes the reduction of its members' gather
    (from ``groups.ONE_GROUP_ROWS`` rows, lowered here to reach it on short values): the same row as every other
    path, from a table (``-1`` members skipped) and from lists — also over a value of no rows, every member -1."""
    d, m = data.draw(deps(k, n))
    members = np.array(data.draw(st.lists(st.integers(-1, k - 1), min_size=g, max_size=g)), np.int64)
    want = m[members[members >= 0]].any(axis=0, keepdims=True)
    for groups in (Groups.from_table(members[None, :]), Groups.from_lists(np.array([0, g], np.int64), members)):
        with mock.patch.object(groups_module, "ONE_GROUP_ROWS", 1):
            got = group_union(d, groups)
        assert np.array_equal(dense(got), want)
        assert_canonical(got)
        assert got == group_union(d, groups) == group_union(d, groups, strategy="compose")


@SETTINGS
@given(st.data(), st.integers(0, MAX_ROWS), st.integers(0, MAX_ROWS), st.integers(0, MAX_N),
       st.integers(0, MAX_LAZY_PARTS + 6))
def test_group_union_follows_its_table(data, k_out, k, n, g):
    """Lazy for small widths, a sorted index table or a gather past MAX_LAZY_PARTS: the same relation, also
    member-major and composed."""
    d, m = data.draw(deps(k, n))
    table = np.array(data.draw(st.lists(st.integers(-1, k - 1), min_size=k_out * g, max_size=k_out * g)),
                     np.int64).reshape(k_out, g)
    got = group_union(d, Groups.from_table(table))
    assert np.array_equal(dense(got), _table_model(m, table, n))
    assert got == group_union(d, Groups.member_major(table.T))
    assert got == group_union(d, Groups.from_table(table), strategy="compose")
    assert got == group_union(d, Groups.from_matrix(Groups.from_table(table).as_matrix(k)))


@SETTINGS
@given(st.data(), st.lists(st.integers(1, 4), min_size=1, max_size=3), st.integers(0, MAX_N))
def test_windowed_unions_follow_their_definitions(data, shape, n):
    """A window relation per dimension, the reduction over dimensions, the slice union and the prefix
    union, against a dense model built element by element."""
    shape = tuple(shape)
    size = int(np.prod(shape))
    d, m = data.draw(deps(size, n))
    mm = m.reshape(shape + (n,))

    def rows(a):  # (..., n) -> (rows, n), also for n = 0
        return a.reshape(int(np.prod(a.shape[:-1])), n)

    def along(a, dim, r):
        return np.moveaxis(np.tensordot(r.astype(int), np.moveaxis(a, dim, 0).astype(int), axes=1) > 0, 0, dim)

    rels = [data.draw(bool_matrix(data.draw(st.integers(0, 3)), s)) for s in shape]  # a relation per dim
    model = mm
    for dim, r in enumerate(rels):
        model = along(model, dim, r)
    assert np.array_equal(dense(window_union(d, shape, [sp.csr_array(r) for r in rels])), rows(model))
    dim = data.draw(st.integers(0, len(shape) - 1))
    assert np.array_equal(dense(relation_along(d, shape, dim, sp.csr_array(rels[dim]))), rows(along(mm, dim, rels[dim])))
    dims = sorted(data.draw(st.sets(st.integers(0, len(shape) - 1))))
    red = mm.any(axis=tuple(dims)) if dims else mm
    assert np.array_equal(dense(reduce_dims(d, shape, dims)), rows(red))
    assert np.array_equal(dense(slice_union(d, shape, dim)),
                          rows(np.broadcast_to(mm.any(axis=dim, keepdims=True), mm.shape)))
    length = shape[-1]
    got = prefix_union(d, length)
    assert np.array_equal(dense(got), rows(np.logical_or.accumulate(m.reshape(size // length, length, n), axis=1)))
    assert_canonical(got)


@SETTINGS
@given(st.data(), st.integers(0, MAX_ROWS), st.integers(1, MAX_N))
def test_union_past_max_lazy_parts_stays_bounded(data, rows, n):
    """More distinct parts than MAX_LAZY_PARTS, at once or accumulated one by one (a loop writing slot by
    slot): the part count stays bounded (compaction) and the relation is unchanged."""
    count = MAX_LAZY_PARTS + data.draw(st.integers(1, 12))
    items = [Deps(rows, n, [IndexPart(data.draw(index_map(rows, n)))]) for _ in range(count)]
    want = np.logical_or.reduce([dense(d) for d in items])
    at_once = Deps.union(*items)
    assert len(at_once.parts) <= MAX_LAZY_PARTS
    assert np.array_equal(dense(at_once), want)
    assert_canonical(at_once)
    acc = items[0]
    for d in items[1:]:
        acc = Deps.union(acc, d)
        assert len(acc.parts) <= MAX_LAZY_PARTS
    assert np.array_equal(dense(acc), want)


@SETTINGS
@given(st.data(), shapes)
def test_lazy_and_materialized_forms_agree(data, shape):
    d, m = data.draw(deps(*shape, depth=3))
    mat = Deps.from_csr(d.to_csr())
    assert mat == d
    k = data.draw(st.integers(0, MAX_ROWS))
    idx = data.draw(index_map(k, shape[0])) if shape[0] else np.full(k, -1, np.int64)
    assert mat.gather_rows(idx) == d.gather_rows(idx)
    e, _ = data.draw(deps(*shape))
    assert Deps.union(mat, e) == Deps.union(d, e)
    assert mat.reduce_all() == d.reduce_all()


@SETTINGS
@given(st.data(), shapes)
def test_reduce_all_and_broadcast_row(data, shape):
    d, m = data.draw(deps(*shape))
    r = d.reduce_all()
    assert (r.rows, r.n) == (1, shape[1])
    assert np.array_equal(dense(r)[0], m.any(axis=0))
    k = data.draw(st.integers(0, MAX_ROWS))
    assert np.array_equal(dense(r.broadcast_row(k)), np.repeat(m.any(axis=0)[None], k, axis=0))


@SETTINGS
@given(st.data(), st.lists(st.integers(0, 4), min_size=1, max_size=4), st.integers(0, MAX_N))
def test_vstack_is_row_concatenation(data, sizes, n):
    items = [data.draw(deps(k, n)) for k in sizes]
    got = Deps.vstack([d for d, _ in items])
    assert np.array_equal(dense(got), np.vstack([m for _, m in items]).reshape(sum(sizes), n))
    assert_canonical(got)


def test_zero_size_shapes():
    """Zero rows or zero columns: every move still works and stays empty-shaped."""
    for rows, n in [(0, 0), (0, 5), (4, 0)]:
        for d in (Deps.empty(rows, n), Deps.full(rows, n), Deps.identity(rows, n, 0) if rows <= n else None):
            if d is None:
                continue
            assert d.to_csr().shape == (rows, n)
            assert d.gather_rows(np.full(3, -1)).to_csr().shape == (3, n)
            assert d.mask_rows(np.zeros(rows, bool)).to_csr().shape == (rows, n)
            assert group_union(d, Groups.from_matrix(sp.csr_array((2, rows), dtype=bool))).to_csr().shape == (2, n)
            assert group_union(d, Groups.from_table(np.full((2, 3), -1))).to_csr().shape == (2, n)
            assert d.reduce_all().to_csr().shape == (1, n)
            assert Deps.union(d, d).to_csr().shape == (rows, n)
            assert Deps.vstack([d, d]).to_csr().shape == (2 * rows, n)
            assert d.nnz == 0 or n > 0


def test_worked_examples_of_the_docstring():
    a = Deps.from_csr(sp.csr_array(np.array([[1, 0], [0, 1]], bool)))
    b = Deps.from_csr(sp.csr_array(np.array([[0, 1], [0, 0]], bool)))
    assert np.array_equal(dense(Deps.union(a, b)), [[True, True], [False, True]])
    assert np.array_equal(dense(a.gather_rows([1, -1, 0])), [[False, True], [False, False], [True, False]])
    assert np.array_equal(dense(group_union(Deps.union(a, b), Groups.from_table([[0, 1]]))), [[True, True]])


@pytest.mark.parametrize("groups", [Groups.from_lists(np.array([0, 1, 2]), np.array([-1, -1])),
                                    Groups.from_lists(np.array([0, 2]), np.array([-1, -1])),
                                    Groups.from_table(np.full((2, 1), -1)), Groups.from_table(np.full((3, 4), -1))],
                         ids=["lists", "one-list", "table-1", "table-4"])
def test_group_union_over_a_value_of_no_rows_is_empty(groups):
    """A value of no rows that still holds a part (an argument of shape ``(0,)``): every member is ``-1``, so
    every output row is empty — on every path, not an index error."""
    d = Deps.identity(0, 5, 0)
    for one_group_rows in (groups_module.ONE_GROUP_ROWS, 0):
        with mock.patch.object(groups_module, "ONE_GROUP_ROWS", one_group_rows):
            got = group_union(d, groups)
        assert got.rows == groups.k_out and got.to_csr().nnz == 0
