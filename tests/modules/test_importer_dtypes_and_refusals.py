"""Issue 25, bullets 1–3: every ``ml_dtypes`` float is a float in the importer; shape-changing sharding
markers are refused cleanly; errors about custom calls without a derivative rule name the target."""

from __future__ import annotations

import importlib

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

from stablehlo_sparsity.tools.driver import main
from stablehlo_sparsity.modules.importer import ImportError_, import_module
from stablehlo_sparsity.dtypes import is_float
from stablehlo_sparsity.modules.importer.xla import run_module

FLOATS = ["bf16"]  # (compared with f32; f16 always worked)
NP = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}


def test_every_ml_dtypes_float_is_a_float():
    floats = [ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, np.float16, np.float64,
              np.complex64]
    others = [ml_dtypes.int4, ml_dtypes.uint4, np.int32, np.uint8, np.bool_]
    assert all(is_float(d) for d in floats)
    assert not any(is_float(d) for d in others)


def _window_max(t: str) -> str:
    return f"""func.func @main(%x: tensor<4x6x{t}>) -> tensor<3x5x{t}> {{
  %init = stablehlo.constant dense<-1.0> : tensor<{t}>
  %0 = "stablehlo.reduce_window"(%x, %init) <{{window_dimensions = array<i64: 2, 2>}}> ({{
  ^bb0(%a: tensor<{t}>, %b: tensor<{t}>):
    %m = stablehlo.maximum %a, %b : tensor<{t}>
    stablehlo.return %m : tensor<{t}>
  }}) : (tensor<4x6x{t}>, tensor<{t}>) -> tensor<3x5x{t}>
  func.return %0 : tensor<3x5x{t}>
}}"""


def _argmax_reduce(t: str) -> str:
    return f"""func.func @main(%x: tensor<4x6x{t}>) -> (tensor<6x{t}>, tensor<6xi32>) {{
  %idx = stablehlo.iota dim = 0 : tensor<4x6xi32>
  %init = stablehlo.constant dense<-2.0> : tensor<{t}>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%x init: %init), (%idx init: %zero) across dimensions = [0] : (tensor<4x6x{t}>, tensor<4x6xi32>, tensor<{t}>, tensor<i32>) -> (tensor<6x{t}>, tensor<6xi32>)
   reducer(%a: tensor<{t}>, %b: tensor<{t}>) (%ia: tensor<i32>, %ib: tensor<i32>) {{
    %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<{t}>, tensor<{t}>) -> tensor<i1>
    %v = stablehlo.select %gt, %a, %b : tensor<i1>, tensor<{t}>
    %i = stablehlo.select %gt, %ia, %ib : tensor<i1>, tensor<i32>
    stablehlo.return %v, %i : tensor<{t}>, tensor<i32>
  }}
  func.return %0#0, %0#1 : tensor<6x{t}>, tensor<6xi32>
}}"""


def _point(dtype):
    x = np.random.default_rng(0).permutation(24).reshape(4, 6) / 8.0 - 1.0  # distinct, exact in bf16
    return x.astype(dtype)


@pytest.mark.parametrize("t", FLOATS)
@pytest.mark.parametrize("module", [_window_max, _argmax_reduce], ids=["reduce_window_max", "argmax_reduce"])
def test_low_precision_reductions_with_a_non_identity_init_differentiate(t, module):
    """bf16 like f16 and f32: the float result of a window maximum / an argmax-style reduce (init not the
    identity) has the selecting derivative (0/1), equal across types; the replay equals XLA's run."""
    f = import_module(module(t))
    x = _point(NP[t])
    got = f(x)
    want = run_module(module(t), [x])
    for g, w in zip(got if isinstance(got, tuple) else (got,), want):
        assert np.array_equal(np.asarray(g), w)
    first = (lambda v: f(v)) if module is _window_max else (lambda v: f(v)[0])
    J = np.asarray(jax.jit(jax.jacfwd(first))(x)).astype(np.float32)
    f32 = import_module(module("f32"))
    first32 = (lambda v: f32(v)) if module is _window_max else (lambda v: f32(v)[0])
    J32 = np.asarray(jax.jit(jax.jacfwd(first32))(x.astype(np.float32)))
    assert np.array_equal(J, J32) and J.any()


def test_bf16_totalorder_compare_follows_the_spec():
    """§compare TOTALORDER on bf16 orders -0 before +0 (FLOAT comparison would call them equal)."""
    text = """func.func @main(%a: tensor<2xbf16>, %b: tensor<2xbf16>) -> tensor<2xi1> {
  %0 = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xi1>
  func.return %0 : tensor<2xi1>
}"""
    a = np.array([-0.0, 1.0], ml_dtypes.bfloat16)
    b = np.array([0.0, 1.0], ml_dtypes.bfloat16)
    got = np.asarray(import_module(text)(a, b))
    assert got.tolist() == [True, False]
    assert np.array_equal(got, run_module(text, [a, b])[0])


# ---------------------------------------------------------------------- shape-changing sharding markers
_SHARDED = """func.func @main(%x: tensor<4x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.custom_call @Sharding(%x) {mhlo.sharding = "{devices=[2,1]<=[2]}"} : (tensor<4x3xf32>) -> tensor<4x3xf32>
  %1 = stablehlo.custom_call @SPMDFullToShardShape(%0) {mhlo.sharding = "{manual}"} : (tensor<4x3xf32>) -> tensor<2x3xf32>
  func.return %1 : tensor<2x3xf32>
}"""


def test_importer_refuses_shape_changing_sharding_markers_by_name():
    f = import_module(_SHARDED)
    with pytest.raises(ImportError_, match="SPMDFullToShardShape.*changes shapes"):
        f(np.ones((4, 3), np.float32))


@pytest.mark.parametrize("flags", [[], ["--on-unknown=conservative"]])
def test_driver_refuses_shape_changing_markers_without_suggesting_conservative(capsys, tmp_path, flags):
    path = tmp_path / "sharded.mlir"
    path.write_text(_SHARDED)
    code = main([str(path), "--sparsity-jacobian", *flags])
    err = capsys.readouterr().err
    assert code == 1 and "SPMDFullToShardShape" in err and "changes shapes" in err
    assert "conservative" not in err and "Traceback" not in err


# ---------------------------------------------------------------------- named custom-call targets
def test_derivative_refusal_names_the_custom_call_target():
    """JAX's exported Schur decomposition (``lapack_sgees_ffi``) replays, but JAX defines no derivative for it:
    the error says which target."""
    mod = importlib.import_module("jax._src.internal_test_util.export_back_compat_test_data.cpu_schur_lapack_gees")
    data = mod.data_2024_11_29["f32"]
    f = import_module(data["mlir_module_serialized"])
    (x,) = data["inputs"]
    with pytest.raises(ImportError_, match="custom_call target 'lapack_sgees_ffi'"):
        jax.jacfwd(lambda a: jnp.sum(f(a)[0]))(x)


def test_pass_error_names_the_custom_call_target(capsys, tmp_path):
    mod = importlib.import_module("jax._src.internal_test_util.export_back_compat_test_data.cpu_schur_lapack_gees")
    path = tmp_path / "schur.mlirbc"
    path.write_bytes(mod.data_2024_11_29["f32"]["mlir_module_serialized"])
    code = main([str(path), "--sparsity-jacobian"])
    err = capsys.readouterr().err
    assert code == 1 and "lapack_sgees_ffi" in err and "Schur" in err and "Traceback" not in err
