// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-fold-constants | filecheck %s

// Without materialize, folded values are shown as sparsity.const and the ops stay.

// CHECK-LABEL: func.func @arith
// CHECK: stablehlo.multiply %cst, %cst_0 {sparsity.const = dense<[2.000000e+00, 0.000000e+00, 4.000000e+00]> : tensor<3xf32>}
// CHECK: stablehlo.iota dim = 0 {sparsity.const = dense<[0, 1, 2]> : tensor<3xi32>}
// CHECK: stablehlo.multiply %arg0, %0 : tensor<3xf32>
func.func @arith(%a: tensor<3xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<[1.0, 0.0, 2.0]> : tensor<3xf32>
  %two = stablehlo.constant dense<2.0> : tensor<3xf32>
  %m = stablehlo.multiply %c, %two : tensor<3xf32>
  %i = stablehlo.iota dim = 0 : tensor<3xi32>
  %0 = stablehlo.multiply %a, %m : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Integer division truncates toward zero (StableHLO semantics), remainder takes the dividend's sign.
// CHECK-LABEL: func.func @integer_semantics
// CHECK: stablehlo.divide %c, %c_0 {sparsity.const = dense<[-3, 3]> : tensor<2xi32>}
// CHECK: stablehlo.remainder %c, %c_0 {sparsity.const = dense<[-1, 1]> : tensor<2xi32>}
func.func @integer_semantics() -> (tensor<2xi32>, tensor<2xi32>) {
  %a = stablehlo.constant dense<[-7, 7]> : tensor<2xi32>
  %b = stablehlo.constant dense<[2, 2]> : tensor<2xi32>
  %0 = stablehlo.divide %a, %b : tensor<2xi32>
  %1 = stablehlo.remainder %a, %b : tensor<2xi32>
  return %0, %1 : tensor<2xi32>, tensor<2xi32>
}

// -----

// JAX's index normalization chain resolves to constants.
// CHECK-LABEL: func.func @index_chain
// CHECK: stablehlo.compare LT, %c, %0, SIGNED {sparsity.const = dense<[true, false, false]> : tensor<3xi1>}
// CHECK: stablehlo.select %1, %3, %c {sparsity.const = dense<[3, 0, 2]> : tensor<3xi32>}
func.func @index_chain() -> tensor<3xi32> {
  %c = stablehlo.constant dense<[-1, 0, 2]> : tensor<3xi32>
  %c_0 = stablehlo.constant dense<0> : tensor<i32>
  %0 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<3xi32>
  %1 = stablehlo.compare LT, %c, %0, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
  %c_1 = stablehlo.constant dense<4> : tensor<i32>
  %2 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i32>) -> tensor<3xi32>
  %3 = stablehlo.add %c, %2 : tensor<3xi32>
  %4 = stablehlo.select %1, %3, %c : tensor<3xi1>, tensor<3xi32>
  return %4 : tensor<3xi32>
}
