// A small input broadcast to 4 * 10^10 elements: refuse before allocating the index map.
func.func @main(%a: tensor<4xf32>) -> tensor<100000x100000x4xf32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [2] : (tensor<4xf32>) -> tensor<100000x100000x4xf32>
  return %0 : tensor<100000x100000x4xf32>
}
