// Unranked tensors have no shape at all.
func.func @main(%a: tensor<*xf32>) -> tensor<*xf32> {
  return %a : tensor<*xf32>
}
