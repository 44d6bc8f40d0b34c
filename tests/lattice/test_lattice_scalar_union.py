"""The union of one-row parts (a written-out program's running total plus one small term): the fast insert
path agrees with the set union, and with the general sort path it replaces."""

import numpy as np

from stablehlo_sparsity.lattice.core import CsrPart, IndexPart, _scalar_union, insert_sorted, make_csr


def _row(cols, n):
    cols = np.asarray(cols, np.int64)
    return CsrPart(make_csr(np.array([0, len(cols)], np.int64), cols, 1, n))


def test_insert_sorted_is_the_sorted_union():
    rng = np.random.default_rng(0)
    for _ in range(500):
        big = np.unique(rng.integers(0, 50, rng.integers(0, 40))).astype(np.int64)
        small = np.unique(rng.integers(0, 60, rng.integers(0, 6))).astype(np.int64)
        got = insert_sorted(big, small)
        assert np.array_equal(got, np.union1d(big, small))
        assert not np.shares_memory(got, big)


def test_scalar_union_of_a_large_row_and_small_parts():
    """Mixed parts (a long CSR row, single-entry index parts, empty ones, a second short row): the set union."""
    rng = np.random.default_rng(1)
    n = 70
    for _ in range(500):
        big = np.unique(rng.integers(0, n, rng.integers(0, 40)))
        parts = [_row(big, n)] + [IndexPart(np.array([v], np.int64)) for v in rng.integers(-1, n, rng.integers(0, 5))]
        if rng.random() < 0.5:
            parts.append(_row(np.unique(rng.integers(0, n, rng.integers(0, 25))), n))
        rng.shuffle(parts)
        want = set()
        for p in parts:
            want |= {int(c) for c in (p.cols if isinstance(p, IndexPart) else p.base.indices) if c >= 0}
        got = _scalar_union(parts, n)
        assert got.shape == (1, n) and got.indices.tolist() == sorted(want)


# ---------------------------------------------------------------------------------------------- the scalar lane
from hypothesis import given, settings, strategies as st  # noqa: E402

from stablehlo_sparsity.lattice import Deps  # noqa: E402
from stablehlo_sparsity.lattice import core  # noqa: E402


def _scalar(draw_cols, n, how):
    """One-row values built every way a rule builds them: an index part, a CSR row (direct or through a row
    map), a union (the lane), a gather of a wider value."""
    cols = sorted(set(draw_cols))
    if how == "index" and len(cols) <= 1:
        return Deps(1, n, [IndexPart(np.array([cols[0] if cols else -1], np.int64))]), set(cols)
    if how == "rowmap":
        m = make_csr(np.array([0, 0, len(cols)], np.int64), np.asarray(cols, np.int64), 2, n)
        return Deps(1, n, [CsrPart(m, np.array([1], np.int64))]), set(cols)
    if how == "lane" and len(cols) >= 2:
        halves = [Deps(1, n, [_row(cols[: len(cols) // 2], n)]), Deps(1, n, [_row(cols[len(cols) // 2:], n)])]
        return Deps.union(*halves), set(cols)
    return Deps(1, n, [_row(cols, n)] if cols else []), set(cols)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 39), max_size=8),
                          st.sampled_from(["index", "rowmap", "lane", "csr"])), min_size=1, max_size=6),
       st.integers(1, 4))
def test_scalar_lane_is_the_set_union_and_every_move_agrees(items, k):
    """The union of one-row values (the lane for small rows) is the set union; and the lane's value behaves
    like any other under the moves that follow it (gather, broadcast, vstack, mask, reduce, equality)."""
    n = 40
    built = [_scalar(cols, n, how) for cols, how in items]
    want = set().union(*[w for _, w in built])
    got = Deps.union(*[d for d, _ in built])
    assert got.rows == 1 and (not want or not got.is_empty)  # (an index part of -1 is empty, not is_empty)
    assert got.to_csr().indices.tolist() == sorted(want)
    fresh = Deps.union(*[d for d, _ in built])  # moves on a value whose parts were never built
    wide = fresh.broadcast_row(k)
    assert wide.to_csr().toarray().sum(axis=1).tolist() == [len(want)] * k
    stacked = Deps.vstack([Deps.union(*[d for d, _ in built]), Deps.empty(1, n), Deps.union(*[d for d, _ in built])])
    assert [sorted(r) for r in _rows(stacked)] == [sorted(want), [], sorted(want)]
    assert sorted(_rows(Deps.union(*[d for d, _ in built]).reduce_all())[0]) == sorted(want)
    assert Deps.union(*[d for d, _ in built]).mask_rows([False]).is_empty
    assert Deps.union(*[d for d, _ in built]) == Deps(1, n, [_row(sorted(want), n)] if want else [])


def _rows(d):
    m = d.to_csr()
    return [m.indices[m.indptr[i]:m.indptr[i + 1]].tolist() for i in range(m.shape[0])]


def test_scalar_lane_stays_within_its_size():
    """Rows above ROW_LANE_ENTRIES take the array path (no Python set of a huge row)."""
    n = 3 * core.ROW_LANE_ENTRIES
    a = Deps(1, n, [_row(np.arange(0, n, 2), n)])
    b = Deps(1, n, [_row(np.arange(1, n, 2), n)])
    u = Deps.union(a, b)
    assert u._row is None and u.to_csr().indices.tolist() == list(range(n))
    small = Deps.union(Deps(1, n, [_row([1, 5], n)]), Deps(1, n, [_row([2], n)]))
    assert small._row == frozenset({1, 2, 5})


