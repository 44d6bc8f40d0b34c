// Tokens are read as data-free values, but after_all (joining tokens by hand) has no rule.
func.func @main(%a: tensor<4xf32>, %t: !stablehlo.token) -> tensor<4xf32> {
  %0 = stablehlo.after_all %t : !stablehlo.token
  return %a : tensor<4xf32>
}
