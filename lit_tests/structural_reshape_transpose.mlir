// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate | filecheck %s

// Structural ops move elements: each output element copies exactly one input element (the position-map
// trick: the op applied to arange(k)).

// §reshape keeps the row-major order.
// CHECK-LABEL: func.func @reshape
// CHECK: stablehlo.reshape %arg0 {sparsity.deps = "{0} {1} {2} {3} {4} {5}"} : (tensor<2x3xf32>) -> tensor<3x2xf32>
func.func @reshape(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = stablehlo.reshape %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// §transpose of a 2x3 matrix: out[j, i] = a[i, j].
// CHECK-LABEL: func.func @transpose
// CHECK: stablehlo.transpose %arg0, dims = [1, 0] {sparsity.deps = "{0} {3} {1} {4} {2} {5}"}
func.func @transpose(%a: tensor<2x3xf32>) -> tensor<3x2xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}

// -----

// A 3-D permutation.
// CHECK-LABEL: func.func @transpose_3d
// CHECK: stablehlo.transpose %arg0, dims = [2, 0, 1] {sparsity.deps = "{0} {2} {4} {6} {1} {3} {5} {7}"}
func.func @transpose_3d(%a: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> {
  %0 = stablehlo.transpose %a, dims = [2, 0, 1] : (tensor<2x2x2xf32>) -> tensor<2x2x2xf32>
  return %0 : tensor<2x2x2xf32>
}
