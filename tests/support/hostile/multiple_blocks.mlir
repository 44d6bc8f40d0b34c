// Unstructured control flow (several blocks) is not StableHLO.
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  cf.br ^bb1(%a : tensor<4xf32>)
^bb1(%x: tensor<4xf32>):
  return %x : tensor<4xf32>
}
