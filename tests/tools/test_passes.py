"""The MLIR passes: attribute format, annotate/strip, and pipelines run by jaxlib's PassManager."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from jaxlib.mlir import ir, passmanager

from stablehlo_sparsity import InputError, analyze_module, lower_and_analyze
from stablehlo_sparsity.passes import (
    PASSES,
    AnnotatePass,
    DiagnosticError,
    FoldConstantsPass,
    annotate,
    format_sets,
    make_context,
    parse_sets,
    parse_source,
    resolve_entry,
    run_pipeline,
    split_pipeline,
    strip,
    summarize,
)
from stablehlo_sparsity.passes.annotate import format_summary
from stablehlo_sparsity.passes.pipeline import MlirPass, SparsityStep

STENCIL = """
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<f32>) {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  %1 = stablehlo.slice %0 [1:4] : (tensor<4xf32>) -> tensor<3xf32>
  %c = stablehlo.constant dense<0.0> : tensor<1xf32>
  %2 = stablehlo.concatenate %1, %c, dim = 0 : (tensor<3xf32>, tensor<1xf32>) -> tensor<4xf32>
  %3 = stablehlo.multiply %2, %a : tensor<4xf32>
  %4 = stablehlo.constant dense<0.0> : tensor<f32>
  return %3, %4 : tensor<4xf32>, tensor<f32>
}
"""


def _csr(rows, n):
    indptr = np.cumsum([0] + [len(r) for r in rows])
    indices = np.array([c for r in rows for c in r], dtype=np.int64)
    return sp.csr_array((np.ones(len(indices), bool), indices, indptr), shape=(len(rows), n))


def _attr(op, name="sparsity.deps"):
    return ir.StringAttr(op.attributes[name]).value


def _ops(module):
    out = []

    def visit(op):
        out.append(op.operation)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return out


# --------------------------------------------------------------------------- the attribute format
def test_format_sets_runs_and_repeats():
    m = _csr([[0, 1], [1, 2, 3], [], [], [0, 2, 3, 4, 7]], 8)
    assert format_sets(m) == "{0,1} {1..3} {}*2 {0,2..4,7}"


def test_parse_sets_inverts_format_sets_on_random_patterns():
    rng = np.random.default_rng(0)
    for _ in range(30):
        k, n = rng.integers(1, 12), rng.integers(1, 20)
        dense = rng.random((k, n)) < rng.random()
        dense[rng.integers(0, k)] = dense[0]  # repeated rows exercise the `*k` form
        m = sp.csr_array(dense)
        back = parse_sets(format_sets(m), n)
        assert (back != m).nnz == 0


def test_parse_sets_rejects_summaries():
    with pytest.raises(ValueError):
        parse_sets("elements=100 nnz=3 deps=0..1 distinct=2")


def test_summary_numbers_match_brute_force():
    rng = np.random.default_rng(1)
    dense = rng.random((50, 9)) < 0.2
    dense[10:20] = dense[0]
    m = sp.csr_array(dense)
    s = summarize(m)
    counts = dense.sum(axis=1)
    assert s == {"elements": 50, "nnz": int(dense.sum()), "min": int(counts.min()), "max": int(counts.max()),
                 "distinct": len({tuple(r) for r in dense})}
    assert format_summary(_csr([[0], [0, 1]], 2)) == "elements=2 nnz=3 deps=1..2 distinct=2"
    assert format_summary(_csr([[0], [1]], 2), (2, 2)) == "shape=2x2 nnz=2 deps=1 distinct=2"


# --------------------------------------------------------------------------- annotate
def test_annotate_writes_exact_sets_offsets_and_pattern():
    m = parse_source(STENCIL, "s.mlir")
    analysis = annotate(m, wrt=[0, 1])
    fn = m.body.operations[0]
    text = str(m)
    assert 'stablehlo.add %arg0, %arg1 {sparsity.deps = "{0,4} {1,5} {2,6} {3,7}"}' in text
    assert 'stablehlo.slice %0 [1:4] {sparsity.deps = "{1,5} {2,6} {3,7}"}' in text
    assert '{sparsity.deps = "{0,1,5} {1,2,6} {2,3,7} {3}"}' in text
    assert "%arg0: tensor<4xf32> {sparsity.offset = 0 : i64}, %arg1: tensor<4xf32> {sparsity.offset = 4 : i64}" in text
    assert _attr(fn, "sparsity.pattern") == "shape=5x8 nnz=10 deps=0..3 distinct=5"
    res = [ir.DictAttr(a) for a in ir.ArrayAttr(fn.attributes["res_attrs"])]
    assert ir.IntegerAttr(res[1]["sparsity.offset"]).value == 4
    # the result attribute holds exactly the pattern's rows
    rows = parse_sets(ir.StringAttr(res[0]["sparsity.deps"]).value, 8)
    assert (rows != analysis.pattern.to_scipy()[:4]).nnz == 0
    assert m.operation.verify()


def test_every_reached_op_result_is_annotated_and_module_reparses():
    f = lambda x, y: (jnp.sin(x[1:]) * y[:-1], jnp.cumsum(x)[::2] + jnp.roll(y, 1)[:2])  # noqa: E731
    lowered = jax.jit(f).lower(jnp.ones(4), jnp.ones(4)).compiler_ir("stablehlo")
    annotate(lowered)
    for op in _ops(lowered):
        if op.name in ("func.return", "builtin.module", "func.func", "stablehlo.return") or not len(op.results):
            continue
        if op.parent.name == "func.func" or op.parent.name == "builtin.module":
            assert "sparsity.deps" in op.attributes, op.name
    with lowered.context:
        again = ir.Module.parse(str(lowered))
    assert again.operation.verify()
    assert str(again) == str(lowered)


def test_annotated_result_rows_equal_the_pattern_of_a_jax_function():
    f = lambda x: jnp.stack([x[0] * x[1], jnp.sum(x ** 2), x[2]])  # noqa: E731
    x = jnp.ones(5)
    module = jax.jit(f).lower(x).compiler_ir("stablehlo")
    annotate(module, max_elements=100)
    fn = next(op for op in module.body.operations if op.operation.name == "func.func")
    res = ir.DictAttr(ir.ArrayAttr(fn.attributes["res_attrs"])[0])
    rows = parse_sets(ir.StringAttr(res["sparsity.deps"]).value, 5)
    expected = lower_and_analyze(f, x).pattern.to_scipy()
    assert (rows != expected).nnz == 0
    # JAX's own result attributes survive the merge
    assert "jax.result_info" in res


def test_large_values_get_a_summary_above_max_elements():
    m = parse_source(STENCIL, "s.mlir")
    annotate(m, max_elements=3, wrt=[0, 1])
    text = str(m)
    assert 'stablehlo.add %arg0, %arg1 {sparsity.deps = "elements=4 nnz=8 deps=2 distinct=4"}' in text
    assert 'stablehlo.slice %0 [1:4] {sparsity.deps = "{1,5} {2,6} {3,7}"}' in text
    m2 = parse_source(STENCIL, "s.mlir")
    annotate(m2, max_nnz=5, wrt=[0, 1])
    assert '{sparsity.deps = "elements=3 nnz=6 deps=2 distinct=3"}' in str(m2)


def test_private_function_called_twice_is_annotated_with_the_union_over_calls():
    text = """
    func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
      %0 = call @shift(%a) : (tensor<3xf32>) -> tensor<3xf32>
      %1 = call @shift(%b) : (tensor<3xf32>) -> tensor<3xf32>
      %2 = stablehlo.add %0, %1 : tensor<3xf32>
      return %2 : tensor<3xf32>
    }
    func.func private @shift(%x: tensor<3xf32>) -> tensor<3xf32> {
      %0 = stablehlo.slice %x [1:3] : (tensor<3xf32>) -> tensor<2xf32>
      %1 = stablehlo.slice %x [0:1] : (tensor<3xf32>) -> tensor<1xf32>
      %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<2xf32>, tensor<1xf32>) -> tensor<3xf32>
      return %2 : tensor<3xf32>
    }"""
    m = parse_source(text, "u.mlir")
    annotate(m, wrt=[0, 1])
    out = str(m)
    assert 'call @shift(%arg0) {sparsity.deps = "{1} {2} {0}"}' in out
    assert 'call @shift(%arg1) {sparsity.deps = "{4} {5} {3}"}' in out
    assert 'stablehlo.concatenate %0, %1, dim = 0 {sparsity.deps = "{1,4} {2,5} {0,3}"}' in out


def test_unreached_functions_carry_no_annotation_and_wrt_selects_columns():
    text = """
    func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
      %0 = stablehlo.multiply %a, %b : tensor<2xf32>
      return %0 : tensor<2xf32>
    }
    func.func private @unused(%x: tensor<2xf32>) -> tensor<2xf32> {
      %0 = stablehlo.negate %x : tensor<2xf32>
      return %0 : tensor<2xf32>
    }"""
    m = parse_source(text, "w.mlir")
    annotate(m, wrt=[1])
    out = str(m)
    assert "stablehlo.negate %arg0 : tensor<2xf32>" in out
    assert "%arg0: tensor<2xf32>, %arg1: tensor<2xf32> {sparsity.offset = 0 : i64}" in out
    assert '{sparsity.deps = "{0} {1}"}' in out


def test_annotate_twice_is_idempotent_and_strip_round_trips():
    m = parse_source(STENCIL, "s.mlir")
    before = str(m)
    annotate(m, max_elements=2)
    annotate(m)
    once = parse_source(STENCIL, "s.mlir")
    annotate(once)
    assert str(m) == str(once)
    assert strip(m) > 0
    assert str(m) == before


def test_strip_round_trip_on_a_jax_module_keeps_jax_attributes():
    f = lambda x, y: (jnp.sin(x) @ y, jnp.where(x > 0, x, 0.0))  # noqa: E731
    module = jax.jit(f).lower(jnp.ones((3, 3)), jnp.ones(3)).compiler_ir("stablehlo")
    before = module.operation.get_asm(print_generic_op_form=True)
    annotate(module)
    assert "sparsity." in str(module)
    strip(module)
    assert module.operation.get_asm(print_generic_op_form=True) == before


def test_resolve_entry_rules():
    two = """
    func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }
    func.func @g(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }
    func.func private @h(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }"""
    m = parse_source(two, "e.mlir")
    assert resolve_entry(m, "g") == "g"
    with pytest.raises(InputError, match="cannot choose an entry function among 2 public"):
        resolve_entry(m)
    with pytest.raises(InputError, match=r"no entry function '@zz'.*@f, @g, @h") as e:
        resolve_entry(m, "zz")
    assert e.value.location.startswith("e.mlir:")
    one = parse_source(two.replace("func.func @g", "func.func private @g"), "e.mlir")
    assert resolve_entry(one) == "f"


# --------------------------------------------------------------------------- passes in a PassManager
def test_python_passes_mix_with_builtin_passes_in_one_pass_manager():
    text = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %0 = stablehlo.add %a, %a : tensor<4xf32>
      %1 = stablehlo.add %a, %a : tensor<4xf32>
      %2 = stablehlo.multiply %0, %1 : tensor<4xf32>
      %3 = call @id(%2) : (tensor<4xf32>) -> tensor<4xf32>
      return %3 : tensor<4xf32>
    }
    func.func private @id(%x: tensor<4xf32>) -> tensor<4xf32> { return %x : tensor<4xf32> }
    func.func private @dead(%x: tensor<4xf32>) -> tensor<4xf32> { return %x : tensor<4xf32> }"""
    ctx = make_context()
    m = parse_source(text, "p.mlir", context=ctx)
    with ctx:
        pm = passmanager.PassManager("builtin.module")
        pm.add("canonicalize")
        pm.add("func.func(cse)")
        pm.add("inline")
        pm.add("symbol-dce")
        PASSES["sparsity-annotate"].from_options({"max-elements": 8}).add_to(pm)
        pm.run(m.operation)
    out = str(m)
    assert out.count("stablehlo.add") == 1  # cse merged the two adds
    assert "@dead" not in out  # symbol-dce
    assert 'stablehlo.multiply %0, %0 {sparsity.deps = "{0} {1} {2} {3}"}' in out
    with ctx:
        pm = passmanager.PassManager("builtin.module")
        PASSES["sparsity-strip"]().add_to(pm)
        pm.add("canonicalize")
        pm.run(m.operation)
    assert "sparsity." not in str(m)


