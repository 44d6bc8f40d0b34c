"""Structural ops: exact index maps, checked three independent ways.

1. Against the StableHLO reference interpreter run on *labelled* inputs: operand ``j`` holds the column
   numbers ``offset_j + arange(k_j)``, so each output value names the input element it copies — the true
   pattern, computed by someone else's implementation of the spec.  Our pattern must equal it exactly, and
   our constant folding must produce the same values.
2. JAX functions against the union of ``|jax.jacfwd| > 0`` (structural maps are linear: one point is exact).
3. Hand-written edge cases: zero-size tensors, constants, iota feeding value-aware rules.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from stablehlo_sparsity import analyze_module, jacobian_sparsity
from helpers import (assert_same_values, assert_sound, fold_module, mlir_literal, op_module, reference_module)


def _arr(attr_name, values):
    return f"{attr_name} = array<i64{': ' if values else ''}{', '.join(str(v) for v in values)}>"


# (op, operand shapes, result shape, attributes)
CASES = [
    ("reshape", [(4, 6)], (3, 8), ""),
    ("reshape", [(2, 3, 4)], (24,), ""),
    ("transpose", [(2, 3, 4)], (4, 2, 3), _arr("permutation", [2, 0, 1])),
    ("transpose", [(5, 3)], (3, 5), _arr("permutation", [1, 0])),
    ("broadcast_in_dim", [(2, 3)], (3, 4, 2), _arr("broadcast_dimensions", [2, 0])),
    ("broadcast_in_dim", [(1, 3)], (5, 3), _arr("broadcast_dimensions", [0, 1])),
    ("broadcast_in_dim", [(3, 1)], (2, 3, 4), _arr("broadcast_dimensions", [1, 2])),
    ("broadcast_in_dim", [()], (2, 3), _arr("broadcast_dimensions", [])),
    ("broadcast_in_dim", [(4,)], (4, 4), _arr("broadcast_dimensions", [0])),
    ("slice", [(10, 7)], (3, 4), f"{_arr('start_indices', [1, 0])}, {_arr('limit_indices', [9, 7])}, "
                                 f"{_arr('strides', [3, 2])}"),
    ("slice", [(6, 5)], (0, 5), f"{_arr('start_indices', [2, 0])}, {_arr('limit_indices', [2, 5])}, "
                                f"{_arr('strides', [1, 1])}"),
    ("slice", [(4, 5, 6)], (2, 2, 3), f"{_arr('start_indices', [1, 0, 1])}, {_arr('limit_indices', [4, 5, 6])}, "
                                      f"{_arr('strides', [2, 3, 2])}"),
    ("slice", [(9,)], (1,), f"{_arr('start_indices', [7])}, {_arr('limit_indices', [8])}, {_arr('strides', [1])}"),
    ("reverse", [(3, 4, 2)], (3, 4, 2), _arr("dimensions", [0, 2])),
    ("reverse", [(5,)], (5,), _arr("dimensions", [])),
    ("concatenate", [(2, 3), (4, 3), (1, 3)], (7, 3), "dimension = 0 : i64"),
    ("concatenate", [(2, 3), (2, 1), (2, 4)], (2, 8), "dimension = 1 : i64"),
    ("concatenate", [(2, 3, 2), (2, 3, 1)], (2, 3, 3), "dimension = 2 : i64"),
    ("concatenate", [(1, 2, 3), (1, 4, 3)], (1, 6, 3), "dimension = 1 : i64"),
    ("concatenate", [(2, 0), (2, 3)], (2, 3), "dimension = 1 : i64"),
    ("pad", [(4, 6), ()], (10, 13), f"{_arr('edge_padding_low', [1, 2])}, {_arr('edge_padding_high', [2, 0])}, "
                                   f"{_arr('interior_padding', [1, 1])}"),
    ("pad", [(4, 6), ()], (8, 15), f"{_arr('edge_padding_low', [-1, 2])}, {_arr('edge_padding_high', [2, -3])}, "
                                   f"{_arr('interior_padding', [1, 2])}"),
    ("pad", [(5,), ()], (1,), f"{_arr('edge_padding_low', [-2])}, {_arr('edge_padding_high', [-2])}, "
                              f"{_arr('interior_padding', [0])}"),
    ("pad", [(3,), ()], (2,), f"{_arr('edge_padding_low', [-3])}, {_arr('edge_padding_high', [0])}, "
                              f"{_arr('interior_padding', [1])}"),
    ("pad", [(0, 2), ()], (3, 2), f"{_arr('edge_padding_low', [1, 0])}, {_arr('edge_padding_high', [2, 0])}, "
                                  f"{_arr('interior_padding', [3, 0])}"),
]


def _type(shape):
    return "tensor<" + "".join(f"{d}x" for d in shape) + "f64>"


def _labelled(shapes):
    """Operand j holds offset_j + arange(k_j): its values are the input columns of its elements."""
    out, off = [], 0
    for s in shapes:
        k = int(np.prod(s, dtype=np.int64))
        out.append((off + np.arange(k, dtype=np.float64)).reshape(s))
        off += k
    return out, off


def _body(op, shapes, out_shape, attrs):
    ins = ", ".join(f"%a{i}" for i in range(len(shapes)))
    tys = ", ".join(_type(s) for s in shapes)
    attr = f" {{{attrs}}}" if attrs else ""
    return f'%r = "stablehlo.{op}"({ins}){attr} : ({tys}) -> {_type(out_shape)}\nreturn %r : {_type(out_shape)}'


@pytest.mark.parametrize("op,shapes,out_shape,attrs", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_index_map_matches_reference_interpreter(op, shapes, out_shape, attrs):
    inputs, n = _labelled(shapes)
    body = _body(op, shapes, out_shape, attrs)
    (labels,) = reference_module(op_module(body, inputs, [_type(out_shape)]), inputs)
    assert labels.shape == tuple(out_shape)
    want = np.zeros((labels.size, n), bool)
    want[np.arange(labels.size), labels.ravel().astype(np.int64)] = True
    got = analyze_module(op_module(body, inputs, [_type(out_shape)]), wrt="all").pattern.todense()
    assert np.array_equal(got, want)
    # the fold rule, on the same labelled constants, computes the same values
    (folded,) = fold_module(op_module(body, inputs, [_type(out_shape)], as_constants=True))
    assert folded is not None
    assert_same_values(folded, labels)


@pytest.mark.parametrize("dims,shape,dtype", [
    (0, (5,), "i32"), (1, (2, 4), "f32"), (0, (3, 2, 2), "ui8"), (2, (2, 2, 3), "i64"), (1, (3, 0), "f64"),
])
def test_iota_fold_matches_reference_interpreter(dims, shape, dtype):
    t = "tensor<" + "".join(f"{d}x" for d in shape) + dtype + ">"
    body = f"%r = stablehlo.iota dim = {dims} : {t}\nreturn %r : {t}"
    text = op_module(body, [], [t], as_constants=True)
    (got,) = fold_module(text)
    (want,) = reference_module(text)
    assert_same_values(got, want)


def test_structural_folds_on_other_dtypes():
    """Bool, unsigned and 0-d values fold with their dtype and shape intact."""
    b = np.array([[True, False, True], [False, False, True]])
    u = np.array([[1, 2, 3], [4, 5, 6]], np.uint16)
    s = np.array(2.5)
    body = """%0 = stablehlo.transpose %a0, dims = [1, 0] : (tensor<2x3xi1>) -> tensor<3x2xi1>
    %p = stablehlo.constant dense<7> : tensor<ui16>
    %1 = stablehlo.pad %a1, %p, low = [0, 1], high = [1, 0], interior = [0, 1] : (tensor<2x3xui16>, tensor<ui16>) -> tensor<3x6xui16>
    %2 = stablehlo.reshape %a2 : (tensor<f64>) -> tensor<1x1xf64>
    %3 = stablehlo.broadcast_in_dim %a2, dims = [] : (tensor<f64>) -> tensor<2xf64>
    %4 = stablehlo.transpose %a2, dims = [] : (tensor<f64>) -> tensor<f64>
    return %0, %1, %2, %3, %4 : tensor<3x2xi1>, tensor<3x6xui16>, tensor<1x1xf64>, tensor<2xf64>, tensor<f64>"""
    outs = ["tensor<3x2xi1>", "tensor<3x6xui16>", "tensor<1x1xf64>", "tensor<2xf64>", "tensor<f64>"]
    text = op_module(body, [b, u, s], outs, as_constants=True)
    for got, want in zip(fold_module(text), reference_module(text)):
        assert got is not None
        assert_same_values(got, want)


def test_pad_with_non_constant_padding_value():
    """Every padding element (edges and interior) depends on the scalar padding value."""
    def f(x, v):
        return lax.pad(x, v, [(-1, 2, 1), (2, -3, 2)])

    pat = assert_sound(f, jnp.ones((4, 6)), jnp.float64(0.5), argnums=(0, 1), exact=True, points=2, jit=True)
    y = jax.eval_shape(f, jnp.ones((4, 6)), 0.5)
    assert pat.shape == (int(np.prod(y.shape)), 25)
    d = pat.todense()
    assert d[:, :24].sum() == 3 * 5  # 3 rows × 5 columns of x survive the negative edges
    assert d[:, 24].sum() == d.shape[0] - 15


def test_partially_constant_concatenate_and_pad():
    body = """%c = stablehlo.constant dense<1.0> : tensor<2x2xf64>
    %z = stablehlo.constant dense<0.0> : tensor<f64>
    %0 = stablehlo.concatenate %c, %a0, %c, dim = 1 : (tensor<2x2xf64>, tensor<2x3xf64>, tensor<2x2xf64>) -> tensor<2x7xf64>
    %1 = stablehlo.pad %a0, %z, low = [1, 0], high = [0, 1], interior = [0, 0] : (tensor<2x3xf64>, tensor<f64>) -> tensor<3x4xf64>
    return %0, %1 : tensor<2x7xf64>, tensor<3x4xf64>"""
    got = analyze_module(op_module(body, [np.zeros((2, 3))], ["tensor<2x7xf64>", "tensor<3x4xf64>"])).pattern
    d = got.todense()
    rows0 = d[:14].reshape(2, 7, 6)
    assert not rows0[:, :2].any() and not rows0[:, 5:].any()
    assert np.array_equal(rows0[:, 2:5].reshape(6, 6), np.eye(6, dtype=bool))
    rows1 = d[14:].reshape(3, 4, 6)
    assert not rows1[0].any() and not rows1[:, 3].any()
    assert np.array_equal(rows1[1:, :3].reshape(6, 6), np.eye(6, dtype=bool))


def test_zero_size_values():
    body = """%0 = stablehlo.slice %a0 [0:0, 0:3] : (tensor<2x3xf64>) -> tensor<0x3xf64>
    %1 = stablehlo.concatenate %0, %a0, dim = 0 : (tensor<0x3xf64>, tensor<2x3xf64>) -> tensor<2x3xf64>
    %2 = stablehlo.reshape %0 : (tensor<0x3xf64>) -> tensor<3x0xf64>
    %3 = stablehlo.transpose %0, dims = [1, 0] : (tensor<0x3xf64>) -> tensor<3x0xf64>
    return %1, %2, %3 : tensor<2x3xf64>, tensor<3x0xf64>, tensor<3x0xf64>"""
    a = analyze_module(op_module(body, [np.zeros((2, 3))], ["tensor<2x3xf64>", "tensor<3x0xf64>", "tensor<3x0xf64>"]))
    assert a.pattern.shape == (6, 6)
    assert np.array_equal(a.pattern.todense(), np.eye(6, dtype=bool))
    assert [r.shape for r in a.results] == [(2, 3), (3, 0), (3, 0)]


def test_constant_splat_and_iota_are_values():
    """A splat constant and an iota are known values: multiplying by them uses their zeros."""
    body = """%i = stablehlo.iota dim = 0 : tensor<4xf64>
    %z = stablehlo.constant dense<0.0> : tensor<4xf64>
    %0 = stablehlo.multiply %a0, %i : tensor<4xf64>
    %1 = stablehlo.multiply %a0, %z : tensor<4xf64>
    return %0, %1 : tensor<4xf64>, tensor<4xf64>"""
    a = analyze_module(op_module(body, [np.zeros(4)], ["tensor<4xf64>", "tensor<4xf64>"]))
    d = a.pattern.todense()
    assert np.array_equal(d[:4], np.diag([False, True, True, True]))
    assert not d[4:].any()


def test_large_constant_folds_through_structural_ops():
    c = np.arange(300, dtype=np.float64).reshape(20, 15) % 7
    body = f"""%c = stablehlo.constant {mlir_literal(c)}
    %t = stablehlo.transpose %c, dims = [1, 0] : (tensor<20x15xf64>) -> tensor<15x20xf64>
    %r = stablehlo.reshape %t : (tensor<15x20xf64>) -> tensor<300xf64>
    %s = stablehlo.slice %r [0:300:7] : (tensor<300xf64>) -> tensor<43xf64>
    return %s : tensor<43xf64>"""
    (got,) = fold_module(op_module(body, [], ["tensor<43xf64>"], as_constants=True))
    assert_same_values(got, c.T.ravel()[::7])


# ---------------------------------------------------------------- JAX functions (linear maps: one point is exact)
JAX_CASES = {
    "reshape": ((lambda x: x.reshape(3, 8) * 2.0), [(4, 6)]),
    "transpose": ((lambda x: jnp.transpose(x, (2, 0, 1)) + 1.0), [(2, 3, 4)]),
    "broadcast_add": ((lambda x, y: x + y), [(3, 1), (1, 4)]),
    "broadcast_scalar": ((lambda x, s: x * s), [(3, 4), ()]),
    "broadcast_in_dim_permuted": ((lambda x: lax.broadcast_in_dim(x, (3, 4, 2), (2, 0))), [(2, 3)]),
    "broadcast_size_one": ((lambda x: lax.broadcast_in_dim(x, (5, 3), (0, 1))), [(1, 3)]),
    "slice_strided": ((lambda x: lax.slice(x, (1, 0), (9, 7), (3, 2))), [(10, 7)]),
    "negative_step": ((lambda x: x[::-2, 1::3]), [(7, 8)]),
    "concatenate_0": ((lambda x, y, z: jnp.concatenate([x, y, z], axis=0)), [(2, 3), (4, 3), (1, 3)]),
    "concatenate_1": ((lambda x, y, z: jnp.concatenate([x, y, z], axis=1)), [(2, 3), (2, 1), (2, 4)]),
    "concatenate_2": ((lambda x, y: jnp.concatenate([x, y, x], axis=2)), [(2, 3, 2), (2, 3, 1)]),
    "stack": ((lambda x, y: jnp.stack([x, y, x * y], axis=1)), [(4,), (4,)]),
    "pad_negative_interior": ((lambda x: lax.pad(x, 0.0, [(-1, 2, 1), (2, -3, 2)])), [(4, 6)]),
    "jnp_pad_edge": ((lambda x: jnp.pad(x, ((1, 2), (0, 3)), mode="edge")), [(3, 4)]),
    "jnp_pad_reflect": ((lambda x: jnp.pad(x, ((2, 1),), mode="reflect")), [(6,)]),
    "reverse": ((lambda x: lax.rev(x, (0, 2))), [(3, 4, 2)]),
    "flip": ((lambda x: jnp.flip(x) * x), [(5,)]),
    "roll": ((lambda x: jnp.roll(x, (1, -2), axis=(0, 1))), [(4, 5)]),
    "tile": ((lambda x: jnp.tile(x, (2, 3))), [(2, 2)]),
    "repeat": ((lambda x: jnp.repeat(x, 3, axis=0)), [(3, 2)]),
    "swap_expand": ((lambda x: jnp.expand_dims(jnp.swapaxes(x, 0, 1), 1)), [(2, 3)]),
    "iota_mask": ((lambda x: x * jnp.arange(5.0)), [(5,)]),
    "triu_mask": ((lambda x: jnp.triu(x)), [(4, 4)]),
}


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_jax_structural_exact(name):
    f, shapes = JAX_CASES[name]
    args = [jnp.ones(s) for s in shapes]
    assert_sound(f, *args, argnums=tuple(range(len(args))), exact=True, points=1, jit=True)


def test_iota_multiplier_zero_is_dropped():
    assert jacobian_sparsity(lambda x: x * jnp.arange(5.0), jnp.ones(5)).nnz == 4


def test_slice_index_map_is_the_sliced_position_map():
    """The slice rule's index map, built from start/limit/stride arithmetic, is the position map sliced."""
    from stablehlo_sparsity.lattice.windows import positions
    from stablehlo_sparsity.analysis.rules.structural import slice_index_map

    rng = np.random.default_rng(0)
    for _ in range(300):
        shape = tuple(int(d) for d in rng.integers(0, 5, rng.integers(0, 4)))
        starts = [int(rng.integers(0, d + 1)) for d in shape]
        limits = [int(rng.integers(s, d + 1)) for s, d in zip(starts, shape)]
        strides = [int(rng.integers(1, 4)) for _ in shape]
        want = positions(shape)[tuple(slice(*t) for t in zip(starts, limits, strides))].ravel()
        assert np.array_equal(slice_index_map(shape, starts, limits, strides), want)
