// A 401-wide window minimum over 1,600 elements whose init value (1.0) is not the identity (testdata
// reduce_window_min_float32_1_1600's shape): its derivative must stay a few window ops, not 401 taps.
func.func public @main() -> tensor<1x8xf32> {
  %x = call @inputs() : () -> tensor<1x1600xf32>
  %one = stablehlo.constant dense<1.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %one) <{window_dimensions = array<i64: 1, 401>, window_strides = array<i64: 1, 160>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.minimum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<1x1600xf32>, tensor<f32>) -> tensor<1x8xf32>
  return %0 : tensor<1x8xf32>
}
func.func private @inputs() -> tensor<1x1600xf32> {
  %i = stablehlo.iota dim = 1 : tensor<1x1600xf32>
  %s = stablehlo.constant dense<0.7> : tensor<1x1600xf32>
  %p = stablehlo.multiply %i, %s : tensor<1x1600xf32>
  %sin = stablehlo.sine %p : tensor<1x1600xf32>
  %q = stablehlo.multiply %i, %sin : tensor<1x1600xf32>
  %c = stablehlo.constant dense<0.01> : tensor<1x1600xf32>
  %r = stablehlo.multiply %q, %c : tensor<1x1600xf32>
  return %r : tensor<1x1600xf32>
}