def test_textual_pipeline_with_nested_builtin_passes_and_options():
    m = parse_source(STENCIL, "s.mlir")
    run_pipeline(m, "builtin.module(canonicalize,func.func(cse,canonicalize),sparsity-annotate{max-elements=3 wrt=1})")
    out = str(m)
    assert 'stablehlo.add %arg0, %arg1 {sparsity.deps = "elements=4 nnz=4 deps=1 distinct=4"}' in out
    assert "%arg1: tensor<4xf32> {sparsity.offset = 0 : i64}" in out
    run_pipeline(m, "sparsity-strip,cse")
    assert "sparsity." not in str(m)


def test_split_pipeline_parses_ours_and_builtin_elements():
    els = split_pipeline("builtin.module(sparsity-fold-constants{materialize=true},canonicalize{max-iterations=3},"
                         "func.func(cse),sparsity-annotate{entry=f wrt=0,2 on-unknown=conservative})")
    assert [type(el) for el in els] == [SparsityStep, MlirPass, MlirPass, SparsityStep]
    assert els[0] == SparsityStep(FoldConstantsPass, {"materialize": True})
    assert els[1] == MlirPass("canonicalize{max-iterations=3}") and els[2] == MlirPass("func.func(cse)")
    assert els[3] == SparsityStep(AnnotatePass, {"entry": "f", "wrt": [0, 2], "on-unknown": "conservative"})
    assert split_pipeline("") == [] and split_pipeline("builtin.module()") == []
    for bad, msg in [("sparsity-annotate{max-elemnts=3}", "unknown option 'max-elemnts'"),
                     ("sparsity-annotate{max-elements=x}", "expects an integer"),
                     ("sparsity-annotate{on-unknown=maybe}", "must be one of"),
                     ("func.func(sparsity-annotate)", "cannot be nested"),
                     ("canonicalize,,cse", "empty element"),
                     ("func.func(cse", "unbalanced")]:
        with pytest.raises(InputError, match=msg):
            split_pipeline(bad)


