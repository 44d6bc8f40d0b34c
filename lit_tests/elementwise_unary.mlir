// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate | filecheck %s

// Unary elementwise ops: element i depends on input i only (§negate, §sine, §exponential, ...).

// CHECK-LABEL: func.func @negate
// CHECK: stablehlo.negate %arg0 {sparsity.deps = "{0} {1} {2}"}
func.func @negate(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.negate %a : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @chain
// CHECK: stablehlo.sine %arg0 {sparsity.deps = "{0} {1} {2} {3}"}
// CHECK: stablehlo.exponential %0 {sparsity.deps = "{0} {1} {2} {3}"}
// CHECK: stablehlo.log %1 {sparsity.deps = "{0} {1} {2} {3}"}
// CHECK: stablehlo.tanh %2 {sparsity.deps = "{0} {1} {2} {3}"}
// CHECK: stablehlo.sqrt %3 {sparsity.deps = "{0} {1} {2} {3}"}
func.func @chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.sine %a : tensor<4xf32>
  %1 = stablehlo.exponential %0 : tensor<4xf32>
  %2 = stablehlo.log %1 : tensor<4xf32>
  %3 = stablehlo.tanh %2 : tensor<4xf32>
  %4 = stablehlo.sqrt %3 : tensor<4xf32>
  return %4 : tensor<4xf32>
}

// -----

// A 2-D value: sets are listed in row-major order.
// CHECK-LABEL: func.func @matrix
// CHECK: stablehlo.abs %arg0 {sparsity.deps = "{0} {1} {2} {3} {4} {5}"} : tensor<2x3xf32>
func.func @matrix(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.abs %a : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Rounding-like ops have a zero derivative almost everywhere: no dependencies.
// CHECK-LABEL: func.func @piecewise_constant
// CHECK: stablehlo.floor %arg0 {sparsity.deps = "{}*3"}
// CHECK: stablehlo.ceil %arg0 {sparsity.deps = "{}*3"}
// CHECK: stablehlo.sign %arg0 {sparsity.deps = "{}*3"}
// CHECK: stablehlo.round_nearest_even %arg0 {sparsity.deps = "{}*3"}
// CHECK: stablehlo.add {{.*}} {sparsity.deps = "{}*3"}
func.func @piecewise_constant(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.floor %a : tensor<3xf32>
  %1 = stablehlo.ceil %a : tensor<3xf32>
  %2 = stablehlo.sign %a : tensor<3xf32>
  %3 = stablehlo.round_nearest_even %a : tensor<3xf32>
  %4 = stablehlo.add %0, %1 : tensor<3xf32>
  %5 = stablehlo.add %2, %3 : tensor<3xf32>
  %6 = stablehlo.add %4, %5 : tensor<3xf32>
  return %6 : tensor<3xf32>
}

// -----

// Scalars (rank 0) have one element.
// CHECK-LABEL: func.func @scalar
// CHECK: stablehlo.cosine %arg0 {sparsity.deps = "{0}"} : tensor<f32>
func.func @scalar(%a: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.cosine %a : tensor<f32>
  return %0 : tensor<f32>
}
