"""The entry points as a user meets them: checks that can fail, one ``options`` keyword, the float64
warning, one ``wrt`` rule, and the conveniences for pytree users, notebooks and compiler engineers.

* ``check_jacobian`` / ``check_hessian`` compare with dense AD of the *given* ``f``: fed the
  derivative of another function (same or other shape, prepared or restored, dense or probes), they raise
  :class:`DerivativeMismatchError`.
* every entry point takes a keyword-only ``options`` (an ``AnalysisOptions``) that is honoured (a
  tiny ``max_pattern_nnz`` refuses) and never reaches ``f``.
* float64 NumPy input without ``jax_enable_x64`` warns once (in a subprocess: the test session runs
  with x64 on).
* one rule: argument 0 by default in ``analyze_module``, the Python API and the driver;
  ``wrt="all"`` / ``--wrt=all`` for every argument.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity import AnalysisOptions, DerivativeMismatchError, InputError, PatternTooLargeError

X = jnp.linspace(0.2, 1.4, 6)


def stencil(x):
    return x[1:] * jnp.sin(x[:-1])


def energy(x):
    return jnp.sum(x[1:] ** 2 * x[:-1]) + jnp.sum(jnp.cos(x))


# ----------------------------------------------------------------------------------------------- bug 2
@pytest.mark.parametrize("method", ["dense", "probes"])
def test_check_jacobian_of_another_function_fails(method):
    # the example: the Jacobian of cos checked against sin
    with pytest.raises(DerivativeMismatchError):
        ss.check_jacobian(jnp.sin, X, jacobian=ss.sparse_jacobian(jnp.cos, X), method=method)
    # same pattern, other values
    with pytest.raises(DerivativeMismatchError):
        ss.check_jacobian(lambda x: x[1:] * jnp.cos(x[:-1]), X, jacobian=ss.sparse_jacobian(stencil, X),
                          method=method)
    rep = ss.check_jacobian(jnp.sin, X, jacobian=ss.sparse_jacobian(jnp.cos, X), method=method,
                            raise_on_error=False)
    assert not rep and rep.worst > 1
    # the right function passes
    assert ss.check_jacobian(stencil, X, jacobian=ss.sparse_jacobian(stencil, X), method=method)


def test_check_jacobian_of_another_shape_fails():
    with pytest.raises(DerivativeMismatchError, match="5×6"):
        ss.check_jacobian(jnp.sin, X, jacobian=ss.sparse_jacobian(stencil, X))


def test_check_jacobian_with_aux_argnums_and_a_restored_jacobian():
    def fa(x, y):
        return x * y[0], {"n": jnp.sum(x)}

    y = jnp.array([2.0, 3.0])
    jac = ss.sparse_jacobian(fa, X, y, has_aux=True)
    assert ss.check_jacobian(fa, X, y, jacobian=jac)
    with pytest.raises(DerivativeMismatchError):
        ss.check_jacobian(lambda x, y: (x * y[1], {"n": jnp.sum(x)}), X, y, jacobian=jac)
    with pytest.raises(InputError, match="argnums"):
        ss.check_jacobian(fa, X, y, jacobian=jac, argnums=1)
    restored = pickle.loads(pickle.dumps(ss.sparse_jacobian(stencil, X)))
    assert ss.check_jacobian(stencil, X, jacobian=restored)
    with pytest.raises(DerivativeMismatchError):
        ss.check_jacobian(lambda x: 2.0 * stencil(x), X, jacobian=restored)


@pytest.mark.parametrize("method", ["dense", "probes"])
def test_check_hessian_of_another_function_fails(method):
    hes = ss.sparse_hessian(energy, X)
    assert ss.check_hessian(energy, X, hessian=hes, method=method)
    with pytest.raises(DerivativeMismatchError):
        ss.check_hessian(lambda x: energy(x) + jnp.sum(x[1:] * x[:-1]), X, hessian=hes, method=method)
    with pytest.raises(DerivativeMismatchError):
        ss.check_hessian(lambda x: 3.0 * energy(x), X, hessian=hes, method=method)


def test_check_hessian_of_another_size_fails():
    # a 5×5 Hessian for a function of 6 variables: a wrong answer (of the wrong shape), never an OK
    hes = ss.sparse_hessian(energy, X[:5])
    with pytest.raises(DerivativeMismatchError, match="WRONG SHAPE.*5×5.*6×6"):
        ss.check_hessian(energy, X, hessian=hes)


# ----------------------------------------------------------------------------------------------- bug 3
TINY = AnalysisOptions(max_pattern_nnz=2)

ENTRY_POINTS = {
    "lower_and_analyze": lambda f, x, **kw: ss.lower_and_analyze(f, x, **kw).pattern,
    "jacobian_sparsity": ss.jacobian_sparsity,
    "jacobian_coloring": ss.jacobian_coloring,
    "sparse_jacobian": lambda f, x, **kw: ss.sparse_jacobian(f, x, output="dense", **kw)(x),
    "value_and_sparse_jacobian": lambda f, x, **kw: ss.value_and_sparse_jacobian(f, x, output="dense", **kw)(x),
    "check_jacobian": ss.check_jacobian,
    "hessian_sparsity": ss.hessian_sparsity,
    "hessian_coloring": ss.hessian_coloring,
    "sparse_hessian": lambda f, x, **kw: ss.sparse_hessian(f, x, output="dense", **kw)(x),
    "value_and_sparse_hessian": lambda f, x, **kw: ss.value_and_sparse_hessian(f, x, output="dense", **kw)(x),
    "check_hessian": ss.check_hessian,
}


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_options_is_the_library_s_and_never_reaches_f(name):
    calls = []

    def f(x, **kw):  # records what f receives
        calls.append(sorted(kw))
        return energy(x) if "hessian" in name else stencil(x)

    entry = ENTRY_POINTS[name]
    with pytest.raises(PatternTooLargeError):  # honoured
        entry(f, X, options=TINY)
    entry(f, X, options=AnalysisOptions())  # and works end to end
    entry(f, X, options=AnalysisOptions(), scale=2.0)  # f's own keywords still reach f
    assert calls and all(kw in ([], ["scale"]) for kw in calls), calls
    with pytest.raises(InputError, match="AnalysisOptions"):
        entry(f, X, options={"max_pattern_nnz": 2})


@pytest.mark.parametrize("name", ["sparse_jacobian", "value_and_sparse_jacobian", "sparse_hessian",
                                  "value_and_sparse_hessian"])
def test_prepared_derivatives_refuse_local_and_other_analysis_keywords(name):
    """``local=True`` once reached the detection of ``sparse_jacobian``: a pattern that holds at ``x`` only,
    compiled into a program meant for every point (and passed on to an ``f`` that takes ``**kw``)."""
    calls = []

    def f(x, **kw):
        calls.append(sorted(kw))
        return energy(x) if "hessian" in name else stencil(x)

    for word in ("local", "derivatives", "annotate", "observer"):
        with pytest.raises(InputError, match=f"no {word}= option.*functools.partial"):
            ENTRY_POINTS[name](f, X, **{word: True})
    assert calls == []
    import functools

    ENTRY_POINTS[name](functools.partial(f, local=True), X)  # bound first, f's own keyword
    assert calls and all(kw == ["local"] for kw in calls)


def test_analyze_module_takes_options_and_on_unknown_together():
    text = "func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n  return %a : tensor<3xf32>\n}"
    with pytest.raises(PatternTooLargeError):
        ss.analyze_module(text, options=AnalysisOptions(max_pattern_nnz=2))
    assert ss.analysis.api.resolve_options(AnalysisOptions(max_pattern_nnz=5), "conservative").on_unknown == "conservative"


# ----------------------------------------------------------------------------------------------- bug 4
def test_float64_numpy_input_without_x64_warns_once():
    code = textwrap.dedent("""
        import warnings, numpy as np, jax.numpy as jnp
        import stablehlo_sparsity as ss
        f = lambda x: x[1:] * x[:-1]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            J = ss.sparse_jacobian(f, np.linspace(0, 1, 5), output="dense")(np.linspace(0, 1, 5))
            ss.sparse_jacobian(f, np.linspace(0, 1, 5))
            ss.sparse_hessian(lambda x: (x ** 3).sum(), np.linspace(0, 1, 5))
            ss.sparse_jacobian(f, np.linspace(0, 1, 5).astype(np.float32))
        mine = [x for x in w if issubclass(x.category, ss.SparsityWarning)]
        print(len(mine), mine[0].category.__name__, J.dtype, "jax_enable_x64" in str(mine[0].message))
    """)
    env = {**os.environ, "JAX_ENABLE_X64": "0", "TF_CPP_MIN_LOG_LEVEL": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["1", "Float64Warning", "float32", "True"]


# ----------------------------------------------------------------------------------------------- bug 5
TWO_ARGS = """func.func @main(%x: tensor<3xf32>, %p: tensor<2xf32>) -> tensor<3xf32> {
  %0 = stablehlo.slice %p [0:1] : (tensor<2xf32>) -> tensor<1xf32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [0] : (tensor<1xf32>) -> tensor<3xf32>
  %2 = stablehlo.multiply %x, %1 : tensor<3xf32>
  return %2 : tensor<3xf32>
}
"""


def test_argument_zero_by_default_everywhere(tmp_path):
    from stablehlo_sparsity.tools.driver import main as driver_main

    assert ss.analyze_module(TWO_ARGS).pattern.shape == (3, 3)
    everything = ss.analyze_module(TWO_ARGS, wrt="all").pattern
    assert everything.shape == (3, 5) and everything.todense()[:, 3].all() and not everything.todense()[:, 4].any()
    assert ss.analyze_module(TWO_ARGS, wrt=[1]).pattern.shape == (3, 2)
    with pytest.raises(InputError, match="'all'"):
        ss.analyze_module(TWO_ARGS, wrt="some")

    # The same program from JAX and through the driver: the same shape by default, and with every argument.
    def f(x, p):
        return x * p[0]

    args = (jnp.ones(3, jnp.float32), jnp.ones(2, jnp.float32))
    text = ss.lower_and_analyze(f, *args).module.operation.get_asm()
    path = tmp_path / "two.mlir"
    path.write_text(text)

    def driver_shape(*flags):
        out = tmp_path / "out.json"
        assert driver_main([str(path), "--emit=json", "-o", str(out), *flags]) == 0
        return tuple(json.loads(out.read_text())["shape"])

    assert driver_shape() == ss.jacobian_sparsity(f, *args).shape == (3, 3)
    assert driver_shape("--wrt=all") == ss.jacobian_sparsity(f, *args, argnums=(0, 1)).shape == (3, 5)
    assert driver_shape("--wrt=1") == (3, 2)
    # the annotate pass follows the same rule, and --wrt=all reaches it
    ir_out = tmp_path / "ann.mlir"
    assert driver_main([str(path), "--sparsity-annotate", "--wrt=all", "-o", str(ir_out)]) == 0
    assert ir_out.read_text().count("sparsity.offset") >= 2
    assert driver_main([str(path), "--sparsity-annotate", "-o", str(ir_out)]) == 0
    assert "shape=3x3 " in ir_out.read_text()


def test_driver_help_states_the_rule(capsys):
    from stablehlo_sparsity.tools.driver import main as driver_main

    assert driver_main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "--wrt=all" in out and "argument 0" in out


# ----------------------------------------------------------------------------------------------- conveniences
def _pytree_f(params, x):
    return {"a": params["w"] * jnp.sin(x), "b": jnp.sum(params["m"] @ x) * params["w"][:2]}


PARAMS = {"w": jnp.linspace(0.5, 1.0, 3), "m": jnp.arange(6.0).reshape(2, 3)}
XP = jnp.array([0.3, 0.7, 1.1])


def _assert_blocks_like(got, want, to_dense):
    got_leaves, got_tree = jax.tree_util.tree_flatten(got, is_leaf=lambda b: hasattr(b, "todense") or hasattr(b, "toarray"))
    want_leaves, want_tree = jax.tree_util.tree_flatten(want)
    assert got_tree == want_tree
    for g, w in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(np.reshape(to_dense(g), w.shape), w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("argnums", [0, (0, 1)])
def test_blocks_per_leaf_as_jacfwd_returns_them(argnums):
    want = jax.jacfwd(_pytree_f, argnums=argnums)(PARAMS, XP)
    for output, dense in [("bcoo", lambda b: b.todense()), ("dense", np.asarray), ("scipy", lambda b: b.toarray())]:
        jac = ss.sparse_jacobian(_pytree_f, PARAMS, XP, argnums=argnums, output=output)
        _assert_blocks_like(jac.blocks(PARAMS, XP), want, dense)
    jac = ss.sparse_jacobian(_pytree_f, PARAMS, XP, argnums=argnums)
    _assert_blocks_like(jax.jit(jac.blocks)(PARAMS, XP), want, lambda b: b.todense())
    restored = pickle.loads(pickle.dumps(jac))
    _assert_blocks_like(restored.blocks(PARAMS, XP), want, lambda b: b.todense())


def test_hessian_blocks_as_jax_hessian_returns_them():
    def e(p):
        return jnp.sum(p["w"] ** 3) * p["m"][0, 0] + jnp.sum(jnp.sin(p["m"]) * p["w"][None, :])

    hes = ss.sparse_hessian(e, PARAMS, output="dense")
    _assert_blocks_like(hes.blocks(PARAMS), jax.hessian(e)(PARAMS), np.asarray)


def test_save_and_load_one_artifact(tmp_path):
    jac = ss.value_and_sparse_jacobian(stencil, X, output="bcsr")
    path = tmp_path / "stencil_jacobian.npz"
    jac.save(path)
    loaded = ss.load(path)
    assert isinstance(loaded, ss.SparseJacobian) and loaded.pattern == jac.pattern
    y, J = loaded(X)
    np.testing.assert_allclose(np.asarray(J.todense()), np.asarray(jax.jacfwd(stencil)(X)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(y), np.asarray(stencil(X)), rtol=1e-12)
    with np.load(path, allow_pickle=False) as z:  # no pickle inside: safe to load
        assert {"meta", "program", "indptr", "indices", "colors"} <= set(z.files)
    hpath = tmp_path / "h.npz"
    ss.sparse_hessian(energy, X, output="dense").save(hpath)
    np.testing.assert_allclose(np.asarray(ss.load(hpath)(X)), np.asarray(jax.hessian(energy)(X)), rtol=1e-12)
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="could not read"):
        ss.load(tmp_path / "bad.npz")


def test_as_text_elides_large_constants_by_default():
    x = jnp.linspace(0.0, 1.0, 400)
    jac = ss.sparse_jacobian(lambda v: v[1:] * v[:-1], x)
    short, full = jac.as_text(), jac.as_text(keep_large_constants=True)
    assert "__elided__" in short and "__elided__" not in full
    assert len(short) < len(full) / 3
    ss.parse_module(full)  # the full text parses back


def test_lower_and_analyze_returns_the_annotated_module():
    an = ss.lower_and_analyze(lambda x, p: x[1:] * x[:-1] * p, X, 2.0, annotate=True)
    text = str(an.module)
    assert "sparsity.deps" in text and "sparsity.pattern" in text and "shape=5x6" in text
    plain = ss.lower_and_analyze(lambda x, p: x[1:] * x[:-1] * p, X, 2.0)
    assert "sparsity.deps" not in str(plain.module)
    small = ss.lower_and_analyze(stencil, X, annotate={"max_elements": 2})
    assert "elements=" in str(small.module)


def test_spy_draws_the_pattern():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    p = ss.jacobian_sparsity(stencil, X)
    ax = p.spy()
    assert ax.get_title() == "5×6, nnz=10"
    ax.figure.canvas.draw()
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


def test_demo_console_script_prints_no_cxx_log_lines():
    import shutil

    exe = shutil.which("stablehlo-sparsity", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("console script not installed")
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    out = subprocess.run([exe, "demo", "--N", "4", "--lines", "2"], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert "check against dense AD: Jacobian check OK" in out.stdout
    assert "pjrt_client" not in out.stderr + out.stdout, out.stderr
