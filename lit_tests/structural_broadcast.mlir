// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §broadcast_in_dim: every output element copies the operand element it was broadcast from.

// CHECK-LABEL: func.func @scalar_to_vector
// CHECK: stablehlo.broadcast_in_dim %arg0, dims = [] {sparsity.deps = "{0}*4"}
func.func @scalar_to_vector(%a: tensor<f32>) -> tensor<4xf32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A row vector broadcast along the rows of a 2x3 result.
// CHECK-LABEL: func.func @rows
// CHECK: stablehlo.broadcast_in_dim %arg0, dims = [1] {sparsity.deps = "{0} {1} {2} {0} {1} {2}"}
func.func @rows(%a: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A column vector broadcast along the columns.
// CHECK-LABEL: func.func @columns
// CHECK: stablehlo.broadcast_in_dim %arg0, dims = [0] {sparsity.deps = "{0}*3 {1}*3"}
func.func @columns(%a: tensor<2xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// A size-1 dimension is expanded; dims may also permute.
// CHECK-LABEL: func.func @expand_and_permute
// CHECK: stablehlo.broadcast_in_dim %arg0, dims = [1, 0] {sparsity.deps = "{0}*2 {1}*2 {2}*2"}
func.func @expand_and_permute(%a: tensor<1x3xf32>) -> tensor<3x2xf32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [1, 0] : (tensor<1x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// Outer product x yᵀ: element (i, j) depends on x_i and y_j.
// CHECK-LABEL: func.func @outer_product
// CHECK: stablehlo.multiply %0, %1 {sparsity.deps = "{0,2} {0,3} {0,4} {1,2} {1,3} {1,4}"}
func.func @outer_product(%x: tensor<2xf32>, %y: tensor<3xf32>) -> tensor<2x3xf32> {
  %0 = stablehlo.broadcast_in_dim %x, dims = [0] : (tensor<2xf32>) -> tensor<2x3xf32>
  %1 = stablehlo.broadcast_in_dim %y, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
  %2 = stablehlo.multiply %0, %1 : tensor<2x3xf32>
  return %2 : tensor<2x3xf32>
}
