// A product window (no JAX monoid: the generic path) 50 wide with window dilation 2, stride 3 and padding
// over 300 elements: its derivative must take O(log 50) body applications, not 50.
func.func public @main() -> tensor<81xf64> {
  %x = call @inputs() : () -> tensor<300xf64>
  %one = stablehlo.constant dense<1.0> : tensor<f64>
  %0 = "stablehlo.reduce_window"(%x, %one) <{window_dimensions = array<i64: 50>, window_strides = array<i64: 3>, window_dilations = array<i64: 2>, padding = dense<[[20, 20]]> : tensor<1x2xi64>}> ({
  ^bb0(%a: tensor<f64>, %b: tensor<f64>):
    %m = stablehlo.multiply %a, %b : tensor<f64>
    stablehlo.return %m : tensor<f64>
  }) : (tensor<300xf64>, tensor<f64>) -> tensor<81xf64>
  return %0 : tensor<81xf64>
}
func.func private @inputs() -> tensor<300xf64> {
  %i = stablehlo.iota dim = 0 : tensor<300xf64>
  %s = stablehlo.constant dense<0.3> : tensor<300xf64>
  %p = stablehlo.multiply %i, %s : tensor<300xf64>
  %sin = stablehlo.sine %p : tensor<300xf64>
  %c = stablehlo.constant dense<0.05> : tensor<300xf64>
  %q = stablehlo.multiply %sin, %c : tensor<300xf64>
  %one = stablehlo.constant dense<1.0> : tensor<300xf64>
  %r = stablehlo.add %q, %one : tensor<300xf64>
  return %r : tensor<300xf64>
}
