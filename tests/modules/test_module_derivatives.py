"""Derivatives of StableHLO modules and the injection passes, tested from the outside in.

Differential tests: the module (from the soundness suite, hand-written in the spec's style, the lit corpus)
goes through ``sparsity-jacobian`` / ``sparsity-hessian``; the injected function is compiled by XLA
directly (``importer.xla``) and compared with dense ``jax.jacfwd`` (``jax.hessian``) of the imported
function at random points: equal wherever the pattern says, and dense AD has no nonzero outside it.
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import oracle
import stablehlo_sparsity as ss
from stablehlo_sparsity.analysis.api import parse_module
from stablehlo_sparsity.modules.importer import import_module
from stablehlo_sparsity.dtypes import is_real_float
from stablehlo_sparsity.modules.importer.xla import run_module
from stablehlo_sparsity.passes.jacobian import read_pattern
from stablehlo_sparsity.passes.pipeline import run_pipeline

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")
ROUNDOFF = 1e-12  # relative: entries of dense AD below this are exact cancellations' residue (strategies.py)


def _function(module, name):
    from jaxlib.mlir import ir

    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    raise KeyError(name)


def _float_wrt(f):
    return [i for i, t in enumerate(f.arg_types) if is_real_float(t.dtype)]  # (bfloat16 too: kind "V")


def _dense_jacobian(f, args, wrt):
    """(m, n) dense Jacobian of the imported function (rows: flattened results; columns: flattened wrt args)."""
    def g(*sel):
        full = list(args)
        for i, v in zip(wrt, sel):
            full[i] = v
        out = f(*full)
        outs = out if isinstance(out, tuple) else (out,)
        return jnp.concatenate([jnp.ravel(o).astype(jnp.float64) for o in outs]) if outs else jnp.zeros(0)

    J = jax.jit(jax.jacfwd(g, argnums=tuple(range(len(wrt)))))(*[args[i] for i in wrt])
    m = int(sum(t.size for t in f.result_types))
    return np.concatenate([np.asarray(b).reshape(m, f.arg_types[i].size) for b, i in zip(J, wrt)], axis=1)


def check_injected(module, entry="main", wrt="all", points=2 if LONG else 1, kind="jacobian", what=""):
    """Inject, compile the new function with XLA, compare with dense AD of the import; returns the pattern."""
    f = import_module(module, entry)
    if wrt == "all":
        wrt = _float_wrt(f)
    if not wrt:
        return None, None
    text = module.operation.get_asm(enable_debug_info=True)
    m = parse_module(text)
    wrt_opt = ",".join(map(str, wrt))
    opts = f"entry={entry} wrt={wrt_opt}"
    run_pipeline(m, f"builtin.module(sparsity-{kind}{{{opts}}})")
    name = f"{entry}_{kind}"
    info = read_pattern(_function(m, name))
    assert info["wrt"] == list(wrt) and info["entry"] == entry
    indptr, indices = info["indptr"], info["indices"]
    shape = info["shape"]
    pattern = np.zeros(shape, bool)
    rows = np.repeat(np.arange(shape[0]), np.diff(indptr))
    pattern[rows, indices] = True
    for k in range(points):
        args = f.random_args(k)
        if "stablehlo.cholesky" in oracle.module_ops(module):
            args = tuple(oracle._positive_definite(a) for a in args)
        (vals,) = run_module(m, list(args), entry=name)
        assert vals.shape == (info["nnz"],)
        if kind == "jacobian":
            dense = _dense_jacobian(f, args, wrt)
        else:
            dense = np.asarray(jax.hessian(lambda *s: jnp.reshape(f(*[s[wrt.index(i)] if i in wrt else a for i, a in
                                                                        enumerate(args)]), ()),
                                           argnums=tuple(range(len(wrt))))(*[args[i] for i in wrt]))
            dense = np.block([[np.asarray(dense[i][j]).reshape(
                int(np.prod(np.shape(args[wrt[i]]))), int(np.prod(np.shape(args[wrt[j]])))) for j in range(len(wrt))]
                for i in range(len(wrt))])
        assert dense.shape == tuple(shape), (dense.shape, shape)
        finite = np.isfinite(dense)
        if not finite.all():
            continue
        dt = np.dtype(f.result_types[0].dtype) if f.result_types else np.float64
        eps = oracle.float_eps(dt if is_real_float(dt) else np.float64)
        # an exact cancellation leaves a residue at the working precision's roundoff (a float32 Cholesky's
        # derivative at an entry it does not read: -6.7e-10 of 0.54), not at float64's
        cut = max(ROUNDOFF, eps) * max(1.0, float(np.abs(dense).max(initial=0.0)))
        outside = np.argwhere((np.abs(dense) > cut) & ~pattern)
        assert outside.size == 0, f"{what}: dense AD has nonzeros outside the pattern at {outside[:5].tolist()}"
        want = dense[rows, indices]
        scale = np.maximum(np.abs(want), np.abs(dense).max(initial=1.0))
        err = np.abs(vals.astype(np.float64) - want)
        assert np.all(err <= 16 * np.sqrt(eps) * scale), f"{what}: injected values differ from dense AD by {err.max()}"
    return pattern, m


# ---------------------------------------------------------------------- the soundness suite's modules
def _cases():
    import test_soundness_suite as T

    return T.CASES


@pytest.mark.parametrize("name", sorted(_cases())[::1 if LONG else 2])  # every other case in CI
def test_injected_jacobian_equals_dense_ad_on_the_soundness_suite(name):
    case = _cases()[name]
    f = functools.partial(case.f, **case.kwargs) if case.kwargs else case.f
    m = jax.jit(f, keep_unused=True).lower(*case.args).compiler_ir("stablehlo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_injected(m, what=name)


# ---------------------------------------------------------------------- hand-written modules in the spec's style
SPEC_MODULES = {
    # §gather: rows picked by constant indices (clamped), then squared
    "gather": """func.func @main(%operand: tensor<3x4xf32>) -> tensor<2x3x2xf32> {
  %start_indices = stablehlo.constant dense<[[0, 1], [2, 3], [5, -1]]> : tensor<3x2xi64>
  %result = "stablehlo.gather"(%operand, %start_indices) {
    dimension_numbers = #stablehlo.gather<offset_dims = [0, 2], start_index_map = [0, 1], index_vector_dim = 1>,
    slice_sizes = array<i64: 2, 2>, indices_are_sorted = false
  } : (tensor<3x4xf32>, tensor<3x2xi64>) -> tensor<2x3x2xf32>
  %sq = stablehlo.multiply %result, %result : tensor<2x3x2xf32>
  func.return %sq : tensor<2x3x2xf32>
}""",
    # §scatter with an add body and duplicate indices
    "scatter": """func.func @main(%input: tensor<5xf32>, %updates: tensor<3xf32>) -> tensor<5xf32> {
  %idx = stablehlo.constant dense<[[4], [1], [4]]> : tensor<3x1xi32>
  %s = stablehlo.sine %updates : tensor<3xf32>
  %result = "stablehlo.scatter"(%input, %idx, %s) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %c = stablehlo.add %a, %b : tensor<f32>
      stablehlo.return %c : tensor<f32>
  }) {scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>} : (tensor<5xf32>, tensor<3x1xi32>, tensor<3xf32>) -> tensor<5xf32>
  %m = stablehlo.multiply %result, %input : tensor<5xf32>
  func.return %m : tensor<5xf32>
}""",
    # §while: three explicit Euler steps of a periodic diffusion
    "while": """func.func @main(%x: tensor<6xf64>) -> tensor<6xf64> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %zero, %u = %x) : tensor<i32>, tensor<6xf64>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %l = stablehlo.slice %u [5:6] : (tensor<6xf64>) -> tensor<1xf64>
      %rest = stablehlo.slice %u [0:5] : (tensor<6xf64>) -> tensor<5xf64>
      %rolled = stablehlo.concatenate %l, %rest, dim = 0 : (tensor<1xf64>, tensor<5xf64>) -> tensor<6xf64>
      %d = stablehlo.subtract %rolled, %u : tensor<6xf64>
      %t = stablehlo.tanh %d : tensor<6xf64>
      %v = stablehlo.add %u, %t : tensor<6xf64>
      stablehlo.return %j, %v : tensor<i32>, tensor<6xf64>
    }
  func.return %r#1 : tensor<6xf64>
}""",
    # §case on a runtime index, §reduce_window (max pooling) and §dot_general in one entry with two results
    "case_pool_dot": """func.func @main(%x: tensor<4x4xf32>, %k: tensor<i32>) -> (tensor<2x2xf32>, tensor<4xf32>) {
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %pool = "stablehlo.reduce_window"(%x, %ninf) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %m = stablehlo.maximum %a, %b : tensor<f32>
      stablehlo.return %m : tensor<f32>
  }) {window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>} : (tensor<4x4xf32>, tensor<f32>) -> tensor<2x2xf32>
  %y = "stablehlo.case"(%k) ({
    %e = stablehlo.exponential %pool : tensor<2x2xf32>
    stablehlo.return %e : tensor<2x2xf32>
  }, {
    %n = stablehlo.negate %pool : tensor<2x2xf32>
    stablehlo.return %n : tensor<2x2xf32>
  }) : (tensor<i32>) -> tensor<2x2xf32>
  %v = stablehlo.constant dense<[1.0, 0.0, 0.0, 2.0]> : tensor<4xf32>
  %d = stablehlo.dot_general %x, %v, contracting_dims = [1] x [0] : (tensor<4x4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %y, %d : tensor<2x2xf32>, tensor<4xf32>
}""",
    # §convolution (NHWC / HWIO), then §sort along the last dimension
    "conv_sort": """func.func @main(%img: tensor<1x4x4x1xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x3x3x1xf32> {
  %c = stablehlo.convolution(%img, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
       window = {stride = [1, 1], pad = [[0, 0], [0, 0]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64}
       : (tensor<1x4x4x1xf32>, tensor<2x2x1x1xf32>) -> tensor<1x3x3x1xf32>
  %s = "stablehlo.sort"(%c) ({
    ^bb0(%a: tensor<f32>, %b: tensor<f32>):
      %p = stablehlo.compare GT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
  }) {dimension = 2 : i64} : (tensor<1x3x3x1xf32>) -> tensor<1x3x3x1xf32>
  func.return %s : tensor<1x3x3x1xf32>
}""",
}


@pytest.mark.parametrize("name", sorted(SPEC_MODULES))
def test_injected_jacobian_on_spec_style_modules(name):
    """wrt=all: every floating-point argument; the faithfulness oracle runs on the same module."""
    m = parse_module(SPEC_MODULES[name])
    with jax.enable_x64(True):
        oracle.check_faithful(m, what=name)
        pattern, _ = check_injected(m, what=name, points=2)
    assert pattern is not None and pattern.any()


def test_injected_hessian_full_symmetric():
    text = """func.func @main(%x: tensor<5xf64>) -> tensor<f64> {
  %a = stablehlo.slice %x [1:5] : (tensor<5xf64>) -> tensor<4xf64>
  %b = stablehlo.slice %x [0:4] : (tensor<5xf64>) -> tensor<4xf64>
  %sq = stablehlo.multiply %b, %b : tensor<4xf64>
  %d = stablehlo.subtract %a, %sq : tensor<4xf64>
  %d2 = stablehlo.multiply %d, %d : tensor<4xf64>
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %s = stablehlo.reduce(%d2 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf64>, tensor<f64>) -> tensor<f64>
  func.return %s : tensor<f64>
}"""
    m = parse_module(text)
    pattern, injected = check_injected(m, kind="hessian", what="rosenbrock", points=2)
    assert np.array_equal(pattern, pattern.T) and pattern.sum() == 13  # tridiagonal, both triangles
    info = read_pattern(_function(injected, "main_hessian"))
    assert info["triangle"] == "full" and info["mode"] == "star" and info["kind"] == "hessian"


def test_checker_can_fail():
    """check_jacobian_module reports a nonzero of dense AD outside a (deliberately damaged) pattern."""
    text = SPEC_MODULES["while"]
    sj = ss.sparse_jacobian_module(text, output="values", mode="forward")
    assert ss.check_jacobian_module(text, jacobian=sj).ok
    import scipy.sparse as sp

    csr = sj.pattern.to_scipy().tolil()
    assert csr[0, 5]
    csr[0, 5] = False  # drop a true dependency (u0 reads u5 through the periodic shift)
    damaged = ss.SparsityPattern(sp.csr_array(csr.tocsr()))
    sj2 = ss.sparse_jacobian_module(text, output="values", mode="forward")
    sj2.pattern = damaged
    sj2.coloring = ss.color_columns(damaged)
    sj2.replan()
    rep = ss.check_jacobian_module(text, jacobian=sj2, raise_on_error=False)
    assert not rep.ok and rep.missing >= 1


def test_hessian_checker_can_fail(monkeypatch):
    """check_hessian_module reports a nonzero of the dense Hessian outside a (deliberately damaged) pattern."""
    import scipy.sparse as sp

    from stablehlo_sparsity.derivatives import hessian as hessian_module

    g = lambda x: jnp.sum(x * jnp.roll(x, 1) ** 2)  # noqa: E731  (a cyclic tridiagonal Hessian)
    text = jax.jit(g).lower(jnp.ones(6)).as_text()
    assert ss.check_hessian_module(text, points=1).ok
    detect = hessian_module.hessian_detection

    def damaged_detect(*args, **kwargs):
        pattern, forward_mode = detect(*args, **kwargs)
        lil = pattern.to_scipy().tolil()
        assert lil[0, 1] and lil[1, 0]
        lil[0, 1] = lil[1, 0] = False  # drop a true interaction, symmetrically
        return ss.SparsityPattern(sp.csr_array(lil.tocsr())), forward_mode

    monkeypatch.setattr(hessian_module, "hessian_detection", damaged_detect)
    sh = ss.sparse_hessian_module(text, output="values")
    rep = ss.check_hessian_module(text, hessian=sh, points=1, raise_on_error=False)
    assert not rep.ok and rep.missing >= 1
    with pytest.raises(ss.DerivativeMismatchError):
        ss.check_hessian_module(text, hessian=sh, points=1)


# ---------------------------------------------------------------------- the API
def test_module_api_agrees_with_the_jax_callable_api():
    from stablehlo_sparsity.examples import brusselator

    f = lambda x: brusselator(x, 4)  # noqa: E731
    x = np.random.default_rng(0).standard_normal(32)
    text = jax.jit(f).lower(x).as_text()
    sj = ss.sparse_jacobian_module(text, output="dense")
    ref = ss.sparse_jacobian(f, x, output="dense")
    assert sj.pattern == ref.pattern and sj.num_colors == ref.num_colors
    assert np.allclose(sj(x), ref(x), rtol=1e-12, atol=1e-12)
    assert np.allclose(sj(x), jax.jacfwd(f)(x), rtol=1e-12, atol=1e-12)
    assert "stablehlo.gather" in sj.as_text(output="values")
    exp = sj.export(platforms=("cpu",))
    assert np.allclose(exp.call(x), sj.values(x))
    assert ss.check_jacobian_module(text, points=1).ok
    assert ss.check_jacobian_module(text, points=[(x,)]).ok
    with pytest.raises(ss.InputError, match="no point to check"):  # (it returned None before)
        ss.check_jacobian_module(text, points=[])
    g = lambda x: jnp.sum(f(x) ** 2)  # noqa: E731
    h = ss.sparse_hessian_module(jax.jit(g).lower(x).as_text(), output="dense")
    assert h.pattern == ss.sparse_hessian(g, x).pattern
    assert np.allclose(h(x), jax.hessian(g)(x), rtol=1e-9, atol=1e-9)


def test_wrt_default_is_argument_zero():
    text = """func.func @main(%x: tensor<3xf32>, %y: tensor<3xf32>, %i: tensor<i32>) -> tensor<3xf32> {
  %m = stablehlo.multiply %x, %y : tensor<3xf32>
  func.return %m : tensor<3xf32>
}"""
    assert ss.sparse_jacobian_module(text).shape == (3, 3)
    assert ss.sparse_jacobian_module(text).wrt == (0,)
    assert ss.sparse_jacobian_module(text, wrt=[1, 0]).shape == (3, 6)
    assert ss.sparse_jacobian_module(text, wrt=-2).wrt == (1,)
    with pytest.raises(ss.InputError, match="real floating point"):
        ss.sparse_jacobian_module(text, wrt="all")
    with pytest.raises(ss.InputError, match="out of range"):
        ss.sparse_jacobian_module(text, wrt=3)
    with pytest.raises(ss.InputError, match="scalar"):
        ss.sparse_hessian_module(text)


def test_pass_keeps_the_original_and_reruns_replace():
    m = parse_module(SPEC_MODULES["scatter"].replace("f32", "f64"))
    before = _function(m, "main").operation.get_asm()
    with jax.enable_x64(False):  # the pass turns 64-bit mode on by itself for an f64 module
        run_pipeline(m, "builtin.module(sparsity-jacobian,sparsity-jacobian{mode=reverse},canonicalize,cse)")
    assert _function(m, "main").operation.get_asm() == before
    names = [op.attributes["sym_name"] for op in m.body.operations]
    assert len([n for n in names if str(n) == '"main_jacobian"']) == 1
    assert read_pattern(_function(m, "main_jacobian"))["mode"] == "reverse"
    # valid for any StableHLO consumer: it serializes to a portable artifact and reads back
    from jaxlib.mlir._mlir_libs import _stablehlo

    art = _stablehlo.serialize_portable_artifact_str(m.operation.get_asm(), _stablehlo.get_current_version())
    back = ss.analyze_module(art, entry="main_jacobian", wrt=[0])
    assert back.pattern.shape == (read_pattern(_function(m, "main_jacobian"))["nnz"], 5)


def test_while_loops_differentiate_forward_only():
    m = parse_module(SPEC_MODULES["while"])
    assert ss.sparse_jacobian_module(m).mode == "forward"
    with pytest.raises(Exception, match=r":1:1: error: @main contains a stablehlo.while loop.*reverse mode"):
        run_pipeline(m, "builtin.module(sparsity-jacobian{mode=reverse})")


def test_pass_refuses_a_name_it_did_not_write():
    text = SPEC_MODULES["gather"] + """
func.func @main_jacobian(%x: tensor<3x4xf32>) -> tensor<3x4xf32> {
  func.return %x : tensor<3x4xf32>
}"""
    with pytest.raises(Exception, match="already has a function '@main_jacobian'"):
        run_pipeline(parse_module(text), "builtin.module(sparsity-jacobian)")


def test_helpers_are_renamed_apart():
    idx = np.array([2, 0, 1, 5, 4, 3])
    f = lambda x: jnp.sort(x) * jnp.take_along_axis(x, idx, 0) + jnp.roll(x, 1)  # noqa: E731
    m = jax.jit(f).lower(jnp.ones(6, jnp.float32)).compiler_ir("stablehlo")
    m = parse_module(m.operation.get_asm())
    privates_before = {str(op.attributes["sym_name"]) for op in m.body.operations}
    run_pipeline(m, "builtin.module(sparsity-jacobian)")
    info = read_pattern(_function(m, "main_jacobian"))
    assert info["helpers"] and all(h.startswith("main_jacobian__") for h in info["helpers"])
    names = [str(op.attributes["sym_name"]) for op in m.body.operations]
    assert len(names) == len(set(names)) and privates_before <= set(names)
    (vals,) = run_module(m, [np.arange(6, dtype=np.float32)], entry="main_jacobian")
    assert vals.shape == (info["nnz"],)


# ---------------------------------------------------------------------- shipped formats
def _serialize_text(text):
    from jaxlib.mlir._mlir_libs import _stablehlo

    return _stablehlo.serialize_portable_artifact_str(text, _stablehlo.get_current_version())


def test_shipped_formats_are_read(tmp_path):
    pytest.importorskip("flatbuffers")
    from jax import export

    f = lambda x: jnp.sin(x[1:] * x[:-1])  # noqa: E731
    spec = jax.ShapeDtypeStruct((5,), jnp.float32)
    text = jax.jit(f).lower(spec).as_text()
    buf = io.BytesIO()
    parse_module(text).operation.write_bytecode(buf)
    forms = {"bytecode": buf.getvalue(), "portable": _serialize_text(text),
             "export": bytes(export.export(jax.jit(f), platforms=("cpu",))(spec).serialize())}
    for kind, data in forms.items():
        assert ss.analyze_module(data, wrt=[0]).pattern.nnz == 8, kind
        p = tmp_path / f"m.{kind}"
        p.write_bytes(data)
        assert ss.parse_module(str(p), is_path=True) is not None
        out = subprocess.run([sys.executable, "-m", "stablehlo_sparsity.tools.driver", str(p), "--emit=pattern",
                              "--wrt=0"], capture_output=True, text=True)
        assert out.returncode == 0 and out.stdout.splitlines()[2] == "4 5 8", (kind, out.stderr)
        g = import_module(data)
        x = np.arange(5, dtype=np.float32)
        assert np.allclose(jax.jit(g)(x), f(x))


def test_newer_portable_artifact_is_refused_with_both_versions():
    from jaxlib.mlir._mlir_libs import _stablehlo

    art = bytearray(_serialize_text("func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {\n"
                                    "  return %x : tensor<2xf32>\n}"))
    cur = _stablehlo.get_current_version().encode()
    i = bytes(art).find(b"StableHLO_v" + cur)
    assert i >= 0
    art[i + 11:i + 11 + len(cur)] = b"9" * len(cur.split(b".")[0]) + cur[len(cur.split(b".")[0]):]
    with pytest.raises(ss.InputError, match=r"newer than this jaxlib's StableHLO"):
        ss.analyze_module(bytes(art))


# ---------------------------------------------------------------------- the lit corpus (bounded in CI)
def test_injected_jacobian_on_the_lit_corpus():
    """Every lit-test function with a differentiable float argument (every 6th in CI; all with SHS_LONG=1):
    the injected Jacobian equals dense AD of the import on its pattern, and dense AD has no nonzero outside."""
    from test_importer import _lit

    entries = _lit()
    chosen = entries if LONG else entries[::6]
    done = 0
    for ident, m, name in chosen:
        f = import_module(m, name)
        if not _float_wrt(f) or not oracle.runnable_by_xla(m):
            continue
        if any(np.dtype(t.dtype).kind == "c" for t in f.result_types):
            continue
        try:
            with warnings.catch_warnings(), jax.enable_x64(True):
                warnings.simplefilter("ignore")
                check_injected(m, entry=name, what=ident)
        except Exception as e:  # only an op replayed verbatim without a derivative rule here may refuse
            assert "no derivative rule" in str(e), (ident, e)
            continue
        done += 1
    assert done >= (60 if LONG else 10)


def _arrowhead(x):
    return (x * x[0]).at[0].add(jnp.sum(x))  # a dense row and a dense column: auto colors it bidirectionally


def _scatter_then_dynamic_take(x0, x1):  # found by SHS_LONG=1: a bidirectional coloring evaluated as VJPs only
    v2 = jnp.expand_dims(x1, 0)
    v5 = v2.at[np.array([-1, 1, 2], dtype=np.int32)].set(jnp.cos(v2).reshape(-1)[15])
    v7 = jnp.prod(x0)
    return v5[:, :, jnp.floor(jnp.abs(v7) * 2.0).astype(jnp.int32) % 3], v7


@pytest.mark.parametrize("fn,args", [(_arrowhead, (jnp.ones(12),)),
                                     (_scatter_then_dynamic_take, (jnp.ones((3, 3, 3)), jnp.ones((4, 3, 2))))])
def test_bidirectional_colorings_inject_both_products(fn, args):
    with jax.enable_x64(True), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        module = jax.jit(fn, keep_unused=True).lower(*args).compiler_ir("stablehlo")
        _, m = check_injected(module, what=fn.__name__)
    info = read_pattern(_function(m, "main_jacobian"))
    assert info["mode"] == "bidirectional"
    prepared = ss.ModuleSparseJacobian(module.operation.get_asm(), wrt="all", output="dense")
    assert prepared.mode == "bidirectional"


# ---------------------------------------------------------------------- random programs' modules
from hypothesis import HealthCheck, Phase, given, reject, settings  # noqa: E402

import strategies as S  # noqa: E402


@settings(max_examples=300 if LONG else 12, deadline=None, derandomize=not LONG, database=None,
          suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
@given(S.programs(S.enabled_generators()))
def test_injected_jacobian_on_random_programs(prog):
    """The lowered module of a random program (its primal: custom rules are JAX-level and not in the module)
    through sparsity-jacobian{wrt=all}, compiled by XLA, against dense AD of its import."""
    try:
        m = jax.jit(prog.function(), keep_unused=True).lower(*prog.example_args()).compiler_ir("stablehlo")
    except Exception:
        reject()
    if LONG:  # XLA itself may crash the process (tests/support/xla_crashes): leave the program where it can be found
        with open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "shs_last_random_program.py"), "w") as fh:
            fh.write(prog.source())
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            check_injected(m, what=prog.source())
    except Exception as e:
        if "no derivative rule" in str(e):  # QR / SVD kernels replayed verbatim
            reject()
        raise
