// A module whose only op is a triangular solve: its injected Jacobian must stay platform-neutral
// (stablehlo.triangular_solve, no lapack_strsm_ffi).
func.func public @main() -> tensor<2x4x3xf32> {
  %a, %b = call @inputs() : () -> (tensor<2x4x4xf32>, tensor<2x4x3xf32>)
  %0 = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose TRANSPOSE>} : (tensor<2x4x4xf32>, tensor<2x4x3xf32>) -> tensor<2x4x3xf32>
  return %0 : tensor<2x4x3xf32>
}
func.func private @inputs() -> (tensor<2x4x4xf32>, tensor<2x4x3xf32>) {
  %i = stablehlo.iota dim = 1 : tensor<2x4x4xf32>
  %j = stablehlo.iota dim = 2 : tensor<2x4x4xf32>
  %k = stablehlo.iota dim = 0 : tensor<2x4x4xf32>
  %s = stablehlo.add %i, %j : tensor<2x4x4xf32>
  %t = stablehlo.add %s, %k : tensor<2x4x4xf32>
  %w = stablehlo.sine %t : tensor<2x4x4xf32>
  %eq = stablehlo.compare EQ, %i, %j : (tensor<2x4x4xf32>, tensor<2x4x4xf32>) -> tensor<2x4x4xi1>
  %four = stablehlo.constant dense<4.0> : tensor<2x4x4xf32>
  %d = stablehlo.add %w, %four : tensor<2x4x4xf32>
  %a = stablehlo.select %eq, %d, %w : tensor<2x4x4xi1>, tensor<2x4x4xf32>
  %bi = stablehlo.iota dim = 1 : tensor<2x4x3xf32>
  %bj = stablehlo.iota dim = 2 : tensor<2x4x3xf32>
  %bs = stablehlo.multiply %bi, %bj : tensor<2x4x3xf32>
  %b = stablehlo.cosine %bs : tensor<2x4x3xf32>
  return %a, %b : tensor<2x4x4xf32>, tensor<2x4x3xf32>
}
