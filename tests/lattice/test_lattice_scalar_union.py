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
