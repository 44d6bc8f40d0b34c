// A loop with a known trip count of 10^9: the analysis must not run 10^9 abstract iterations (it stops
// at max_loop_iterations, or at the fixed point, whichever comes first).
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %zero, %x = %a) : tensor<i32>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<1000000000> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %y = stablehlo.sine %x : tensor<4xf32>
      %z = stablehlo.slice %y [1:4] : (tensor<4xf32>) -> tensor<3xf32>
      %w = stablehlo.slice %y [0:1] : (tensor<4xf32>) -> tensor<1xf32>
      %r = stablehlo.concatenate %z, %w, dim = 0 : (tensor<3xf32>, tensor<1xf32>) -> tensor<4xf32>
      stablehlo.return %j, %r : tensor<i32>, tensor<4xf32>
    }
  return %0#1 : tensor<4xf32>
}
