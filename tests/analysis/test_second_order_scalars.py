"""The direct Hessian analysis on programs written out scalar by scalar (the CUTEst-style objectives of
``benchmarks/hessian_detect.py``), and the fast paths that serve them: one-triple pair rows, unions of
one-row values, and the sorted-runs de-duplication of a full reduction."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

from stablehlo_sparsity.lattice import Deps
from stablehlo_sparsity.analysis.second_order.encoding import distinct_columns, pair_rows, pair_width
from test_second_order import check, numerical_hessian


def written_out(n, c):
    def f(x):
        total = 0.0
        for i in range(n - 1):
            total = total + (c[i] * x[i] * x[i + 1] - 1.0) ** 2 + jnp.sin(x[i]) * c[i]
        total = total + x[0] / (1.0 + x[n - 1] ** 2) + x[2] * 0.0 * x[n - 2]
        return total
    return f


def test_written_out_objective_matches_jax_hessian_and_the_gradient_path():
    """Chained products, squares, sines, a quotient, and a product killed by a zero constant (x2·0·x_{n-2}:
    no interaction), each element function on scalars."""
    n = 9
    c = np.random.default_rng(0).uniform(0.5, 2.0, n)
    direct, via, num = check(written_out(n, c), (jnp.linspace(0.3, 1.1, n),))
    assert (direct == via).all()
    assert direct[0, n - 1] and direct[n - 1, n - 1]      # the quotient's cross and diagonal terms
    assert not direct[2, n - 2]                          # the zero factor kills that interaction


def test_scalar_pairs_equal_the_bucketed_path():
    """A single triple (the scalar fast path) gives the rows the general bucketed path gives for the same
    triple among others."""
    n = 7
    left = sp.csr_array(np.array([[1, 0, 1, 0, 0, 0, 1], [0, 1, 0, 0, 0, 0, 0]], bool))
    right = sp.csr_array(np.array([[0, 0, 1, 1, 0, 0, 0]], bool))
    for la, src in [(0, right), (0, left), (1, right)]:
        one = pair_rows(np.array([0]), 1, left, np.array([la]), src, np.array([0]), n).to_csr()
        two = pair_rows(np.array([0, 0]), 1, left, np.array([la, 1 - la]), src, np.array([0, 0]), n).to_csr()
        u, v = np.flatnonzero(left.toarray()[la]), np.flatnonzero(src.toarray()[0])
        want = sorted({n + min(a, b) * n + max(a, b) for a in u for b in v})
        assert one.indices.tolist() == want
        assert set(want) <= set(two.indices.tolist())


@pytest.mark.parametrize("runs", [1, 3, 200])
def test_distinct_columns_of_sorted_runs(runs):
    """Few sorted runs take the merge path, many the marks; both give the sorted distinct columns."""
    n = 1_000
    rng = np.random.default_rng(runs)
    def valid_codes(m):  # pair codes n + u·n + v with u ≤ v
        u = rng.integers(0, n, m)
        return n + u * n + np.minimum(u + rng.integers(0, 40, m), n - 1)

    chunks = [np.sort(valid_codes(300)) for _ in range(runs)]
    cols = np.concatenate(chunks + [np.arange(5, 50)])
    got = distinct_columns(cols, pair_width(n))
    assert got is None or np.array_equal(got, np.unique(cols))


def test_full_reduction_reads_uniform_rows_entry_major():
    """A reduction over a CSR of equal-length rows (read entry-major: few sorted runs) equals the set union."""
    n = 500
    width = pair_width(n)
    i = np.arange(n - 2)
    codes = np.stack([n + i * n + i, n + i * n + i + 2, n + (i + 2) * n + i + 2], axis=1)
    m = sp.csr_array((np.ones(codes.size, bool), codes.reshape(-1), np.arange(n - 1) * 3), shape=(n - 2, width))
    d = Deps.union(Deps.from_csr(m), Deps.identity(n - 2, width, 0))
    got = d.reduce_all().to_csr().indices
    assert np.array_equal(got, np.unique(np.concatenate([codes.reshape(-1), i])))


@pytest.mark.parametrize("scattered", [False, True])
def test_full_reduction_reads_a_stencil_with_short_boundary_rows_in_few_runs(monkeypatch, scattered):
    """A stencil's pair rows with shorter rows at its ends (a convolution's ``SAME`` padding): the reduction reads
    each length's rows entry-major, so the de-duplication sees a few sorted runs, not one per row — and the union
    is the set union (``scattered``: the short rows moved into the middle of the value, between long ones)."""
    from stablehlo_sparsity.lattice import core

    n, taps = 2100, 3  # (pair columns n + n² past SPARSE_REDUCE_COLUMNS: the sorted reduction)
    rows = []
    for e in range(n):
        s = np.arange(max(0, e - taps // 2), min(n, e + taps // 2 + 1))
        u, v = np.triu_indices(len(s))
        rows.append(n + s[u] * n + s[v])
    if scattered:
        rows = rows[1:n // 2] + rows[:1] + rows[n // 2:]
    lengths = np.array([len(r) for r in rows])
    m = sp.csr_array((np.ones(lengths.sum(), bool), np.concatenate(rows), np.r_[0, np.cumsum(lengths)]),
                     shape=(n, pair_width(n)))
    seen = []
    distinct = core.WIDE_DISTINCT[0]

    def recording(cols, width, overwrite=False):
        seen.append(int(np.count_nonzero(cols[1:] < cols[:-1])))
        return distinct(cols, width, overwrite)

    monkeypatch.setattr(core, "WIDE_DISTINCT", [recording])
    got = Deps.from_csr(m).reduce_all().to_csr().indices
    assert np.array_equal(got, np.unique(np.concatenate(rows)))
    assert len(seen) == 1 and seen[0] < sum(set(lengths.tolist())) + 2


@pytest.mark.parametrize("length", [0, 1, 2, 4])
def test_elementwise_pairs_equal_the_general_path(length):
    """The uniform-rows fast path (an elementwise op's full and cross terms) against :func:`pair_rows`."""
    from stablehlo_sparsity.analysis.second_order.encoding import elementwise_pairs, full_rows

    n, k = 30, 12
    rng = np.random.default_rng(length)
    rows = [np.sort(rng.choice(n, length, replace=False)) for _ in range(k)]
    s = sp.csr_array((np.ones(k * length, bool), np.concatenate(rows).astype(np.int64) if length else
                      np.zeros(0, np.int64), np.arange(k + 1) * length), shape=(k, n))
    e = np.arange(k)
    fast = elementwise_pairs(s, s, n)
    assert fast is not None
    assert (fast.to_csr() != pair_rows(e, k, s, e, s, e, n).to_csr()).nnz == 0
    assert (full_rows(s, n).to_csr() != fast.to_csr()).nnz == 0
    one = sp.csr_array((np.ones(k, bool), rng.integers(0, n, k), np.arange(k + 1)), shape=(k, n))
    cross = elementwise_pairs(s, one, n)
    if length <= 1:
        assert (cross.to_csr() != pair_rows(e, k, s, e, one, e, n).to_csr()).nnz == 0
    else:
        assert cross is None  # several pairs per row may repeat: the general path de-duplicates them
    ragged = sp.csr_array(np.eye(k, n, dtype=bool) | np.eye(k, n, 1, dtype=bool) * (np.arange(k) % 2)[:, None])
    assert elementwise_pairs(ragged, ragged, n) is None


def test_dead_values_are_released_unless_a_float_bitcast():
    """The second-order walk empties a value's index sets after its last use (a written-out running total
    would otherwise keep every partial sum alive: memory quadratic in the terms), except in a module with a
    bitcast_convert, whose provenance walk reads earlier values' index sets."""
    import jax

    from stablehlo_sparsity.analysis.second_order.interpreter import SecondOrderInterpreter

    n = 6
    c = np.ones(n)
    plain = jax.jit(written_out(n, c)).lower(jnp.ones(n)).compiler_ir("stablehlo")
    with plain.context:
        assert SecondOrderInterpreter(plain, n).release_dead

    def bits(x):
        return jnp.sum(jax.lax.bitcast_convert_type(x, jnp.int32).astype(x.dtype) * x)

    cast = jax.jit(bits).lower(jnp.ones(n, jnp.float32)).compiler_ir("stablehlo")
    with cast.context:
        assert not SecondOrderInterpreter(cast, n).release_dead


def test_a_small_body_keeps_its_values_and_a_larger_one_releases_them(monkeypatch):
    """The walk keeps every value of a function body whose results cannot hold more than KEEP_ALL_ENTRIES
    entries at worst (each element a full row of n + n(n + 1)/2 columns) and releases dead values above it;
    both give the pattern of jax.hessian and of the gradient path."""
    import jax

    from stablehlo_sparsity.analysis.second_order import interpreter as so

    n = 9
    c = np.random.default_rng(1).uniform(0.5, 2.0, n)
    module = jax.jit(written_out(n, c)).lower(jnp.ones(n)).compiler_ir("stablehlo")

    def dead_map():
        with module.context:
            interp = so.SecondOrderInterpreter(module, n)
            block = interp.function_table.decoded(interp.function_table.body("main", "analyze"))
            dead = interp.dead_after(block)
            return interp._worst_case_entries(block), [t.size for d in block.ops for t in d.types], dead, \
                interp._release_dead

    worst, sizes, dead, searched = dead_map()
    assert worst == sum(sizes) * (n + n * (n + 1) // 2) and dead is None      # kept: nothing released
    assert searched is None                        # (nor was the module searched for a float bitcast)
    kept = check(written_out(n, c), (jnp.linspace(0.3, 1.1, n),))
    monkeypatch.setattr(so, "KEEP_ALL_ENTRIES", worst - 1)
    _, _, dead, searched = dead_map()
    assert dead and searched is True                # one entry more: released (no bitcast found)
    released = check(written_out(n, c), (jnp.linspace(0.3, 1.1, n),))
    assert (kept[0] == released[0]).all() and (kept[0] == kept[1]).all()


def test_a_product_of_scalars_in_one_set_is_the_rule_and_the_term(monkeypatch):
    """The fused product of two unknown scalars of the lane (the rule's union and the cross term as one set)
    gives the pattern the first-order rule and the cross term give apart (the fused path turned off), and
    jax.hessian's numbers: products of sums, squares of one value, products of values that already carry
    pairs, a product with a known factor and one with an argument that is not differentiated."""

    from stablehlo_sparsity import hessian_sparsity
    from stablehlo_sparsity.analysis.second_order.interpreter import SecondOrderInterpreter

    def f(x, k):
        t = x[0] * x[1]
        u = (x[2] + x[3]) * (x[4] - x[2])
        v = t * u + (x[5] * x[5]) * x[6]
        w = (x[1] * x[7]) * (x[7] * x[8]) + x[3] * 2.0 + x[8] * k[0]
        return v * 0.5 + w + jnp.sin(x[0]) * x[8]

    x, k = jnp.linspace(0.3, 1.1, 9), jnp.array([1.5])
    calls = []
    original = SecondOrderInterpreter._scalar_product

    def counted(self, d, args):
        out = original(self, d, args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(SecondOrderInterpreter, "_scalar_product", counted)
    fused = hessian_sparsity(f, x, k, method="direct").todense()
    assert sum(calls) >= 6                                       # the fused path ran
    monkeypatch.setattr(SecondOrderInterpreter, "_scalar_product", lambda self, d, args: None)
    apart = hessian_sparsity(f, x, k, method="direct").todense()
    assert (fused == apart).all() and (fused == numerical_hessian(f, (x, k), 0)).all()


def test_cyclic_gc_is_paused_during_the_walk_and_restored():
    """The direct analysis runs with the cyclic collector off, and leaves it as it found it (on or off),
    errors included."""
    import gc

    from stablehlo_sparsity import hessian_sparsity
    from stablehlo_sparsity.errors import InputError
    from stablehlo_sparsity.analysis.second_order.api import cyclic_gc_paused

    seen = []

    def f(x):
        seen.append(gc.isenabled())
        return jnp.sum(x ** 3)

    was = gc.isenabled()
    try:
        for state in (True, False):
            (gc.enable if state else gc.disable)()
            hessian_sparsity(f, jnp.ones(3), method="direct")
            assert gc.isenabled() is state and seen[-1] is False
            with pytest.raises(InputError):
                hessian_sparsity(lambda x: x, jnp.ones(3), method="direct")  # not a scalar
            assert gc.isenabled() is state
            with pytest.raises(RuntimeError), cyclic_gc_paused():
                raise RuntimeError("inside")
            assert gc.isenabled() is state
    finally:
        (gc.enable if was else gc.disable)()


def test_a_contraction_to_one_element_of_many_pairs_matches_jax_hessian_and_the_gradient_path():
    """``x · div(x)`` with ``div`` a scatter of linear edge fluxes over a random graph (a graph Laplacian's
    ``xᵀ L x``: every interaction comes from the contraction's cross term): thousands of pair codes into its one
    row (past ``KEY_SORT_ENTRIES``), de-duplicated by the pair encoding's distinct columns rather than SciPy's COO
    conversion — the same pattern as the gradient path's, and every nonzero of JAX's Hessian."""
    import jax

    import stablehlo_sparsity as ss
    from stablehlo_sparsity.analysis.second_order import encoding

    n = 700
    rng = np.random.default_rng(5)
    src = np.concatenate([np.arange(n), rng.integers(0, n, n)])
    dst = np.concatenate([(np.arange(n) + 1) % n, rng.integers(0, n, n)])

    def f(x):
        flux = x[src] - x[dst]
        div = jnp.zeros_like(x).at[src].add(flux).at[dst].add(-flux)
        return jnp.dot(x, div)

    x = jnp.asarray(rng.uniform(-1.0, 1.0, n))
    direct = ss.hessian_sparsity(f, x, method="direct")
    assert direct == ss.hessian_sparsity(f, x, method="via-gradient")
    numeric = np.asarray(jax.hessian(f)(x))
    assert not ((numeric != 0) & ~direct.todense()).any()
    assert direct.nnz > encoding.KEY_SORT_ENTRIES  # (the one row's codes take the distinct-columns path)
