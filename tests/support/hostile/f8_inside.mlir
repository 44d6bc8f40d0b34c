// A supported argument converted to f8 inside the function.
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.convert %a : (tensor<4xf32>) -> tensor<4xf8E5M2>
  %1 = stablehlo.convert %0 : (tensor<4xf8E5M2>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