def test_unknown_builtin_pass_is_an_input_error():
    m = parse_source(STENCIL, "s.mlir")
    with pytest.raises(InputError, match="unknown pass or bad pipeline element 'no-such-pass'"):
        run_pipeline(m, "no-such-pass")


def test_pass_failure_becomes_an_mlir_diagnostic_at_the_op():
    text = """func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mydialect.op"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}"""
    ctx = make_context()
    ctx.allow_unregistered_dialects = True
    m = parse_source(text, "bad.mlir", context=ctx)
    with ctx:
        pm = passmanager.PassManager("builtin.module")
        PASSES["sparsity-annotate"]().add_to(pm)
        with pytest.raises(ir.MLIRError) as e:
            pm.run(m.operation)
    (d,) = e.value.error_diagnostics
    assert str(d.location) == 'loc("bad.mlir":2:8)'
    assert "no sparsity rule for op 'mydialect.op'" in d.message
    with pytest.raises(DiagnosticError) as e2:
        run_pipeline(m, "sparsity-annotate")
    assert str(e2.value).startswith("bad.mlir:2:8: error: no sparsity rule")
    run_pipeline(m, "sparsity-annotate{on-unknown=conservative}")
    assert '"mydialect.op"(%arg0) {sparsity.deps = "{0..3}*4"}' in str(m)


