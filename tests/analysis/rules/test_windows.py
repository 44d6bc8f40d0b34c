"""Windowed ops (§reduce_window, §select_and_scatter): pooling, cumulative ops, the gradient of max pooling."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from helpers import assert_same_values, assert_sound, run_fold, run_reference
from stablehlo_sparsity import analyze_module, jacobian_sparsity


def _pool(kind, window, strides, padding, **kw):
    init, op = {"max": (-jnp.inf, jax.lax.max), "min": (jnp.inf, jax.lax.min), "sum": (0.0, jax.lax.add)}[kind]
    return lambda X: jax.lax.reduce_window(X, init, op, window, strides, padding, **kw)


POOLS = [
    ((1, 2, 2, 1), (1, 2, 2, 1), "VALID", {}),
    ((1, 3, 2, 1), (1, 2, 1, 1), "SAME", {}),
    ((1, 3, 3, 1), (1, 1, 2, 1), ((0, 0), (1, 2), (2, 0), (0, 0)), {"window_dilation": (1, 2, 1, 1)}),
    ((1, 2, 3, 2), (1, 2, 2, 1), ((0, 0), (1, 1), (0, 1), (0, 0)), {"base_dilation": (1, 2, 1, 1)}),
]


@pytest.mark.parametrize("window,strides,padding,kw", POOLS)
def test_sum_pooling_is_exact_and_max_pooling_has_the_same_pattern(window, strides, padding, kw):
    X = jnp.ones((2, 5, 6, 2))
    p = assert_sound(_pool("sum", window, strides, padding, **kw), X, exact=True, jit=True)
    q = assert_sound(_pool("max", window, strides, padding, **kw), X, jit=True)
    assert p == q


def test_avg_pooling_with_padding_counts():
    # flax-style average pooling: a windowed sum divided by a windowed count of ones (a constant).
    def avg(X):
        s = jax.lax.reduce_window(X, 0.0, jax.lax.add, (3, 3), (2, 2), "SAME")
        c = jax.lax.reduce_window(jnp.ones_like(X), 0.0, jax.lax.add, (3, 3), (2, 2), "SAME")
        return s / c
    p = assert_sound(avg, jnp.ones((7, 6)), exact=True, jit=True)
    assert p.shape == (4 * 3, 42)


@pytest.mark.parametrize("fn,reverse", [(jnp.cumsum, False), (jnp.cumprod, False), (jax.lax.cummax, False),
                                        (jax.lax.cummin, False), (jax.lax.cumlogsumexp, False),
                                        (lambda x: jax.lax.cumsum(x, reverse=True), True)])
def test_cumulative_ops_are_triangular(fn, reverse):
    n = 7
    p = assert_sound(fn, jnp.ones(n), jit=True)
    tri = np.tril(np.ones((n, n), bool))
    assert np.array_equal(p.todense(), tri.T if reverse else tri)


def test_cumsum_along_an_axis_of_a_matrix():
    p = assert_sound(lambda x: jnp.cumsum(x, axis=0), jnp.ones((4, 3)), exact=True, jit=True)
    expected = np.kron(np.tril(np.ones((4, 4), bool)), np.eye(3, dtype=bool))
    assert np.array_equal(p.todense(), expected)


def test_long_cumsum_is_fast_and_exact_in_size():
    n = 2000
    p = jacobian_sparsity(jnp.cumsum, jnp.ones(n))
    assert p.nnz == n * (n + 1) // 2


def _finite_difference_pattern(f, *args):
    """Outputs that change when one input element moves (a dependence oracle for ops JAX cannot
    differentiate): flattened outputs × flattened inputs, at a random point."""
    rng = np.random.default_rng(0)
    f = jax.jit(f)
    pt = [np.asarray(rng.standard_normal(np.shape(a))) for a in args]
    flat = lambda out: np.concatenate([np.ravel(o) for o in jax.tree_util.tree_leaves(out)])
    base = flat(f(*pt))
    cols = []
    for k, a in enumerate(pt):
        for i in range(a.size):
            q = [b.copy() for b in pt]
            q[k].reshape(-1)[i] += 0.25
            cols.append(flat(f(*q)) != base)
    return np.stack(cols, axis=1)


def test_multi_operand_reduce_window_value_result_ignores_the_index_operand():
    def f(x, y):
        vals, idx = jax.lax.reduce_window(
            (x, y), (-jnp.inf, 0.0),
            lambda a, b: (jnp.maximum(a[0], b[0]), jnp.where(a[0] > b[0], a[1], b[1])),
            (2,), (1,), "VALID")
        return vals, idx
    d = jacobian_sparsity(f, jnp.ones(5), jnp.ones(5), argnums=(0, 1)).todense()
    assert not (_finite_difference_pattern(f, np.ones(5), np.ones(5)) & ~d).any()
    assert not d[:4, 5:].any()  # the max values do not depend on y
    assert not d[4:, :5].any()  # the selected y does not depend on x (a comparison steers it)
    band = np.eye(4, 5, dtype=bool) | np.eye(4, 5, 1, dtype=bool)
    assert np.array_equal(d[:4, :5], band) and np.array_equal(d[4:, 5:], band)


def test_init_value_dependence():
    f = lambda x, c: jax.lax.reduce_window(x, c, jax.lax.add, (2,), (2,), ((1, 0),))
    d = jacobian_sparsity(f, jnp.ones(4), 1.5, argnums=(0, 1)).todense()
    assert np.array_equal(d, _finite_difference_pattern(f, np.ones(4), np.float64(1.5)))
    assert d[:, 4].all()  # jax cannot differentiate in the init value; a finite difference can


def test_windowed_constant_folds_to_a_known_mask():
    mask = jnp.array([0.0, 1.0, 0.0, 0.0, 1.0, 0.0])
    f = lambda x: x * (jnp.cumsum(mask) == 1.0)  # [0, 1, 1, 1, 0, 0]
    p = jacobian_sparsity(f, jnp.ones(6))
    assert np.array_equal(p.todense(), np.diag([False, True, True, True, False, False]))


RW_BODY = """
%r = "stablehlo.reduce_window"(%a0, %a1) ({{
  ^bb0(%p: tensor<{t}>, %q: tensor<{t}>):
    %s = stablehlo.{op} %p, %q : tensor<{t}>
    stablehlo.return %s : tensor<{t}>
}}) {{window_dimensions = array<i64: {w}>, window_strides = array<i64: {s}>, base_dilations = array<i64: {b}>,
     window_dilations = array<i64: {d}>, padding = dense<{pad}> : tensor<2x2xi64>}}
   : (tensor<3x4x{t}>, tensor<{t}>) -> tensor<{o}x{t}>
