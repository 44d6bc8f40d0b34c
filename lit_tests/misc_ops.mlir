// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §optimization_barrier passes each operand through to its result.
// CHECK-LABEL: func.func @optimization_barrier
// CHECK: stablehlo.optimization_barrier {sparsity.deps = ["{0} {1}", "{2} {3}"]} %arg0, %arg1
func.func @optimization_barrier(%a: tensor<2xf32>, %b: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %0:2 = stablehlo.optimization_barrier %a, %b : tensor<2xf32>, tensor<2xf32>
  return %0#0, %0#1 : tensor<2xf32>, tensor<2xf32>
}

// -----

// §reduce_precision rounds but keeps the dependency; get_dimension_size is an integer.
// CHECK-LABEL: func.func @precision_and_sizes
// CHECK: stablehlo.reduce_precision %arg0, format = e5m10 {sparsity.deps = "{0} {1}"}
// CHECK: stablehlo.get_dimension_size %arg0, dim = 0 {sparsity.deps = "{}"}
func.func @precision_and_sizes(%a: tensor<2xf32>) -> (tensor<2xf32>, tensor<i32>) {
  %0 = stablehlo.reduce_precision %a, format = e5m10 : tensor<2xf32>
  %1 = stablehlo.get_dimension_size %a, dim = 0 : (tensor<2xf32>) -> tensor<i32>
  return %0, %1 : tensor<2xf32>, tensor<i32>
}

// -----

// §select_and_scatter (the gradient of max pooling): each output position of a window may receive
// that window's source value; the selection is piecewise constant in the operand.
// CHECK-LABEL: func.func @select_and_scatter
// CHECK: "stablehlo.select_and_scatter"
// CHECK: }) {sparsity.deps = "{4}*2 {5}*2"}
func.func @select_and_scatter(%a: tensor<4xf32>, %s: tensor<2xf32>) -> tensor<4xf32> {
  %init = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = "stablehlo.select_and_scatter"(%a, %s, %init) <{window_dimensions = array<i64: 2>, window_strides = array<i64: 2>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %c = stablehlo.compare GE, %x, %y, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }, {
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %r = stablehlo.add %x, %y : tensor<f32>
    stablehlo.return %r : tensor<f32>
  }) : (tensor<4xf32>, tensor<2xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// §batch_norm_inference normalizes each feature (dimension 1) with that feature's statistics.
// CHECK-LABEL: func.func @batch_norm_inference
// CHECK: "stablehlo.batch_norm_inference"
// CHECK-SAME: sparsity.deps = "{0,4,6,8,10} {1,5,7,9,11} {2,4,6,8,10} {3,5,7,9,11}"
func.func @batch_norm_inference(%x: tensor<2x2xf32>, %scale: tensor<2xf32>, %offset: tensor<2xf32>, %mean: tensor<2xf32>, %var: tensor<2xf32>) -> tensor<2x2xf32> {
  %0 = "stablehlo.batch_norm_inference"(%x, %scale, %offset, %mean, %var) <{epsilon = 1.0e-5 : f32, feature_index = 1 : i64}> : (tensor<2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// Sharding annotations are the identity.
// CHECK-LABEL: func.func @sharding_constraint
// CHECK: sdy.sharding_constraint %arg0 <@mesh, [{}]> {sparsity.deps = "{0} {1}"}
sdy.mesh @mesh = <["x"=1]>
func.func @sharding_constraint(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = sdy.sharding_constraint %a <@mesh, [{}]> : tensor<2xf32>
  return %0 : tensor<2xf32>
}
