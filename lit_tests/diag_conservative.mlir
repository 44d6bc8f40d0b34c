// RUN: stablehlo-sparsity-opt %s --split-input-file --allow-unregistered-dialect --on-unknown=conservative --sparsity-annotate 2>&1 | filecheck %s
// RUN: stablehlo-sparsity-opt %s --split-input-file --allow-unregistered-dialect --pass-pipeline='builtin.module(sparsity-annotate{on-unknown=conservative})' 2>&1 | filecheck %s

// With the conservative opt-in an op without a rule makes every result element depend on everything its
// operands depend on; a warning with the location says so.  The diagnostics come first (the output is
// written at the end).

// CHECK: diag_conservative.mlir:[[# @LINE + 8]]:8: warning: mydialect.magic: no sparsity rule
// CHECK: diag_conservative.mlir:[[# @LINE + 17]]:8: warning: stablehlo.custom_call: {{.*}}my_kernel

// CHECK-LABEL: func.func @unknown_op
// CHECK: "mydialect.magic"(%0) {sparsity.deps = "{0,1}*3"}
// CHECK: stablehlo.add %1, %arg0 {sparsity.deps = "{0,1}*2 {0..2}"}
func.func @unknown_op(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.slice %a [0:2] : (tensor<3xf32>) -> tensor<2xf32>
  %1 = "mydialect.magic"(%0) : (tensor<2xf32>) -> tensor<3xf32>
  %2 = stablehlo.add %1, %a : tensor<3xf32>
  return %2 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @unknown_custom_call
// CHECK: stablehlo.custom_call @my_kernel(%arg0) {sparsity.deps = "{0..3}*4"}
func.func @unknown_custom_call(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @my_kernel(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
