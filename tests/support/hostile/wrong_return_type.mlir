// The returned value does not match the function's declared result type.
func.func @main(%a: tensor<4xf32>) -> tensor<5xf32> {
  return %a : tensor<4xf32>
}
