// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §sort: any element may move anywhere along the sorted dimension, and only along it.

// CHECK-LABEL: func.func @sort_rows
// CHECK: "stablehlo.sort"
// CHECK: sparsity.deps = "{0..2}*3 {3..5}*3"
func.func @sort_rows(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "stablehlo.sort"(%a) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %1 = stablehlo.compare LT, %x, %y, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Sorting values by keys: both results follow the keys' permutation, which is piecewise constant, so
// the sorted values depend on the values only.
// CHECK-LABEL: func.func @sort_by_key
// CHECK: "stablehlo.sort"
// CHECK: sparsity.deps = ["{0..2}*3", "{3..5}*3"]
func.func @sort_by_key(%k: tensor<3xf32>, %v: tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>) {
  %0:2 = "stablehlo.sort"(%k, %v) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>, %u: tensor<f32>, %w: tensor<f32>):
    %1 = stablehlo.compare LT, %x, %y, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  }) : (tensor<3xf32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<3xf32>)
  return %0#0, %0#1 : tensor<3xf32>, tensor<3xf32>
}

// -----

// chlo.top_k: the values may come from any element; the indices are integers.
// CHECK-LABEL: func.func @top_k
// CHECK: chlo.top_k(%arg0, k = 2) {sparsity.deps = ["{0..3}*2", "{}*2"]}
func.func @top_k(%a: tensor<4xf32>) -> tensor<2xf32> {
  %values, %indices = chlo.top_k(%a, k = 2) : tensor<4xf32> -> (tensor<2xf32>, tensor<2xi32>)
  return %values : tensor<2xf32>
}
