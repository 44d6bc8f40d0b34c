// The entry function is a declaration: there is nothing to analyze.
func.func private @main(%a: tensor<4xf32>) -> tensor<4xf32>
