// Tuple types are not analyzed.
func.func @main(%a: tuple<tensor<4xf32>, tensor<2xf32>>) -> tensor<4xf32> {
  %0 = stablehlo.get_tuple_element %a[0] : (tuple<tensor<4xf32>, tensor<2xf32>>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
