// A padding attribute whose shape has 2^64 - 2 elements: converting it to the op's properties fails with a
// C++ length error, which the bindings raise as ValueError (not as an MLIR diagnostic).  Found by
// scripts/fuzz_driver.py (a number mutation of lit_tests/reduce_window.mlir).
func.func @main(%a: tensor<4xf32>) -> tensor<3xf32> {
  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%a, %cst) <{padding = dense<0> : tensor<9223372036854775807x2xi64>, window_dimensions = array<i64: 2>, window_strides = array<i64: 1>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %m = stablehlo.maximum %x, %y : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<4xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
