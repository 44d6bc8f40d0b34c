// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §convolution: each output element depends on its input window and the whole kernel; a known kernel's
// zero taps drop their inputs.

// A 1-D valid convolution with an unknown kernel (columns 5..7).
// CHECK-LABEL: func.func @conv1d
// CHECK: stablehlo.convolution
// CHECK-SAME: sparsity.deps = "{0..2,5..7} {1..3,5..7} {2..7}"
func.func @conv1d(%x: tensor<1x1x5xf32>, %k: tensor<1x1x3xf32>) -> tensor<1x1x3xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [1], pad = [[0, 0]], lhs_dilate = [1], rhs_dilate = [1], reverse = [false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x5xf32>, tensor<1x1x3xf32>) -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}

// -----

// A known kernel [1, 0, -1] with "same" padding: a centered difference.
// CHECK-LABEL: func.func @centered_difference
// CHECK: stablehlo.convolution
// CHECK-SAME: sparsity.deps = "{1} {0,2} {1,3} {2}"
func.func @centered_difference(%x: tensor<1x1x4xf32>) -> tensor<1x1x4xf32> {
  %k = stablehlo.constant dense<[[[1.0, 0.0, -1.0]]]> : tensor<1x1x3xf32>
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [1], pad = [[1, 1]], lhs_dilate = [1], rhs_dilate = [1], reverse = [false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x4xf32>, tensor<1x1x3xf32>) -> tensor<1x1x4xf32>
  return %0 : tensor<1x1x4xf32>
}

// -----

// A 2-D 5-point stencil as a 3x3 kernel with zero corners: 5 dependencies per interior point, not 9.
// CHECK-LABEL: func.func @five_point
// CHECK: stablehlo.convolution
// CHECK-SAME: sparsity.deps = "{1,4..6,9} {2,5..7,10} {5,8..10,13} {6,9..11,14}"
func.func @five_point(%x: tensor<1x1x4x4xf32>) -> tensor<1x1x2x2xf32> {
  %k = stablehlo.constant dense<[[[[0.0, 1.0, 0.0], [1.0, -4.0, 1.0], [0.0, 1.0, 0.0]]]]> : tensor<1x1x3x3xf32>
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [1, 1], pad = [[0, 0], [0, 0]], lhs_dilate = [1, 1], rhs_dilate = [1, 1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x4x4xf32>, tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32>
  return %0 : tensor<1x1x2x2xf32>
}
