"""The region engine (``stablehlo_sparsity/analysis/engine.py``) that the analysis and the importer both drive: one
terminator set, one function table, one scoping model."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from stablehlo_sparsity import analyze_module
from stablehlo_sparsity.analysis.api import parse_module
from stablehlo_sparsity.analysis.engine import TERMINATORS, FunctionTable, RegionEngine, Scope
from stablehlo_sparsity.errors import InputError, UnsupportedOpError
from stablehlo_sparsity.modules.importer import import_module
from stablehlo_sparsity.modules.importer.core import ImportContext
from stablehlo_sparsity.analysis.interpreter import Interpreter

# A while loop whose body reads %w from the function around it, and a private callee.
CAPTURE = """
func.func private @scale(%v: tensor<3xf32>, %s: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.multiply %v, %s : tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func @main(%x: tensor<3xf32>, %w: tensor<3xf32>) -> tensor<3xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c2 = stablehlo.constant dense<2> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<3xf32>
    cond {
      %p = stablehlo.compare LT, %i, %c2 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %s = func.call @scale(%v, %w) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
      stablehlo.return %n, %s : tensor<i32>, tensor<3xf32>
    }
  return %r#1 : tensor<3xf32>
}
"""


def test_both_sides_are_clients_of_the_one_engine():
    assert issubclass(Interpreter, RegionEngine) and issubclass(ImportContext, RegionEngine)
    for side in (Interpreter, ImportContext):
        for shared in ("run_region", "invoke", "operands", "value", "function"):
            assert getattr(side, shared) is getattr(RegionEngine, shared), (side.__name__, shared)
    assert TERMINATORS == {"func.return", "stablehlo.return"}


def test_scope_reads_enclosing_scopes_and_refuses_undefined_values():
    outer: Scope[int] = Scope(None, {"a": 1})
    inner: Scope[int] = Scope(outer, {"b": 2})
    assert inner.values(["b", "a"]) == [2, 1]
    with pytest.raises(InputError, match="undefined SSA value"):
        inner.lookup("c")
    with pytest.raises(InputError, match="undefined SSA value"):
        outer.lookup("b")  # a parent does not see its children's values


def test_captured_values_and_calls_inside_a_loop_on_both_sides():
    m = parse_module(CAPTURE)
    res = analyze_module(m, wrt=[0, 1])
    assert np.asarray(res.pattern.todense()).astype(int).tolist() == [[1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0],
                                                          [0, 0, 1, 0, 0, 1]]
    f = import_module(m)
    x, w = np.array([1.0, 2.0, 3.0], np.float32), np.array([2.0, 0.5, -1.0], np.float32)
    np.testing.assert_allclose(np.asarray(jax.jit(f)(x, w)), x * w * w)


def test_function_table_refuses_missing_functions_and_declarations_with_each_sides_verb():
    m = parse_module("func.func private @decl(%a: tensor<f32>) -> tensor<f32>\n"
                     "func.func @main(%a: tensor<f32>) -> tensor<f32> {\n"
                     "  %0 = func.call @decl(%a) : (tensor<f32>) -> tensor<f32>\n  return %0 : tensor<f32>\n}")
    table = FunctionTable(m)
    assert sorted(table.by_name) == ["decl", "main"]
    with pytest.raises(InputError, match="no function named '@nope'"):
        table.function("nope")
    with pytest.raises(InputError, match="nothing to analyze"):
        analyze_module(m)
    f = import_module(m)
    with pytest.raises(InputError, match="nothing to import"):
        jax.jit(f).lower(*f.example_args())


def test_a_symbolic_run_reads_outer_values_from_its_root_scope_only():
    """``interpret_symbolically`` runs a body in a fresh analysis whose root scope holds the given outer values:
    a value missing from them is an error, not a silent read of the caller's scopes."""
    m = parse_module(CAPTURE)
    with m.context:
        interp = Interpreter(m, 3)
        body = interp.functions["scale"].regions[0]
        mul = list(body.blocks[0].operations)[0]
        from stablehlo_sparsity.lattice import Deps
        from stablehlo_sparsity.analysis.values import AbstractValue, tensor_type

        av = AbstractValue(tensor_type(mul.result.type), Deps.empty(3, 3))
        assert len(interp.interpret_symbolically(body, [av, av], {}, 3)) == 1
        while_body = interp.functions["main"].regions[0].blocks[0].operations[3].regions[1]
        i = AbstractValue(tensor_type(while_body.blocks[0].arguments[0].type), Deps.empty(1, 3))
        with pytest.raises(InputError, match="undefined SSA value"):  # %c1 and %w are outer values
            interp.interpret_symbolically(while_body, [i, av], {}, 3)


