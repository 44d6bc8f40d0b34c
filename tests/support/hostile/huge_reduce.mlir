// 10^10 input elements: the pattern cannot fit in memory; refuse before allocating anything.
func.func @main(%a: tensor<100000x100000xf32>) -> tensor<f32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<100000x100000xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}
