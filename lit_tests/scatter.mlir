// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §scatter: a combining body (add) unions the updates into the operand; a body that returns the update
// replaces, so overwritten positions lose the operand's dependency.  Out-of-bounds updates are dropped.

// CHECK-LABEL: func.func @scatter_add
// CHECK: "stablehlo.scatter"
// CHECK: sparsity.deps = "{0,4,6} {1} {2,5} {3}"
func.func @scatter_add(%a: tensor<4xf32>, %u: tensor<3xf32>) -> tensor<4xf32> {
  %idx = stablehlo.constant dense<[[0], [2], [0]]> : tensor<3x1xi32>
  %0 = "stablehlo.scatter"(%a, %idx, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4xf32>, tensor<3x1xi32>, tensor<3xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @scatter_set
// CHECK: "stablehlo.scatter"
// CHECK: sparsity.deps = "{0} {4} {2} {5}"
func.func @scatter_set(%a: tensor<4xf32>, %u: tensor<2xf32>) -> tensor<4xf32> {
  %idx = stablehlo.constant dense<[[1], [3]]> : tensor<2x1xi32>
  %0 = "stablehlo.scatter"(%a, %idx, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    stablehlo.return %y : tensor<f32>
  }) : (tensor<4xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Index 9 is out of bounds: that update is dropped.
// CHECK-LABEL: func.func @scatter_drops_out_of_bounds
// CHECK: "stablehlo.scatter"
// CHECK: sparsity.deps = "{0,4} {1} {2} {3}"
func.func @scatter_drops_out_of_bounds(%a: tensor<4xf32>, %u: tensor<2xf32>) -> tensor<4xf32> {
  %idx = stablehlo.constant dense<[[0], [9]]> : tensor<2x1xi32>
  %0 = "stablehlo.scatter"(%a, %idx, %u) <{indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, unique_indices = false}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4xf32>, tensor<2x1xi32>, tensor<2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
