// A static argument, but an op inside produces a dynamic shape.
func.func @main(%a: tensor<4xf32>, %n: tensor<1xi32>) -> tensor<?xf32> {
  %0 = stablehlo.dynamic_reshape %a, %n : (tensor<4xf32>, tensor<1xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
