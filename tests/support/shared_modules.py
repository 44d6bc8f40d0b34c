"""Small StableHLO modules the tests of several subsystems share."""

#: A module whose ``stablehlo.while`` JAX cannot differentiate in reverse mode (its derivative programs are
#: forward-only): ``sin`` applied three times, times ``x``.
WHILE_MODULE = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%a = %x, %i = %c0) : tensor<4xf32>, tensor<i32>
    cond {
      %c3 = stablehlo.constant dense<3> : tensor<i32>
      %lt = stablehlo.compare LT, %i, %c3 : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %s = stablehlo.sine %a : tensor<4xf32>
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      stablehlo.return %s, %j : tensor<4xf32>, tensor<i32>
    }
  %m = stablehlo.multiply %r#0, %x : tensor<4xf32>
  func.return %m : tensor<4xf32>
}"""
