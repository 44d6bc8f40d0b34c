"""Issue 24, point 1: the derivative a pass injects keeps the module's portability.

``platform="auto"`` (the default) lowers JAX's linear algebra with StableHLO's own ``triangular_solve`` and
``cholesky`` instead of jaxlib's CPU LAPACK calls; ``platform="cpu"`` allows them.  (The lit test
``sparsity_jacobian_platform.mlir`` checks the driver's ``--platform``; ``test_injection_corpus.py`` checks
the values, compiled by XLA in a fresh process.)
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from stablehlo_sparsity.analysis.api import parse_module
from stablehlo_sparsity.errors import InputError
from stablehlo_sparsity.modules.importer.platforms import custom_call_targets, foreign_targets, resolve_platform
from stablehlo_sparsity.passes.jacobian import inject_hessian, inject_jacobian

TRSM = """func.func @main(%a: tensor<3x3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "stablehlo.triangular_solve"(%a, %b) {left_side = false, lower = false, unit_diagonal = true, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<3x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return %0 : tensor<2x3xf32>
}"""

CHOLESKY_LOSS = """func.func @main(%a: tensor<3x3xf64>) -> tensor<f64> {
  %0 = "stablehlo.cholesky"(%a) {lower = true} : (tensor<3x3xf64>) -> tensor<3x3xf64>
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %1 = stablehlo.multiply %0, %0 : tensor<3x3xf64>
  %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [0, 1] : (tensor<3x3xf64>, tensor<f64>) -> tensor<f64>
  func.return %2 : tensor<f64>
}"""


def _injected_targets(module, name):
    from jaxlib.mlir import ir

    with module.context:
        fn = next(op for op in module.body.operations if ir.StringAttr(op.attributes["sym_name"]).value == name)
        return custom_call_targets(fn)


@pytest.mark.parametrize("platform", ["auto", "portable"])
def test_jacobian_of_a_portable_module_has_no_custom_call(platform):
    m = parse_module(TRSM)
    inject_jacobian(m, wrt="all", platform=platform)
    assert _injected_targets(m, "main_jacobian") == set()
    assert "stablehlo.triangular_solve" in str(m)


def test_hessian_of_a_portable_module_has_no_custom_call():
    m = parse_module(CHOLESKY_LOSS)
    inject_hessian(m)
    assert _injected_targets(m, "main_hessian") == set()
    assert foreign_targets(parse_module(CHOLESKY_LOSS), m) == []


def test_platform_cpu_allows_lapack():
    m = parse_module(TRSM)
    inject_jacobian(m, wrt="all", platform="cpu")
    assert any(t.startswith("lapack_") for t in _injected_targets(m, "main_jacobian"))


def test_platform_option_is_checked():
    with pytest.raises(InputError, match="platform must be one of"):
        inject_jacobian(parse_module(TRSM), platform="gpu")
    assert resolve_platform(None, parse_module(TRSM)) == "portable"


def test_cpu_lowered_derivative_compiles_directly_in_a_fresh_process(tmp_path):
    """A consumer that compiles a LAPACK-calling module with ``importer.xla.compile_module`` in a process
    that has run no JAX linear algebra: the kernels are registered first (no SIGSEGV)."""
    m = parse_module(TRSM)
    inject_jacobian(m, wrt="all", platform="cpu")
    path = tmp_path / "trsm_jacobian.mlir"
    path.write_text(str(m))
    script = (
        "import sys, numpy as np\n"
        "from stablehlo_sparsity.modules.importer.xla import run_module\n"
        "a = np.triu(np.arange(1.0, 10.0).reshape(3, 3)).astype(np.float32) + 3 * np.eye(3, dtype=np.float32)\n"
        "b = np.ones((2, 3), np.float32)\n"
        "text = open(sys.argv[1]).read()\n"
        "(v,) = run_module(text, [a, b], entry='main_jacobian')\n"
        "print(np.all(np.isfinite(v)), v.size)\n")
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=300,
                          env=env)
    assert proc.returncode == 0, proc.stderr[-800:]
    finite, size = proc.stdout.split()
    assert finite == "True" and int(size) > 0


def test_values_agree_across_platforms():
    """The portable and the CPU lowering compute the same derivative."""
    from stablehlo_sparsity.modules.importer.xla import run_module

    a = (np.triu(np.arange(1.0, 10.0).reshape(3, 3)) + 3 * np.eye(3)).astype(np.float32)
    b = np.linspace(-1, 1, 6).reshape(2, 3).astype(np.float32)
    vals = {}
    for platform in ("portable", "cpu"):
        m = parse_module(TRSM)
        inject_jacobian(m, wrt="all", platform=platform)
        vals[platform] = run_module(str(m), [a, b], entry="main_jacobian")[0]
    assert np.allclose(vals["portable"], vals["cpu"], rtol=1e-5, atol=1e-6)
