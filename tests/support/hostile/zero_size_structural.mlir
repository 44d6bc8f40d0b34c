// Zero-size values through structural ops and a concatenation with a non-empty operand.
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<0xf32>, tensor<2x0xf32>) {
  %0 = stablehlo.slice %a [2:2] : (tensor<4xf32>) -> tensor<0xf32>
  %1 = stablehlo.concatenate %0, %a, %0, dim = 0 : (tensor<0xf32>, tensor<4xf32>, tensor<0xf32>) -> tensor<4xf32>
  %2 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<0xf32>) -> tensor<2x0xf32>
  %3 = stablehlo.reverse %0, dims = [0] : tensor<0xf32>
  return %1, %3, %2 : tensor<4xf32>, tensor<0xf32>, tensor<2x0xf32>
}
