// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// Hand-written StableHLO in the generic form, as a non-JAX producer would emit it.

// CHECK-LABEL: func.func @generic_add
// CHECK: stablehlo.add %arg0, %arg1 {sparsity.deps = "{0,2} {1,3}"}
"builtin.module"() ({
  "func.func"() <{function_type = (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>, sym_name = "generic_add"}> ({
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    %0 = "stablehlo.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) : () -> ()
}) : () -> ()

// -----

// Generic ops inside a custom-form function.
// CHECK-LABEL: func.func @mixed_forms
// CHECK: stablehlo.slice %arg0 [1:3] {sparsity.deps = "{1} {2}"}
// CHECK: stablehlo.transpose %1, dims = [1, 0] {sparsity.deps = "{1} {2}"}
// CHECK: stablehlo.dot_general {{.*}} {sparsity.deps = "{1,2}"}
func.func @mixed_forms(%a: tensor<3xf32>) -> tensor<1x1xf32> {
  %0 = "stablehlo.slice"(%a) <{start_indices = array<i64: 1>, limit_indices = array<i64: 3>, strides = array<i64: 1>}> : (tensor<3xf32>) -> tensor<2xf32>
  %1 = "stablehlo.reshape"(%0) : (tensor<2xf32>) -> tensor<1x2xf32>
  %2 = "stablehlo.transpose"(%1) <{permutation = array<i64: 1, 0>}> : (tensor<1x2xf32>) -> tensor<2x1xf32>
  %3 = "stablehlo.dot_general"(%1, %2) <{dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}> : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
  "func.return"(%3) : (tensor<1x1xf32>) -> ()
}

// -----

// Generic reduce with an explicit region.
// CHECK-LABEL: func.func @generic_reduce
// CHECK: stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [1] {sparsity.deps = "{0,1} {2,3}"}
func.func @generic_reduce(%a: tensor<2x2xf32>) -> tensor<2xf32> {
  %init = "stablehlo.constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %0 = "stablehlo.reduce"(%a, %init) <{dimensions = array<i64: 1>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %s = "stablehlo.add"(%x, %y) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "stablehlo.return"(%s) : (tensor<f32>) -> ()
  }) : (tensor<2x2xf32>, tensor<f32>) -> tensor<2xf32>
  "func.return"(%0) : (tensor<2xf32>) -> ()
}
