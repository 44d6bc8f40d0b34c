"""Trust in folded constants: a folded float decides a pattern only where every backend computes it alike.

Three kinds of tests:

* constructions whose constants the *program* computes (linspace, arange × step, cancelling sums,
  reductions, cos(π/2), sin(πk), differences of rounded constants, constants through loops and calls), in
  every float type, checked against ``jax.jacfwd`` at random points — and, where the folded value is a
  rounding-level zero, checked to *keep* the dependency (another backend, or another XLA version, may not
  round to zero even where this CPU does);
* precision that is legitimate stays: literal zeros, integer masks, exact sums on one grid, power-of-two
  divisions, constant predicates;
* the primitives of :mod:`stablehlo_sparsity.analysis.folding.exactness` against exact rational arithmetic
  (hypothesis).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import assert_sound
from stablehlo_sparsity import analyze_module, jacobian_sparsity
from stablehlo_sparsity.analysis.folding.exactness import AddTree, lowest_bit_exponent, significant_bits, sum_is_exact
from stablehlo_sparsity.analysis.rules.elementwise_trust import product_residue

DTYPES = [jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64]
DT_IDS = ["f16", "bf16", "f32", "f64"]


def _pattern(f, x):
    return jacobian_sparsity(f, x).todense()


# ---------------------------------------------------------------------------------------------- the issue
@pytest.mark.parametrize("dt", DTYPES, ids=DT_IDS)
def test_linspace_middle_point_keeps_its_dependency(dt):
    """``jnp.linspace(-0.5, 0.5, 501)[250]`` folds to 0.0, XLA computes 5e-18 there (it multiplies by
    1/500 and reassociates): ∂/∂y[1] must stay in the pattern."""
    f = lambda y: y[0] * jnp.exp(y[1] * jnp.linspace(-0.5, 0.5, 501, dtype=dt))  # noqa: E731
    y = jnp.array([0.3, 0.7], dt)
    p = assert_sound(f, y)
    assert p.todense()[:, 1].all()


@pytest.mark.parametrize("dt", DTYPES, ids=DT_IDS)
def test_sum_of_symmetric_linspace_is_not_a_zero(dt):
    """``sum(linspace(-1, 1, 7))`` folds to exactly 0 in float64; XLA's sum order gives 1e-16."""
    f = lambda y: y * jnp.sum(jnp.linspace(-1.0, 1.0, 7, dtype=dt))  # noqa: E731
    p = assert_sound(f, jnp.arange(1.0, 4.0, dtype=dt))
    assert np.array_equal(p.todense(), np.eye(3, dtype=bool))


@pytest.mark.parametrize("dt", DTYPES, ids=DT_IDS)
def test_arange_times_step_minus_midpoint(dt):
    """``i·0.1 − 0.5`` at ``i = 5``: the fold rounds the product to 0.5, an FMA does not."""
    f = lambda y: y * (jnp.arange(11, dtype=dt) * jnp.asarray(0.1, dt) - jnp.asarray(0.5, dt))  # noqa: E731
    p = assert_sound(f, jnp.ones(11, dt))
    assert p.todense()[5, 5]


@pytest.mark.parametrize("dt", DTYPES, ids=DT_IDS)
def test_differences_of_rounded_constants(dt):
    """``(i/3)·3 − i`` and ``(a + b) − (a + b reassociated)``: zero in the fold, not certainly zero."""
    i = lambda: jnp.arange(6, dtype=dt)  # noqa: E731
    f = lambda y: y * (i() / 3 * 3 - i())  # noqa: E731
    p = assert_sound(f, jnp.ones(6, dt))
    assert np.diag(p.todense())[1:].all()
    g = lambda y: y * ((i() * 0.1 + 0.2) - (i() * 0.1 + 0.2))  # noqa: E731
    assert_sound(g, jnp.ones(6, dt))


@pytest.mark.parametrize("dt", DTYPES, ids=DT_IDS)
def test_cancelling_reductions(dt):
    """Sums and products of rounded constants: any reduction order is possible."""
    c = lambda: jnp.arange(1, 6, dtype=dt) * jnp.asarray(0.1, dt)  # noqa: E731
    f = lambda y: y * (jnp.sum(c()) - jnp.asarray(1.5, dt)) + y[::-1] * jnp.prod(c() * 10 - c() * 10)  # noqa: E731
    p = assert_sound(f, jnp.ones(4, dt))
    assert np.diag(p.todense()).all()


@pytest.mark.parametrize("dt", DTYPES, ids=DT_IDS)
def test_trigonometric_zeros_are_not_zeros(dt):
    """``cos(π/2)`` and ``sin(π·k)`` are rounding residues, whatever the backend returns."""
    k = lambda: jnp.arange(4, dtype=dt)  # noqa: E731
    f = lambda y: y * jnp.cos(jnp.asarray(np.pi / 2, dt) * (k() * 0 + 1)) + y * jnp.sin(jnp.asarray(np.pi, dt) * k())  # noqa: E731
    p = assert_sound(f, jnp.ones(4, dt))
    assert np.diag(p.todense()).all()


