// An op of a dialect nobody registered.
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mydialect.magic"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
