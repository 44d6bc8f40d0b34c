// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-hessian | filecheck %s

// sparsity-hessian adds @<entry>_hessian for a scalar entry: the FULL symmetric Hessian (both triangles) in
// CSR order of its star-colored pattern; sparsity.derivative says triangle = "full".

// The chained Rosenbrock function on 4 inputs: a tridiagonal Hessian, 4 + 2*3 = 10 nonzeros.
// CHECK-LABEL: func.func public @main_hessian(%arg0: tensor<4xf64>) -> (tensor<10xf64>
// CHECK-SAME: sparsity.derivative = {colors = dense<{{.*}}> : tensor<4xi32>,
// CHECK-SAME: column_indices = dense<[0, 1, 0, 1, 2, 1, 2, 3, 2, 3]> : tensor<10xi64>, entry = "main",
// CHECK-SAME: kind = "hessian", mode = "star", nnz = 10 : i64, num_colors = 3 : i64,
// CHECK-SAME: row_pointers = dense<[0, 2, 5, 8, 10]> : tensor<5xi64>, shape = dense<4> : tensor<2xi64>,
// CHECK-SAME: triangle = "full", wrt = dense<0> : tensor<1xi64>}
func.func @main(%x: tensor<4xf64>) -> tensor<f64> {
  %a = stablehlo.slice %x [1:4] : (tensor<4xf64>) -> tensor<3xf64>
  %b = stablehlo.slice %x [0:3] : (tensor<4xf64>) -> tensor<3xf64>
  %sq = stablehlo.multiply %b, %b : tensor<3xf64>
  %d = stablehlo.subtract %a, %sq : tensor<3xf64>
  %d2 = stablehlo.multiply %d, %d : tensor<3xf64>
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %s = stablehlo.reduce(%d2 init: %z) applies stablehlo.add across dimensions = [0] : (tensor<3xf64>, tensor<f64>) -> tensor<f64>
  return %s : tensor<f64>
}
