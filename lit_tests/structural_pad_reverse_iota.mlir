// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §pad: padding elements copy the padding value (here an argument), others the operand.
// CHECK-LABEL: func.func @pad_with_argument
// CHECK: stablehlo.pad %arg0, %arg1, low = [1], high = [2], interior = [1] {sparsity.deps = "{2} {0} {2} {1} {2}*2"}
func.func @pad_with_argument(%a: tensor<2xf32>, %v: tensor<f32>) -> tensor<6xf32> {
  %0 = stablehlo.pad %a, %v, low = [1], high = [2], interior = [1] : (tensor<2xf32>, tensor<f32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}

// -----

// Negative padding crops.
// CHECK-LABEL: func.func @pad_negative
// CHECK: stablehlo.pad %arg0, %cst, low = [-1], high = [1], interior = [0] {sparsity.deps = "{1} {2} {3} {}"}
func.func @pad_negative(%a: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.pad %a, %z, low = [-1], high = [1], interior = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @reverse
// CHECK: stablehlo.reverse %arg0, dims = [1] {sparsity.deps = "{2} {1} {0} {5} {4} {3}"}
func.func @reverse(%a: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.reverse %a, dims = [1] : tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// §iota is a constant.
// CHECK-LABEL: func.func @iota
// CHECK: stablehlo.iota dim = 0 {sparsity.deps = "{}*3"}
// CHECK: stablehlo.multiply %arg0, %0 {sparsity.deps = "{} {1} {2}"}
func.func @iota(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.iota dim = 0 : tensor<3xf32>
  %1 = stablehlo.multiply %a, %0 : tensor<3xf32>
  return %1 : tensor<3xf32>
}
