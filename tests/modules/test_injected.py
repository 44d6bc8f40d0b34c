"""Using an injected derivative from Python without JAX internals: ``compile_module`` (XLA on the default
backend, any function of a module, from text, bytecode, a path or an ``ir.Module``) and ``read_injected``
(the ``sparsity.derivative`` record as CSR arrays and colors); and the driver writing MLIR bytecode
(``--emit-bytecode``, ``-o OUT.mlirbc``) that it, and the helpers, read back."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity import InputError
from stablehlo_sparsity.tools.driver import main
from stablehlo_sparsity.passes import inject_hessian, inject_jacobian
from stablehlo_sparsity.passes.jacobian import read_pattern

MODEL = """\
func.func @main(%x: tensor<5xf32>) -> tensor<4xf32> {
  %a = stablehlo.slice %x [1:5] : (tensor<5xf32>) -> tensor<4xf32>
  %b = stablehlo.slice %x [0:4] : (tensor<5xf32>) -> tensor<4xf32>
  %m = stablehlo.multiply %a, %b : tensor<4xf32>
  %s = stablehlo.sine %m : tensor<4xf32>
  return %s : tensor<4xf32>
}
"""


def model(x):
    return jnp.sin(x[1:] * x[:-1])


X = np.linspace(0.3, 1.1, 5).astype(np.float32)


def _injected():
    m = ss.parse_module(MODEL)
    assert inject_jacobian(m) == "main_jacobian"
    return m


def test_compile_module_runs_the_injected_jacobian_and_read_injected_builds_the_matrix():
    m = _injected()
    values = ss.compile_module(m, entry="main_jacobian")(X)
    info = ss.read_injected(m, "main_jacobian")
    assert (info.kind, info.entry, info.wrt, info.shape, info.nnz, info.mode) == ("jacobian", "main", (0,), (4, 5),
                                                                                   8, "forward")
    assert info.num_colors == 2 and info.colors.tolist() == [0, 1, 0, 1, 0] and info.helpers == ()
    J = info.to_scipy(values)
    np.testing.assert_allclose(J.toarray(), np.asarray(jax.jacfwd(model)(X)), rtol=1e-6, atol=1e-7)
    assert (info.pattern().toarray() == (np.asarray(jax.jacfwd(model)(X)) != 0)).all()
    # the module's own @main, compiled the same way, is the function itself
    np.testing.assert_allclose(ss.compile_module(m)(X), np.asarray(model(X)), rtol=1e-6)
    # the record is found without naming it when there is one
    assert ss.read_injected(m).name == "main_jacobian"


def test_the_pass_level_reader_delegates_to_the_public_one():
    from stablehlo_sparsity.ir.helpers import functions

    m = _injected()
    with m.context:
        fn = functions(m)["main_jacobian"]
        d = read_pattern(fn)
        info = ss.read_injected(fn)
    assert d["indptr"].tolist() == info.indptr.tolist() == [0, 2, 4, 6, 8]
    assert d["indices"].tolist() == info.indices.tolist() and d["shape"] == (4, 5) and "triangle" not in d


def test_paths_bytes_and_text_are_all_accepted(tmp_path):
    m = _injected()
    text = str(m)
    bc = tmp_path / "model.mlirbc"
    with open(bc, "wb") as fh:
        m.operation.write_bytecode(fh)
    (tmp_path / "model.mlir").write_text(text)
    want = np.asarray(ss.compile_module(m, entry="main_jacobian")(X))
    for source in (text, bc.read_bytes(), bc, str(bc), tmp_path / "model.mlir", str(tmp_path / "model.mlir")):
        np.testing.assert_array_equal(np.asarray(ss.compile_module(source, entry="main_jacobian")(X)), want)
        assert ss.read_injected(source, "main_jacobian").nnz == 8


def test_an_entry_other_than_main_calling_main():
    text = """
    func.func @main(%x: tensor<3xf64>) -> tensor<3xf64> {
      %y = stablehlo.multiply %x, %x : tensor<3xf64>
      return %y : tensor<3xf64>
    }
    func.func private @g(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<f64>) {
      %y = func.call @main(%x) : (tensor<3xf64>) -> tensor<3xf64>
      %z = stablehlo.add %y, %x : tensor<3xf64>
      %c = stablehlo.constant dense<2.5> : tensor<f64>
      return %z, %c : tensor<3xf64>, tensor<f64>
    }"""
    g = ss.compile_module(text, entry="g")
    z, c = g(np.array([1.0, 2.0, 1e-200]))
    assert np.asarray(z).dtype == np.float64 and np.asarray(z).tolist() == [2.0, 6.0, 1e-200]
    assert float(c) == 2.5 and "@g(float64[3])" in repr(g)


def test_compile_module_errors_are_input_errors():
    with pytest.raises(InputError, match="no entry function '@nope'.*main"):
        ss.compile_module(MODEL, entry="nope")
    f = ss.compile_module(MODEL)
    with pytest.raises(InputError, match=r"argument 0 has shape \(4,\)"):
        f(np.ones(4, np.float32))
    with pytest.raises(InputError, match="takes 1 arguments, got 2"):
        f(X, X)
    unknown = """
    func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
      %y = stablehlo.custom_call @no_such_target_anywhere(%x) : (tensor<2xf32>) -> tensor<2xf32>
      return %y : tensor<2xf32>
    }"""
    with pytest.raises(InputError, match="XLA could not compile @main"):
        ss.compile_module(unknown)


def test_read_injected_errors_and_the_hessian_record():
    with pytest.raises(InputError, match="0 functions with a sparsity.derivative record"):
        ss.read_injected(MODEL)
    with pytest.raises(InputError, match="@main has no sparsity.derivative record"):
        ss.read_injected(MODEL, "main")
    with pytest.raises(InputError, match="no function '@other'"):
        ss.read_injected(_injected(), "other")
    m = ss.parse_module("""
    func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
      %a = stablehlo.slice %x [1:4] : (tensor<4xf32>) -> tensor<3xf32>
      %b = stablehlo.slice %x [0:3] : (tensor<4xf32>) -> tensor<3xf32>
      %m = stablehlo.multiply %a, %b : tensor<3xf32>
      %z = stablehlo.constant dense<0.0> : tensor<f32>
      %s = stablehlo.reduce(%m init: %z) applies stablehlo.add across dimensions = [0]
          : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
      return %s : tensor<f32>
    }""")
    inject_hessian(m)
    info = ss.read_injected(m, "main_hessian")
    assert info.kind == "hessian" and info.triangle == "full" and info.mode == "star"
    x = np.arange(1.0, 5.0, dtype=np.float32)
    H = info.to_scipy(ss.compile_module(m, entry="main_hessian")(x)).toarray()
    want = np.zeros((4, 4))
    want[np.arange(3), np.arange(1, 4)] = want[np.arange(1, 4), np.arange(3)] = 1.0
    np.testing.assert_array_equal(H, want)
    with pytest.raises(InputError, match="returns 6 values"):
        info.to_scipy(np.ones(5))


# ------------------------------------------------------------------------------------ the driver writes bytecode
def test_driver_writes_bytecode_that_reads_back(tmp_path, capsys):
    src = tmp_path / "model.mlir"
    src.write_text(MODEL)
    out = tmp_path / "model.mlirbc"
    assert main([str(src), "--sparsity-jacobian", "-o", str(out)]) == 0  # -o OUT.mlirbc implies bytecode
    data = out.read_bytes()
    assert data.startswith(b"ML\xefR")
    # the driver reads it back: the same text as writing text directly
    assert main([str(out)]) == 0
    from_bytecode = capsys.readouterr().out
    assert main([str(src), "--sparsity-jacobian"]) == 0
    assert capsys.readouterr().out == from_bytecode
    # and so do the Python helpers
    info = ss.read_injected(out)
    values = ss.compile_module(out, entry="main_jacobian")(X)
    np.testing.assert_allclose(info.to_scipy(values).toarray(), np.asarray(jax.jacfwd(model)(X)), rtol=1e-6,
                               atol=1e-7)
    # --emit-bytecode with another suffix
    other = tmp_path / "model.bin"
    assert main([str(src), "--emit-bytecode", "-o", str(other)]) == 0
    assert Path(other).read_bytes().startswith(b"ML\xefR")


@pytest.mark.parametrize("flags, message", [
    (["--emit-bytecode", "--emit=pattern"], "cannot be combined with --emit=pattern"),
    (["--emit-bytecode", "--split-input-file"], "cannot be combined with --split-input-file"),
    (["--emit-bytecode", "--mlir-print-op-generic"], "apply to text output"),
])
def test_driver_bytecode_refusals(tmp_path, capsys, flags, message):
    src = tmp_path / "model.mlir"
    src.write_text(MODEL)
    assert main([str(src), *flags, "-o", str(tmp_path / "x.out")]) == 1
    assert message in capsys.readouterr().err


def test_compile_module_of_a_lapack_calling_derivative_runs_in_a_fresh_process(tmp_path):
    """``compile_module`` registers jaxlib's LAPACK kernels before XLA compiles a ``lapack_*`` call: in a process
    that ran no JAX linear algebra, the CPU-lowered derivative of a Cholesky module must run, not segfault."""
    import subprocess
    import sys

    module = (
        "func.func public @main(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {\n"
        '  %0 = "stablehlo.cholesky"(%a) {lower = true} : (tensor<4x4xf32>) -> tensor<4x4xf32>\n'
        "  return %0 : tensor<4x4xf32>\n}\n")
    from stablehlo_sparsity.ir.parsing import parse_module
    from stablehlo_sparsity.passes.jacobian import inject_jacobian

    m = parse_module(module)
    inject_jacobian(m, platform="cpu")  # (in this process: the CPU lowering of JAX's Cholesky derivative)
    path = tmp_path / "chol.mlir"
    path.write_text(str(m))
    assert "lapack_" in path.read_text(), "the CPU lowering should call LAPACK"
    script = f"""
import numpy as np, stablehlo_sparsity as ss
f = ss.compile_module({str(path)!r}, entry="main_jacobian")
info = ss.read_injected({str(path)!r}, "main_jacobian")
a = np.eye(4, dtype=np.float32) * 2 + 0.1
J = info.to_scipy(f(a))
assert np.all(np.isfinite(J.data)) and J.nnz == info.nnz
print("ok", J.shape)
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.startswith("ok")
