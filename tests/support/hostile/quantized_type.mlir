// Quantized element types are not analyzed.
func.func @main(%a: tensor<4x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<4x!quant.uniform<i8:f32, 0.5:3>> {
  return %a : tensor<4x!quant.uniform<i8:f32, 0.5:3>>
}
