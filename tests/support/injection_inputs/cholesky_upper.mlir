// stablehlo.cholesky of a positive-definite matrix (upper triangle): the injected Jacobian must use
// stablehlo.cholesky / stablehlo.triangular_solve, not lapack_dpotrf_ffi / lapack_dtrsm_ffi.
func.func public @main() -> tensor<4x4xf64> {
  %a = call @inputs() : () -> tensor<4x4xf64>
  %0 = "stablehlo.cholesky"(%a) {lower = false} : (tensor<4x4xf64>) -> tensor<4x4xf64>
  return %0 : tensor<4x4xf64>
}
func.func private @inputs() -> tensor<4x4xf64> {
  %i = stablehlo.iota dim = 0 : tensor<4x4xf64>
  %j = stablehlo.iota dim = 1 : tensor<4x4xf64>
  %p = stablehlo.multiply %i, %j : tensor<4x4xf64>
  %c = stablehlo.cosine %p : tensor<4x4xf64>
  %eq = stablehlo.compare EQ, %i, %j : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xi1>
  %five = stablehlo.constant dense<5.0> : tensor<4x4xf64>
  %d = stablehlo.add %c, %five : tensor<4x4xf64>
  %a = stablehlo.select %eq, %d, %c : tensor<4x4xi1>, tensor<4x4xf64>
  return %a : tensor<4x4xf64>
}