def test_blocks_are_decoded_once_per_analysis():
    # the walk reads each op through the bindings once: a loop body decoded on its first iteration is reused by
    # the later ones and by the sub-analyses its rules start (one function table)
    module = parse_module(CAPTURE)
    with module.context:
        table = FunctionTable(module)
        body = table.function("main").regions[0]
        first = table.decoded(body)
        assert table.decoded(table.function("main").regions[0]) is first   # a new region object, the same block
        assert [d.name for d in first.ops][-1] == "func.return"
        assert first.ops[0].results and first.ops[0].types is None


# A loss computed and dropped (``jit(keep_unused=True)`` keeps a gradient program's loss), the product only that
# loss reads, a value read only inside the loop body, and (ODD) an op without a sparsity rule that nothing reads.
DEAD = """
func.func @main(%x: tensor<3xf32>, %w: tensor<3xf32>, %a: tensor<4x3xf32>, %b: tensor<3x2xf32>) -> tensor<3xf32> {
  %sq = stablehlo.multiply %x, %x : tensor<3xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %loss = stablehlo.reduce(%sq init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  ODD
  %e = stablehlo.exponential %w : tensor<3xf32>
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %c1 = stablehlo.constant dense<1> : tensor<i32>
  %c2 = stablehlo.constant dense<2> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c0, %v = %x) : tensor<i32>, tensor<3xf32>
    cond {
      %p = stablehlo.compare LT, %i, %c2 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %n = stablehlo.add %i, %c1 : tensor<i32>
      %s = stablehlo.multiply %v, %e : tensor<3xf32>
      stablehlo.return %n, %s : tensor<i32>, tensor<3xf32>
    }
  return %r#1 : tensor<3xf32>
}
"""


def test_ops_no_result_depends_on_are_not_run_and_values_read_inside_a_loop_are_kept():
    from stablehlo_sparsity.analysis.interpreter import unused_ops

    module = parse_module(DEAD.replace("ODD", ""))
    with module.context:
        body = FunctionTable(module).body_block("main", "analysis")
        assert sorted(unused_ops(body)) == [0, 1, 2]       # %sq, %z, %loss; not %e, read inside the loop
    res = analyze_module(module, wrt=[0, 1])
    assert np.asarray(res.pattern.todense()).astype(int).tolist() == [[1, 0, 0, 1, 0, 0], [0, 1, 0, 0, 1, 0],
                                                                       [0, 0, 1, 0, 0, 1]]
    seen = []   # (an observer records every op's values, the annotate pass's: every op runs)
    analyze_module(module, wrt=[0, 1], observer=lambda op, results: seen.append(op.operation.name))
    assert seen[:3] == ["stablehlo.multiply", "stablehlo.constant", "stablehlo.reduce"]


def test_an_op_without_a_rule_is_refused_even_when_nothing_reads_it():
    from stablehlo_sparsity.analysis.interpreter import unused_ops
    from stablehlo_sparsity.analysis.rules.registry import DEPS_RULES
    from test_api import _UNRULED

    name, text = next(((k, v) for k, v in _UNRULED.items() if k not in DEPS_RULES), (None, None))
    if name is None:
        pytest.skip("every candidate op has a rule now")
    module = parse_module(DEAD.replace("ODD", f"%odd = {text}"))
    with module.context:
        assert sorted(unused_ops(FunctionTable(module).body_block("main", "analysis"))) == [0, 1, 2, 3]
    with pytest.raises(UnsupportedOpError, match=name):   # (skipped only with a rule: refused where it stands)
        analyze_module(module, wrt=[0, 1])
