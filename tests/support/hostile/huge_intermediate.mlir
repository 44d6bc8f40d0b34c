// The result is small, but an intermediate value is huge.
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [2] : (tensor<4xf32>) -> tensor<60000x60000x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%0 init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<60000x60000x4xf32>, tensor<f32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
