"""The importer over ``bfloat16`` (issue 25): the faithfulness oracles of ``test_importer.py`` again (not the
hostile files: they test parsing, not types), with the modules' floats in bf16, and the injected Jacobian of
those modules against dense AD of their import.  Last, the library's own float tests that missed bf16 (NumPy
gives ``ml_dtypes`` floats ``kind`` ``"V"``): each with a case that failed before.

* the lit corpus: each function the analysis accepts, its ``f32``/``f64`` element types rewritten to ``bf16``
  in the module's text (a rewrite the verifier rejects — ``stablehlo.complex`` of bf16, an ``f32``-only
  attribute, a hex constant out of bf16's range — leaves nothing to test);
* the soundness suite's functions and the random programs, lowered by JAX at bf16 arguments.

Both sides run the same XLA (CPU) on the same bf16 program, so the replay is compared as in ``oracle.py``:
bit for bit where the float ops are exact, to :data:`oracle.LOW_PRECISION_ULPS` bf16 ulps otherwise.  The normal
suite runs a stride sample of each set; ``SHS_LONG=1`` runs all of them.
"""

from __future__ import annotations

import functools
import os
import re
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, reject, settings

import oracle
import strategies as S
from helpers import calls_inside_reduction_bodies
from stablehlo_sparsity.analysis.api import parse_module
from stablehlo_sparsity.modules.importer import ImportError_, import_module
from stablehlo_sparsity.dtypes import is_real_float
from stablehlo_sparsity.modules.importer.xla import run_module
from stablehlo_sparsity.passes.jacobian import read_pattern
from stablehlo_sparsity.passes.pipeline import run_pipeline

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")
BF16 = np.dtype(ml_dtypes.bfloat16)
EPS = float(ml_dtypes.finfo(BF16).eps)  # 2^-7

#: f32/f64 as an element type (``tensor<2x3xf32>``, ``tensor<f64>``, ``(f32``), not inside a name.
_WIDE_FLOAT = re.compile(r"(?<=[x<\s(,])f(?:32|64)\b")

#: Lit functions whose bf16 rewrite XLA runs but the importer refuses (cleanly, naming the op).  Each entry
#: is checked to still be refused: when the importer learns the op, this test fails and the entry goes.
IMPORTER_REFUSES = {
    # jax.lax.linalg.cholesky has no bf16 kernel on CPU (LAPACK has none; XLA's own expander runs it):
    # importer/linalg.py would have to upcast, as XLA does.
    "linalg.mlir:1@cholesky": "stablehlo.cholesky",
    "sparsity_jacobian_platform.mlir:23@main": "stablehlo.cholesky",
}


def as_bf16_text(module) -> str | None:
    """The module's text with every f32/f64 element type bf16, or ``None`` when it has none or calls a
    ``custom_call`` (a foreign kernel's buffer types are its own: a LAPACK FFI handler refuses bf16)."""
    text = module.operation.get_asm(enable_debug_info=False)
    if not _WIDE_FLOAT.search(text) or "stablehlo.custom_call" in text:
        return None
    return _WIDE_FLOAT.sub("bf16", text)


def bf16_args(args):
    """``args`` with every real float array (or scalar) in bf16; integers, booleans and complex unchanged."""
    def cast(a):
        arr = np.asarray(a)
        return arr.astype(BF16) if is_real_float(arr.dtype) else a

    return jax.tree_util.tree_map(cast, args)


def _has_bf16(module) -> bool:
    return "bf16" in module.operation.get_asm(enable_debug_info=False)


# ---------------------------------------------------------------------- the oracles' own float tests
def test_the_oracle_compares_bf16_results_as_floats():
    """A one-ulp bf16 difference of a rounded result is within tolerance (it used to be compared bit for bit,
    bf16's NumPy ``kind`` being ``"V"``); a 16-ulp one is not, nor is any difference where the ops are exact."""
    r = np.array([1.0, -3.0, 0.25], BF16)
    one_ulp = np.array([1.0 + EPS, -3.0, 0.25], BF16)
    assert oracle.compare_outputs([r], [one_ulp], exact=False).worst > 0
    with pytest.raises(AssertionError, match="tolerance"):
        oracle.compare_outputs([r], [np.array([1.0 + 16 * EPS, -3.0, 0.25], BF16)], exact=False)
    with pytest.raises(AssertionError, match="bit for bit"):
        oracle.compare_outputs([r], [one_ulp], exact=True)
    nan = np.array([np.nan, 1.0], BF16)
    assert oracle.compare_outputs([nan], [nan.copy()], exact=False).worst == 0


