"""The second-order column space's fast paths (:mod:`stablehlo_sparsity.analysis.second_order.encoding`) against plain
NumPy set operations: a fast path must give exactly the same columns."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from stablehlo_sparsity.analysis.second_order.encoding import distinct_columns, pair_width


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


def _hessian_by_scipy(codes: np.ndarray, n: int) -> sp.csr_array:
    u, v = (codes - n) // n, (codes - n) % n
    upper = sp.coo_array((np.ones(len(codes), bool), (u, v)), shape=(n, n))
    full = (upper + upper.T).tocsr()
    full.sort_indices()
    return full


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), data=st.data())
def test_hessian_assembly_paths_equal_the_symmetrized_upper_triangle(n, data):
    # the compiled two-pass fill (any pattern: empty rows, diagonal only, full, first-order columns in front)
    # against SciPy's U + Uᵀ; both the compiled and the SciPy path of pairs_to_hessian
    import stablehlo_sparsity.analysis.second_order.assembly  # noqa: F401  (the compiled path: C twin or numba)
    import stablehlo_sparsity.analysis.second_order.encoding as enc
    from stablehlo_sparsity.lattice.core import make_csr

    pairs = data.draw(st.sets(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=n * n))
    codes = np.array(sorted({n + min(u, v) * n + max(u, v) for u, v in pairs}), np.int64)
    first = np.array(sorted(data.draw(st.sets(st.integers(0, n - 1)))), np.int64)
    cols = np.concatenate([first, codes])
    row = make_csr(np.array([0, len(cols)], np.int64), cols, 1, pair_width(n))
    want = _hessian_by_scipy(codes, n).toarray()
    old, old_small = enc.COMPILED_ASSEMBLY, enc.SMALL_ASSEMBLY
    try:
        # the compiled kernel; the one-sort assembly of few pairs; SciPy's U + Uᵀ
        for threshold, small in ((0, old_small), (1 << 62, old_small), (1 << 62, -1)):
            enc.COMPILED_ASSEMBLY, enc.SMALL_ASSEMBLY = threshold, small
            got = enc.pairs_to_hessian(row, n)
            assert got.shape == (n, n) and got.has_canonical_format
            rows = np.repeat(np.arange(n), np.diff(got.indptr))
            assert np.all((np.diff(got.indices) > 0) | (np.diff(rows) > 0))  # each row strictly ascending
            assert np.array_equal(got.toarray(), want)
    finally:
        enc.COMPILED_ASSEMBLY, enc.SMALL_ASSEMBLY = old, old_small


def test_compiled_hessian_assembly_writes_sorted_rows_at_scale():
    import stablehlo_sparsity.analysis.second_order.encoding as enc
    from stablehlo_sparsity.lattice.core import make_csr
    from stablehlo_sparsity.analysis.second_order.assembly import symmetric_pattern

    n = 20_000
    rng = np.random.default_rng(1)
    u = rng.integers(0, n, 200_000)
    v = np.minimum(u + rng.integers(0, 300, len(u)), n - 1)
    codes = np.unique(n + u * n + v)
    assert len(codes) >= enc.COMPILED_ASSEMBLY  # numba is loaded: the default threshold takes the compiled path
    indptr, indices = symmetric_pattern(codes, n)
    want = _hessian_by_scipy(codes, n)
    assert np.array_equal(indptr, want.indptr) and np.array_equal(indices, want.indices)
    got = enc.pairs_to_hessian(make_csr(np.array([0, len(codes)], np.int64), codes, 1, pair_width(n)), n)
    assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)


def test_a_one_off_hessian_detection_does_not_import_numba():
    # importing numba and its cached kernels costs about 0.4 s, far more than the compiled assembly saves on
    # a pattern of this size: a fresh process importing the package and detecting one Hessian must not pay it
    import subprocess
    import sys

    code = ("import sys, jax.numpy as jnp, stablehlo_sparsity as ss\n"
            "from stablehlo_sparsity.analysis.second_order import encoding as enc\n"
            "f = lambda x: jnp.sum((x[1:] - x[:-1] ** 2) ** 2)\n"
            "h = ss.hessian_sparsity(f, jnp.ones(40_000), method='direct')\n"
            "assert h.nnz == 3 * 40_000 - 2 and 2 * 40_000 > enc.COMPILED_ASSEMBLY, h.nnz\n"
            "print('numba' in sys.modules)\n"
            # numba loaded now: the same detection takes the compiled assembly (its cached machine code, in a
            # fresh process) and gives the same pattern
            "from stablehlo_sparsity.analysis.second_order import assembly\n"
            "calls, kernel = [], assembly.symmetric_pattern\n"
            "assembly.symmetric_pattern = lambda *a: calls.append(1) or kernel(*a)\n"
            "g = ss.hessian_sparsity(f, jnp.ones(40_000), method='direct')\n"
            "assert calls and g == h\n"
            "print('done')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "done"]


# ---------------------------------------------------------------------------------------------- repeated rows
@settings(max_examples=60, deadline=None)
@given(st.data())
def test_row_groups_are_exact(data):
    # a value whose rows repeat (a broadcast's) is grouped exactly: every row equals its representative, and
    # rows that differ are never put together (np.unique over the rows, not a hash)
    from stablehlo_sparsity.analysis.second_order.terms import row_groups

    n = data.draw(st.integers(2, 12))
    length = data.draw(st.integers(1, n))
    distinct = data.draw(st.integers(1, 6))
    k = data.draw(st.integers(1, 80))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    base = np.stack([np.sort(rng.choice(n, length, replace=False)) for _ in range(distinct)])
    which = rng.integers(0, distinct, k)
    m = sp.csr_array((np.ones(k * length, bool), base[which].reshape(-1), np.arange(k + 1) * length), shape=(k, n))
    groups = row_groups(m)
    dense = m.toarray()
    if groups is None:
        return
    first, inverse = groups
    assert len(first) <= 0.25 * k
    assert np.array_equal(dense[first[inverse]], dense)
    assert len({dense[f].tobytes() for f in first}) == len(first)  # one representative per distinct row


def test_row_groups_decline_rows_that_differ():
    from stablehlo_sparsity.analysis.second_order.terms import row_groups

    k = 100
    eye = sp.csr_array(np.eye(k, dtype=bool))
    assert row_groups(eye) is None                      # a stencil's rows: the sample tells them apart
    ragged = sp.csr_array(np.tril(np.ones((k, k), bool)))
    assert row_groups(ragged) is None                   # rows of different lengths
    same = sp.csr_array(np.ones((k, 7), bool))
    first, inverse = row_groups(same)
    assert len(first) == 1 and np.array_equal(inverse, np.zeros(k))


def test_broadcast_rows_give_the_hessian_of_jax():
    # r_e = x_e + Σx (every row the whole of x) squared and summed, and a product of two such values with a
    # scalar: the grouped term must equal the one built row by row, and jax.hessian's pattern
    import jax
    import jax.numpy as jnp

    from stablehlo_sparsity import hessian_sparsity

    def f(x):
        r = x + jnp.sum(x) - 3.0
        s = x[0] * jnp.sum(x[:3]) + x
        return jnp.sum(r * r) + jnp.sum(r * s) + jnp.sum(jnp.sin(s)) + jnp.sum(x[::2] * x[1::2])

    for n in (16, 40):
        x = jnp.linspace(0.3, 1.7, n)
        got = hessian_sparsity(f, x).to_scipy().toarray()
        want = np.asarray(jax.hessian(f)(x)) != 0
        assert np.array_equal(got, want | got) and not (want & ~got).any()
        assert got.all()    # every pair interacts here (Σx reaches every row)


def test_entries_to_rows_by_keys_and_by_scipy_agree(monkeypatch):
    """A term's (row, pair code) entries, repeats allowed, become the same canonical rows by one sort of keys (a
    few entries) and by SciPy's COO conversion (many)."""
    from stablehlo_sparsity.analysis.second_order import encoding

    rng = np.random.default_rng(7)
    for _ in range(100):
        k, width = int(rng.integers(1, 12)), int(rng.integers(2, 300))
        m = int(rng.integers(1, 400))
        rows, cols = rng.integers(0, k, m), rng.integers(0, width, m)
        by_keys = encoding._rows_from_entries(rows, cols, k, width).to_csr()
        monkeypatch.setattr(encoding, "KEY_SORT_ENTRIES", 0)
        by_scipy = encoding._rows_from_entries(rows, cols, k, width).to_csr()
        monkeypatch.undo()
        want = sp.csr_array((np.ones(m, bool), (rows, cols)), shape=(k, width))
        want.sum_duplicates()
        for got in (by_keys, by_scipy):
            assert got.shape == (k, width) and got.has_canonical_format
            assert np.array_equal(got.indptr, want.indptr) and np.array_equal(got.indices, want.indices)


