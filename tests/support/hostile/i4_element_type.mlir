// 4-bit integers are not analyzed.
func.func @main(%a: tensor<4xf32>, %b: tensor<4xi4>) -> tensor<4xf32> {
  %c = stablehlo.convert %b : (tensor<4xi4>) -> tensor<4xf32>
  %0 = stablehlo.multiply %a, %c : tensor<4xf32>
  return %0 : tensor<4xf32>
}
