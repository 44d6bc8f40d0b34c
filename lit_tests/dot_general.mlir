// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §dot_general: output (i, j) depends on row i of the lhs and column j of the rhs.

// CHECK-LABEL: func.func @matmul
// CHECK: stablehlo.dot_general %arg0, %arg1, contracting_dims = [1] x [0]
// CHECK-SAME: sparsity.deps = "{0,1,4,6} {0,1,5,7} {2..4,6} {2,3,5,7}"
func.func @matmul(%a: tensor<2x2xf32>, %b: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// Batch dimensions keep batches apart.
// CHECK-LABEL: func.func @batched
// CHECK: batching_dims = [0] x [0]
// CHECK-SAME: sparsity.deps = "{0,1,4,5} {2,3,6,7}"
func.func @batched(%a: tensor<2x1x2xf32>, %b: tensor<2x2x1xf32>) -> tensor<2x1x1xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x1x2xf32>, tensor<2x2x1xf32>) -> tensor<2x1x1xf32>
  return %0 : tensor<2x1x1xf32>
}

// -----

// A known sparse matrix times x gives exactly the matrix's pattern.
// CHECK-LABEL: func.func @constant_sparse_matrix
// CHECK: stablehlo.dot_general %cst, %arg0
// CHECK-SAME: sparsity.deps = "{0,1} {1,2} {2}"
func.func @constant_sparse_matrix(%x: tensor<3xf32>) -> tensor<3xf32> {
  %a = stablehlo.constant dense<[[2.0, -1.0, 0.0], [0.0, 2.0, -1.0], [0.0, 0.0, 2.0]]> : tensor<3x3xf32>
  %0 = stablehlo.dot_general %a, %x, contracting_dims = [1] x [0] : (tensor<3x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A dot product reduces to one element.
// CHECK-LABEL: func.func @dot
// CHECK: sparsity.deps = "{0..5}"
func.func @dot(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<f32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [0] : (tensor<3xf32>, tensor<3xf32>) -> tensor<f32>
  return %0 : tensor<f32>
}