def test_positive_definite_arguments_are_made_for_bf16_too():
    a = np.random.default_rng(0).standard_normal((3, 3)).astype(BF16)
    p = oracle._positive_definite(a)
    assert p.dtype == BF16
    assert np.all(np.linalg.eigvalsh(p.astype(np.float64)) > 0)


# ---------------------------------------------------------------------- faithfulness over bf16
def _lit_bf16():
    import test_importer

    out = []
    for ident, m, name in test_importer._lit():
        text = as_bf16_text(m)
        if text is None:
            continue
        try:
            m2 = parse_module(text)
        except Exception:
            continue  # the verifier refuses the rewrite: not a bf16 program
        out.append((ident, m2, name))
    return out


def test_lit_corpus_is_faithful_in_bf16():
    """Every lit function rewritten to bf16 (~115) replays like XLA runs it; a stride sample in the normal
    suite."""
    entries = _lit_bf16()
    assert len(entries) >= 100
    seen = 0
    for ident, m, name in entries[::1 if LONG else 6]:
        if ident in IMPORTER_REFUSES:
            continue
        oracle.check_faithful(m, name, seeds=(0,), what=f"{ident} (bf16)")
        seen += 1
    assert seen >= (100 if LONG else 15)


@pytest.mark.parametrize("ident", sorted(IMPORTER_REFUSES))
def test_bf16_ops_the_importer_refuses_are_refused_by_name(ident):
    (m, name), = [(m, name) for i, m, name in _lit_bf16() if i == ident]
    args = import_module(m, name).random_args(0)
    if "stablehlo.cholesky" in oracle.module_ops(m):
        args = tuple(oracle._positive_definite(a) for a in args)
    assert run_module(m, list(args), entry=name)  # XLA itself runs it
    # (called eagerly: under jax.jit JAX lowers the replayed op after tracing, and its NotImplementedError
    # escapes the importer's wrapper)
    with pytest.raises(ImportError_, match=IMPORTER_REFUSES[ident]):
        import_module(m, name)(*args)


def _soundness_cases():
    import test_soundness_suite as T

    return T.CASES


def _soundness_module_bf16(name):
    case = _soundness_cases()[name]
    f = functools.partial(case.f, **case.kwargs) if case.kwargs else case.f
    try:
        m = jax.jit(f, keep_unused=True).lower(*bf16_args(case.args)).compiler_ir("stablehlo")
    except TypeError as e:  # e.g. lax.conv_general_dilated of a bf16 input and a float64 kernel
        pytest.skip(f"the function does not trace at bf16 arguments: {e}")
    assert _has_bf16(m)
    return m


_STRIDE = 1 if LONG else 8


@pytest.mark.parametrize("name", sorted(_soundness_cases())[::_STRIDE])
def test_soundness_suite_modules_are_faithful_in_bf16(name):
    oracle.check_faithful(_soundness_module_bf16(name), "main", seeds=(0,), what=f"{name} (bf16)")


_SETTINGS = settings(max_examples=300 if LONG else 8, deadline=None, derandomize=not LONG, database=None,
                     suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])


@_SETTINGS
@given(S.programs(S.enabled_generators()))
def test_random_programs_are_faithful_in_bf16(prog):
    f = prog.function()
    try:
        m = jax.jit(f, keep_unused=True).lower(*bf16_args(prog.example_args())).compiler_ir("stablehlo")
    except Exception:
        reject()
    if calls_inside_reduction_bodies(m) or not _has_bf16(m):
        reject()  # (the first: XLA segfaults compiling it — tests/support/xla_crashes/)
    oracle.check_faithful(m, "main", seeds=(0,), what=prog.source())


