// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §reduce: each output element is the union of the operand elements reduced into it (and of the init
// value).

// CHECK-LABEL: func.func @sum_rows
// CHECK: stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] {sparsity.deps = "{0..2} {3..5}"}
func.func @sum_rows(%a: tensor<2x3xf32>) -> tensor<2xf32> {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %cst) applies stablehlo.add across dimensions = [1] : (tensor<2x3xf32>, tensor<f32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @sum_columns
// CHECK: across dimensions = [0] {sparsity.deps = "{0,3} {1,4} {2,5}"}
func.func @sum_columns(%a: tensor<2x3xf32>) -> tensor<3xf32> {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Reducing every dimension; the init value is an argument.
// CHECK-LABEL: func.func @total_with_init
// CHECK: across dimensions = [0, 1] {sparsity.deps = "{0..4}"}
func.func @total_with_init(%a: tensor<2x2xf32>, %init: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.reduce(%a init: %init) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<2x2xf32>, tensor<f32>) -> tensor<f32>
  return %0 : tensor<f32>
}

// -----

// The argmax pattern JAX emits: a two-operand reduce whose second result is an integer index (no
// derivative), while the first (the max) depends on its row.
// CHECK-LABEL: func.func @argmax
// CHECK: %1:2 = stablehlo.reduce
// CHECK-SAME: sparsity.deps = ["{0..2} {3..5}", "{}*2"]
func.func @argmax(%a: tensor<2x3xf32>) -> (tensor<2xf32>, tensor<2xi32>) {
  %0 = stablehlo.iota dim = 1 : tensor<2x3xi32>
  %cst = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %1:2 = stablehlo.reduce(%a init: %cst), (%0 init: %c) across dimensions = [1] : (tensor<2x3xf32>, tensor<2x3xi32>, tensor<f32>, tensor<i32>) -> (tensor<2xf32>, tensor<2xi32>)
   reducer(%arg1: tensor<f32>, %arg3: tensor<f32>) (%arg2: tensor<i32>, %arg4: tensor<i32>)  {
    %2 = stablehlo.compare GT, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %3 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %4 = stablehlo.or %2, %3 : tensor<i1>
    %5 = stablehlo.compare EQ, %arg1, %arg3, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %6 = stablehlo.compare LT, %arg2, %arg4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %7 = stablehlo.and %5, %6 : tensor<i1>
    %8 = stablehlo.or %4, %7 : tensor<i1>
    %9 = stablehlo.select %4, %arg1, %arg3 : tensor<i1>, tensor<f32>
    %10 = stablehlo.select %8, %arg2, %arg4 : tensor<i1>, tensor<i32>
    stablehlo.return %9, %10 : tensor<f32>, tensor<i32>
  }
  return %1#0, %1#1 : tensor<2xf32>, tensor<2xi32>
}
