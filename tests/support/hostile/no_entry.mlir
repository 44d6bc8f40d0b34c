// No @main, and more than one public function to pick from.
func.func @first(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
func.func @second(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
