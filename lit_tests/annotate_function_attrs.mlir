// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// The entry function carries the column offset of each argument, the row offset and final rows of each
// result, and a summary of the whole Jacobian pattern.

// CHECK-LABEL: func.func @two_in_two_out(
// CHECK-SAME: %arg0: tensor<2xf32> {sparsity.offset = 0 : i64},
// CHECK-SAME: %arg1: tensor<3xf32> {sparsity.offset = 2 : i64})
// CHECK-SAME: -> (tensor<2xf32> {sparsity.deps = "{0,2} {1,2}", sparsity.offset = 0 : i64},
// CHECK-SAME: tensor<f32> {sparsity.deps = "{2..4}", sparsity.offset = 2 : i64})
// CHECK-SAME: attributes {sparsity.pattern = "shape=3x5 nnz=7 deps=2..3 distinct=3"}
func.func @two_in_two_out(%a: tensor<2xf32>, %b: tensor<3xf32>) -> (tensor<2xf32>, tensor<f32>) {
  %0 = stablehlo.slice %b [0:1] : (tensor<3xf32>) -> tensor<1xf32>
  %1 = stablehlo.reshape %0 : (tensor<1xf32>) -> tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %3 = stablehlo.multiply %a, %2 : tensor<2xf32>
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %4 = stablehlo.reduce(%b init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  return %3, %4 : tensor<2xf32>, tensor<f32>
}

// -----

// Existing argument and result attributes (as JAX writes them) are kept next to ours.
// CHECK-LABEL: func.func public @main(
// CHECK-SAME: %arg0: tensor<2xf32> {mhlo.layout_mode = "default", sparsity.offset = 0 : i64})
// CHECK-SAME: -> (tensor<2xf32> {jax.result_info = "result", sparsity.deps = "{0} {1}", sparsity.offset = 0 : i64})
module @jit_f {
  func.func public @main(%a: tensor<2xf32> {mhlo.layout_mode = "default"}) -> (tensor<2xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.sine %a : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
