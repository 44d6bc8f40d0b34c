// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §compare yields booleans: no derivative.  §select with an unknown predicate may take either side, so
// each element depends on both branches (the predicate itself contributes nothing).

// CHECK-LABEL: func.func @compare_select
// CHECK: stablehlo.compare GT, %arg0, %arg1 {sparsity.deps = "{}*3"}
// CHECK: stablehlo.select %0, %arg0, %arg1 {sparsity.deps = "{0,3} {1,4} {2,5}"}
func.func @compare_select(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %p = stablehlo.compare GT, %a, %b : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xi1>
  %0 = stablehlo.select %p, %a, %b : tensor<3xi1>, tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// §clamp with scalar bounds: every element depends on both bounds and its own operand element.
// CHECK-LABEL: func.func @clamp
// CHECK: stablehlo.clamp %arg0, %arg1, %arg2 {sparsity.deps = "{0,1,4} {0,2,4} {0,3,4}"}
func.func @clamp(%lo: tensor<f32>, %x: tensor<3xf32>, %hi: tensor<f32>) -> tensor<3xf32> {
  %0 = stablehlo.clamp %lo, %x, %hi : (tensor<f32>, tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @maximum_relu
// CHECK: stablehlo.maximum %arg0, %cst {sparsity.deps = "{0} {1}"}
func.func @maximum_relu(%a: tensor<2xf32>) -> tensor<2xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<2xf32>
  %0 = stablehlo.maximum %a, %z : tensor<2xf32>
  return %0 : tensor<2xf32>
}
