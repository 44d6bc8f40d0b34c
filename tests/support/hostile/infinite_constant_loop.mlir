// A loop whose condition is the constant `true`: it never terminates when run, and the analysis must
// not try to run it (it stops at max_loop_iterations or a fixed point, quickly).
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %zero, %x = %a) : tensor<i32>, tensor<4xf32>
    cond {
      %t = stablehlo.constant dense<true> : tensor<i1>
      stablehlo.return %t : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %y = stablehlo.sine %x : tensor<4xf32>
      stablehlo.return %j, %y : tensor<i32>, tensor<4xf32>
    }
  return %0#1 : tensor<4xf32>
}
