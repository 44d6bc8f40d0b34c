"""A ``jax.export.Exported`` is accepted wherever module text or bytes are (issue 47): its entry takes the Exported's
own inputs (no ``_platform_index``, unused inputs kept), so ``wrt`` counts them and the default is the first, and a
multi-platform export reads the program of the platform it runs on here."""

import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.ir.parsing import exported_module, is_exported

MULTI = ("cpu", "cuda", "tpu")


def _residual(x):
    return x[1:] ** 2 - jnp.sin(x[:-1]) * x[0]


def _solve(x):
    """jnp.linalg.solve lowers per platform (LAPACK on CPU, cuSOLVER, a TPU expander): a multi-platform export
    holds a ``stablehlo.case`` on the platform index."""
    a = jnp.eye(5) * 3 + jnp.diag(x[1:], 1)
    return jnp.linalg.solve(a, x)


def _export(f, *shapes, platforms=None):
    return jax.export.export(jax.jit(f), platforms=platforms)(
        *[jax.ShapeDtypeStruct(s, jnp.float64) for s in shapes])


def _quiet(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ss.SparsityWarning)  # (the solve's dynamic indices: conservative)
        return fn(*args, **kwargs)


@pytest.mark.parametrize("f, platforms", [(_residual, None), (_residual, MULTI), (_solve, MULTI)],
                         ids=["residual-one-platform", "residual-cpu-cuda-tpu", "solve-cpu-cuda-tpu"])
def test_exported_gives_the_functions_pattern_and_jacobian(f, platforms):
    x = np.linspace(0.2, 1.0, 5)
    exp = _export(f, (5,), platforms=platforms)
    assert is_exported(exp) and not is_exported(exp.mlir_module())
    expected = _quiet(ss.jacobian_sparsity, f, x)
    assert _quiet(ss.analyze_module, exp).pattern == expected
    jac = _quiet(ss.sparse_jacobian_module, exp, output="dense")
    np.testing.assert_allclose(np.asarray(jac(x)), np.asarray(jax.jacfwd(f)(x)), rtol=1e-12, atol=1e-12)


def test_exported_entry_takes_its_own_inputs_and_wrt_counts_them():
    """A multi-platform export of a function whose second input is unused: ``@main`` takes all three inputs,
    the default ``wrt`` is input 0 (``argnums=0``), ``wrt="all"`` gives every input's columns."""
    def f(x, unused, z):
        return jnp.sin(x[1:]) * z[:-1]

    x = np.linspace(0.2, 1.0, 4)
    exp = _export(f, (4,), (2,), (4,), platforms=MULTI)
    assert tuple(exp.module_kept_var_idx) == (0, 2)
    assert ss.analyze_module(exp).pattern == ss.jacobian_sparsity(f, x, x[:2], x)
    everything = ss.analyze_module(exp, wrt="all").pattern
    assert everything == ss.jacobian_sparsity(f, x, x[:2], x, argnums=(0, 1, 2))
    assert everything.shape == (3, 10)
    jac = ss.sparse_jacobian_module(exp, wrt=[2], output="dense")
    np.testing.assert_allclose(np.asarray(jac(x, x[:2], x)), np.asarray(jax.jacfwd(f, argnums=2)(x, x[:2], x)))


def test_the_module_functions_take_an_exported():
    x = np.linspace(0.2, 1.0, 5)
    exp = _export(_residual, (5,), platforms=MULTI)
    np.testing.assert_allclose(ss.compile_module(exp)(x), _residual(x), rtol=1e-14)
    np.testing.assert_allclose(ss.import_module(exp)(x), _residual(x), rtol=1e-14)
    assert ss.check_jacobian_module(exp).ok
    assert ss.analyze_module(exp.serialize()).pattern == ss.analyze_module(exp).pattern  # serialized: bytearray
    module = exported_module(exp)
    assert [op.operation.name for op in module.body.operations].count("func.func") == 2
    total = _export(lambda v: jnp.sum(_residual(v) ** 2), (5,), platforms=MULTI)
    hess = ss.sparse_hessian_module(total, output="dense")
    np.testing.assert_allclose(np.asarray(hess(x)), np.asarray(jax.hessian(lambda v: jnp.sum(_residual(v) ** 2))(x)),
                               rtol=1e-12, atol=1e-12)


def test_shape_polymorphic_export_is_a_dynamic_shape_error():
    (b,) = jax.export.symbolic_shape("b")
    exp = jax.export.export(jax.jit(jnp.sin))(jax.ShapeDtypeStruct((b,), jnp.float32))
    with pytest.raises(ss.DynamicShapeError, match="shape-polymorphic"):
        ss.analyze_module(exp)
    with pytest.raises(ss.InputError, match="jax.export.Exported"):
        ss.analyze_module(object())


def test_exported_jacobian_in_a_fresh_process():
    """Compiling and running the module of a multi-platform export, in a process that has run nothing before."""
    script = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        jax.config.update("jax_enable_x64", True)
        import stablehlo_sparsity as ss

        def solve(x):
            return jnp.linalg.solve(jnp.eye(4) * 3 + jnp.diag(x[1:], 1), x)

        exp = jax.export.export(jax.jit(solve), platforms=("cpu", "cuda", "tpu"))(
            jax.ShapeDtypeStruct((4,), jnp.float64))
        x = np.linspace(0.2, 1.0, 4)
        jac = ss.sparse_jacobian_module(exp, output="dense")
        assert np.allclose(jac(x), jax.jacfwd(solve)(x), rtol=1e-12, atol=1e-12)
        print("ok", jac.num_colors)
    """)
    out = subprocess.run([sys.executable, "-W", "ignore", "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.startswith("ok"), out.stderr[-2000:]


def test_a_pathlib_path_is_a_file_and_anything_else_is_refused(tmp_path):
    """``parse_module`` / ``analyze_module`` take a ``pathlib.Path`` as a file (MLIR's parser took only ``str``: a
    raw ``TypeError``); another kind of object is the library's ``InputError``."""
    import pathlib

    path = pathlib.Path(tmp_path) / "m.mlir"
    path.write_text("func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {\n  return %x : tensor<3xf32>\n}\n")
    for kw in ({}, {"is_path": True}):
        assert [op.operation.name for op in ss.parse_module(path, **kw).body.operations] == ["func.func"]
    assert ss.analyze_module(path).pattern.nnz == 3
    with pytest.raises(ss.InputError, match="parse_module takes StableHLO text, bytes or a path, got int"):
        ss.parse_module(3)
