"""§reduce: index sets against jax.jacfwd, body-aware multi-operand reduces, and the fold rule."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from helpers import assert_sound
from stablehlo_sparsity import analyze_module, jacobian_sparsity, lower_and_analyze

X = jnp.ones((3, 4, 5))


def group_pattern(shape, axes):
    """The true global pattern of a reduction over ``axes``: output o depends on its whole group."""
    pos = np.arange(int(np.prod(shape))).reshape(shape)
    kept = [d for d in range(len(shape)) if d not in axes]
    groups = pos.transpose(kept + list(axes)).reshape(-1, int(np.prod([shape[a] for a in axes])))
    dense = np.zeros((groups.shape[0], pos.size), bool)
    dense[np.arange(groups.shape[0])[:, None], groups] = True
    return dense


AXES = [(1,), (0, 2), (1, 2), (0, 1, 2)]


@pytest.mark.parametrize("axes", AXES)
def test_sum_and_prod_over_axes_are_exact(axes):
    assert_sound(lambda x: jnp.sum(x, axis=axes), X, exact=True, jit=True)
    assert_sound(lambda x: jnp.prod(x, axis=axes), X, exact=True, jit=True)
    assert np.array_equal(jacobian_sparsity(lambda x: jnp.sum(x, axis=axes), X).todense(), group_pattern(X.shape, axes))


@pytest.mark.parametrize("axes", [(0,), (2,), (0, 2), (0, 1, 2)])
@pytest.mark.parametrize("fn", [jnp.max, jnp.min])
def test_max_min_are_sound_and_the_whole_group(fn, axes):
    # A max's local Jacobian is one-hot, so the numerical union only shows part of the group; the global
    # pattern (any element can be the max) is the whole group.
    p = assert_sound(lambda x: fn(x, axis=axes), X, jit=True)
    assert np.array_equal(p.todense(), group_pattern(X.shape, axes))


def test_mean_logsumexp_and_norms_are_exact():
    assert_sound(lambda x: jnp.mean(x, axis=(0, 2)), X, exact=True, jit=True)
    assert_sound(lambda x: jax.nn.logsumexp(x, axis=1), X, exact=True, jit=True)
    assert_sound(lambda x: jnp.linalg.norm(x, axis=0), X, exact=True, jit=True)
    assert_sound(lambda x: jnp.linalg.norm(x.ravel(), ord=1), X, exact=True, jit=True)
    assert_sound(lambda x: jnp.linalg.norm(x.reshape(12, 5), ord="fro"), X, exact=True, jit=True)
    assert_sound(lambda x: jnp.var(x, axis=-1), X, exact=True, jit=True)
    p = assert_sound(lambda x: jnp.linalg.norm(x.reshape(12, 5), ord=jnp.inf), X, jit=True)
    assert p.nnz == X.size


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_argmax_argmin_have_zero_derivative(axis):
    # argmax lowers to a two-operand reduce (value, iota) with a compare/select body; the index is an
    # integer (dropped), and the value result must not pick up anything from the index operand.
    f = lambda x: jnp.argmax(x, axis=axis) * jnp.sum(x, axis=axis) + jnp.argmin(x, axis=axis)
    p = assert_sound(f, X, exact=True, jit=True)
    assert np.array_equal(p.todense(), group_pattern(X.shape, (axis,)))
    # the value result of the same two-operand reduce, taken directly
    def max_with_index(x):
        idx = lax.broadcasted_iota(jnp.int32, x.shape, axis)
        def body(a, b):
            pick = a[0] > b[0]
            return jnp.where(pick, a[0], b[0]), jnp.where(pick, a[1], b[1])
        v, i = lax.reduce((x, idx), (-jnp.inf, jnp.int32(0)), body, (axis,))
        return v
    # (jax.jacfwd cannot differentiate this custom reduce with an integer operand: the truth is written out)
    p = jacobian_sparsity(max_with_index, X)
    assert np.array_equal(p.todense(), group_pattern(X.shape, (axis,)))


def test_multi_operand_body_reads_through_the_closure():
    # result 0 = Σ x; result 1 = Π over a tree of (a1 * b0): it reads y and, through the accumulator, x.
    def f(x, y):
        return lax.reduce((x, y), (0.0, 1.0), lambda a, b: (a[0] + b[0], a[1] * b[0]), (1,))
    p = assert_sound(f, X, X, argnums=(0, 1), jit=True)
    d = p.todense()
    rows0 = d[:15]          # result 0: 3x5 outputs
    assert not rows0[:, 60:].any(), "result 0 must not depend on y"
    assert np.array_equal(rows0[:, :60], group_pattern(X.shape, (1,)))
    rows1 = d[15:]
    assert np.array_equal(rows1[:, :60], group_pattern(X.shape, (1,)))
    assert np.array_equal(rows1[:, 60:], group_pattern(X.shape, (1,)))


def test_independent_operands_stay_independent():
    f = lambda x, y: lax.reduce((x, y), (0.0, 0.0), lambda a, b: (a[0] + b[0], jnp.maximum(a[1], b[1])), (0, 2))
    p = assert_sound(f, X, X, argnums=(0, 1), jit=True)
    d = p.todense()
    assert not d[:4, 60:].any() and not d[4:, :60].any()
    assert np.array_equal(d[:4, :60], group_pattern(X.shape, (0, 2)))


def test_traced_init_value_is_a_dependency():
    # (jax.jacfwd cannot differentiate a reduce through its init value: the truth is written out)
    f = lambda x, s: lax.reduce(x, s[0], lax.add, (1,))
    s = jnp.ones(2)
    d = jacobian_sparsity(f, X, s, argnums=(0, 1)).todense()
    assert np.array_equal(d[:, :60], group_pattern(X.shape, (1,)))
    assert d[:, 60].all() and not d[:, 61].any()


def test_integer_reduction_drops_and_bool_reduction_folds():
    assert jacobian_sparsity(lambda x: jnp.sum(x.astype(jnp.int32)) * x, X).nnz == X.size
    # jnp.all of a constant mask folds to a known boolean: the select takes one side
    mask = np.array([True, True, False])
    p = assert_sound(lambda x: jnp.where(jnp.all(mask), x, 0.0) + jnp.where(jnp.any(mask), 2 * x, 0.0), jnp.ones(3),
                     exact=True)
    assert p.nnz == 3


def test_fold_of_simple_bodies_uses_values():
    # max over axis 0 of a constant with an all-zero column folds exactly; the multiply then drops it.
    c = np.array([[1.0, 0.0, -2.0], [3.0, 0.0, -1.0]])
    f = lambda x: x * jnp.max(c, axis=0) * jnp.prod(c + 1, axis=0) + x[::-1] * jnp.sum(c, axis=0)
    p = assert_sound(f, jnp.ones(3), exact=True, jit=True)
    assert p.todense().tolist() == [[True, False, True], [False, False, False], [True, False, False]]


def _folded_results(f, *args):
    seen = {}

    def observer(op, results):
        if op.operation.name == "stablehlo.reduce":
            seen.setdefault("reduce", []).append([r.const for r in results])

    lower_and_analyze(f, *args, observer=observer)
    return seen["reduce"]


def test_fold_of_argmax_body_by_tree_evaluation():
    c = np.array([[3.0, 7.0, 7.0, -1.0], [2.0, 2.0, 9.0, 9.0], [0.0, 5.0, 1.0, 5.0]])
    (vals, idx), = _folded_results(lambda x: x + jnp.argmax(c, axis=1), jnp.ones(3))
    assert idx is not None and np.array_equal(idx, np.argmax(c, axis=1))
    (vals, idx), = _folded_results(lambda x: x + jnp.argmin(c, axis=0), jnp.ones(4))
    assert np.array_equal(idx, np.argmin(c, axis=0))


def test_fold_of_sum_matches_numpy():
    c = np.arange(24.0).reshape(2, 3, 4)
    (vals,), = _folded_results(lambda x: x + jnp.sum(c, axis=(0, 2)), jnp.ones(3))
    assert np.allclose(vals, c.sum(axis=(0, 2)))


CAPTURE = """
func.func @main(%x: tensor<4x3xf64>, %s: tensor<f64>) -> tensor<3xf64> {
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %0 = stablehlo.reduce(%x init: %z) across dimensions = [0] : (tensor<4x3xf64>, tensor<f64>) -> tensor<3xf64>
   reducer(%a: tensor<f64>, %b: tensor<f64>) {
    %1 = stablehlo.add %a, %b : tensor<f64>
    %2 = stablehlo.multiply %1, %s : tensor<f64>
    stablehlo.return %2 : tensor<f64>
  }
  return %0 : tensor<3xf64>
}
"""


def test_body_reading_an_outer_value_depends_on_it():
    a = analyze_module(CAPTURE, wrt="all")
    d = a.pattern.todense()
    assert d[:, 12].all()                      # every output reads the captured scalar
    assert np.array_equal(d[:, :12], group_pattern((4, 3), (0,)))


EMPTY_GROUP = """
func.func @main(%x: tensor<0x3xf64>, %s: tensor<f64>) -> tensor<3xf64> {
  %0 = stablehlo.reduce(%x init: %s) applies stablehlo.add across dimensions = [0] : (tensor<0x3xf64>, tensor<f64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}
"""


def test_empty_groups_give_the_init_value():
    d = analyze_module(EMPTY_GROUP, wrt="all").pattern.todense()
    assert d.shape == (3, 1) and d.all()


def test_large_reductions_are_exact_and_linear():
    x = jnp.ones((300, 400))
    for axes, k in [((0,), 400), ((1,), 300), ((0, 1), 1)]:
        p = jacobian_sparsity(lambda x: jnp.sum(jnp.sin(x), axis=axes), x)
        assert p.shape == (k, x.size) and p.nnz == x.size
        assert (np.diff(p.to_scipy().indptr) == x.size // k).all()
