// A custom_call target nobody knows: its semantics are opaque, so it is an error (not a guess).
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @my_secret_kernel(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
