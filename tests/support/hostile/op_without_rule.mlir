// A real StableHLO op with no sparsity rule (a PyTorch-producer op): an error naming the op and location.
func.func @main(%a: tensor<4x2xf32>, %i: tensor<3xi32>) -> tensor<3x2xf32> {
  %0 = "stablehlo.torch_index_select"(%a, %i) {dim = 0 : i64, batch_dims = 0 : i64} : (tensor<4x2xf32>, tensor<3xi32>) -> tensor<3x2xf32>
  return %0 : tensor<3x2xf32>
}
