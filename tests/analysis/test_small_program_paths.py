"""The paths that make a small program cost little beyond its lowering (issue 34): each must give exactly the
pattern the general machinery gives, and the numbers of ``jax.jacfwd``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from stablehlo_sparsity import analyze_module, jacobian_sparsity
from stablehlo_sparsity.lattice import Deps, core
from stablehlo_sparsity.lattice.core import CsrPart, IndexPart
from stablehlo_sparsity.lattice.representations import materialize as materialization


def _numeric(f, x):
    out = np.zeros(np.asarray(jax.jacfwd(f)(x)).reshape(-1, x.size).shape, bool)
    for seed in range(2):
        p = jax.random.uniform(jax.random.PRNGKey(seed), x.shape, minval=0.3, maxval=1.7)
        out |= np.asarray(jax.jacfwd(f)(p)).reshape(-1, x.size) != 0
    return out


def _numeric_hessian(obj, x):
    """The nonzeros of ``jax.hessian(obj)`` at the two points of :func:`_numeric`."""
    out = np.zeros((x.size, x.size), bool)
    for seed in range(2):
        p = jax.random.uniform(jax.random.PRNGKey(seed), x.shape, minval=0.3, maxval=1.7)
        out |= np.asarray(jax.hessian(obj)(p)).reshape(x.size, x.size) != 0
    return out


def test_repeated_literals_are_one_answer_and_signed_zeros_are_two():
    # the same literal in many ops is folded once (the bindings unique attributes by type and bits); -0.0 and
    # +0.0 are two literals: the sign bit of the first selects x, of the second zero
    text = """
    func.func @main(%x: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
      %nz = stablehlo.constant dense<-0.0> : tensor<3xf32>
      %pz = stablehlo.constant dense<0.0> : tensor<3xf32>
      %nz2 = stablehlo.constant dense<-0.0> : tensor<3xf32>
      %zi = stablehlo.constant dense<0> : tensor<3xi32>
      %bn = stablehlo.bitcast_convert %nz : (tensor<3xf32>) -> tensor<3xi32>
      %bp = stablehlo.bitcast_convert %pz : (tensor<3xf32>) -> tensor<3xi32>
      %bn2 = stablehlo.bitcast_convert %nz2 : (tensor<3xf32>) -> tensor<3xi32>
      %pn = stablehlo.compare LT, %bn, %zi, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
      %pp = stablehlo.compare LT, %bp, %zi, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
      %pn2 = stablehlo.compare LT, %bn2, %zi, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
      %yn = stablehlo.select %pn, %x, %pz : tensor<3xi1>, tensor<3xf32>
      %yp = stablehlo.select %pp, %x, %pz : tensor<3xi1>, tensor<3xf32>
      %yn2 = stablehlo.select %pn2, %x, %nz : tensor<3xi1>, tensor<3xf32>
      return %yn, %yp, %yn2 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>
    }
    """
    dense = analyze_module(text).pattern.to_scipy().toarray()
    eye = np.eye(3, dtype=bool)
    assert np.array_equal(dense, np.vstack([eye, np.zeros((3, 3), bool), eye]))


def test_a_literal_broadcast_keeps_its_bits():
    # the fold of a one-element broadcast fills the result at once: the sign of zero and a NaN's payload stay
    text = """
    func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
      %nz = stablehlo.constant dense<-0.0> : tensor<f32>
      %b = stablehlo.broadcast_in_dim %nz, dims = [] : (tensor<f32>) -> tensor<3xf32>
      %nan = stablehlo.constant dense<0x7FC00123> : tensor<1xf32>
      %bn = stablehlo.broadcast_in_dim %nan, dims = [1] : (tensor<1xf32>) -> tensor<2x1xf32>
      %bf = stablehlo.constant dense<1.5> : tensor<bf16>
      %bb = stablehlo.broadcast_in_dim %bf, dims = [] : (tensor<bf16>) -> tensor<2xbf16>
      %r = stablehlo.multiply %x, %b : tensor<3xf32>
      return %r : tensor<3xf32>
    }
    """
    seen = {}

    def observer(op, results):
        if op.operation.name == "stablehlo.broadcast_in_dim":
            seen[len(seen)] = results[0].const

    analyze_module(text, observer=observer)
    signed, nan, bf16 = seen[0], seen[1], seen[2]
    assert signed.shape == (3,) and signed.dtype == np.float32 and np.signbit(signed).all() and not signed.any()
    assert nan.shape == (2, 1) and (nan.view(np.uint32) == 0x7FC00123).all()
    assert bf16.dtype.name == "bfloat16" and bf16.shape == (2,) and (bf16.astype(np.float32) == 1.5).all()


def test_complex_literals_still_fold():
    f = lambda x: jnp.real(x * (1.0 + 2.0j)) + jnp.real(x * (1.0 + 2.0j))
    assert np.array_equal(jacobian_sparsity(f, jnp.ones(4)).to_scipy().toarray(), np.eye(4, dtype=bool))


@pytest.mark.parametrize("f", [
    lambda x: x[:, None] * x[None, :],                      # order-keeping broadcasts (a reshape) and a real one
    lambda x: jnp.concatenate([x[:, None], (x ** 2)[:, None]], axis=1).ravel(),
    lambda x: jnp.broadcast_to(x.reshape(2, 1, 3), (2, 1, 3)) * jnp.sum(x),
])
def test_broadcasts_that_keep_the_order_are_reshapes(f):
    x = jnp.linspace(0.5, 1.5, 6)
    got = jacobian_sparsity(f, x).to_scipy().toarray()
    want = _numeric(f, x)
    assert not (want & ~got).any() and np.array_equal(got, want)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_small_materialization_equals_the_block_path(data):
    # a few sources (index parts, CSR parts seen through row maps) stacked: the key-sort path for small values
    # and the two-pass block path give the same canonical CSR
    n = data.draw(st.integers(1, 30))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    sources = []
    for _ in range(data.draw(st.integers(1, 3))):
        rows = data.draw(st.integers(0, 12))
        parts: list = []
        for _ in range(data.draw(st.integers(0, 3))):
            if data.draw(st.booleans()):
                parts.append(IndexPart(rng.integers(-1, n, rows)))
            else:
                base = sp.csr_array(rng.random((data.draw(st.integers(1, 5)), n)) < 0.3)
                base.sort_indices()
                rowmap = rng.integers(-1, base.shape[0], rows) if data.draw(st.booleans()) or base.shape[0] != rows \
                    else None
                parts.append(CsrPart(core.make_csr(base.indptr.astype(np.int64), base.indices.astype(np.int64),
                                                   base.shape[0], n), rowmap))
        sources.append(core._PartsRows(parts, rows, n))
    small = core.materialize(sources, n)
    k = sum(s.rows for s in sources)
    saved = materialization.SMALL_MATERIALIZE_ROWS
    materialization.SMALL_MATERIALIZE_ROWS = -1
    try:
        general = core.materialize(sources, n)
    finally:
        materialization.SMALL_MATERIALIZE_ROWS = saved
    assert small.shape == general.shape == (k, n)
    assert np.array_equal(small.toarray(), general.toarray())
    assert small.has_canonical_format


def test_messages_still_name_the_users_line():
    # the lowering keeps only the innermost frame in each location: the user's own line, which messages name
    from stablehlo_sparsity.errors import SparsityWarning

    def f(x):
        y = jax.pure_callback(lambda v: v, jax.ShapeDtypeStruct(x.shape, x.dtype), x)  # the line named
        return y * 2.0

    with pytest.warns(SparsityWarning, match=r"test_small_program_paths\.py:\d+"):
        jacobian_sparsity(f, jnp.ones(3))


def test_a_sum_of_broadcast_rows_keeps_every_pair():
    # Deps of a value whose rows are all one set: the union and reduction read every row
    d = Deps.identity(1, 5, 0).broadcast_row(4)
    assert d.to_csr().toarray().sum() == 4 and d.reduce_all().nnz == 1


def _every_union_op(x):
    """One expression per op the interpreter's union path takes (UNION_WHEN_UNKNOWN), on scalars (written out)
    and on vectors, every operand unknown; the literal multiplies and the integer reshape take the rules."""
    a, b, c = x[0], x[1], x[2]
    s = [a + b, a - b, a * b, a / b, a ** b, jnp.arctan2(a, b), jnp.remainder(a, b), jnp.maximum(a, b),
         jnp.minimum(a, b), jnp.abs(a), jnp.sin(a), jnp.cos(b), jnp.tan(c), jnp.tanh(a), jnp.exp(b),
         jnp.expm1(c), jnp.log(a), jnp.log1p(b), jax.nn.sigmoid(c), jnp.sqrt(a), jax.lax.rsqrt(b), jnp.cbrt(c),
         jnp.real(jax.lax.complex(a, b) * jax.lax.complex(b, c)), a * 0.0, (x[3:7] * x[5:9]).reshape(2, 2).sum(),
         jnp.sum(jnp.arange(4).reshape(2, 2)) * a,
         # a known operand: nothing to the union of add/subtract/maximum …, a drop for a zero factor
         3.0 - a, b + 2.0, jnp.maximum(c, 0.5), 2.0 * a, a / 4.0, 0.0 * b, jnp.remainder(a, 2.0)]
    v = jnp.sin(x[:4] * x[4:8]) / (x[8:] + 2.0) + jnp.maximum(x[:4], x[8:]).reshape(2, 2).ravel() \
        + (1.0 - x[4:8]) * jnp.array([0.0, 1.0, 2.0, 0.0])
    return jnp.concatenate([jnp.stack(s), v])


def test_the_union_path_gives_the_rules_own_answer(monkeypatch):
    """The interpreter's union of unknown operands (registry.UNION_WHEN_UNKNOWN) against the rules themselves
    (the path turned off), Jacobian and Hessian patterns, and the numbers of jax.jacfwd / jax.hessian."""
    from stablehlo_sparsity import hessian_sparsity
    from stablehlo_sparsity.analysis import interpreter

    x = jnp.linspace(0.3, 1.2, 12)
    obj = lambda v: jnp.sum(_every_union_op(v) ** 2)  # noqa: E731
    fast_j, fast_h = jacobian_sparsity(_every_union_op, x), hessian_sparsity(obj, x, method="direct")
    monkeypatch.setattr(interpreter, "UNION_WHEN_UNKNOWN", set())  # (the set the interpreter reads)
    slow_j, slow_h = jacobian_sparsity(_every_union_op, x), hessian_sparsity(obj, x, method="direct")
    assert fast_j == slow_j and fast_h == slow_h
    assert not (_numeric(_every_union_op, x) & ~fast_j.todense()).any()
    numeric_h = np.asarray(jax.hessian(obj)(x)) != 0
    assert not (numeric_h & ~fast_h.todense()).any()


def test_the_one_result_shortcut_gives_the_general_paths_answer(monkeypatch):
    """Interpreter.evaluate's shortcut for one differentiable result with unknown operands (_unknown_operands:
    the union of UNION_WHEN_UNKNOWN and a rule's index sets as they stand) against the general path alone
    (fold, size check, rule, per-result checks and ranges): the same Jacobian and Hessian patterns, on every union
    op, a written-out residual with literals and slices, and a vectorized one."""
    from stablehlo_sparsity import hessian_sparsity
    from stablehlo_sparsity.analysis.interpreter import Interpreter

    x = jnp.linspace(0.3, 1.2, 12)
    problems = [_every_union_op, _written_out(12), lambda v: jnp.sin(v[1:] * v[:-1]) - jnp.cumsum(v)[::-1][1:] ** 2]
    objectives = [lambda v, f=f: jnp.sum(f(v) ** 2) for f in problems]

    def patterns():
        return ([jacobian_sparsity(f, x) for f in problems],
                [hessian_sparsity(obj, x, method="direct") for obj in objectives])

    fast = patterns()
    monkeypatch.setattr(Interpreter, "_unknown_operands", lambda self, d, args, t: None)
    assert patterns() == fast


def test_one_element_slices_are_the_numbers_of_jax():
    """``x[i]`` of a vector (the slice path that reads only start and limit: strides 1 and 3 alike) and ``x[i, j]``
    of a matrix: exactly the nonzeros of ``jax.jacfwd`` and, in an objective, of ``jax.hessian``."""
    from jax import lax

    from stablehlo_sparsity import hessian_sparsity

    def f(x):
        m = x.reshape(3, 4)
        terms = [x[i] * x[(5 * i + 3) % 12] for i in range(12)]
        terms += [lax.slice(x, (i,), (i + 1,), (3,))[0] ** 3 for i in range(0, 12, 5)]
        terms += [m[i, j] * m[j % 3, i] for i in range(3) for j in range(4)]
        return jnp.stack(terms)

    x = jnp.linspace(0.3, 1.2, 12)
    assert np.array_equal(jacobian_sparsity(f, x).todense(), _numeric(f, x))
    obj = lambda v: jnp.sum(f(v))  # noqa: E731
    assert np.array_equal(hessian_sparsity(obj, x, method="direct").todense(), _numeric_hessian(obj, x))


def test_evenly_spaced_slices_read_the_rows_of_the_index_map():
    """The slice path that reads a range of rows (``x[1:]``, ``x[::2]``, whole rows of a matrix): where it
    applies, the range is the slice's index map; it applies to every 1-D slice."""
    from stablehlo_sparsity.analysis.rules.structural import _flat_run, slice_index_map

    rng = np.random.default_rng(0)
    applied = 0
    for _ in range(3000):
        shape = [int(d) for d in rng.integers(1, 6, rng.integers(1, 4))]
        starts = [int(rng.integers(0, d)) for d in shape]
        limits = [int(rng.integers(s + 1, d + 1)) for s, d in zip(starts, shape)]
        strides = [int(rng.integers(1, 4)) for _ in shape]
        for d in range(len(shape)):
            if rng.random() < 0.4:
                starts[d], limits[d], strides[d] = 0, shape[d], 1
        run = _flat_run(shape, starts, limits, strides)
        if len(shape) == 1:
            assert run is not None
        if run is not None:
            applied += 1
            assert np.array_equal(np.arange(*run), slice_index_map(shape, starts, limits, strides))
    assert applied > 1000
    assert _flat_run([4, 5], [0, 1], [4, 5], [1, 1]) is None  # (columns 1: of every row: not evenly spaced)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_range_of_rows_is_the_gather_of_its_arange(data):
    rows, n = data.draw(st.integers(1, 9)), 7
    start = data.draw(st.integers(0, rows - 1))
    stop = data.draw(st.integers(start + 1, rows))
    step = data.draw(st.integers(1, 3))
    parts = []
    for _ in range(data.draw(st.integers(1, 3))):
        if data.draw(st.booleans()):
            parts.append(IndexPart(np.asarray(data.draw(st.lists(st.integers(-1, n - 1), min_size=rows,
                                                                  max_size=rows)), np.int64)))
        else:
            dense = np.asarray(data.draw(st.lists(st.booleans(), min_size=rows * n, max_size=rows * n))).reshape(rows, n)
            part = CsrPart(sp.csr_array(dense))
            if data.draw(st.booleans()):  # a part seen through a row map (-1 = empty row)
                rowmap = np.asarray(data.draw(st.lists(st.integers(-1, rows - 1), min_size=rows, max_size=rows)))
                part = CsrPart(part.base, rowmap.astype(np.int64))
            parts.append(part)
    d = Deps(rows, n, parts)
    got = d.row_range(start, stop, step)
    want = d.gather_rows(np.arange(start, stop, step))
    assert got.rows == want.rows == len(range(start, stop, step))
    assert (got.to_csr() != want.to_csr()).nnz == 0
    with pytest.raises(IndexError):
        d.row_range(start, rows + 1)