def test_fold_constants_pass_materializes_in_a_pipeline():
    text = """
    func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
      %c = stablehlo.constant dense<[1.0, 0.0, 2.0, 0.0]> : tensor<4xf32>
      %two = stablehlo.constant dense<2.0> : tensor<4xf32>
      %m = stablehlo.multiply %c, %two : tensor<4xf32>
      %0 = stablehlo.multiply %a, %m : tensor<4xf32>
      return %0 : tensor<4xf32>
    }"""
    m = parse_source(text, "f.mlir")
    run_pipeline(m, "sparsity-fold-constants{materialize=true},canonicalize,sparsity-annotate")
    out = str(m)
    assert out.count("stablehlo.multiply") == 1
    assert 'stablehlo.multiply %arg0, %cst {sparsity.deps = "{0} {} {2} {}"}' in out


# --------------------------------------------------------------------------- parsing with locations
def test_parse_source_keeps_file_line_col_and_wraps_top_level_ops():
    text = "func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {\n  return %a : tensor<2xf32>\n}\n"
    m = parse_source(text, "dir/x.mlir", first_line=10)
    fn = m.body.operations[0]
    assert str(fn.location) == 'loc("dir/x.mlir":10:1)'
    two = parse_source("// c\n" + text + text.replace("@f", "@g"), "y.mlir")
    assert [str(op.location) for op in two.body.operations] == ['loc("y.mlir":2:1)', 'loc("y.mlir":5:1)']
    two_at_5 = parse_source(text + text.replace("@f", "@g"), "y.mlir", first_line=5)
    assert [str(op.location) for op in two_at_5.body.operations] == ['loc("y.mlir":5:1)', 'loc("y.mlir":8:1)']
    assert len(parse_source("// nothing\n", "z.mlir").body.operations) == 0
    with pytest.raises(DiagnosticError) as e:
        parse_source("func.func @f(%a: tensor<2xf32>) {\n  %0 = stablehlo.bogus %a\n}", "b.mlir", first_line=3)
    assert str(e.value) == "b.mlir:4:8: error: custom op 'stablehlo.bogus' is unknown"


