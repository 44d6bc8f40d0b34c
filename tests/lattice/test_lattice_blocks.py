"""Block-wise materialization (lattice/representations/materialize.py ``materialize``) against the dense boolean model.

Materialization walks the rows in blocks of about ``BLOCK_ENTRIES`` entries (counts first, then the columns
written in place), so its memory is the output plus one block and the merged blocks it keeps from the counting
pass (at most ``CACHED_BLOCK_ENTRIES`` entries).  Real blocks hold 2¹⁶ entries — larger than
anything the property tests build — so here the blocks are shrunk to a few entries: every construction of
``test_lattice_properties`` (lazy unions, row maps over row maps, group unions by every strategy, windows,
lazy vstacks) must still equal its model, and be canonical, when every block boundary falls mid-value.
"""

import contextlib

import numpy as np
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

import stablehlo_sparsity.lattice.core as core
from stablehlo_sparsity.lattice.representations import csr, small_unions
from stablehlo_sparsity.lattice.representations import materialize as materialization
from stablehlo_sparsity.lattice import CsrPart, Deps, IndexPart, gather_csr_rows
from stablehlo_sparsity.lattice.core import RowSource, materialize
from test_lattice_properties import MAX_N, MAX_ROWS, assert_canonical, deps, dense

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@contextlib.contextmanager
def blocks(entries: int, plan_rows: int, long_row: int | None = None, cached: int | None = None):
    """Tiny blocks (and, with ``long_row``, the slice-per-row gather for rows that long on average; with
    ``cached``, that many entries of merged blocks kept from the counting pass for the writing pass).  The knobs
    are set in the modules that read them (lattice/representations/)."""
    knobs = [(materialization, "BLOCK_ENTRIES", entries), (materialization, "PLAN_ROWS", plan_rows),
             # the values here are small: without this, unions of up to 64 rows take the one-sort path and never
             # reach the block machinery this file tests (one-row unions still do: they have a path of their own)
             (small_unions, "SMALL_UNION_ENTRIES", -1)]
    if long_row is not None:
        knobs.append((csr, "LONG_ROW", long_row))
    if cached is not None:
        knobs.append((materialization, "CACHED_BLOCK_ENTRIES", cached))
    saved = [(module, name, getattr(module, name)) for module, name, _ in knobs]
    for module, name, value in knobs:
        setattr(module, name, value)
    try:
        yield
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


@SETTINGS
@given(st.data(), st.tuples(st.integers(0, MAX_ROWS), st.integers(0, MAX_N)), st.integers(1, 4), st.integers(1, 3),
       st.sampled_from([None, 1, 2]), st.sampled_from([0, 3, None]))
def test_constructions_match_their_model_with_tiny_blocks(data, shape, entries, plan_rows, long_row, cached):
    # cached: no merged block kept (every block merged twice), the first few kept (a block boundary falls
    # between kept and merged-again blocks), or all of them (the default budget)
    with blocks(entries, plan_rows, long_row, cached):
        d, model = data.draw(deps(*shape, depth=3))
        assert np.array_equal(dense(d), model)
        assert_canonical(d)


@SETTINGS
@given(st.data(), st.lists(st.integers(0, 5), min_size=1, max_size=4), st.integers(1, 3))
def test_lazy_vstack_writes_every_item_into_one_output(data, sizes, entries):
    n = 6
    with blocks(entries, 2):
        pairs = [data.draw(deps(k, n, depth=2)) for k in sizes]
        stacked = Deps.vstack([d for d, _ in pairs])
        want = np.vstack([m for _, m in pairs]) if pairs else np.zeros((0, n), bool)
        assert np.array_equal(dense(stacked), want)
        assert_canonical(stacked)
        # the stacked parts (built on first use by the other moves) agree with the direct materialization
        again = Deps(stacked.rows, n, Deps.vstack([d for d, _ in pairs]).parts)
        assert np.array_equal(dense(again), want)