def test_slices_of_rows_are_the_numbers_of_jax():
    """``x[1:]``, ``x[:-1]``, ``x[::2]``, ``x[1::3]``, whole rows of a matrix and a strided column: exactly the
    nonzeros of ``jax.jacfwd`` and, in an objective, of ``jax.hessian`` — with the operands index parts (an
    argument), CSR parts (a product) and row-mapped parts (a slice of a broadcast)."""
    from stablehlo_sparsity import hessian_sparsity

    def f(x):
        m = x.reshape(3, 4)
        y = x * x[::-1]                         # CSR rows
        b = jnp.broadcast_to(y[:4], (3, 4)).T.reshape(-1)  # rows seen through a row map
        return jnp.concatenate([x[1:] * x[:-1], y[::2] * x[1::3].sum(), m[1:].reshape(-1) * y[:8],
                                m[:, 1::2].reshape(-1), b[2:9] * x[:7], jnp.sin(y[3:11:3])])

    x = jnp.linspace(0.3, 1.2, 12)
    assert np.array_equal(jacobian_sparsity(f, x).todense(), _numeric(f, x))
    obj = lambda v: jnp.sum(f(v) ** 2)  # noqa: E731
    assert np.array_equal(hessian_sparsity(obj, x, method="direct").todense(), _numeric_hessian(obj, x))