def test_rounded_constants_through_loops_and_calls():
    """A float accumulated in a loop (ten steps of 0.1, minus 1) and a linspace computed in a called
    function: rounding residues, kept."""

    def acc(y):
        s = jax.lax.fori_loop(0, 10, lambda i, s: s + 0.1, jnp.zeros((), y.dtype) * 0 + jnp.asarray(0.0, y.dtype))
        return y * (s - 1.0)

    p = assert_sound(acc, jnp.ones(3))
    assert np.array_equal(p.todense(), np.eye(3, dtype=bool))

    @jax.jit
    def grid(n_dummy):
        return jnp.linspace(-0.5, 0.5, 11)

    def called(y):
        return y * grid(0.0)

    p = assert_sound(called, jnp.ones(11))
    assert p.todense()[5, 5]


MATERIALIZE_HAZARD = """
func.func @main(%x: tensor<3xf64>) -> tensor<3xf64> {
  %one = stablehlo.constant dense<1.0> : tensor<f64>
  %tiny = stablehlo.constant dense<8.673617379884035e-19> : tensor<f64>
  %m1 = stablehlo.constant dense<-1.0> : tensor<f64>
  %a = stablehlo.add %one, %tiny : tensor<f64>
  %b = stablehlo.add %a, %m1 : tensor<f64>
  %c = stablehlo.broadcast_in_dim %b, dims = [] : (tensor<f64>) -> tensor<3xf64>
  %y = stablehlo.multiply %x, %c : tensor<3xf64>
  return %y : tensor<3xf64>
}
"""


def test_reassociated_sum_of_literals_keeps_dependency():
    """``(1 + 2^-60) − 1`` folds to 0, but XLA reassociates it to ``1 + (2^-60 − 1)``... or to
    ``2^-60 + (1 − 1) = 2^-60`` — not certainly zero."""
    a = analyze_module(MATERIALIZE_HAZARD)
    assert np.array_equal(a.pattern.todense(), np.eye(3, dtype=bool))


# ---------------------------------------------------------------------------------------------- precision kept
def test_literal_zeros_and_integer_masks_still_prune():
    c = np.array([0.0, 1.5, 0.0, -2.0])
    assert np.array_equal(np.diag(_pattern(lambda x: x * c, jnp.ones(4))), [False, True, False, True])
    f = lambda x: x * (jnp.arange(4) % 2 == 0)  # noqa: E731
    assert np.array_equal(np.diag(_pattern(f, jnp.ones(4))), [True, False, True, False])
    g = lambda x: jnp.where(np.array([True, False, True, False]), x, 2.0)  # noqa: E731
    assert np.array_equal(np.diag(_pattern(g, jnp.ones(4))), [True, False, True, False])


def test_exact_float_arithmetic_still_prunes():
    """Sums on one grid, power-of-two divisions and products of small integers are exact everywhere."""
    i = lambda: jnp.arange(8.0)  # noqa: E731
    assert not _pattern(lambda x: x * (i() - i()), jnp.ones(8)).any()
    assert not _pattern(lambda x: x * (i() / 4.0 - i() * 0.25), jnp.ones(8)).any()
    f = lambda x: x * (jnp.sum(i()) - 28.0)  # noqa: E731
    assert not _pattern(f, jnp.ones(3)).any()
    g = lambda x: x * jnp.prod(i()[:3] * 2.0 - 2.0)  # noqa: E731  (a zero factor: 0 * (-2) * 2)
    assert not _pattern(g, jnp.ones(3)).any()
    h = lambda x: x * (jnp.linspace(0.0, 1.0, 5) - jnp.arange(5) / 4)  # noqa: E731  (quarters: exact)
    assert_sound(h, jnp.ones(5))


def test_far_from_boundary_rounded_values_still_decide():
    """A rounded float far from a comparison's boundary decides it: linspace > -2 is all true."""
    f = lambda x: jnp.where(jnp.linspace(-1.0, 1.0, 5) > -2.0, x, 0.0)  # noqa: E731
    assert np.array_equal(_pattern(f, jnp.ones(5)), np.eye(5, dtype=bool))
    g = lambda x: jnp.where(jnp.linspace(-1.0, 1.0, 5) > 0.1, x, 0.0)  # noqa: E731
    assert np.array_equal(np.diag(_pattern(g, jnp.ones(5))), [False, False, False, True, True])
    # at the boundary (0 > 0 on the midpoint, a rounding residue): not decided, both sides kept
    h = lambda x: jnp.where(jnp.linspace(-1.0, 1.0, 501) > 0.0, x, 2.0 * jnp.roll(x, 1))  # noqa: E731
    p = assert_sound(h, jnp.ones(501))
    assert p.todense()[250].sum() == 2