# ---------------------------------------------------------------------- injected Jacobian over bf16
def check_injected_bf16(module, entry="main", what=""):
    """Inject ``sparsity-jacobian`` for every real float argument, run the new function with XLA, compare with
    dense ``jax.jacfwd`` of the import at the same bf16 point: no nonzero of dense AD outside the pattern
    (beyond bf16 cancellation residue) and equal values to a few bf16 roundings."""
    f = import_module(module, entry)
    wrt = [i for i, t in enumerate(f.arg_types) if is_real_float(t.dtype)]
    if not wrt:
        return None
    m = parse_module(module.operation.get_asm(enable_debug_info=True))
    run_pipeline(m, f"builtin.module(sparsity-jacobian{{entry={entry} wrt={','.join(map(str, wrt))}}})")
    from test_module_derivatives import _function, _dense_jacobian

    info = read_pattern(_function(m, f"{entry}_jacobian"))
    indptr, indices, shape = info["indptr"], info["indices"], info["shape"]
    rows = np.repeat(np.arange(shape[0]), np.diff(indptr))
    pattern = np.zeros(shape, bool)
    pattern[rows, indices] = True
    args = f.random_args(0)
    (vals,) = run_module(m, list(args), entry=f"{entry}_jacobian")
    dense = _dense_jacobian(f, args, wrt)
    assert dense.shape == tuple(shape)
    if not np.isfinite(dense).all():
        return pattern
    scale = max(1.0, float(np.abs(dense).max(initial=0.0)))
    # compressed and dense JVPs add the same terms in other orders, each rounded to bf16: a few ulps of the
    # largest entry (a cancellation residue outside the pattern is of that size too)
    tol = 8 * EPS * scale
    outside = np.argwhere((np.abs(dense) > tol) & ~pattern)
    assert outside.size == 0, f"{what}: dense AD has nonzeros outside the pattern at {outside[:5].tolist()}"
    err = np.abs(vals.astype(np.float64) - dense[rows, indices])
    assert np.all(err <= tol), f"{what}: injected values differ from dense AD by {err.max():.3g} (tol {tol:.3g})"
    return pattern


