// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate 2>&1 | filecheck %s

// §dynamic_slice with a known start; starts are clamped so the slice stays in bounds.

// CHECK: dynamic_slice.mlir:{{[0-9]+}}:8: warning: stablehlo.dynamic_slice

// CHECK-LABEL: func.func @known_start
// CHECK: stablehlo.dynamic_slice %arg0, %c, sizes = [2] {sparsity.deps = "{1} {2}"}
func.func @known_start(%a: tensor<4xf32>) -> tensor<2xf32> {
  %c = stablehlo.constant dense<1> : tensor<i32>
  %0 = stablehlo.dynamic_slice %a, %c, sizes = [2] : (tensor<4xf32>, tensor<i32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Start 3 with size 2 on 4 elements is clamped to 2.
// CHECK-LABEL: func.func @clamped_start
// CHECK: stablehlo.dynamic_slice %arg0, %c, sizes = [2] {sparsity.deps = "{2} {3}"}
func.func @clamped_start(%a: tensor<4xf32>) -> tensor<2xf32> {
  %c = stablehlo.constant dense<3> : tensor<i32>
  %0 = stablehlo.dynamic_slice %a, %c, sizes = [2] : (tensor<4xf32>, tensor<i32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// An input-dependent start: element j may come from any position j..j+2 (warned about at the top).
// CHECK-LABEL: func.func @unknown_start
// CHECK: stablehlo.dynamic_slice %arg0, %arg1, sizes = [2] {sparsity.deps = "{0..2} {1..3}"}
func.func @unknown_start(%a: tensor<4xf32>, %i: tensor<i32>) -> tensor<2xf32> {
  %0 = stablehlo.dynamic_slice %a, %i, sizes = [2] : (tensor<4xf32>, tensor<i32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// §dynamic_update_slice with a known start overwrites exactly the updated window.
// CHECK-LABEL: func.func @update
// CHECK: stablehlo.dynamic_update_slice %arg0, %arg1, %c {sparsity.deps = "{0} {4} {5} {3}"}
func.func @update(%a: tensor<4xf32>, %u: tensor<2xf32>) -> tensor<4xf32> {
  %c = stablehlo.constant dense<1> : tensor<i32>
  %0 = stablehlo.dynamic_update_slice %a, %u, %c : (tensor<4xf32>, tensor<2xf32>, tensor<i32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
