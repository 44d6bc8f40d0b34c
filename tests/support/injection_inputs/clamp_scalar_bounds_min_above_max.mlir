// §clamp with scalar bounds, min > max: the result is max everywhere.
func.func public @main() -> tensor<3xf64> {
  %lo, %x, %hi = call @inputs() : () -> (tensor<f64>, tensor<3xf64>, tensor<f64>)
  %0 = stablehlo.clamp %lo, %x, %hi : (tensor<f64>, tensor<3xf64>, tensor<f64>) -> tensor<3xf64>
  return %0 : tensor<3xf64>
}
func.func private @inputs() -> (tensor<f64>, tensor<3xf64>, tensor<f64>) {
  %lo = stablehlo.constant dense<2.0> : tensor<f64>
  %x = stablehlo.constant dense<[0.5, 1.5, 3.0]> : tensor<3xf64>
  %hi = stablehlo.constant dense<1.0> : tensor<f64>
  return %lo, %x, %hi : tensor<f64>, tensor<3xf64>, tensor<f64>
}
