// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §while: a loop with a known trip count runs exactly that many abstract iterations; ops in the body
// are annotated with the union over all iterations.

// Two iterations of y <- roll(y) * y: after one, y_i depends on {i-1, i}; after two, on {i-2, i-1, i}.
// CHECK-LABEL: func.func @fori_two_steps
// CHECK: %0:2 = stablehlo.while
// CHECK-SAME: sparsity.deps = ["{}", "{0,2,3} {0,1,3} {0..2} {1..3}"]
// CHECK: func.call @step(%iterArg_0) {sparsity.deps = "{0,2,3} {0,1,3} {0..2} {1..3}"}
func.func @fori_two_steps(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %c, %y = %a) : tensor<i32>, tensor<4xf32>
  cond {
    %c_1 = stablehlo.constant dense<2> : tensor<i32>
    %1 = stablehlo.compare LT, %i, %c_1, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %1 = func.call @step(%y) : (tensor<4xf32>) -> tensor<4xf32>
    %c_1 = stablehlo.constant dense<1> : tensor<i32>
    %2 = stablehlo.add %i, %c_1 : tensor<i32>
    stablehlo.return %2, %1 : tensor<i32>, tensor<4xf32>
  }
  return %0#1 : tensor<4xf32>
}
func.func private @step(%y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.slice %y [3:4] : (tensor<4xf32>) -> tensor<1xf32>
  %1 = stablehlo.slice %y [0:3] : (tensor<4xf32>) -> tensor<3xf32>
  %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<1xf32>, tensor<3xf32>) -> tensor<4xf32>
  %3 = stablehlo.multiply %2, %y : tensor<4xf32>
  return %3 : tensor<4xf32>
}

// -----

// An input-dependent trip count: iterate to the fixed point (every element of y ends up depending on all
// of a; the trip count is piecewise constant in t, so y does not depend on t).
// CHECK-LABEL: func.func @until_converged
// CHECK: %0:2 = stablehlo.while
// CHECK-SAME: sparsity.deps = ["{0}", "{1..4}*4"]
func.func @until_converged(%t: tensor<f32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  %0:2 = stablehlo.while(%s = %t, %y = %a) : tensor<f32>, tensor<4xf32>
  cond {
    %c = stablehlo.constant dense<1.0> : tensor<f32>
    %1 = stablehlo.compare LT, %s, %c, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %1 : tensor<i1>
  } do {
    %1 = stablehlo.slice %y [3:4] : (tensor<4xf32>) -> tensor<1xf32>
    %2 = stablehlo.slice %y [0:3] : (tensor<4xf32>) -> tensor<3xf32>
    %3 = stablehlo.concatenate %1, %2, dim = 0 : (tensor<1xf32>, tensor<3xf32>) -> tensor<4xf32>
    %4 = stablehlo.add %3, %y : tensor<4xf32>
    %c = stablehlo.constant dense<2.0> : tensor<f32>
    %5 = stablehlo.multiply %s, %c : tensor<f32>
    stablehlo.return %5, %4 : tensor<f32>, tensor<4xf32>
  }
  return %0#1 : tensor<4xf32>
}
