// §clamp is min(max(x, min), max): where min > max the result is max, and its derivative is d(max).
// Elements: inside the bounds, below min, above max, and three with min > max (x below, between, above).
func.func public @main() -> tensor<6xf64> {
  %lo, %x, %hi = call @inputs() : () -> (tensor<6xf64>, tensor<6xf64>, tensor<6xf64>)
  %0 = stablehlo.clamp %lo, %x, %hi : tensor<6xf64>
  return %0 : tensor<6xf64>
}
func.func private @inputs() -> (tensor<6xf64>, tensor<6xf64>, tensor<6xf64>) {
  %lo = stablehlo.constant dense<[0.0, 0.0, 0.0, 2.0, 2.0, 2.0]> : tensor<6xf64>
  %x = stablehlo.constant dense<[0.5, -1.0, 4.0, 0.5, 1.5, 3.0]> : tensor<6xf64>
  %hi = stablehlo.constant dense<[3.0, 3.0, 3.0, 1.0, 1.0, 1.0]> : tensor<6xf64>
  return %lo, %x, %hi : tensor<6xf64>, tensor<6xf64>, tensor<6xf64>
}
