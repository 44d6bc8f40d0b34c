"""§convolution: index sets against jax.jacfwd for every layout and window option; known operands; folding."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from helpers import assert_sound
from stablehlo_sparsity import analyze_module, jacobian_sparsity, lower_and_analyze, parse_module

rng = np.random.default_rng(0)


def both(f, x, w, **kw):
    """Sound and exact in the image and the kernel together."""
    return assert_sound(f, x, w, argnums=(0, 1), exact=True, jit=True, **kw)


CASES = {
    "1d_valid": (dict(window_strides=(1,), padding="VALID"), (2, 3, 7), (4, 3, 3)),
    "1d_stride_same": (dict(window_strides=(2,), padding="SAME"), (1, 2, 9), (3, 2, 3)),
    "2d_explicit_negative_pad": (dict(window_strides=(2, 1), padding=((1, 2), (0, -1))), (1, 2, 7, 6), (2, 2, 3, 2)),
    "2d_lhs_rhs_dilation": (dict(window_strides=(1, 2), padding=((2, 1), (1, 1)), lhs_dilation=(2, 1),
                                 rhs_dilation=(1, 2)), (1, 1, 5, 7), (2, 1, 2, 3)),
    "3d_same": (dict(window_strides=(1, 1, 2), padding="SAME"), (1, 1, 4, 3, 5), (2, 1, 3, 2, 3)),
    "depthwise": (dict(window_strides=(1, 1), padding="SAME", feature_group_count=3), (1, 3, 5, 5), (6, 1, 3, 3)),
    "feature_groups": (dict(window_strides=(1,), padding="VALID", feature_group_count=2), (2, 4, 6), (4, 2, 2)),
    "batch_groups": (dict(window_strides=(1,), padding=((1, 0),), batch_group_count=2), (4, 3, 5), (6, 3, 2)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_conv_general_dilated_is_exact(name):
    kw, xs, ws = CASES[name]
    both(lambda x, w: lax.conv_general_dilated(x, w, **kw), jnp.ones(xs), jnp.ones(ws))


def test_nhwc_hwio_layouts():
    f = lambda x, w: lax.conv_general_dilated(x, w, (1, 2), "SAME", rhs_dilation=(2, 1),
                                              dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2)
    both(f, jnp.ones((2, 6, 5, 4)), jnp.ones((3, 2, 2, 6)))
    g = lambda x, w: lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NWHC", "OWHI", "CHWN"))
    both(g, jnp.ones((2, 5, 4, 3)), jnp.ones((2, 3, 2, 3)))


def test_transposed_convolution():
    f = lambda x, w: lax.conv_transpose(x, w, (2, 2), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    both(f, jnp.ones((1, 4, 3, 2)), jnp.ones((3, 3, 2, 2)))
    g = lambda x, w: lax.conv_transpose(x, w, (3,), "VALID", rhs_dilation=(2,), dimension_numbers=("NCH", "OIH", "NCH"))
    both(g, jnp.ones((1, 2, 4)), jnp.ones((3, 2, 2)))


SEVEN = np.zeros((3, 3, 3))
SEVEN[1, 1, :] = SEVEN[1, :, 1] = SEVEN[:, 1, 1] = 1.0
SEVEN[1, 1, 1] = -6.0


def test_known_kernel_zero_taps_give_seven_point_stencil():
    n = 6
    f = lambda u: lax.conv_general_dilated(u[None, None], jnp.asarray(SEVEN)[None, None], (1, 1, 1), "SAME")[0, 0]
    p = assert_sound(f, jnp.ones((n, n, n)), exact=True, jit=True)
    per_row = np.diff(p.to_scipy().indptr).reshape(n, n, n)
    assert (per_row[1:-1, 1:-1, 1:-1] == 7).all()
    assert per_row.max() == 7 and p.nnz == 7 * n ** 3 - 6 * n ** 2


def test_known_kernel_with_channels_and_groups():
    w = rng.standard_normal((4, 2, 3, 3)) * (rng.random((4, 2, 3, 3)) < 0.4)
    f = lambda x: lax.conv_general_dilated(x, jnp.asarray(w), (1, 1), ((1, 0), (2, 1)), rhs_dilation=(1, 2),
                                           feature_group_count=2)
    assert_sound(f, jnp.ones((2, 4, 5, 5)), exact=True, jit=True)
    wb = rng.standard_normal((4, 3, 2)) * (rng.random((4, 3, 2)) < 0.5)
    g = lambda x: lax.conv_general_dilated(x, jnp.asarray(wb), (1,), "SAME", batch_group_count=2)
    assert_sound(g, jnp.ones((4, 3, 5)), exact=True, jit=True)


def test_known_image_with_zeros_prunes_kernel_dependencies():
    x = rng.standard_normal((1, 2, 6, 6))
    x[0, 0, 2:4, :] = 0.0
    x[0, 1, :, 0] = 0.0
    f = lambda w: lax.conv_general_dilated(jnp.asarray(x), w, (1, 1), "SAME")
    assert_sound(f, jnp.ones((3, 2, 3, 3)), exact=True, jit=True)


def test_gradients_of_convolutions():
    # jax.grad programs contain the transposed convolutions: lhs_dilation (w.r.t. a strided conv's input)
    # and batch_group_count (w.r.t. a grouped conv's kernel).
    x0 = jnp.asarray(rng.standard_normal((2, 4, 6)))
    w0 = jnp.asarray(rng.standard_normal((4, 2, 3)))
    conv = lambda x, w: lax.conv_general_dilated(x, w, (2,), "SAME", feature_group_count=2)
    loss = lambda x, w: jnp.sum(jnp.tanh(conv(x, w)) ** 2)
    gx = jax.grad(loss, argnums=0)
    gw = jax.grad(loss, argnums=1)
    assert "lhs_dilate = [2]" in jax.jit(gx).lower(x0, w0).as_text()
    assert "batch_group_count = 2" in jax.jit(gw).lower(x0, w0).as_text()
    assert_sound(lambda x: gx(x, w0), x0, jit=True)
    assert_sound(lambda w: gw(x0, w), w0, jit=True)
    assert_sound(gw, x0, w0, argnums=(0, 1), jit=True)


def test_folded_convolution_matches_xla():
    x = rng.standard_normal((2, 4, 7, 5))
    w = rng.standard_normal((6, 2, 3, 2))
    kw = dict(window_strides=(2, 1), padding=((1, 2), (0, 1)), lhs_dilation=(1, 2), rhs_dilation=(2, 1),
              feature_group_count=2, dimension_numbers=("NCHW", "OIHW", "NHWC"))
    expect = np.asarray(lax.conv_general_dilated(x, w, **kw))
    seen = []
    lower_and_analyze(lambda y: y + lax.conv_general_dilated(x, w, **kw), jnp.ones(expect.shape),
                      observer=lambda op, res: seen.append(res[0].const) if op.operation.name == "stablehlo.convolution" else None)
    assert np.allclose(seen[0], expect)
    xb = rng.standard_normal((4, 3, 6))
    wb = rng.standard_normal((6, 3, 2))
    kb = dict(window_strides=(1,), padding="SAME", batch_group_count=2)
    expect = np.asarray(lax.conv_general_dilated(xb, wb, **kb))
    seen.clear()
    lower_and_analyze(lambda y: y + lax.conv_general_dilated(xb, wb, **kb), jnp.ones(expect.shape),
                      observer=lambda op, res: seen.append(res[0].const) if op.operation.name == "stablehlo.convolution" else None)
    assert np.allclose(seen[0], expect)


REVERSED = """
func.func @main(%a: tensor<1x2x6xf64>, %w: tensor<2x2x3xf64>) -> tensor<1x2x6xf64> {
  %0 = stablehlo.convolution(%a, %w) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0],
       window = {stride = [1], pad = [[2, 0]], lhs_dilate = [1], rhs_dilate = [1], reverse = [true]}
       {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<1x2x6xf64>, tensor<2x2x3xf64>) -> tensor<1x2x6xf64>
  return %0 : tensor<1x2x6xf64>
}
"""


def _reference(text, *arrays):
    """The StableHLO reference interpreter (the spec's oracle) on a module."""
    from jaxlib.mlir import ir
    from jaxlib.mlir._mlir_libs import _stablehlo

    m = parse_module(text)
    with m.context:
        out = _stablehlo.eval_module(m, [ir.DenseElementsAttr.get(np.asarray(a)) for a in arrays])
    return np.asarray(out[0])


def test_window_reversal_against_the_reference_interpreter():
    a = rng.standard_normal((1, 2, 6))
    w = rng.standard_normal((2, 2, 3))
    # the index sets: the conv is bilinear, so column j of the Jacobian is the change from a unit step in j
    base = _reference(REVERSED, a, w)
    cols = []
    for k in range(a.size + w.size):
        flat = np.concatenate([a.ravel(), w.ravel()])
        flat[k] += 1.0
        cols.append(np.abs(_reference(REVERSED, flat[:a.size].reshape(a.shape), flat[a.size:].reshape(w.shape))
                           - base).ravel() > 1e-12)
    truth = np.stack(cols, axis=1)
    assert np.array_equal(analyze_module(REVERSED, wrt="all").pattern.todense(), truth)
    # the fold: the same module with constant operands
    const_text = REVERSED.replace("func.func @main(%a: tensor<1x2x6xf64>, %w: tensor<2x2x3xf64>)",
                                  "func.func @main(%unused: tensor<f64>)")
    fmt = lambda v: "dense<" + np.array2string(v, separator=", ", precision=17, threshold=10 ** 6).replace("\n", "") + ">"
    const_text = const_text.replace(
        "  %0 = ", f"  %a = stablehlo.constant {fmt(a)} : tensor<1x2x6xf64>\n"
                   f"  %w = stablehlo.constant {fmt(w)} : tensor<2x2x3xf64>\n  %0 = ")
    seen = []
    analyze_module(const_text, observer=lambda op, res: seen.append(res[0].const)
                   if op.operation.name == "stablehlo.convolution" else None)
    assert np.allclose(seen[0], base)


def test_large_convolution_is_exact_in_structure():
    n = 200
    f = lambda x: lax.conv_general_dilated(x[None, None], jnp.ones((1, 1, 3, 3)), (1, 1), "SAME")[0, 0]
    p = jacobian_sparsity(f, jnp.ones((n, n)))
    assert p.nnz == 9 * n * n - 4 * 3 * n + 4
