// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate | filecheck %s
// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate=max-elements=3 | filecheck %s --check-prefix=SMALL
// RUN: stablehlo-sparsity-opt %s --split-input-file --pass-pipeline='builtin.module(sparsity-annotate{max-nnz=4})' | filecheck %s --check-prefix=NNZ

// The sparsity.deps format: one set per element, row-major; runs of 3+ consecutive columns as a..b;
// s*k repeats a set k times.  Above max-elements elements or max-nnz dependencies: a summary.

// CHECK-LABEL: func.func @runs_and_repeats
// CHECK: stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] {sparsity.deps = "{0..5}"}
// CHECK: stablehlo.broadcast_in_dim %0, dims = [] {sparsity.deps = "{0..5}*4"}
// SMALL-LABEL: func.func @runs_and_repeats
// SMALL: stablehlo.reduce{{.*}}{sparsity.deps = "{0..5}"}
// SMALL: stablehlo.broadcast_in_dim %0, dims = [] {sparsity.deps = "elements=4 nnz=24 deps=6 distinct=1"}
// NNZ-LABEL: func.func @runs_and_repeats
// NNZ: stablehlo.reduce{{.*}}{sparsity.deps = "elements=1 nnz=6 deps=6 distinct=1"}
func.func @runs_and_repeats(%a: tensor<6xf32>) -> tensor<4xf32> {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<6xf32>, tensor<f32>) -> tensor<f32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// Mixed sets: {0,2..4} is {0, 2, 3, 4}.
// CHECK-LABEL: func.func @mixed
// CHECK: stablehlo.add %4, %5 {sparsity.deps = "{0,2..4} {1,3..5}"}
// SMALL-LABEL: func.func @mixed
// SMALL: stablehlo.add %4, %5 {sparsity.deps = "{0,2..4} {1,3..5}"}
// NNZ-LABEL: func.func @mixed
// NNZ: stablehlo.add %0, %1 {sparsity.deps = "{0,2} {1,3}"}
// NNZ: stablehlo.add %4, %5 {sparsity.deps = "elements=2 nnz=8 deps=4 distinct=2"}
func.func @mixed(%a: tensor<6xf32>) -> tensor<2xf32> {
  %0 = stablehlo.slice %a [0:2] : (tensor<6xf32>) -> tensor<2xf32>
  %1 = stablehlo.slice %a [2:4] : (tensor<6xf32>) -> tensor<2xf32>
  %2 = stablehlo.slice %a [3:5] : (tensor<6xf32>) -> tensor<2xf32>
  %3 = stablehlo.slice %a [4:6] : (tensor<6xf32>) -> tensor<2xf32>
  %4 = stablehlo.add %0, %1 : tensor<2xf32>
  %5 = stablehlo.add %2, %3 : tensor<2xf32>
  %6 = stablehlo.add %4, %5 : tensor<2xf32>
  return %6 : tensor<2xf32>
}

// -----

// A summary counts elements, (element, input) pairs, the range of dependencies per element and the
// number of distinct sets.
// CHECK-LABEL: func.func @summary
// CHECK: stablehlo.multiply %arg0, %cst {sparsity.deps = "{0} {} {2} {}"}
// SMALL-LABEL: func.func @summary
// SMALL: stablehlo.multiply %arg0, %cst {sparsity.deps = "elements=4 nnz=2 deps=0..1 distinct=3"}
func.func @summary(%a: tensor<4xf32>) -> tensor<4xf32> {
  %m = stablehlo.constant dense<[1.0, 0.0, 1.0, 0.0]> : tensor<4xf32>
  %0 = stablehlo.multiply %a, %m : tensor<4xf32>
  return %0 : tensor<4xf32>
}
