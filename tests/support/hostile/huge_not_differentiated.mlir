// A huge argument excluded from the columns (--wrt=0): its index sets are empty, so nothing needs memory
// proportional to its size; the analysis succeeds.
func.func @main(%x: tensor<3xf32>, %big: tensor<100000x100000xf32>) -> tensor<3xf32> {
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%big init: %zero) applies stablehlo.add across dimensions = [0, 1] : (tensor<100000x100000xf32>, tensor<f32>) -> tensor<f32>
  %1 = stablehlo.broadcast_in_dim %0, dims = [] : (tensor<f32>) -> tensor<3xf32>
  %2 = stablehlo.multiply %x, %1 : tensor<3xf32>
  return %2 : tensor<3xf32>
}