def test_rounded_index_near_an_integer_is_not_trusted():
    """``floor(i·0.1·10)`` as an index: at multiples of 10 the product may round either way."""
    f = lambda x: x[jnp.floor(jnp.arange(4) * 0.1 * 10).astype(int)]  # noqa: E731
    p = assert_sound(f, jnp.arange(4.0))
    g = lambda x: x[jnp.floor(jnp.arange(4) * 0.25 * 4).astype(int)]  # noqa: E731  (exact: a permutation)
    assert np.array_equal(_pattern(g, jnp.arange(4.0)), np.eye(4, dtype=bool))
    assert p.nnz >= 4


# ---------------------------------------------------------------------------------------------- primitives
def _exact(x) -> Fraction:
    return Fraction(float(x))


finite64 = st.floats(allow_nan=False, allow_infinity=False, width=64)
finite32 = st.floats(allow_nan=False, allow_infinity=False, width=32)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.one_of(finite64, st.integers(-2**40, 2**40).map(float)), st.one_of(finite64, st.sampled_from(
    [0.1, 3.0, 0.5, 2.0**-30, 1.0 + 2.0**-30])))
def test_product_residue_is_zero_exactly_when_the_product_is_representable(a, b):
    r = np.float64(a) * np.float64(b)
    res = float(product_residue(np.float64(a), np.float64(b), r))
    if not np.isfinite(r) or (r != 0 and abs(r) < 2.0**-1022) or (r == 0 and a != 0 and b != 0):
        assert res > 0
    elif a != 0 and b != 0 and max(abs(a), abs(b)) > 2.0**995:
        assert (res == 0) <= (_exact(a) * _exact(b) == _exact(r))  # Dekker's split overflows: conservative
    else:
        assert (res == 0) == (_exact(a) * _exact(b) == _exact(r))


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(finite32, finite32)
def test_product_residue_float32(a, b):
    a, b = np.float32(a), np.float32(b)
    with np.errstate(all="ignore"):
        r = a * b
    res = float(product_residue(a, b, r))
    if np.isfinite(r) and (r == 0 and (a == 0 or b == 0) or abs(r) >= 2.0**-126):
        assert (res == 0) == (_exact(a) * _exact(b) == _exact(r))


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.lists(st.one_of(st.integers(-1000, 1000).map(lambda i: i / 8), finite64.filter(lambda v: abs(v) < 1e6),
                          st.sampled_from([0.1, -0.1, 2.0**-60, 1.0, -1.0])), min_size=2, max_size=6),
       st.randoms(use_true_random=False))
def test_sum_is_exact_means_every_order_gives_the_exact_sum(leaves, rnd):
    arr = np.array(leaves)
    tree = AddTree(np.abs(arr).sum(), len(arr), float(lowest_bit_exponent(arr).min()))
    if bool(sum_is_exact(tree, np.float64)):
        exact = sum((_exact(v) for v in leaves), Fraction(0))
        for _ in range(5):
            order = list(leaves)
            rnd.shuffle(order)
            acc = np.float64(0.0)
            for v in order:
                acc = acc + np.float64(v)
            assert _exact(acc) == exact


def test_bit_helpers():
    x = np.array([0.0, 1.0, 0.5, 3.0, 0.1, -6.0, np.inf])
    assert lowest_bit_exponent(x).tolist()[:4] == [np.inf, 0.0, -1.0, 0.0]
    assert lowest_bit_exponent(x)[5] == 1.0 and lowest_bit_exponent(x)[6] == -np.inf
    assert significant_bits(np.array([0.0, 1.0, 3.0, 0.75, 5.0])).tolist() == [0, 1, 2, 2, 3]
    bf = np.array([0.1], ml_dtypes.bfloat16)
    assert significant_bits(bf)[0] <= 8


@pytest.mark.parametrize("a,b", list(itertools.product([-0.0, 0.0], repeat=2)))
def test_signed_zeros_of_max_are_not_materialized(a, b):
    """``max(-0, +0)``: backends disagree on the sign; such a zero is not exact (it may not be rewritten)."""
    text = f"""
    func.func @main() -> tensor<f64> {{
      %a = stablehlo.constant dense<{a!r}> : tensor<f64>
      %b = stablehlo.constant dense<{b!r}> : tensor<f64>
      %m = stablehlo.maximum %a, %b : tensor<f64>
      return %m : tensor<f64>
    }}"""
    (r,) = analyze_module(text).results
    assert r.const is not None
    assert r.is_exact == (np.signbit(a) == np.signbit(b))


def test_zero_size_folded_values():
    """Folding and bounding empty arrays (found by the random programs)."""
    f = lambda x: x * jnp.sum(jnp.arange(0.0) * 0.1 + jnp.linspace(0.0, 1.0, 0)) + (jnp.arange(0.0) * 3.0).sum()  # noqa: E731
    assert np.array_equal(_pattern(f, jnp.ones(2)), np.zeros((2, 2), bool))


def test_every_folded_op_has_an_error_model():
    """A fold rule without an error rule would trust nothing silently (sound, but a lost precision nobody
    decided on): every folded op states its model."""
    from stablehlo_sparsity.analysis.rules import ERROR_RULES, FOLD_RULES

    assert sorted(set(FOLD_RULES) - set(ERROR_RULES)) == []
