// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-fold-constants=materialize=true | filecheck %s
// RUN: stablehlo-sparsity-opt %s --split-input-file --pass-pipeline='builtin.module(sparsity-fold-constants{materialize=true},canonicalize,sparsity-annotate)' | filecheck %s --check-prefix=ANN

// With materialize=true, folded values become stablehlo.constant ops and the folded ops disappear.

// CHECK-LABEL: func.func @arith
// CHECK-NOT: stablehlo.iota
// CHECK: %[[C:.*]] = stablehlo.constant dense<[2.000000e+00, 0.000000e+00, 4.000000e+00]> : tensor<3xf32>
// CHECK-NOT: stablehlo.multiply %cst
// CHECK: stablehlo.multiply %arg0, %[[C]] : tensor<3xf32>
// ANN-LABEL: func.func @arith
// ANN: stablehlo.multiply %arg0, %cst {sparsity.deps = "{0} {} {2}"}
func.func @arith(%a: tensor<3xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<[1.0, 0.0, 2.0]> : tensor<3xf32>
  %two = stablehlo.constant dense<2.0> : tensor<3xf32>
  %m = stablehlo.multiply %c, %two : tensor<3xf32>
  %i = stablehlo.iota dim = 0 : tensor<3xi32>
  %0 = stablehlo.multiply %a, %m : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// The whole index normalization chain folds into the gather's constant indices.
// CHECK-LABEL: func.func @gather_indices
// CHECK-NOT: stablehlo.compare
// CHECK-NOT: stablehlo.select
// CHECK: %[[I:.*]] = stablehlo.constant dense<{{\[\[}}3], [0], [2]]> : tensor<3x1xi32>
// CHECK: "stablehlo.gather"(%arg0, %[[I]])
// ANN-LABEL: func.func @gather_indices
// ANN: "stablehlo.gather"
// ANN-SAME: sparsity.deps = "{3} {0} {2}"
func.func @gather_indices(%a: tensor<4xf32>) -> tensor<3xf32> {
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