def test_rows_taken_again_are_the_same_object_and_a_dead_value_is_not_kept():
    """``x[i]`` read in several terms gives one row object (the slice rule's table of rows taken); the table
    holds the value it slices weakly, so a value that died is neither kept alive nor mistaken for a new one
    that reuses its address."""
    import gc
    import weakref

    from stablehlo_sparsity.analysis.interpreter import Interpreter
    from stablehlo_sparsity.analysis.rules.structural import _take_row

    ctx = Interpreter(None, 6, function_table=_NoFunctions())
    d = Deps.identity(6, 6, 0)
    first = _take_row(ctx, d, 2)
    assert _take_row(ctx, d, 2) is first and first.to_csr().indices.tolist() == [2]
    gone = weakref.ref(d)
    del d
    gc.collect()
    assert gone() is None                                    # the table did not keep it
    e = Deps.union(Deps.identity(6, 6, 0), Deps.identity(6, 6, 1).mask_rows(np.arange(6) < 5))
    assert _take_row(ctx, e, 2).to_csr().indices.tolist() == [2, 3]   # not the dead value's row


class _NoFunctions:
    by_name: dict = {}


def test_slices_of_two_values_in_turn_are_the_numbers_of_jax():
    """Terms that read ``x[i]`` and ``y[i]`` of two values in turn (the table of rows taken starts again at each
    change of value) and the same ``x[i]`` many times: exactly the nonzeros of ``jax.jacfwd`` and
    ``jax.hessian``."""
    from stablehlo_sparsity import hessian_sparsity

    def f(x):
        y = jnp.sin(x) * x[::-1]
        terms = []
        for i in range(10):
            terms.append(x[i] * y[(3 * i + 1) % 10] + x[(i + 1) % 10] - y[i] * x[i])
            terms.append(x[i] * x[i] * y[(i + 5) % 10])
        return jnp.stack(terms)

    x = jnp.linspace(0.3, 1.2, 10)
    assert np.array_equal(jacobian_sparsity(f, x).todense(), _numeric(f, x))
    obj = lambda v: jnp.sum(f(v) ** 2)  # noqa: E731
    assert np.array_equal(hessian_sparsity(obj, x, method="direct").todense(), _numeric_hessian(obj, x))


