// The callee has no body.
func.func private @external(%a: tensor<4xf32>) -> tensor<4xf32>
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @external(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
