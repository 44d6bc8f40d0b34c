// bf16 window maximum whose init (-1) is not the identity (issue 25): a float like f16, differentiable.
func.func public @main() -> tensor<3x5xbf16> {
  %x = call @inputs() : () -> tensor<4x6xbf16>
  %init = stablehlo.constant dense<-1.0> : tensor<bf16>
  %0 = "stablehlo.reduce_window"(%x, %init) <{window_dimensions = array<i64: 2, 2>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %m = stablehlo.maximum %a, %b : tensor<bf16>
    stablehlo.return %m : tensor<bf16>
  }) : (tensor<4x6xbf16>, tensor<bf16>) -> tensor<3x5xbf16>
  return %0 : tensor<3x5xbf16>
}
func.func private @inputs() -> tensor<4x6xbf16> {
  %i = stablehlo.iota dim = 1 : tensor<4x6xbf16>
  %j = stablehlo.iota dim = 0 : tensor<4x6xbf16>
  %s = stablehlo.multiply %i, %j : tensor<4x6xbf16>
  %r = stablehlo.sine %s : tensor<4x6xbf16>
  return %r : tensor<4x6xbf16>
}
