func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  // café
  return %a : tensor<2xf32>
}