def test_gather_of_long_rows_splits_into_blocks_of_single_rows():
    """Rows longer than a block are blocks of their own; an index map may repeat and skip rows."""
    base = sp.csr_array(np.array([[1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0], [1, 0, 1, 0, 1, 0]], bool))
    idx = np.array([0, -1, 2, 0, 1, 2, 2])
    want = np.where((idx >= 0)[:, None], base.toarray()[np.maximum(idx, 0)], False)
    for entries in (1, 2, 5, 1 << 18):
        for long_row in (1, 3, 1 << 20):
            with blocks(entries, 2, long_row):
                got = gather_csr_rows(base, idx)
            assert np.array_equal(got.toarray(), want)


def test_materialize_counts_before_it_allocates():
    """The nonzero budget is checked on the exact count (after merging duplicates), before the output exists."""
    cols = np.array([0, 1, 2, 3], np.int32)
    parts = [IndexPart(cols), IndexPart(cols), IndexPart(cols)]  # 12 entries, 4 distinct
    with core.nnz_budget(4):
        m = Deps(4, 4, parts).to_csr()
    assert m.nnz == 4
    import pytest

    from stablehlo_sparsity.errors import PatternTooLargeError

    with core.nnz_budget(3), pytest.raises(PatternTooLargeError, match="would need 8 nonzeros"):
        Deps(4, 4, parts + [IndexPart(np.array([1, 2, 3, 0], np.int32))]).to_csr()


def test_single_index_part_shares_its_columns():
    """One dependency on every row: the CSR's column array is the index part's (no copy)."""
    d = Deps.identity(5, 9, 2)
    m = d.to_csr()
    assert np.shares_memory(m.indices, d.parts[0].cols)
    assert np.array_equal(m.toarray(), np.eye(5, 9, 2, dtype=bool))


class _Diagonal(RowSource):
    """A source from outside the lattice (the protocol is public): row i depends on column i."""

    exact = True

    def bounds(self, lo, hi):
        return np.ones(hi - lo, np.int64)

    def block(self, lo, hi):
        return np.arange(hi - lo + 1, dtype=np.int64), np.arange(lo, hi, dtype=np.int32)


def test_materialize_stacks_sources():
    parts = [CsrPart(sp.csr_array(np.array([[0, 1, 1]], bool)), np.array([0, -1, 0]))]
    with blocks(1, 1):
        m = materialize([_Diagonal(2), core._PartsRows(parts, 3, 3)], 3)
    assert np.array_equal(m.toarray(), [[1, 0, 0], [0, 1, 0], [0, 1, 1], [0, 0, 0], [0, 1, 1]])
    assert m.indices.dtype == np.int32 and m.indptr.dtype == np.int32


def test_sorting_networks_sort_every_zero_one_input():
    """The 0-1 principle: a comparator network sorts every input iff it sorts every 0/1 input."""
    import itertools

    for p in range(2, len(core.SORTING_NETWORKS)):
        inputs = np.array(list(itertools.product([0, 1], repeat=p)), np.int32)  # (2^p, p): rows to sort
        cols = core.sorted_columns([inputs[:, j] for j in range(p)])
        assert np.array_equal(np.stack(cols, axis=1), np.sort(inputs, axis=1)), p


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 12), st.integers(0, 30), st.data())
def test_union_of_index_columns_is_sorted_and_distinct(p, b, data):
    cols = [np.array(data.draw(st.lists(st.integers(-1, 6), min_size=b, max_size=b)), np.int32) for _ in range(p)]
    counts = core._index_counts(cols)
    flat = core._index_columns(cols)
    start = 0
    for r in range(b):
        want = sorted({int(c[r]) for c in cols if c[r] >= 0})
        assert counts[r] == len(want)
        assert flat[start:start + len(want)].tolist() == want
        start += len(want)
    assert start == len(flat)