@settings(max_examples=60, deadline=None)
@given(k=st.integers(0, 40), length=st.integers(0, 6), block=st.integers(1, 50), data=st.data())
def test_triangle_codes_by_blocks_are_each_rows_pairs_in_order(k, length, block, data):
    """:func:`_triangle_codes` fills its result a block of rows at a time: any block size (one row, a partial last
    block, all rows at once) gives each row's pairs ``i ≤ j`` as codes, in order."""
    import stablehlo_sparsity.analysis.second_order.encoding as enc

    n = 50
    a = np.sort(np.array(data.draw(st.lists(st.lists(st.integers(0, n - 1), min_size=length, max_size=length),
                                            min_size=k, max_size=k)), dtype=np.int64).reshape(k, length), axis=1)
    before = enc.TRIANGLE_BLOCK_CODES
    enc.TRIANGLE_BLOCK_CODES = block
    try:
        codes = enc._triangle_codes(a, n)
    finally:
        enc.TRIANGLE_BLOCK_CODES = before
    expected = [[n + row[i] * n + row[j] for i in range(length) for j in range(i, length)] for row in a.tolist()]
    assert codes.dtype == np.int64 and codes.shape == (k, length * (length + 1) // 2)
    assert codes.tolist() == expected


@settings(max_examples=150, deadline=None)
@given(n=st.integers(2, 400), shape=st.sampled_from(["band", "ring", "grid", "any"]), reach=st.integers(0, 6),
       slack=st.sampled_from([None, 1, 4]), buckets=st.booleans(), sampled=st.booleans(), data=st.data())
def test_distinct_columns_by_marks_of_a_band_of_offsets_or_sorted(n, shape, reach, slack, buckets, sampled, data):
    """Unordered pair codes (more descents than a merge takes) within a band of the diagonal, within a band around a
    ring of ``n`` (a periodic stencil: ``{0, n - 1}`` is a neighbour pair), on a grid's few diagonals (offsets 0, 1,
    a side, its multiples), or anywhere, with first-order columns among them; ``slack`` shrinks the marks' budget
    so that each layout (the band's marks, the offsets' marks, the sort) is taken somewhere; ``buckets`` lets
    the pair-bucket kernel and the in-place de-duplication take every size; ``sampled`` lets the marks on the
    sampled diagonals (:mod:`.pair_marks`) take every size.  Always exactly ``np.unique``."""
    import stablehlo_sparsity.analysis.second_order.encoding as enc
    import stablehlo_sparsity.analysis.second_order.pair_buckets as pb
    import stablehlo_sparsity.analysis.second_order.pair_marks as pm

    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))
    m = data.draw(st.integers(1, 3_000))
    u = rng.integers(0, n, m)
    if shape == "any":
        v = rng.integers(0, n, m)
    elif shape == "grid":
        side = data.draw(st.integers(1, max(1, n // 2)))
        v = np.minimum(u + rng.integers(0, reach + 1, m) * side + rng.integers(0, 2, m), n - 1)
    else:
        step = rng.integers(-reach if shape == "ring" else 0, reach + 1, m)
        v = (u + step) % n if shape == "ring" else np.minimum(u + step, n - 1)
    lo, hi = np.minimum(u, v), np.maximum(u, v)
    cols = np.concatenate([n + lo * n + hi, rng.integers(0, n, data.draw(st.integers(0, 50)))])
    rng.shuffle(cols)
    before = enc.MARK_SLACK, enc.MARK_FLOOR, pb.MIN_BUCKET_CODES, pb.MIN_IN_PLACE, pm.MIN_MARK_CODES, pm.MARK_CHUNK
    pm.MARK_CHUNK = data.draw(st.sampled_from([5, 64, pm.MARK_CHUNK]))   # (the marks read in chunks of any size)
    if slack is not None:
        enc.MARK_SLACK, enc.MARK_FLOOR = slack, 0
    if buckets:
        pb.MIN_BUCKET_CODES = pb.MIN_IN_PLACE = 0
    if sampled:
        pm.MIN_MARK_CODES = 0

    def distinct(c):   # (the marks first, as a contraction's row asks them, then the sort's layouts)
        marked = enc.distinct_of_arrays([c], pair_width(n)) if sampled else None
        return distinct_columns(c, pair_width(n), overwrite=True) if marked is None else marked

    try:
        got = distinct(cols.copy())
        in_order = distinct(np.sort(cols))  # (the sorted-runs path)
    finally:
        enc.MARK_SLACK, enc.MARK_FLOOR, pb.MIN_BUCKET_CODES, pb.MIN_IN_PLACE, pm.MIN_MARK_CODES, pm.MARK_CHUNK = before
    assert np.array_equal(in_order, np.unique(cols))
    assert np.array_equal(got, np.unique(cols))


def _pair_rows_by_loops(out, k, left, la, right, rb, n) -> np.ndarray:
    """:func:`pair_rows` written out: every pair of each triple's two rows, into its output row (dense)."""
    want = np.zeros((k, pair_width(n)), bool)
    for t in range(len(out)):
        us = left.indices[left.indptr[la[t]]:left.indptr[la[t] + 1]] if la[t] >= 0 else []
        vs = right.indices[right.indptr[rb[t]]:right.indptr[rb[t] + 1]] if rb[t] >= 0 else []
        for u in us:
            for v in vs:
                want[out[t], n + min(u, v) * n + max(u, v)] = True
    return want


@settings(max_examples=120, deadline=None)
@given(n=st.integers(1, 30), rows=st.integers(1, 60), lengths=st.lists(st.integers(0, 5), min_size=1, max_size=3),
       square=st.booleans(), layout=st.sampled_from(["in order", "shuffled", "one row", "blocks"]), data=st.data())
def test_pair_rows_equal_every_pair_written_out(n, rows, lengths, square, layout, data):
    """The cross and full terms of :func:`pair_rows` against loops over every pair: rows of a few lengths (a
    stencil's interior and boundary, empty rows), output rows in order (written straight into the CSR), shuffled,
    in consecutive blocks, or all into one row (a contraction)."""
    from stablehlo_sparsity.analysis.second_order.encoding import pair_rows
    from stablehlo_sparsity.lattice.core import make_csr

    rng = np.random.default_rng(data.draw(st.integers(0, 2 ** 32 - 1)))

    def csr():
        lens = rng.choice([min(length, n) for length in lengths], rows)
        cols = [np.sort(rng.choice(n, size, replace=False)) for size in lens]
        ptr = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        return make_csr(ptr, np.concatenate(cols).astype(np.int64), rows, n)

    left = csr()
    right = left if square else csr()
    la = np.arange(rows, dtype=np.int64)
    rb = la.copy() if square else rng.integers(-1, rows, rows)
    if layout == "one row":
        out, k, one_per_row = np.zeros(rows, np.int64), 1, False
    else:
        k = rows + 3
        out = np.arange(rows, dtype=np.int64) + 2
        if layout == "shuffled":
            out = rng.permutation(k)[:rows]
        elif layout == "blocks":
            out[rows // 2:] += 1   # (two runs of consecutive rows)
        one_per_row = True
    got = pair_rows(out, k, left, la, right, rb, n, one_per_row=one_per_row).to_csr().toarray()
    assert np.array_equal(got, _pair_rows_by_loops(out, k, left, la, right, rb, n))


@pytest.mark.parametrize("m", [0, 1, 2, 3, 7, 128, 129, 1_000])
def test_upper_triangles_are_numpys(m):
    from stablehlo_sparsity.analysis.second_order.encoding import _upper_triangle

    iu, ju = _upper_triangle(m)
    want_u, want_j = np.triu_indices(m)
    assert np.array_equal(iu, want_u) and np.array_equal(ju, want_j) and iu.dtype == ju.dtype == np.int64


@pytest.mark.parametrize("other", ["inside", "outside", "none row"])
def test_a_broadcast_row_holding_the_other_parts_is_their_union(other):
    """``n − Σ x + x_i`` (a dense Hessian's operand): every row the broadcast row, when the other parts' columns
    lie in it; a column outside it, or rows the broadcast does not reach, take the general union."""
    from stablehlo_sparsity.analysis.second_order.encoding import _union_of_parts
    from stablehlo_sparsity.lattice.core import CsrPart, IndexPart, make_csr

    n, k = 12, 6
    row = np.array([0, 2, 3, 5, 7, 11], np.int64)
    broadcast = CsrPart(make_csr(np.array([0, len(row)], np.int64), row, 1, n), np.zeros(k, np.int64))
    cols = {"inside": np.array([0, 2, 3, 5, 7, 11]), "outside": np.array([0, 2, 3, 5, 7, 4]),
            "none row": np.array([0, -1, 3, -1, 7, 11])}[other]
    parts = [broadcast, IndexPart(cols.astype(np.int64))]
    want = np.zeros((k, n), bool)
    want[:, row] = True
    want[np.arange(k)[cols >= 0], cols[cols >= 0]] = True
    got = _union_of_parts(parts, k, n)
    assert np.array_equal(got.toarray(), want) and got.has_canonical_format
    gap = CsrPart(broadcast.base, np.array([0, 0, -1, 0, 0, 0]))   # a row it does not reach: no shortcut
    want[2] = False
    want[2, cols[2]] = cols[2] >= 0
    assert np.array_equal(_union_of_parts([gap, IndexPart(cols.astype(np.int64))], k, n).toarray(), want)


def _ring_codes(n: int, reach: int) -> np.ndarray:
    """The pair codes of a periodic band: ``{i, (i + s) mod n}`` for ``s = 0 … reach`` and every ``i``."""
    u = np.repeat(np.arange(n), reach + 1)
    v = (u + np.tile(np.arange(reach + 1), n)) % n
    return n + np.minimum(u, v) * n + np.maximum(u, v)


def test_marks_read_every_array_where_it_lies_and_merge_the_codes_off_the_sampled_diagonals():
    from stablehlo_sparsity.analysis.second_order import pair_marks as pm

    n = 40_000
    ring = _ring_codes(n, 2)      # (the wrap-around pairs {0, n-1}, {0, n-2}, {1, n-1}: far off the band's diagonals)
    first = np.arange(0, n, 7)
    none = np.full(100, -1)       # (an index part's "none")
    arrays = [ring[: len(ring) // 2].astype(np.int64), first.astype(np.int32), none, ring[len(ring) // 2:]]
    kept = [a.copy() for a in arrays]
    got = pm.distinct_by_marks(arrays, n, budget=10 * n)
    assert np.array_equal(got, np.unique(np.concatenate([ring, first])))
    chunk, pm.MARK_CHUNK = pm.MARK_CHUNK, 999   # (the marks read in chunks that split a row's)
    try:
        assert np.array_equal(pm.distinct_by_marks(arrays, n, budget=10 * n), got)
    finally:
        pm.MARK_CHUNK = chunk
    assert all(np.array_equal(a, b) for a, b in zip(arrays, kept))           # (only read)
    assert pm.distinct_by_marks(arrays, n, budget=2 * n) is None               # three diagonals, two marks a row
    assert pm.distinct_by_marks([ring[:pm.MIN_MARK_CODES - 1]], n, budget=10 * n) is None  # (too few: the sort)


def test_marks_decline_when_too_many_codes_lie_off_the_sampled_diagonals(monkeypatch):
    from stablehlo_sparsity.analysis.second_order import pair_marks as pm

    n = 50_000
    rng = np.random.default_rng(3)
    u, v = np.arange(n), rng.integers(0, n, n)
    band = _ring_codes(n, 0)       # (the diagonal: the sample sees it, and the odd random pair)
    random = n + np.minimum(u, v) * n + np.maximum(u, v)
    codes = np.concatenate([band[: pm.SAMPLE * 8], random[: pm.SAMPLE * 8 + n // 4]])   # (a quarter off: too many)
    monkeypatch.setattr(pm, "MIN_MARK_CODES", 0)
    monkeypatch.setattr(pm, "SAMPLE", len(codes))   # (one code sampled: the diagonal's)
    assert pm.distinct_by_marks([codes], n, budget=10 * n) is None
    monkeypatch.setattr(pm, "SPILL_FRACTION", 1)    # (room for all of them: merged in order)
    assert np.array_equal(pm.distinct_by_marks([codes], n, budget=10 * n), np.unique(codes))
    with pytest.raises(ValueError, match="out of range"):
        pm.distinct_by_marks([np.array([n + n * n], np.int64)], n, budget=10 * n)


def test_a_sum_of_local_terms_by_marks_is_the_pattern_of_the_sort_and_of_the_gradient_path(monkeypatch):
    # a banded logistic loss (a convolution) at a size whose reduction marks 10⁵ pair codes; the marks' pattern
    # equals the sort's (the marks turned off) and the gradient path's, and holds jax.hessian's nonzeros
    import jax
    import jax.numpy as jnp

    import stablehlo_sparsity as ss
    from stablehlo_sparsity.analysis.second_order import pair_marks as pm

    n = 8_000
    y = jnp.asarray(np.sign(np.random.default_rng(6).normal(size=n)))
    kernel = jnp.asarray([[[0.2, -0.5, 1.0, -0.5, 0.2]]])

    def f(x):
        z = jax.lax.conv_general_dilated(x[None, None, :], kernel, (1,), "SAME")[0, 0]
        return jnp.sum(jax.nn.softplus(-y * z)) + 1e-3 * jnp.sum(x * x) + x[0] * x[-1]

    x = jnp.linspace(-1.0, 1.0, n)
    calls = []
    real = pm._mark_codes

    def counting(*args):
        calls.append(len(args[0]))
        return real(*args)

    monkeypatch.setattr(pm, "_mark_codes", counting)
    marked = ss.hessian_sparsity(f, x, method="direct")
    assert sum(calls) >= 10 * n
    monkeypatch.setattr(pm, "MIN_MARK_CODES", 1 << 62)
    assert ss.hessian_sparsity(f, x, method="direct") == marked == ss.hessian_sparsity(f, x, method="via-gradient")
    dense = marked.todense()
    assert dense[0, n - 1] and dense[4, 0] and not dense[5, 0]
    small = 64
    hs = np.asarray(jax.hessian(lambda v: f(jnp.concatenate([v, x[small:]])))(x[:small])) != 0
    assert not (hs & ~dense[:small, :small]).any()