def test_analysis_of_annotated_module_is_unchanged():
    m = parse_source(STENCIL, "s.mlir")
    before = analyze_module(m).pattern
    annotate(m)
    assert analyze_module(m).pattern == before


def test_passes_are_dataclasses_whose_fields_are_their_options():
    """One declaration per option: the field, its pipeline name, kind, default and help come from it."""
    from stablehlo_sparsity.passes import AnnotatePass, FoldConstantsPass

    names = {o.name: o for o in AnnotatePass.options()}
    assert list(names) == ["entry", "wrt", "on-unknown", "max-elements", "max-nnz"]
    assert names["max-elements"].kind == "int" and names["max-elements"].default == 64
    assert names["on-unknown"].choices == ("error", "conservative")
    p = AnnotatePass.from_options("max-elements=8 wrt=0,2 on-unknown=conservative")
    assert (p.max_elements, p.wrt, p.on_unknown) == (8, [0, 2], "conservative")
    assert FoldConstantsPass.from_options("materialize").materialize is True
    with pytest.raises(InputError, match="unknown option 'nope' for pass 'sparsity-fold-constants'"):
        FoldConstantsPass.from_options("nope=1")
    with pytest.raises(InputError, match="expects an integer"):
        AnnotatePass.from_options("max-elements=x")
