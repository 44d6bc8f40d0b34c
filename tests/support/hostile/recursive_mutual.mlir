// Mutual recursion through two private functions.
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @ping(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func private @ping(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.sine %a : tensor<4xf32>
  %1 = func.call @pong(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
func.func private @pong(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = func.call @ping(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
