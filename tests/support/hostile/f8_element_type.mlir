// 8-bit floats are not analyzed.
func.func @main(%a: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  %0 = stablehlo.add %a, %a : tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}
