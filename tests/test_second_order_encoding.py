"""The second-order column space's fast paths (:mod:`stablehlo_sparsity.second_order.encoding`) against plain
NumPy set operations: a fast path must give exactly the same columns."""

from __future__ import annotations

import numpy as np

from stablehlo_sparsity.second_order.encoding import distinct_columns, pair_width


def test_distinct_columns_of_pair_codes_already_in_order():
    # a stencil's elementwise pair rows come in code order with neighbours repeating (the in-order pass);
    # interleaved first-order columns and a band too wide for marks must not matter there
    n = 1_000
    i = np.arange(n - 1)
    rows = np.stack([n + i * n + i, n + i * n + i + 1, n + (i + 1) * n + i + 1, n + i * n + n - 1], axis=1)
    pairs = np.sort(rows.reshape(-1))
    cols = np.concatenate([pairs[:500], np.arange(0, n, 7)[::-1], pairs[500:]])
    assert np.array_equal(distinct_columns(cols, pair_width(n)), np.unique(cols))
    assert np.array_equal(distinct_columns(pairs[:1], pair_width(n)), pairs[:1])
    assert np.array_equal(distinct_columns(pairs[::-1].copy(), pair_width(n)), np.unique(pairs))  # not in order


def test_distinct_columns_merges_a_few_sorted_runs():
    # one run per lazy part of a full sum (three parts here, overlapping), with first-order columns between
    n = 2_000
    rng = np.random.default_rng(0)
    runs = [np.sort(n + rng.integers(0, n * n, 3_000)) for _ in range(3)]
    cols = np.concatenate([runs[0], rng.integers(0, n, 500), runs[1], runs[0][::7], runs[2]])
    assert np.array_equal(distinct_columns(cols, pair_width(n)), np.unique(cols))