@pytest.mark.parametrize("name", sorted(_soundness_cases())[1::_STRIDE])
def test_injected_jacobian_equals_dense_ad_in_bf16(name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_injected_bf16(_soundness_module_bf16(name), what=f"{name} (bf16)")


def test_injected_jacobian_on_the_lit_corpus_in_bf16():
    """The lit functions rewritten to bf16 with a float argument (110; every 16th in the normal suite)."""
    done = 0
    for ident, m, name in _lit_bf16()[::1 if LONG else 16]:
        if ident in IMPORTER_REFUSES:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            done += check_injected_bf16(m, entry=name, what=f"{ident} (bf16)") is not None
    assert done >= (100 if LONG else 6)


def test_injected_jacobian_of_a_bf16_window_maximum():
    """The issue's module (a bf16 reduce_window max whose init is not the identity): its injected Jacobian is
    the 0/1 selection dense AD finds."""
    text = """func.func @main(%x: tensor<4x6xbf16>) -> tensor<3x5xbf16> {
  %init = stablehlo.constant dense<-1.0> : tensor<bf16>
  %0 = "stablehlo.reduce_window"(%x, %init) <{window_dimensions = array<i64: 2, 2>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %m = stablehlo.maximum %a, %b : tensor<bf16>
    stablehlo.return %m : tensor<bf16>
  }) : (tensor<4x6xbf16>, tensor<bf16>) -> tensor<3x5xbf16>
  func.return %0 : tensor<3x5xbf16>
}"""
    pattern = check_injected_bf16(parse_module(text), what="reduce_window max")
    assert pattern is not None and pattern.sum(1).max() == 4


def test_bf16_lit_rewrite_keeps_names_and_other_types():
    m = parse_module("""func.func @f32_named(%a: tensor<2x3xf32>, %i: tensor<2xi32>) -> tensor<f64> {
  %0 = stablehlo.constant dense<1.0> : tensor<f64>
  return %0 : tensor<f64>
}""")
    text = as_bf16_text(m)
    assert "@f32_named" in text and "tensor<2x3xbf16>" in text and "tensor<bf16>" in text
    assert "tensor<2xi32>" in text and "f32>" not in text and "f64" not in text
    assert jnp.dtype(import_module(parse_module(text), "f32_named").arg_types[0].dtype) == BF16


# ---------------------------------------------------------------------- the library's float tests over bf16
def _bf16_module(body: str, result: str) -> str:
    return f"func.func @main() -> {result} {{\n{body}\n}}"


def test_top_k_of_a_bf16_constant_with_nan_is_not_folded():
    """chlo.top_k's fold (NumPy's order) skips NaN rows; a bf16 NaN was missed (kind "V") and the folded
    [1, nan] / [0, 1] contradicted XLA's [nan, 3] / [1, 2]."""
    from stablehlo_sparsity import analyze_module

    text = _bf16_module("""  %x = stablehlo.constant dense<[1.0, 0x7FC0, 3.0]> : tensor<3xbf16>
  %v, %i = chlo.top_k(%x, k = 2) : tensor<3xbf16> -> (tensor<2xbf16>, tensor<2xi32>)
  return %v, %i : tensor<2xbf16>, tensor<2xi32>""", "(tensor<2xbf16>, tensor<2xi32>)")
    xla_values, xla_indices = run_module(text, [])
    assert xla_indices.tolist() == [1, 2]
    for r, want in zip(analyze_module(text).results, (xla_values, xla_indices)):
        assert r.const is None or np.array_equal(np.asarray(r.const), want, equal_nan=True)


def test_bf16_scatter_add_over_duplicates_folds_only_order_free_sums():
    """§scatter: the order duplicates combine in is implementation-defined; 256 + 1 + 1 in bf16 is 256 one
    way and 258 another, so it is not folded (it was, in NumPy's order, bf16 not being seen as a float); the
    exactly representable 2 + 1 + 1 still is."""
    from stablehlo_sparsity import analyze_module

    def scatter(updates: str) -> str:
        return _bf16_module(f"""  %z = stablehlo.constant dense<0.0> : tensor<1xbf16>
  %u = stablehlo.constant dense<{updates}> : tensor<3xbf16>
  %idx = stablehlo.constant dense<[[0], [0], [0]]> : tensor<3x1xi32>
  %s = "stablehlo.scatter"(%z, %idx, %u) ({{
    ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
      %c = stablehlo.add %a, %b : tensor<bf16>
      stablehlo.return %c : tensor<bf16>
  }}) {{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0],
      scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}} : (tensor<1xbf16>, tensor<3x1xi32>, tensor<3xbf16>) -> tensor<1xbf16>
  return %s : tensor<1xbf16>""", "tensor<1xbf16>")

    assert analyze_module(scatter("[256.0, 1.0, 1.0]")).results[0].const is None
    exact = analyze_module(scatter("[2.0, 1.0, 1.0]")).results[0].const
    assert exact is not None and np.asarray(exact).tolist() == [4.0]


def test_bf16_products_decompress_to_bf16_values():
    """DecompressionPlan.values keeps the products' dtype for bf16 as for float32 (it returned float64)."""
    import scipy.sparse as sp

    from stablehlo_sparsity.coloring import DecompressionPlan, color_acyclic, compress, symmetrize

    n = 30
    p = symmetrize(sp.csr_array(sp.diags_array([np.ones(n)] * 3, offsets=[-1, 0, 1], shape=(n, n), dtype=bool)))
    v = sp.csr_array((np.random.default_rng(0).standard_normal(p.nnz), p.indices, p.indptr), shape=p.shape)
    h = sp.csr_array(v + v.T)
    plan = DecompressionPlan(p, color_acyclic(p))
    got = plan.values(compress(h, color_acyclic(p)).astype(BF16))
    assert got.dtype == BF16
    want = plan.values(compress(h, color_acyclic(p)))
    assert np.allclose(got.astype(np.float64), want, atol=4 * EPS * np.abs(want).max() * plan.longest_chain)


def test_auto_hessian_coloring_weighs_substitution_chains_at_bf16_precision():
    """mode="auto" compares the substitution chain with 1/√eps of the argument dtype: at bf16 (eps 2^-7) a
    chain of ~30 is too long where float32 takes it (np.finfo refused bfloat16: a raw ValueError)."""
    from stablehlo_sparsity.derivatives.hessian import hessian_coloring

    def tridiagonal_chain(x):
        return jnp.sum(jnp.exp(0.3 * x[1:] * x[:-1])) + jnp.sum(jnp.cosh(x))

    assert hessian_coloring(tridiagonal_chain, jnp.ones(60, jnp.float32), mode="auto").kind == "acyclic"
    assert hessian_coloring(tridiagonal_chain, jnp.ones(60, jnp.bfloat16), mode="auto").kind == "star"
    assert hessian_coloring(tridiagonal_chain, jnp.ones(10, jnp.bfloat16), mode="auto").kind == "acyclic"
