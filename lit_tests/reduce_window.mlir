// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate | filecheck %s

// §reduce_window: each output element unions its window (padding contributes the init value).

// Max pooling with window 2, stride 1.
// CHECK-LABEL: func.func @max_pool
// CHECK: "stablehlo.reduce_window"
// CHECK: sparsity.deps = "{0,1} {1,2} {2,3}"
func.func @max_pool(%a: tensor<4xf32>) -> tensor<3xf32> {
  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%a, %cst) <{padding = dense<0> : tensor<1x2xi64>, window_dimensions = array<i64: 2>, window_strides = array<i64: 1>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %m = stablehlo.maximum %x, %y : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<4xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A cumulative sum as JAX emits it: window 4, padded by 3 on the low side.
// CHECK-LABEL: func.func @cumsum
// CHECK: "stablehlo.reduce_window"
// CHECK: sparsity.deps = "{0} {0,1} {0..2} {0..3}"
func.func @cumsum(%a: tensor<4xf32>) -> tensor<4xf32> {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%a, %cst) <{padding = dense<[[3, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 4>, window_strides = array<i64: 1>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// 2x2 windows with stride 2 over a 4x4 image: four disjoint blocks.
// CHECK-LABEL: func.func @block_sum
// CHECK: sparsity.deps = "{0,1,4,5} {2,3,6,7} {8,9,12,13} {10,11,14,15}"
func.func @block_sum(%a: tensor<4x4xf32>) -> tensor<2x2xf32> {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%a, %cst) <{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 2>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4x4xf32>, tensor<f32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}
