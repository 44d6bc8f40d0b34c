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
