// A two-operand bf16/i32 reduce (argmax-style, init not the identity; issue 25): the float result is
// differentiable, the integer one is not.
func.func public @main() -> (tensor<6xbf16>, tensor<6xi32>) {
  %x = call @inputs() : () -> tensor<4x6xbf16>
  %idx = stablehlo.iota dim = 0 : tensor<4x6xi32>
  %init = stablehlo.constant dense<-2.0> : tensor<bf16>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.reduce(%x init: %init), (%idx init: %zero) across dimensions = [0] : (tensor<4x6xbf16>, tensor<4x6xi32>, tensor<bf16>, tensor<i32>) -> (tensor<6xbf16>, tensor<6xi32>)
   reducer(%a: tensor<bf16>, %b: tensor<bf16>) (%ia: tensor<i32>, %ib: tensor<i32>) {
    %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<bf16>, tensor<bf16>) -> tensor<i1>
    %v = stablehlo.select %gt, %a, %b : tensor<i1>, tensor<bf16>
    %i = stablehlo.select %gt, %ia, %ib : tensor<i1>, tensor<i32>
    stablehlo.return %v, %i : tensor<bf16>, tensor<i32>
  }
  return %0#0, %0#1 : tensor<6xbf16>, tensor<6xi32>
}
func.func private @inputs() -> tensor<4x6xbf16> {
  %i = stablehlo.iota dim = 1 : tensor<4x6xbf16>
  %j = stablehlo.iota dim = 0 : tensor<4x6xbf16>
  %k = stablehlo.constant dense<1.3> : tensor<4x6xbf16>
  %a = stablehlo.multiply %j, %k : tensor<4x6xbf16>
  %s = stablehlo.add %i, %a : tensor<4x6xbf16>
  %r = stablehlo.sine %s : tensor<4x6xbf16>
  return %r : tensor<4x6xbf16>
}
