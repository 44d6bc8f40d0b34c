// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate 2>&1 | filecheck %s

// §gather with known indices reads exactly the indexed elements.

// CHECK: gather.mlir:[[# @LINE + 64]]:8: warning: stablehlo.gather: {{.*}}conservative

// CHECK-LABEL: func.func @take
// CHECK: "stablehlo.gather"
// CHECK-SAME: sparsity.deps = "{2} {0} {2}"
func.func @take(%a: tensor<4xf32>) -> tensor<3xf32> {
  %idx = stablehlo.constant dense<[[2], [0], [2]]> : tensor<3x1xi32>
  %0 = "stablehlo.gather"(%a, %idx) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<4xf32>, tensor<3x1xi32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Start indices are clamped into range (§gather): index 7 reads the last element, -3 the first.
// CHECK-LABEL: func.func @clamped
// CHECK: "stablehlo.gather"
// CHECK-SAME: sparsity.deps = "{3} {0}"
func.func @clamped(%a: tensor<4xf32>) -> tensor<2xf32> {
  %idx = stablehlo.constant dense<[[7], [-3]]> : tensor<2x1xi32>
  %0 = "stablehlo.gather"(%a, %idx) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<4xf32>, tensor<2x1xi32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Row slices of a matrix: offset_dims keep the row.
// CHECK-LABEL: func.func @rows
// CHECK: "stablehlo.gather"
// CHECK-SAME: sparsity.deps = "{4} {5} {0} {1}"
func.func @rows(%a: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %idx = stablehlo.constant dense<[[2], [0]]> : tensor<2x1xi32>
  %0 = "stablehlo.gather"(%a, %idx) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 2>}> : (tensor<3x2xf32>, tensor<2x1xi32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// JAX's negative-index normalization (compare / add / select on constants) folds away, so the gather
// stays exact.
// CHECK-LABEL: func.func @normalized
// CHECK: "stablehlo.gather"
// CHECK-SAME: sparsity.deps = "{3} {0} {2}"
func.func @normalized(%a: tensor<4xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<[-1, 0, 2]> : tensor<3xi32>
  %c_0 = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<3xi32>
  %1 = stablehlo.compare LT, %c, %0, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
  %c_1 = stablehlo.constant dense<4> : tensor<i32>
  %2 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<3xi32>
  %3 = stablehlo.add %c, %2 : tensor<3xi32>
  %4 = stablehlo.select %1, %3, %c : tensor<3xi1>, tensor<3xi32>
  %5 = stablehlo.broadcast_in_dim %4, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
  %6 = "stablehlo.gather"(%a, %5) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<4xf32>, tensor<3x1xi32>) -> tensor<3xf32>
  return %6 : tensor<3xf32>
}

// -----

// Input-dependent indices: each element may read any element of the operand (sound), with a warning
// (checked at the top: the driver prints diagnostics before the output).
// CHECK-LABEL: func.func @dynamic_index
// CHECK: "stablehlo.gather"
// CHECK-SAME: sparsity.deps = "{0..3}*2"
func.func @dynamic_index(%a: tensor<4xf32>, %i: tensor<2x1xi32>) -> tensor<2xf32> {
  %0 = "stablehlo.gather"(%a, %i) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<4xf32>, tensor<2x1xi32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
