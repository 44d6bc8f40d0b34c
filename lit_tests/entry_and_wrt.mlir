// RUN: stablehlo-sparsity-opt %s --sparsity-annotate --wrt=all | filecheck %s
// RUN: stablehlo-sparsity-opt %s --sparsity-annotate | filecheck %s --check-prefix=DEFAULT
// RUN: stablehlo-sparsity-opt %s --sparsity-annotate --wrt=1 | filecheck %s --check-prefix=WRT
// RUN: stablehlo-sparsity-opt %s --sparsity-annotate --entry=helper | filecheck %s --check-prefix=HELPER
// RUN: stablehlo-sparsity-opt %s --pass-pipeline='builtin.module(sparsity-annotate{entry=helper wrt=0})' | filecheck %s --check-prefix=HELPER
// RUN: stablehlo-sparsity-opt %s --emit=json --wrt=1 | filecheck %s --check-prefix=JSON

// The entry function defaults to @main (else the only public function); --wrt picks which of its
// arguments are the inputs (columns): argument 0 by default (as jax.jacfwd), --wrt=all for every one;
// --entry analyzes another function.

// DEFAULT-LABEL: func.func @main(
// DEFAULT-SAME: %arg0: tensor<2xf32> {sparsity.offset = 0 : i64}, %arg1: tensor<3xf32>)
// DEFAULT-SAME: sparsity.pattern = "shape=3x2 nnz=2 deps=0..1 distinct=3"

// CHECK-LABEL: func.func @main(
// CHECK-SAME: %arg0: tensor<2xf32> {sparsity.offset = 0 : i64}, %arg1: tensor<3xf32> {sparsity.offset = 2 : i64})
// CHECK-SAME: sparsity.pattern = "shape=3x5 nnz=7 deps=2..3 distinct=3"
// CHECK: stablehlo.multiply %arg0, %2 {sparsity.deps = "{0,2} {1,2}"}

// WRT-LABEL: func.func @main(
// WRT-SAME: %arg0: tensor<2xf32>, %arg1: tensor<3xf32> {sparsity.offset = 0 : i64})
// WRT-SAME: -> (tensor<2xf32> {sparsity.deps = "{0}*2", sparsity.offset = 0 : i64}, tensor<f32> {sparsity.deps = "{0..2}", sparsity.offset = 2 : i64})
// WRT-SAME: sparsity.pattern = "shape=3x3 nnz=5 deps=1..3 distinct=2"

// HELPER-LABEL: func.func @main(%arg0: tensor<2xf32>, %arg1: tensor<3xf32>)
// HELPER-NOT: sparsity
// HELPER-LABEL: func.func @helper(
// HELPER-SAME: %arg0: tensor<3xf32> {sparsity.offset = 0 : i64})
// HELPER: stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] {sparsity.deps = "{0..2}"}

// JSON: {"entry": "main", "shape": [3, 3], "nnz": 5, "inputs": [{"shape": [3], "offset": 0}], "outputs": [{"shape": [2], "offset": 0}, {"shape": [], "offset": 2}], "rows": {{\[\[}}0], [0], [0, 1, 2]]}

func.func @main(%a: tensor<2xf32>, %b: tensor<3xf32>) -> (tensor<2xf32>, tensor<f32>) {
  %0 = stablehlo.slice %b [0:1] : (tensor<3xf32>) -> tensor<1xf32>
  %1 = stablehlo.reshape %0 : (tensor<1xf32>) -> tensor<f32>
  %2 = stablehlo.broadcast_in_dim %1, dims = [] : (tensor<f32>) -> tensor<2xf32>
  %3 = stablehlo.multiply %a, %2 : tensor<2xf32>
  %4 = call @helper(%b) : (tensor<3xf32>) -> tensor<f32>
  return %3, %4 : tensor<2xf32>, tensor<f32>
}
func.func @helper(%b: tensor<3xf32>) -> tensor<f32> {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%b init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
