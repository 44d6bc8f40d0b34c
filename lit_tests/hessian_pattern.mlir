// RUN: stablehlo-sparsity-opt %s --split-input-file --emit=hessian-pattern | filecheck %s
// RUN: not stablehlo-sparsity-opt %S/emit_modes.mlir --emit=hessian-pattern 2>&1 | filecheck %s --check-prefix=VECTOR

// --emit=hessian-pattern: the Hessian pattern of a scalar entry from its primal program (the second-order
// analysis), both triangles, in MatrixMarket coordinate format (1-based).

// f = Σ x_i x_{i+1}: products of distinct neighbours, so the off-diagonals only.
// CHECK: %%MatrixMarket matrix coordinate pattern general
// CHECK-NEXT: % Hessian sparsity of @main
// CHECK-NEXT: 4 4 6
// CHECK-NEXT: 1 2
// CHECK-NEXT: 2 1
// CHECK-NEXT: 2 3
// CHECK-NEXT: 3 2
// CHECK-NEXT: 3 4
// CHECK-NEXT: 4 3
func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %0 = stablehlo.slice %x [0:3] : (tensor<4xf32>) -> tensor<3xf32>
  %1 = stablehlo.slice %x [1:4] : (tensor<4xf32>) -> tensor<3xf32>
  %2 = stablehlo.multiply %0, %1 : tensor<3xf32>
  %c = stablehlo.constant dense<0.0> : tensor<f32>
  %3 = stablehlo.reduce(%2 init: %c) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  return %3 : tensor<f32>
}

// -----

// A known zero coefficient kills an interaction: f = Σ c_i exp(x_i) with c = [1, 0, 2].
// CHECK: % Hessian sparsity of @main
// CHECK-NEXT: 3 3 2
// CHECK-NEXT: 1 1
// CHECK-NEXT: 3 3
func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
  %c = stablehlo.constant dense<[1.0, 0.0, 2.0]> : tensor<3xf32>
  %e = stablehlo.exponential %x : tensor<3xf32>
  %m = stablehlo.multiply %c, %e : tensor<3xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %s = stablehlo.reduce(%m init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
  return %s : tensor<f32>
}

// VECTOR: error: a Hessian needs a scalar function; @main returns (4,)