def test_the_direct_rule_path_checks_what_a_rule_returns(monkeypatch):
    """The interpreter's path for one differentiable result with an unknown operand (no fold, no range) still
    refuses a rule that returns the wrong number of rows, naming the op, and passes a rule's known result on
    as the generic path does (emptied index sets)."""
    from stablehlo_sparsity.analysis.rules import registry
    from stablehlo_sparsity.errors import SparsityError

    text = """
    func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
      %0 = stablehlo.sine %x : tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    assert analyze_module(text).pattern.nnz == 4
    monkeypatch.setitem(registry.DEPS_RULES, "stablehlo.sine", lambda ctx, op, args: [Deps.empty(3, 4)])
    with pytest.raises(SparsityError, match="stablehlo.sine produced 3 rows for 4 elements"):
        analyze_module(text)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([np.float16, np.float32, np.float64, np.int8, np.int32, np.uint8, np.bool_]),
       st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.sampled_from([0.0, -0.0, 1.0, -1.0, 2.0]),
                 st.integers(-300, 300)))
def test_a_literal_factor_decides_as_the_array_does(dtype, value):
    """The value-aware rules read a one-number literal with Python's comparison (``_SCALAR_PREDICATES``): the
    same answer as the array predicate, for every real and integer dtype, signed zeros, infinities and NaN."""
    import warnings

    from stablehlo_sparsity.analysis.rules.elementwise import _SCALAR_PREDICATES

    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            c = np.asarray(value).astype(dtype)
        except (OverflowError, ValueError):
            return
    for pred, scalar in _SCALAR_PREDICATES.items():
        assert bool(scalar(c.item())) == bool(np.asarray(pred(c), bool).all()), (pred.__name__, dtype, value)


def test_literal_factors_of_a_written_out_residual_are_the_numbers_of_jax():
    """A zero, a one and an infinite literal as factors and divisors, in several dtypes: the scalar decision
    drops exactly the rows jax.jacfwd finds zero."""
    def f(x):
        a, b = x[0], x[1]
        return jnp.stack([a * 0.0, 0.0 * b, a * -0.0, a * 1.0, a / jnp.inf, a ** 0.0,
                          1.0 ** b, a * 2.5 + b * 0.0, jnp.arctan2(a, 0.0), jnp.arctan2(0.0, b)])

    x = jnp.array([0.7, 1.3])
    got = jacobian_sparsity(f, x).todense()
    assert np.array_equal(got, _numeric(f, x))
    assert got.sum() == 2   # a·1 and a·2.5; every other row is dropped (a NaN factor would make JAX's
    #                         tangents NaN in every column: not a pattern to compare with)


def _written_out(n):
    """A residual written out term by term (a program long enough to be cleared of common subexpressions)."""
    def f(x):
        r = []
        for i in range(n):
            t = (3.0 - 2.0 * x[i]) * x[i] + 1.0
            if i > 0:
                t = t - x[i - 1] * x[i - 1]
            if i < n - 1:
                t = t - 2.0 * x[i + 1]
            r.append(t)
        return jnp.stack(r)
    return f


def _stablehlo_ops(module) -> int:
    from stablehlo_sparsity.ir.helpers import nested_ops

    return sum(op.name.startswith("stablehlo.") for op in nested_ops(module.operation))


def _walked(f, x):
    """``(analysis, stablehlo ops the walk evaluated)`` of ``lower_and_analyze(f, x)`` (counted by an observer)."""
    from stablehlo_sparsity import lower_and_analyze

    names = []
    analysis = lower_and_analyze(f, x, observer=lambda op, results: names.append(op.operation.name))
    return analysis, sum(name.startswith("stablehlo.") for name in names)


def test_a_long_program_is_analyzed_without_its_repeats():
    """A written-out program repeats its x[i] slices, reshapes and literals; the analysis walks a copy of JAX's
    module cleared of them (MLIR's cse) and gives the pattern of JAX's own module (analyzed as text) and
    jax.jacfwd's numbers.  JAX caches the modules it lowers: the one it hands out again is not edited."""
    from stablehlo_sparsity.analysis.program import CSE_MIN_EQNS

    f, x = _written_out(30), jnp.linspace(0.5, 1.5, 30)
    assert len(jax.jit(f).trace(x).jaxpr.eqns) >= CSE_MIN_EQNS
    as_lowered = _stablehlo_ops(jax.jit(f, keep_unused=True).trace(x).lower().compiler_ir("stablehlo"))
    analysis, walked = _walked(f, x)
    assert walked < 0.7 * as_lowered
    assert _stablehlo_ops(analysis.module) == as_lowered          # the module handed back is JAX's, whole
    again = jax.jit(f, keep_unused=True).trace(x).lower().compiler_ir("stablehlo")
    assert _stablehlo_ops(again) == as_lowered                    # and JAX's cached lowering was not edited
    assert analysis.pattern == analyze_module(str(again)).pattern
    assert np.array_equal(analysis.pattern.todense(), _numeric(f, x))


def test_a_long_objectives_direct_hessian_is_that_of_jaxs_module():
    """The direct Hessian of a long written-out objective (its module cleared of repeats) against the second-order
    walk of JAX's own module and jax.hessian's numbers."""
    from stablehlo_sparsity import hessian_sparsity, parse_module
    from stablehlo_sparsity.analysis.program import resolve_options
    from stablehlo_sparsity.analysis.second_order.api import hessian_pattern_of_entry

    f, x = _written_out(30), jnp.linspace(0.5, 1.5, 30)
    obj = lambda v: jnp.sum(f(v) ** 2) + v[0] * v[29]  # noqa: E731
    direct = hessian_sparsity(obj, x, method="direct")
    module = parse_module(str(jax.jit(obj).lower(x).compiler_ir("stablehlo")))
    plain, _ = hessian_pattern_of_entry(module, "main", [0], resolve_options(None))
    assert np.array_equal(direct.todense(), plain.toarray())
    assert np.array_equal(direct.todense(), _numeric_hessian(obj, x))


def test_a_short_program_is_walked_as_lowered():
    f = lambda v: jnp.stack([v[0] * v[1], v[0] * v[1], 2.0 * v[1]])  # noqa: E731
    x = jnp.ones(3)
    assert _walked(f, x)[1] == _stablehlo_ops(jax.jit(f).lower(x).compiler_ir("stablehlo"))


def test_common_subexpressions_leave_every_pattern_as_it_was():
    """The pass itself on a module with repeats at the top level and inside a loop body and a reduction: the
    Jacobian pattern of the cleared module is the original's, and ops with the same operands but other
    attributes (two slices) stay apart."""
    from stablehlo_sparsity import parse_module
    from stablehlo_sparsity.ir.helpers import without_common_subexpressions

    text = """
    func.func @main(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>) {
      %a = stablehlo.slice %x [0:1] : (tensor<4xf32>) -> tensor<1xf32>
      %b = stablehlo.slice %x [0:1] : (tensor<4xf32>) -> tensor<1xf32>
      %c = stablehlo.slice %x [1:2] : (tensor<4xf32>) -> tensor<1xf32>
      %s = stablehlo.multiply %a, %c : tensor<1xf32>
      %t = stablehlo.multiply %b, %c : tensor<1xf32>
      %u = stablehlo.add %s, %t : tensor<1xf32>
      %v = stablehlo.broadcast_in_dim %u, dims = [0] : (tensor<1xf32>) -> tensor<4xf32>
      %i0 = stablehlo.constant dense<0> : tensor<i32>
      %w:2 = stablehlo.while(%it = %i0, %acc = %x) : tensor<i32>, tensor<4xf32>
       cond {
        %lim = stablehlo.constant dense<3> : tensor<i32>
        %lt = stablehlo.compare LT, %it, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
        stablehlo.return %lt : tensor<i1>
      } do {
        %one = stablehlo.constant dense<1> : tensor<i32>
        %one2 = stablehlo.constant dense<1> : tensor<i32>
        %n = stablehlo.add %it, %one : tensor<i32>
        %r1 = stablehlo.slice %acc [1:4] : (tensor<4xf32>) -> tensor<3xf32>
        %r2 = stablehlo.slice %acc [1:4] : (tensor<4xf32>) -> tensor<3xf32>
        %p = stablehlo.multiply %r1, %r2 : tensor<3xf32>
        %z = stablehlo.slice %acc [0:1] : (tensor<4xf32>) -> tensor<1xf32>
        %q = stablehlo.concatenate %p, %z, dim = 0 : (tensor<3xf32>, tensor<1xf32>) -> tensor<4xf32>
        %m = stablehlo.add %q, %v : tensor<4xf32>
        %unused = stablehlo.add %it, %one2 : tensor<i32>
        stablehlo.return %n, %m : tensor<i32>, tensor<4xf32>
      }
      %zero = stablehlo.constant dense<0.0> : tensor<f32>
      %red = stablehlo.reduce(%w#1 init: %zero) applies stablehlo.add across dimensions = [0]
        : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
      return %w#1, %red : tensor<4xf32>, tensor<f32>
    }
    """
    module = parse_module(text)
    before = analyze_module(module).pattern
    n_before = _stablehlo_ops(module)
    cleared = without_common_subexpressions(module)
    assert _stablehlo_ops(cleared) < n_before and _stablehlo_ops(module) == n_before   # a copy: module kept
    assert "[0:1]" in str(cleared) and "[1:2]" in str(cleared)   # other attributes: kept apart
    assert analyze_module(cleared).pattern == before
    assert before.nnz > 0


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_stacks_of_stacks_of_scalars_are_written_straight(data):
    """``jnp.stack`` of many scalars is concatenations of concatenations: the output's CSR is written from the
    scalars' sets (nested lazy stacks flattened), equal to the general materialization, without building a
    scalar's own CSR."""
    n = data.draw(st.integers(1, 20))
    rows = data.draw(st.lists(st.one_of(st.none(), st.frozensets(st.integers(0, n - 1), min_size=1, max_size=5)),
                              min_size=2, max_size=12))
    leaves = [Deps.empty(1, n) if r is None else Deps.of_row(n, r) for r in rows]
    cut = data.draw(st.integers(1, len(leaves) - 1))
    nested = Deps.vstack([Deps.vstack(leaves[:cut]), Deps.vstack(leaves[cut:])])
    want = np.zeros((len(rows), n), bool)
    for i, r in enumerate(rows):
        for j in r or ():
            want[i, j] = True
    got = nested.to_csr()
    assert np.array_equal(got.toarray(), want) and got.has_canonical_format
    assert all(d._csr is None for d in leaves if d._row is not None)


def test_without_cse_the_long_program_is_walked_as_lowered(monkeypatch):
    """A jaxlib whose pass registry lacks ``cse`` loses the speed, not the analysis: the walk reads the module as
    JAX lowered it and the pattern is the same."""
    from jaxlib.mlir import passmanager

    from stablehlo_sparsity import lower_and_analyze

    f, x = _written_out(30), jnp.linspace(0.5, 1.5, 30)
    with_cse = lower_and_analyze(f, x).pattern
    parse = passmanager.PassManager.parse

    def no_cse(text, *a, **k):  # (JAX's lowering parses pipelines of its own: those still parse)
        if "cse" in text:
            raise ValueError("MLIRError: 'cse' does not refer to a registered pass or pass pipeline")
        return parse(text, *a, **k)

    monkeypatch.setattr(passmanager.PassManager, "parse", staticmethod(no_cse))
    analysis, walked = _walked(f, x)
    assert walked == _stablehlo_ops(analysis.module)
    assert analysis.pattern == with_cse


LITERALS = [
    "dense<1.5> : tensor<f32>",
    "dense<[1.0, 0.0, -2.5]> : tensor<3xf64>",
    "dense<-0.0> : tensor<2x2xf32>",
    "dense<1.0e-40> : tensor<3xf32>",                # subnormal: a backend may flush it
    "dense<[1.0e-40, 1.0]> : tensor<2xf32>",
    "dense<0x7FC00000> : tensor<f32>",                # NaN
    "dense<0x7F800000> : tensor<2xf32>",              # inf
    "dense<6.5e-05> : tensor<4xf16>",
    "dense<[1, -2]> : tensor<2xi32>",
    "dense<3> : tensor<5xui8>",
    "dense<true> : tensor<4xi1>",
    "dense<[true, false]> : tensor<2xi1>",
    "dense<1.0> : tensor<3xbf16>",                    # (NumPy kind "V": the general fold)
    "dense<(1.0, 2.0)> : tensor<2xcomplex<f32>>",     # (the general fold)
    "dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>",
]


@pytest.mark.parametrize("literal", LITERALS)
def test_a_literal_read_at_once_is_the_general_folds_value(literal, monkeypatch):
    # the interpreter reads a plain literal (NumPy's floats, integers, booleans) from the attribute it already
    # holds; the value, its trust and its empty index sets are those of the general fold
    from stablehlo_sparsity import parse_module
    from stablehlo_sparsity.analysis.folding.exactness import same_uncertainty
    from stablehlo_sparsity.analysis.interpreter import Interpreter
    from stablehlo_sparsity.analysis.program import resolve_options
    from stablehlo_sparsity.analysis.values import AbstractValue, tensor_type

    rtype = literal.split(" : ")[1]
    module = parse_module(f"""
    func.func @main(%x: tensor<f32>) -> ({rtype}, {rtype}) {{
      %c = stablehlo.constant {literal}
      %d = stablehlo.constant {literal}
      return %c, %d : {rtype}, {rtype}
    }}""")

    def run():
        with module.context:
            fn = module.body.operations[0]
            arg = fn.regions[0].blocks[0].arguments[0]
            interp = Interpreter(module, 1, resolve_options(None))
            return interp.call("main", [AbstractValue(tensor_type(arg.type), Deps.identity(1, 1, 0))])

    read = run()
    monkeypatch.setattr(Interpreter, "_plain_literal", lambda self, literal, t: None)
    folded = run()
    for r, f in zip(read, folded):
        assert r.type == f.type and r.deps.is_empty and f.deps.is_empty
        assert (r.const is None) == (f.const is None)
        if f.const is not None:
            assert r.const.dtype == f.const.dtype and r.const.shape == f.const.shape
            assert np.array_equal(r.const, f.const, equal_nan=r.const.dtype.kind in "fc")
            assert same_uncertainty(r.uncertainty, f.uncertainty)