return %r : tensor<{o}x{t}>
"""


@pytest.mark.parametrize("op,w,s,b,d,pad,o", [
    ("add", "2, 1", "4, 1", "2, 1", "3, 1", "[[2, 1], [0, 0]]", "2x4"),
    ("maximum", "2, 2", "1, 2", "1, 1", "1, 2", "[[1, 0], [0, 1]]", "3x2"),
    ("multiply", "3, 2", "2, 1", "2, 2", "1, 1", "[[1, 1], [1, 0]]", "3x7"),
])
def test_reduce_window_fold_matches_the_reference_interpreter(op, w, s, b, d, pad, o):
    x = np.arange(1, 13, dtype=np.int64).reshape(3, 4) % 5 + 1
    init = np.array(2 if op == "multiply" else 1, np.int64)
    body = RW_BODY.format(t="i64", op=op, w=w, s=s, b=b, d=d, pad=pad, o=o)
    got = run_fold(body, [x, init], [f"tensor<{o}xi64>"])[0]
    want = run_reference(body, [x, init], [f"tensor<{o}xi64>"])[0]
    assert got is not None
    assert_same_values(got, want)
    # the index sets of the same op over an unknown operand: a union over exactly the non-padding taps
    text = "module {\n func.func @main(%a0: tensor<3x4xf64>, %a1: tensor<f64>) -> tensor<" + o + "xf64> {\n" \
        + RW_BODY.format(t="f64", op=op, w=w, s=s, b=b, d=d, pad=pad, o=o) + "}\n}"
    ours = analyze_module(text, wrt=[0]).pattern.todense()
    # oracle: perturb each input of the constant version in the reference interpreter
    body_f, outs_f = RW_BODY.format(t="f64", op=op, w=w, s=s, b=b, d=d, pad=pad, o=o), [f"tensor<{o}xf64>"]
    base = run_reference(body_f, [x.astype(np.float64), init.astype(np.float64)], outs_f)[0]
    seen = np.zeros_like(ours)
    for i in range(12):
        xp = x.astype(np.float64).ravel()
        xp[i] += 0.5
        out = run_reference(body_f, [xp.reshape(3, 4), init.astype(np.float64)], outs_f)[0]
        seen[:, i] = (out != base).ravel()
    assert not (seen & ~ours).any()
    if op != "maximum":
        assert np.array_equal(seen, ours)


# ---------------------------------------------------------------- select_and_scatter
def test_gradient_of_max_pooling_has_no_dependence_on_the_input():
    mp = _pool("max", (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
    g = jax.grad(lambda X: mp(X).sum())
    p = assert_sound(g, jnp.ones((1, 4, 4, 1)), exact=True, jit=True)
    assert p.nnz == 0


@pytest.mark.parametrize("window,strides,padding", [((1, 2, 2, 1), (1, 2, 2, 1), "VALID"),
                                                    ((1, 2, 3, 1), (1, 1, 2, 1), "SAME")])
def test_hessian_of_max_pooling_via_select_and_scatter_is_sound(window, strides, padding):
    mp = _pool("max", window, strides, padding)
    g = jax.grad(lambda X: (mp(X) ** 2).sum())
    X = jnp.ones((1, 5, 6, 1))
    p = assert_sound(g, X, points=6, jit=True)
    # row e: every element of every window containing e (the selection couples them); block-local
    sp = jacobian_sparsity(_pool("sum", window, strides, padding), X).todense()
    expected = (sp.T.astype(int) @ sp.astype(int)) > 0
    assert np.array_equal(p.todense(), expected)


SAS_TEXT = """
func.func @main(%x: tensor<4x2xf64>, %s: tensor<2x2xf64>, %i: tensor<f64>) -> tensor<4x2xf64> {
  %r = "stablehlo.select_and_scatter"(%x, %s, %i) ({
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      %c = stablehlo.compare GE, %a, %b, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
  }, {
    ^bb0(%a: tensor<f64>, %b: tensor<f64>):
      %c = stablehlo.add %a, %b : tensor<f64>
      stablehlo.return %c : tensor<f64>
  }) {window_dimensions = array<i64: 3, 1>, window_strides = array<i64: 2, 1>,
      padding = dense<[[0, 1], [0, 0]]> : tensor<2x2xi64>} : (tensor<4x2xf64>, tensor<2x2xf64>, tensor<f64>) -> tensor<4x2xf64>
  return %r : tensor<4x2xf64>
}
"""


def test_select_and_scatter_handwritten_with_padding_and_overlap():
    d = analyze_module(SAS_TEXT, wrt="all").pattern.todense()
    assert not d[:, :8].any()  # the operand only steers the selection
    src = d[:, 8:12]
    # rows 0..3 of column j: windows {0,1,2} (source row 0) and {2,3,pad} (source row 1)
    expected_rows = np.array([[1, 0], [1, 0], [1, 1], [0, 1]], bool)
    want = np.zeros((8, 4), bool)
    for r in range(4):
        for j in range(2):
            for w in range(2):
                want[r * 2 + j, w * 2 + j] = expected_rows[r, w]
    assert np.array_equal(src, want)
    assert d[:, 12].all()  # the init value reaches every element