def test_take_row_is_gather_rows_of_one_index():
    rng = np.random.default_rng(3)
    n = 30
    for _ in range(100):
        k = int(rng.integers(1, 12))
        m = make_csr(*_random_rows(rng, k, n), k, n)
        parts = [CsrPart(m)] if rng.random() < 0.5 else [CsrPart(m, rng.permutation(k))]
        if rng.random() < 0.5:
            parts.append(IndexPart(rng.integers(-1, n, k)))
        d = Deps(k, n, parts)
        for i in range(k):
            assert d.take_row(i) == d.gather_rows([i])


def _random_rows(rng, k, n):
    rows = [np.unique(rng.integers(0, n, rng.integers(0, 6))) for _ in range(k)]
    indptr = np.zeros(k + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    return indptr, np.concatenate(rows).astype(np.int64) if rows else np.zeros(0, np.int64)


def test_lane_and_lazy_unions_respect_the_nonzero_budget():
    """A value above the active budget is refused when it is formed, on the fast paths too: a scalar's union in
    the lane, a small lazy union of index parts."""
    import pytest

    from stablehlo_sparsity.errors import PatternTooLargeError
    from stablehlo_sparsity.lattice import nnz_budget

    n = 40
    a, b = Deps(1, n, [_row([1, 2], n)]), Deps(1, n, [_row([3, 4], n)])
    with nnz_budget(3), pytest.raises(PatternTooLargeError):
        Deps.union(a, b)
    with nnz_budget(4):
        assert Deps.union(a, b).to_csr().indices.tolist() == [1, 2, 3, 4]
    left = Deps(10, n, [IndexPart(np.arange(10, dtype=np.int64))])
    right = Deps(10, n, [IndexPart(np.arange(10, 20, dtype=np.int64))])
    with nnz_budget(15), pytest.raises(PatternTooLargeError):
        Deps.union(left, right)
    with nnz_budget(20):
        assert Deps.union(left, right).nnz == 20


def test_take_row_gives_the_lane_for_few_columns_and_arrays_for_many():
    """``x[i]``: a row of at most TAKE_ROW_LANE columns becomes a lane value (a set), a longer one stays arrays;
    both equal ``gather_rows([i])``, empty rows (a row map's -1, an index part's -1) included."""
    from stablehlo_sparsity.lattice.core import TAKE_ROW_LANE, lane_size

    rng = np.random.default_rng(4)
    n = 300
    for _ in range(200):
        k = int(rng.integers(2, 10))
        rows = [np.unique(rng.integers(0, n, rng.integers(0, 2 * TAKE_ROW_LANE))) for _ in range(k)]
        indptr = np.zeros(k + 1, np.int64)
        np.cumsum([len(r) for r in rows], out=indptr[1:])
        m = make_csr(indptr, np.concatenate(rows).astype(np.int64), k, n)
        rowmap = rng.integers(-1, k, k)
        parts = [CsrPart(m, rowmap), IndexPart(rng.integers(-1, n, k))]
        d = Deps(k, n, parts)
        for i in range(k):
            got, want = d.take_row(i), d.gather_rows([i])
            assert got == want
            count = want.nnz
            if lane_size(got) is not None:
                assert lane_size(got) == count <= TAKE_ROW_LANE
            elif count:
                long_rows = (len(rows[rowmap[i]]) if rowmap[i] >= 0 else 0) + 1
                assert long_rows > TAKE_ROW_LANE


def test_union_of_two_lane_values_is_the_set_union_within_the_budget():
    """The two-scalar path of ``Deps.union`` (both operands in the lane: most unions of a written-out program):
    the set union, an operand itself when it already holds the other, the same rows as the general path, and the
    nonzero budget checked."""
    import pytest

    from stablehlo_sparsity.errors import PatternTooLargeError
    from stablehlo_sparsity.lattice import nnz_budget

    rng = np.random.default_rng(5)
    n = 60
    for _ in range(300):
        sa = frozenset(int(c) for c in rng.integers(0, n, rng.integers(1, 12)))
        sb = frozenset(int(c) for c in rng.integers(0, n, rng.integers(1, 12)))
        if rng.random() < 0.2:
            sb = frozenset(list(sa)[: max(1, len(sa) // 2)])          # a subset: the operand itself comes back
        a, b = Deps.of_row(n, sa), Deps.of_row(n, sb)
        u = Deps.union(a, b)
        assert u._row == sa | sb and u.rows == 1 and u.n == n
        assert u.to_csr().indices.tolist() == sorted(sa | sb)
        general = Deps.union(Deps(1, n, [_row(sorted(sa), n)]), Deps(1, n, [_row(sorted(sb), n)]))
        assert u == general
        if sb <= sa:
            assert u is a
    a, b = Deps.of_row(n, frozenset({1, 2})), Deps.of_row(n, frozenset({3, 4}))
    with nnz_budget(3), pytest.raises(PatternTooLargeError):
        Deps.union(a, b)
    with nnz_budget(4):
        assert Deps.union(a, b)._row == frozenset({1, 2, 3, 4})
