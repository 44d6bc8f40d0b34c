func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  // café ÿþ
  return %a : tensor<4xf32>
}
