// Zero-size tensors are legal StableHLO and must analyze to an empty pattern, not an error.
func.func @main(%a: tensor<0x3xf32>, %b: tensor<3xf32>) -> (tensor<0x3xf32>, tensor<3xf32>, tensor<0x2xf32>, tensor<3x0xf32>) {
  %0 = stablehlo.sine %a : tensor<0x3xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%a init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<0x3xf32>, tensor<f32>) -> tensor<3xf32>
  %2 = stablehlo.add %1, %b : tensor<3xf32>
  %w = stablehlo.constant dense<1.0> : tensor<3x2xf32>
  %3 = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : (tensor<0x3xf32>, tensor<3x2xf32>) -> tensor<0x2xf32>
  %4 = stablehlo.transpose %a, dims = [1, 0] : (tensor<0x3xf32>) -> tensor<3x0xf32>
  return %0, %2, %3, %4 : tensor<0x3xf32>, tensor<3xf32>, tensor<0x2xf32>, tensor<3x0xf32>
}
