// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// CHECK-LABEL: func.func @slice
// CHECK: stablehlo.slice %arg0 [1:4] {sparsity.deps = "{1} {2} {3}"}
func.func @slice(%a: tensor<5xf32>) -> tensor<3xf32> {
  %0 = stablehlo.slice %a [1:4] : (tensor<5xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Strides, in two dimensions.
// CHECK-LABEL: func.func @strided_2d
// CHECK: stablehlo.slice %arg0 [0:3:2, 1:4:2] {sparsity.deps = "{1} {3} {9} {11}"}
func.func @strided_2d(%a: tensor<3x4xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.slice %a [0:3:2, 1:4:2] : (tensor<3x4xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// Finite differences: y_i = x_{i+1} - x_i.
// CHECK-LABEL: func.func @diff
// CHECK: stablehlo.subtract %0, %1 {sparsity.deps = "{0,1} {1,2} {2,3}"}
func.func @diff(%a: tensor<4xf32>) -> tensor<3xf32> {
  %0 = stablehlo.slice %a [1:4] : (tensor<4xf32>) -> tensor<3xf32>
  %1 = stablehlo.slice %a [0:3] : (tensor<4xf32>) -> tensor<3xf32>
  %2 = stablehlo.subtract %0, %1 : tensor<3xf32>
  return %2 : tensor<3xf32>
}

// -----

// §concatenate; the constant part has no dependencies.
// CHECK-LABEL: func.func @concatenate
// CHECK: stablehlo.concatenate %arg1, %cst, %arg0, dim = 0 {sparsity.deps = "{2} {3} {} {0} {1}"}
func.func @concatenate(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<5xf32> {
  %c = stablehlo.constant dense<1.0> : tensor<1xf32>
  %0 = stablehlo.concatenate %b, %c, %a, dim = 0 : (tensor<2xf32>, tensor<1xf32>, tensor<2xf32>) -> tensor<5xf32>
  return %0 : tensor<5xf32>
}

// -----

// Concatenation along the second dimension interleaves rows.
// CHECK-LABEL: func.func @concatenate_dim1
// CHECK: stablehlo.concatenate %arg0, %arg1, dim = 1 {sparsity.deps = "{0} {2} {1} {3}"}
func.func @concatenate_dim1(%a: tensor<2x1xf32>, %b: tensor<2x1xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.concatenate %a, %b, dim = 1 : (tensor<2x1xf32>, tensor<2x1xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
