// A huge value that depends on no input (an iota), combined with the input.
func.func @main(%a: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.iota dim = 0 : tensor<100000x100000xf32>
  %1 = stablehlo.broadcast_in_dim %a, dims = [] : (tensor<f32>) -> tensor<100000x100000xf32>
  %2 = stablehlo.multiply %0, %1 : tensor<100000x100000xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %3 = stablehlo.reduce(%2 init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<100000x100000xf32>, tensor<f32>) -> tensor<f32>
  return %3 : tensor<f32>
}
