"""Lattice fast paths (sorting-network unions, lazy vstack, int32 columns) against a dense boolean model."""

import numpy as np
from hypothesis import given, settings, strategies as st

from stablehlo_sparsity.lattice import Deps, IndexPart


def dense(d: Deps) -> np.ndarray:
    return d.to_csr().toarray()


@st.composite
def index_deps(draw, rows, n):
    cols = draw(st.lists(st.integers(-1, n - 1), min_size=rows, max_size=rows))
    return Deps(rows, n, [IndexPart(np.array(cols, dtype=np.int32))])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 7), st.integers(1, 12), st.data())
def test_union_of_index_parts_matches_dense_or(rows, p, data):
    n = 9
    parts = [data.draw(index_deps(rows, n)) for _ in range(p)]
    got = Deps.union(*parts)
    want = np.zeros((rows, n), bool)
    for d in parts:
        want |= dense(d)
    assert np.array_equal(dense(got), want)
    csr = got.to_csr()
    for r in range(rows):  # canonical: sorted, unique
        row = csr.indices[csr.indptr[r]:csr.indptr[r + 1]]
        assert np.all(np.diff(row) > 0)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=4), st.data())
def test_vstack_matches_dense_vstack(sizes, data):
    n = 7
    items = []
    for k in sizes:
        d = data.draw(index_deps(k, n))
        if data.draw(st.booleans()):  # mix in a materialized CSR part
            d = Deps.from_csr(d.to_csr())
        if data.draw(st.booleans()):
            d = Deps.union(d, data.draw(index_deps(k, n)))
        items.append(d)
    got = Deps.vstack(items)
    assert np.array_equal(dense(got), np.vstack([dense(d) for d in items]))


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 70), st.integers(2, 5), st.integers(0, 2), st.data())
def test_small_union_of_mixed_parts_matches_block_merge(rows, p, wide, data):
    """The few-row union (one sort of ``row · n + column`` keys) against the block materialization it skips,
    on index parts and CSR parts seen through row maps (``-1`` rows), in narrow and pair-wide column spaces."""
    from stablehlo_sparsity.lattice.core import CsrPart, _PartsRows, _small_union, make_csr, materialize

    n = (9, 10_100, 1 << 40)[wide]
    parts: list = []
    for _ in range(p):
        if data.draw(st.booleans()):
            cols = data.draw(st.lists(st.integers(-1, 8), min_size=rows, max_size=rows))
            parts.append(IndexPart(np.array(cols, dtype=np.int64) * (n // 9) if wide else np.array(cols, np.int32)))
            parts[-1].cols[np.array(cols) < 0] = -1
        else:
            base_rows = data.draw(st.integers(1, 6))
            sets = [sorted(set(data.draw(st.lists(st.integers(0, 8), max_size=5)))) for _ in range(base_rows)]
            ind = np.array([c * (n // 9) for s in sets for c in s], np.int64)
            ptr = np.cumsum([0] + [len(s) for s in sets])
            base = make_csr(ptr, ind, base_rows, n)
            rowmap = np.array(data.draw(st.lists(st.integers(-1, base_rows - 1), min_size=rows, max_size=rows)))
            parts.append(CsrPart(base, rowmap))
    got = _small_union(parts, rows, n)
    want = materialize([_PartsRows(parts, rows, n)], n)
    assert got is not None
    assert np.array_equal(np.asarray(got.indptr, np.int64), np.asarray(want.indptr, np.int64))
    assert np.array_equal(np.asarray(got.indices, np.int64), np.asarray(want.indices, np.int64))
    assert got.shape == want.shape and got.has_canonical_format


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 40), st.integers(2, 4), st.data())
def test_a_lazy_union_is_the_eager_one_under_every_later_move(rows, p, data):
    """``Deps.union(..., eager=False)`` (the second-order walk adding a pair term) keeps a small value's parts
    unmaterialized; its rows, its union with more values, its gathers and its reduction are the eager union's."""
    n = 9
    items = []
    for _ in range(p):
        d = data.draw(index_deps(rows, n))
        if data.draw(st.booleans()):  # a materialized CSR part, as a first-order result is
            d = Deps.from_csr(Deps.union(d, data.draw(index_deps(rows, n))).to_csr())
        items.append(d)
    eager, lazy = Deps.union(*items), Deps.union(*items, eager=False)
    assert np.array_equal(dense(lazy), dense(eager))
    other = data.draw(index_deps(rows, n))
    assert np.array_equal(dense(Deps.union(Deps.union(*items, eager=False), other)), dense(Deps.union(eager, other)))
    idx = np.array(data.draw(st.lists(st.integers(-1, rows - 1), min_size=1, max_size=rows)), np.int64)
    assert np.array_equal(dense(Deps.union(*items, eager=False).gather_rows(idx)), dense(eager.gather_rows(idx)))
    assert np.array_equal(dense(Deps.union(*items, eager=False).reduce_all()), dense(eager.reduce_all()))


def test_a_lazy_union_is_refused_exactly_when_the_eager_one_is():
    """A lazy union whose parts' entries pass the nonzero budget is materialized at once: refused when the union
    itself passes the budget, kept (as the eager union) when the parts overlap enough to fit."""
    import pytest

    from stablehlo_sparsity import PatternTooLargeError
    from stablehlo_sparsity.lattice import nnz_budget

    n = 40
    a = Deps(20, n, [IndexPart(np.arange(20, dtype=np.int64))])
    b = Deps(20, n, [IndexPart(np.arange(20, 40, dtype=np.int64))])
    same = Deps(20, n, [IndexPart(np.arange(20, dtype=np.int64))])
    with nnz_budget(30):
        with pytest.raises(PatternTooLargeError):
            Deps.union(Deps.from_csr(a.to_csr()), b, eager=False)
        kept = Deps.union(Deps.from_csr(a.to_csr()), same, eager=False)   # 40 entries, a union of 20
        assert kept.nnz == 20
    with nnz_budget(40):
        lazy = Deps.union(Deps.from_csr(a.to_csr()), b, eager=False)
        assert lazy._csr is None and lazy.nnz == 40                        # parts within the budget: lazy
    mapped = Deps.from_csr(Deps.union(a, b).to_csr()).gather_rows(np.array([3, -1, 3] + list(range(17)), np.int64))
    assert any(getattr(p, "rowmap", None) is not None for p in mapped.parts)   # a CSR part seen through a row map
    with nnz_budget(38):                                                   # its rows hold 38 entries, b's 20
        with pytest.raises(PatternTooLargeError):
            Deps.union(mapped, b, eager=False)
    with nnz_budget(58):
        lazy = Deps.union(mapped, b, eager=False)
        assert lazy._csr is None and np.array_equal(dense(lazy), dense(Deps.union(mapped, b)))
