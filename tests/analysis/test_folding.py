"""The constant lattice and the ``sparsity-fold-constants`` pass.

Fold rules of the indexing ops are checked against the StableHLO reference interpreter (bundled in jaxlib);
the pass is checked in both modes (annotate, materialize), as a Python-defined MLIR pass, and for
soundness of what it claims constant (loops, multiple call sites, functions it cannot analyze).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jaxlib.mlir import ir, passmanager
from jaxlib.mlir._mlir_libs import _stablehlo

from stablehlo_sparsity import analyze_module, jacobian_sparsity, lower_and_analyze, parse_module
from stablehlo_sparsity.passes.fold_constants import ATTR, FoldConstantsPass, fold_constants


def _eval(module, *args):
    with module.context:
        attrs = [ir.DenseElementsAttr.get(np.asarray(a)) for a in args]
        return [np.array(r) for r in _stablehlo.eval_module(module, attrs)]


def _ops(module, name=None):
    out = []

    def visit(op):
        for region in op.regions:
            for block in region.blocks:
                for inner in block.operations:
                    if name is None or inner.operation.name == name:
                        out.append(inner.operation)
                    visit(inner.operation)

    visit(module.operation)
    return out


def _lower_text(f, *args):
    """Fresh StableHLO text (jax may hand back a cached module object; passes mutate in place)."""
    return jax.jit(f).lower(*args).as_text()


# ---------------------------------------------------------------------- fold rules vs the reference interpreter
ORACLE = """
func.func @main() -> (tensor<2x2x2xi64>, tensor<3x2x2x2xi64>, tensor<3x4xi64>, tensor<2x5xi64>, tensor<2x3xi64>, tensor<5x4xi64>, tensor<5xf64>) {
  %o = stablehlo.iota dim = 0 : tensor<24xi64>
  %op = stablehlo.reshape %o : (tensor<24xi64>) -> tensor<2x3x4xi64>
  %i1 = stablehlo.constant dense<[[[5], [1]], [[-1], [2]]]> : tensor<2x2x1xi64>
  %g1 = "stablehlo.gather"(%op, %i1) <{dimension_numbers = #stablehlo.gather<offset_dims = [2], collapsed_slice_dims = [2], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [2], index_vector_dim = 2>, slice_sizes = array<i64: 1, 2, 1>}> : (tensor<2x3x4xi64>, tensor<2x2x1xi64>) -> tensor<2x2x2xi64>
  %i2 = stablehlo.constant dense<[[1, 5, -2], [3, 0, 2]]> : tensor<2x3xi64>
  %g2 = "stablehlo.gather"(%op, %i2) <{dimension_numbers = #stablehlo.gather<offset_dims = [1, 2, 3], start_index_map = [1, 2], index_vector_dim = 0>, slice_sizes = array<i64: 2, 2, 2>}> : (tensor<2x3x4xi64>, tensor<2x3xi64>) -> tensor<3x2x2x2xi64>
  %in = stablehlo.constant dense<1> : tensor<3x4xi64>
  %si = stablehlo.constant dense<[[2], [5], [2]]> : tensor<3x1xi64>
  %u12 = stablehlo.iota dim = 0 : tensor<12xi64>
  %up = stablehlo.reshape %u12 : (tensor<12xi64>) -> tensor<3x4xi64>
  %s1 = "stablehlo.scatter"(%in, %si, %up) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    %m = stablehlo.add %a, %b : tensor<i64>
    stablehlo.return %m : tensor<i64>
  }) : (tensor<3x4xi64>, tensor<3x1xi64>, tensor<3x4xi64>) -> tensor<3x4xi64>
  %in2 = stablehlo.constant dense<-1> : tensor<2x5xi64>
  %bi = stablehlo.constant dense<[[[4], [0]], [[1], [7]]]> : tensor<2x2x1xi64>
  %bu = stablehlo.constant dense<[[10, 11], [12, 13]]> : tensor<2x2xi64>
  %s2 = "stablehlo.scatter"(%in2, %bi, %bu) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [1], input_batching_dims = [0], scatter_indices_batching_dims = [0], scatter_dims_to_operand_dims = [1], index_vector_dim = 2>}> ({
  ^bb0(%a: tensor<i64>, %b: tensor<i64>):
    stablehlo.return %b : tensor<i64>
  }) : (tensor<2x5xi64>, tensor<2x2x1xi64>, tensor<2x2xi64>) -> tensor<2x5xi64>
  %x20 = stablehlo.iota dim = 0 : tensor<20xi64>
  %x = stablehlo.reshape %x20 : (tensor<20xi64>) -> tensor<5x4xi64>
  %c4 = stablehlo.constant dense<4> : tensor<i64>
  %cm1 = stablehlo.constant dense<-1> : tensor<i64>
  %ds = stablehlo.dynamic_slice %x, %c4, %cm1, sizes = [2, 3] : (tensor<5x4xi64>, tensor<i64>, tensor<i64>) -> tensor<2x3xi64>
  %c7 = stablehlo.constant dense<7> : tensor<i64>
  %c2 = stablehlo.constant dense<2> : tensor<i64>
  %dus = stablehlo.dynamic_update_slice %x, %ds, %c7, %c2 : (tensor<5x4xi64>, tensor<2x3xi64>, tensor<i64>, tensor<i64>) -> tensor<5x4xi64>
  %f = stablehlo.constant dense<[0.5, 1.0, 2.0, 3.0, 4.0]> : tensor<5xf64>
  %fi = stablehlo.constant dense<[[4], [0], [4]]> : tensor<3x1xi64>
  %fu = stablehlo.constant dense<[1.0, -2.0, 8.0]> : tensor<3xf64>
  %s3 = "stablehlo.scatter"(%f, %fi, %fu) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f64>, %b: tensor<f64>):
    %m = stablehlo.add %a, %b : tensor<f64>
    stablehlo.return %m : tensor<f64>
  }) : (tensor<5xf64>, tensor<3x1xi64>, tensor<3xf64>) -> tensor<5xf64>
  return %g1, %g2, %s1, %s2, %ds, %dus, %s3 : tensor<2x2x2xi64>, tensor<3x2x2x2xi64>, tensor<3x4xi64>, tensor<2x5xi64>, tensor<2x3xi64>, tensor<5x4xi64>, tensor<5xf64>
}
"""


def test_indexing_fold_rules_match_reference_interpreter():
    """gather (batching dims, clamping, windows), scatter (windows, out-of-bounds drop, batching dims,
    replace, add with duplicates), dynamic_slice / dynamic_update_slice (clamping)."""
    ref = _eval(parse_module(ORACLE))
    got = analyze_module(ORACLE).results
    assert len(ref) == len(got) == 7
    for r, v in zip(ref, got):
        assert v.const is not None
        assert v.const.dtype == r.dtype and np.array_equal(v.const, r)


UNFOLDABLE_SCATTERS = """
func.func @main() -> (tensor<5xi64>, tensor<3xf64>, tensor<3xi64>) {
  %a = stablehlo.constant dense<0> : tensor<5xi64>
  %i = stablehlo.constant dense<[[3]]> : tensor<1x1xi64>
  %u = stablehlo.constant dense<[[1, 2, 3]]> : tensor<1x3xi64>
  %r = "stablehlo.scatter"(%a, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x: tensor<i64>, %y: tensor<i64>):
    stablehlo.return %y : tensor<i64>
  }) : (tensor<5xi64>, tensor<1x1xi64>, tensor<1x3xi64>) -> tensor<5xi64>
  %f = stablehlo.constant dense<0.0> : tensor<3xf64>
  %d = stablehlo.constant dense<[[1], [1]]> : tensor<2x1xi64>
  %fu = stablehlo.constant dense<[0.1, 0.2]> : tensor<2xf64>
  %s = "stablehlo.scatter"(%f, %d, %fu) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x: tensor<f64>, %y: tensor<f64>):
    %m = stablehlo.add %x, %y : tensor<f64>
    stablehlo.return %m : tensor<f64>
  }) : (tensor<3xf64>, tensor<2x1xi64>, tensor<2xf64>) -> tensor<3xf64>
  %b = stablehlo.constant dense<0> : tensor<3xi64>
  %bu = stablehlo.constant dense<[5, 6]> : tensor<2xi64>
  %t = "stablehlo.scatter"(%b, %d, %bu) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%x: tensor<i64>, %y: tensor<i64>):
    stablehlo.return %y : tensor<i64>
  }) : (tensor<3xi64>, tensor<2x1xi64>, tensor<2xi64>) -> tensor<3xi64>
  return %r, %s, %t : tensor<5xi64>, tensor<3xf64>, tensor<3xi64>
}
"""


def test_scatter_fold_declines_implementation_defined_results():
    """A window that does not fit (spec and XLA differ), order-dependent float sums of duplicates, and
    conflicting replacements are not folded: the value stays unknown rather than possibly wrong."""
    assert [v.const for v in analyze_module(UNFOLDABLE_SCATTERS).results] == [None, None, None]


# ---------------------------------------------------------------------- the lattice inside the analysis
def test_index_normalization_chain_folds_exactly_at_scale():
    n = 20_000
    perm = np.random.default_rng(0).permutation(n)
    folded_calls = []

    def observer(op, results):
        if op.operation.name == "func.call":
            folded_calls.append(all(r.const is not None for r in results))

    a = lower_and_analyze(lambda x: x[(jnp.asarray(perm) * 7 + 3) % n], jnp.ones(n), observer=observer)
    assert folded_calls and all(folded_calls)  # the remainder subprogram folds through func.call
    m = a.pattern.to_scipy().tocsr()
    assert m.nnz == n and np.array_equal(m.indices, (perm * 7 + 3) % n)


def test_constant_mask_from_scatter_is_a_value():
    """``zeros.at[idx].set(1)`` folds; multiplying by it keeps exactly the selected elements."""
    idx = jnp.array([1, 4, 6])
    p = jacobian_sparsity(lambda x: x * jnp.zeros(8).at[idx].set(1.0), jnp.ones(8))
    assert np.array_equal(np.asarray(p.todense()), np.diag(np.isin(np.arange(8), idx)))


# ---------------------------------------------------------------------- the pass
def _normalization_text(n=6):
    perm = np.array([3, 0, 5, 1, 4, 2])[:n]
    return _lower_text(lambda x: jnp.sin(x[(jnp.asarray(perm) * 7 + 3) % n]) + jnp.arange(float(n)).sum(), jnp.ones(n))


def test_annotate_mode():
    m = parse_module(_normalization_text())
    count = fold_constants(m)
    assert count > 5
    assert m.operation.verify()
    (gather,) = _ops(m, "stablehlo.gather")
    assert ATTR not in gather.attributes  # reads the argument: unknown
    index_def = gather.operands[1].owner
    expected = (np.array([3, 0, 5, 1, 4, 2]) * 7 + 3) % 6
    assert str(index_def.attributes[ATTR]) == f"dense<{[[int(v)] for v in expected]}> : tensor<6x1xi32>"
    assert any(ATTR in op.attributes for op in _ops(m, "func.call"))
    assert not any(ATTR in op.attributes for op in _ops(m, "stablehlo.constant"))
    # the attribute is discardable: the module prints and parses back
    assert ATTR in str(parse_module(str(m)))


def test_materialize_mode_preserves_semantics():
    text = _normalization_text()
    m = parse_module(text)
    x = np.linspace(0.1, 0.6, 6)
    before = _eval(parse_module(text), x)
    count = fold_constants(m, materialize=True)
    assert count > 5
    assert m.operation.verify()
    main_ops = [op.name for op in m.body.operations[0].regions[0].blocks[0].operations]
    # The index chain becomes a literal; the exact sum 0+1+…+5 stays computed: as a literal it would feed a
    # rounding add, whose evaluation XLA may change for a constant operand (passes/fold_constants.py).
    assert main_ops == ["stablehlo.constant", "stablehlo.gather", "stablehlo.sine", "stablehlo.iota",
                        "stablehlo.constant", "stablehlo.reduce", "stablehlo.broadcast_in_dim", "stablehlo.add",
                        "func.return"]
    (gather,) = _ops(m, "stablehlo.gather")
    assert gather.operands[1].owner.name == "stablehlo.constant"
    after = _eval(m, x)
    assert np.allclose(before[0], after[0])
    assert len(_ops(m, "stablehlo.iota")) == 1  # the float iota of the sum; the index iota is gone
    assert not any(ATTR in op.attributes or "sparsity.fold_dead" in op.attributes for op in _ops(m))


def test_python_pass_in_pass_manager():
    m = parse_module(_normalization_text())
    with m.context:
        pm = passmanager.PassManager("builtin.module")
        FoldConstantsPass().add_to(pm)
        FoldConstantsPass(materialize=True).add_to(pm)
        pm.add("canonicalize")
        pm.run(m.operation)
    assert m.operation.verify()
    (gather,) = _ops(m, "stablehlo.gather")
    assert gather.operands[1].owner.name == "stablehlo.constant"


def test_size_cap_and_summaries():
    text = _lower_text(lambda x: x + jnp.arange(100.0) * 2.0, jnp.ones(100))
    m = parse_module(text)
    assert fold_constants(m, max_elements=50) == 0
    m = parse_module(text)
    assert fold_constants(m) == 3  # iota, broadcast of 2.0, multiply
    texts = [str(op.attributes[ATTR]) for op in _ops(m) if ATTR in op.attributes]
    assert any(t.startswith('"tensor<100xf64> min=0.0 max=198.0') for t in texts)


LOOPS_AND_CALLS = """
func.func @main(%x: tensor<3xf64>) -> (tensor<3xf64>, tensor<i64>, tensor<i64>) {
  %c1 = stablehlo.constant dense<1> : tensor<i64>
  %c2 = stablehlo.constant dense<2> : tensor<i64>
  %a = func.call @twice(%c1) : (tensor<i64>) -> tensor<i64>
  %b = func.call @twice(%c2) : (tensor<i64>) -> tensor<i64>
  %z = stablehlo.constant dense<0> : tensor<i64>
  %r:2 = stablehlo.while(%i = %z, %v = %x) : tensor<i64>, tensor<3xf64>
    cond {
      %k = stablehlo.constant dense<4> : tensor<i64>
      %p = stablehlo.compare LT, %i, %k, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i64>
      %j = stablehlo.add %i, %one : tensor<i64>
      %w = stablehlo.sine %v : tensor<3xf64>
      stablehlo.return %j, %w : tensor<i64>, tensor<3xf64>
    }
  return %r#1, %a, %b : tensor<3xf64>, tensor<i64>, tensor<i64>
}
func.func private @twice(%y: tensor<i64>) -> tensor<i64> {
  %s = stablehlo.add %y, %y : tensor<i64>
  return %s : tensor<i64>
}
func.func private @tuples(%t: tuple<tensor<i64>>) -> tensor<i64> {
  %c = stablehlo.constant dense<3> : tensor<i64>
  %d = stablehlo.add %c, %c : tensor<i64>
  return %d : tensor<i64>
}
"""


def test_only_values_constant_in_every_execution_fold():
    """The call results fold (each call site has constant arguments), but the callee's body does not (its
    argument differs between call sites and is unknown when analyzed on its own); the loop counter changes
    between iterations; a function the analysis cannot run (a tuple argument) folds nothing."""
    m = parse_module(LOOPS_AND_CALLS)
    fold_constants(m)
    assert m.operation.verify()
    calls = _ops(m, "func.call")
    assert [str(c.attributes[ATTR]) for c in calls] == ["dense<2> : tensor<i64>", "dense<4> : tensor<i64>"]
    adds = _ops(m, "stablehlo.add")
    assert [ATTR in a.attributes for a in adds] == [False, False, False]
    assert not any(ATTR in op.attributes for op in _ops(m, "stablehlo.compare"))
    m2 = parse_module(LOOPS_AND_CALLS)
    fold_constants(m2, materialize=True)
    assert m2.operation.verify()
    assert not _ops(m2, "func.call") and len(_ops(m2, "stablehlo.while")) == 1
