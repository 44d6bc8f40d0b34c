// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-jacobian | filecheck %s
// RUN: stablehlo-sparsity-opt %s --split-input-file --pass-pipeline='builtin.module(sparsity-jacobian{mode=reverse},canonicalize,cse)' | filecheck %s --check-prefix=REV
// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-jacobian="wrt=all" | filecheck %s --check-prefix=ALL

// sparsity-jacobian adds @<entry>_jacobian: the entry's arguments in, the Jacobian's nonzeros out (CSR order
// of the detected pattern), the pattern recorded as one sparsity.derivative dictionary.  @main is untouched.

// y[i] = sin(x[i+1] * x[i]): a bidiagonal 4x5 Jacobian, two column colors (forward) or rows (reverse).
// CHECK-LABEL: func.func @main(
// CHECK-NEXT: stablehlo.slice
// CHECK-LABEL: func.func public @main_jacobian(%arg0: tensor<5xf32>, %arg1: tensor<f32>) -> (tensor<8xf32>
// CHECK-SAME: sparsity.derivative = {colors = dense<[0, 1, 0, 1, 0]> : tensor<5xi32>,
// CHECK-SAME: column_indices = dense<[0, 1, 1, 2, 2, 3, 3, 4]> : tensor<8xi64>, entry = "main", helpers = [],
// CHECK-SAME: kind = "jacobian", mode = "forward", nnz = 8 : i64, num_colors = 2 : i64,
// CHECK-SAME: row_pointers = dense<[0, 2, 4, 6, 8]> : tensor<5xi64>, shape = dense<[4, 5]> : tensor<2xi64>,
// CHECK-SAME: wrt = dense<0> : tensor<1xi64>}
// CHECK: stablehlo.cosine
// CHECK: "stablehlo.gather"
// CHECK: return {{.*}} : tensor<8xf32>
// REV-LABEL: func.func public @main_jacobian(
// REV-SAME: colors = dense<[0, 1, 0, 1]> : tensor<4xi32>
// REV-SAME: mode = "reverse"
// ALL: func.func public @main_jacobian(%arg0: tensor<5xf32>, %arg1: tensor<f32>) -> (tensor<8xf32>
// ALL-SAME: shape = dense<[4, 6]> : tensor<2xi64>, wrt = dense<[0, 1]> : tensor<2xi64>
func.func @main(%x: tensor<5xf32>, %c: tensor<f32>) -> tensor<4xf32> {
  %a = stablehlo.slice %x [1:5] : (tensor<5xf32>) -> tensor<4xf32>
  %b = stablehlo.slice %x [0:4] : (tensor<5xf32>) -> tensor<4xf32>
  %m = stablehlo.multiply %a, %b : tensor<4xf32>
  %s = stablehlo.sine %m : tensor<4xf32>
  return %s : tensor<4xf32>
}

// -----

// Another entry, two results (rows: the results flattened in order), a private helper of the module kept.
// CHECK-LABEL: func.func private @helper(
// (v[2] = x2 - x2 is zero, but the analysis does not see cancellations: its row keeps column 2.)
// CHECK-LABEL: func.func public @step_jacobian(%arg0: tensor<3xf64>) -> (tensor<6xf64>
// CHECK-SAME: column_indices = dense<[0, 1, 2, 1, 2, 2]> : tensor<6xi64>, entry = "step"
// CHECK-SAME: row_pointers = dense<[0, 1, 3, 5, 6]> : tensor<5xi64>, shape = dense<[4, 3]> : tensor<2xi64>
func.func private @helper(%x: tensor<3xf64>) -> tensor<3xf64> {
  %e = stablehlo.exponential %x : tensor<3xf64>
  return %e : tensor<3xf64>
}
func.func @step(%x: tensor<3xf64>) -> (tensor<1xf64>, tensor<3xf64>) {
  %h = func.call @helper(%x) : (tensor<3xf64>) -> tensor<3xf64>
  %first = stablehlo.slice %h [0:1] : (tensor<3xf64>) -> tensor<1xf64>
  %r = stablehlo.reverse %x, dims = [0] : tensor<3xf64>
  %p = stablehlo.multiply %h, %r : tensor<3xf64>
  %z = stablehlo.slice %p [1:2] : (tensor<3xf64>) -> tensor<1xf64>
  %q = stablehlo.slice %x [2:3] : (tensor<3xf64>) -> tensor<1xf64>
  %w = stablehlo.concatenate %z, %z, %q, dim = 0 : (tensor<1xf64>, tensor<1xf64>, tensor<1xf64>) -> tensor<3xf64>
  %qb = stablehlo.broadcast_in_dim %q, dims = [0] : (tensor<1xf64>) -> tensor<3xf64>
  %v = stablehlo.subtract %w, %qb : tensor<3xf64>
  return %first, %v : tensor<1xf64>, tensor<3xf64>
}
