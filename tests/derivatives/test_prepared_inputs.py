"""Inputs of the derivative layer (issue 20): wrongly-typed arguments of a prepared object, module sources
given as paths, auxiliary data that is not an array, and the prepared package's public contract."""

from __future__ import annotations

import os
import pathlib

import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity import InputError
from stablehlo_sparsity.derivatives.prepared import OUTPUTS, HessianMode, JacobianMode, PreparedDerivative

TEXT = """func.func @main(%x: tensor<4xf32>) -> tensor<3xf32> {
  %a = stablehlo.slice %x [1:4] : (tensor<4xf32>) -> tensor<3xf32>
  %b = stablehlo.slice %x [0:3] : (tensor<4xf32>) -> tensor<3xf32>
  %c = stablehlo.multiply %a, %b : tensor<3xf32>
  func.return %c : tensor<3xf32>
}
"""
SCALAR = """func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.multiply %x, %x : tensor<4xf32>
  %s = stablehlo.reduce(%m init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  func.return %s : tensor<f32>
}
"""


def chain(x):
    return x[1:] * x[:-1]


# ------------------------------------------------------------------ wrongly-typed arguments
@pytest.mark.parametrize("bad, match", [
    (np.arange(5, dtype=np.int32), "dtype int32.*prepared for float"),
    (np.ones(5, dtype=bool), "dtype bool.*prepared for float"),
    ("hello", "not an array"),
    (np.ones(4), "shape"),
])
def test_prepared_objects_refuse_wrong_arguments(bad, match):
    x = jnp.linspace(0.1, 1.0, 5, dtype=jnp.float32)
    for prepared in (ss.sparse_jacobian(chain, x), ss.sparse_hessian(lambda v: jnp.sum(chain(v)), x)):
        with pytest.raises(InputError, match=match):
            prepared(bad)
        with pytest.raises(InputError, match=match):
            prepared.values(bad)


def test_other_float_width_and_integer_side_arguments_still_work():
    import pickle

    x = jnp.linspace(0.1, 1.0, 5, dtype=jnp.float32)
    jac = ss.sparse_jacobian(lambda v, k: v * k, x, jnp.int32(3), output="dense")
    restored = pickle.loads(pickle.dumps(jac))
    for obj in (jac, restored):  # a restored program takes its saved dtypes: a float64 array is converted
        np.testing.assert_allclose(np.asarray(obj(np.ones(5, np.float64), np.int32(2))), 2 * np.eye(5))
    with pytest.raises(InputError, match="dtype int32"):
        restored(np.ones(5, np.int32), np.int32(2))


# ------------------------------------------------------------------ module sources as paths
def test_module_functions_read_paths(tmp_path, monkeypatch):
    path = tmp_path / "model.mlir"
    path.write_text(TEXT)
    scalar = tmp_path / "loss.mlir"
    scalar.write_text(SCALAR)
    monkeypatch.chdir(tmp_path)
    want = ss.analyze_module(TEXT).pattern
    for src in ("model.mlir", str(path), path, pathlib.PurePath(str(path))):
        if not isinstance(src, (str, os.PathLike)):
            continue
        assert ss.analyze_module(src).pattern == want
    assert ss.import_module(path).entry == "main"
    assert ss.sparse_jacobian_module(path).pattern == want
    assert ss.check_jacobian_module(str(path), points=1).ok
    assert ss.sparse_hessian_module(scalar).pattern.nnz == 4
    assert ss.check_hessian_module(scalar, points=1).ok
    # bytes are still module contents, never a path
    assert ss.analyze_module(TEXT.encode()).pattern == want


def test_path_rule_is_unambiguous(tmp_path):
    with pytest.raises(InputError, match="no such file: 'missing.mlir'"):
        ss.analyze_module("missing.mlir")
    with pytest.raises(InputError, match="no such file"):
        ss.analyze_module(tmp_path / "missing.mlir")
    # text that looks like MLIR is parsed, with the parser's own error when wrong
    with pytest.raises(InputError, match="parse"):
        ss.analyze_module("module { this is not mlir }")
    # a Path is always a path, even if its name looks like text
    with pytest.raises(InputError, match="no such file"):
        ss.analyze_module(pathlib.Path("module {"))


# ------------------------------------------------------------------ auxiliary data that is not an array
def test_non_array_aux_passes_through_untouched():
    x = jnp.linspace(0.1, 1.0, 5)
    tag = object()

    def f(v):
        return chain(v), {"name": "residual", "tag": tag, "norm": jnp.sum(v ** 2)}

    assert ss.jacobian_sparsity(f, x, has_aux=True) == ss.jacobian_sparsity(chain, x)
    J, aux = ss.sparse_jacobian(f, x, has_aux=True, output="dense")(x)
    assert aux["name"] == "residual" and aux["tag"] is tag
    np.testing.assert_allclose(float(aux["norm"]), float(jnp.sum(x ** 2)))
    (y, aux2), J2 = ss.value_and_sparse_jacobian(f, x, has_aux=True, mode="reverse", output="dense")(x)
    assert aux2["name"] == "residual"
    np.testing.assert_allclose(np.asarray(J2), np.asarray(J))

    def loss(v):
        return jnp.sum(chain(v)), {"name": "loss"}

    H, aux3 = ss.sparse_hessian(loss, x, has_aux=True, output="dense")(x)
    assert aux3 == {"name": "loss"} and H.shape == (5, 5)
    assert ss.hessian_sparsity(loss, x, has_aux=True) == ss.hessian_sparsity(lambda v: jnp.sum(chain(v)), x)


# ------------------------------------------------------------------ the public contract
def test_every_prepared_derivative_shares_the_public_base():
    x = jnp.linspace(0.1, 1.0, 4, dtype=jnp.float32)
    objs = [ss.sparse_jacobian(chain, x), ss.sparse_hessian(lambda v: jnp.sum(chain(v)), x),
            ss.sparse_jacobian_module(TEXT), ss.sparse_hessian_module(SCALAR)]
    for obj in objs:
        assert isinstance(obj, PreparedDerivative)
        assert obj.output in OUTPUTS
    assert objs[0].mode in (JacobianMode.FORWARD, JacobianMode.REVERSE) and objs[0].mode in ("forward", "reverse")
    assert objs[1].mode is HessianMode.DIRECT_RECOVERY and objs[1].mode == "direct"
    with pytest.raises(InputError, match="mode must be one of auto, forward, reverse, bidirectional"):
        ss.sparse_jacobian(chain, x, mode="sideways")
    with pytest.raises(InputError, match="output must be one of bcoo, bcsr, dense, scipy, values"):
        ss.sparse_jacobian(chain, x, output="csr")
