// The output itself (a constant, depending on nothing) has 10^10 elements: its (m x n) pattern would
// need 10^10 row pointers.
func.func @main(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<100000x100000xf32>) {
  %0 = stablehlo.iota dim = 0 : tensor<100000x100000xf32>
  return %a, %0 : tensor<4xf32>, tensor<100000x100000xf32>
}
