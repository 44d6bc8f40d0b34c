// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-jacobian="wrt=all" | filecheck %s
// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-jacobian="wrt=all" --platform=portable | filecheck %s
// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-jacobian="wrt=all platform=cpu" | filecheck %s --check-prefix=CPU
// RUN: not stablehlo-sparsity-opt %s --sparsity-jacobian --platform=tpu 2>&1 | filecheck %s --check-prefix=BAD

// The derivative of a platform-neutral module stays platform-neutral: JAX's CPU lowering of its linear
// algebra (lapack_strsm_ffi, lapack_spotrf_ffi) is replaced by StableHLO's own triangular_solve and
// cholesky.  platform=cpu (--platform=cpu) asks for the CPU lowering, LAPACK calls allowed.

// CHECK-LABEL: func.func public @main_jacobian(
// CHECK-NOT: custom_call
// CHECK: stablehlo.triangular_solve
// CHECK-NOT: custom_call
// CHECK: return
// CPU-LABEL: func.func public @main_jacobian(
// CPU: stablehlo.custom_call @lapack_strsm_ffi
func.func @main(%a: tensor<3x3xf32>, %b: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %0 = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>} : (tensor<3x3xf32>, tensor<3x2xf32>) -> tensor<3x2xf32>
  func.return %0 : tensor<3x2xf32>
}

// -----

// CHECK-LABEL: func.func public @main_jacobian(
// CHECK-NOT: custom_call
// CHECK: stablehlo.cholesky
// CHECK-NOT: custom_call
// CHECK: return
// CPU-LABEL: func.func public @main_jacobian(
// CPU: stablehlo.custom_call @lapack_spotrf_ffi
func.func @main(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0 = "stablehlo.cholesky"(%a) {lower = true} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  func.return %0 : tensor<3x3xf32>
}

// BAD: error: argument --platform: invalid choice: 'tpu'
