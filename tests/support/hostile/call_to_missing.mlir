// The callee does not exist (the verifier rejects the symbol reference).
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @nowhere(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
