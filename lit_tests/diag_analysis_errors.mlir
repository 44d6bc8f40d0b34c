// RUN: not stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate --allow-unregistered-dialect 2>&1 | filecheck %s
// RUN: not stablehlo-sparsity-opt %s --split-input-file --emit=pattern --allow-unregistered-dialect 2>&1 | filecheck %s

// Inputs the analysis cannot handle are errors naming the op (or type) and its location; never a wrong
// answer.

// CHECK: diag_analysis_errors.mlir:[[# @LINE + 1]]:1: error: dynamic shape 'tensor<?xf32>' is not supported; sparsity patterns need static shapes
func.func @dynamic_argument(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}

// -----

// CHECK: diag_analysis_errors.mlir:[[# @LINE + 3]]:8: error: dynamic shape 'tensor<?xf32>' is not supported
func.func @dynamic_result(%a: tensor<4xf32>, %n: tensor<i32>) -> tensor<?xf32> {
  %s = stablehlo.reshape %n : (tensor<i32>) -> tensor<1xi32>
  %0 = stablehlo.dynamic_iota %s, dim = 0 : (tensor<1xi32>) -> tensor<?xf32>
  return %0 : tensor<?xf32>
}

// -----

// CHECK: diag_analysis_errors.mlir:[[# @LINE + 1]]:1: error: unsupported element type 'f8E4M3FN'
func.func @f8_argument(%a: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {
  return %a : tensor<4xf8E4M3FN>
}

// -----

// CHECK: diag_analysis_errors.mlir:[[# @LINE + 2]]:8: error: no sparsity rule for op 'mydialect.magic'; use on-unknown=conservative (--on-unknown=conservative) to treat it as dense
func.func @unknown_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "mydialect.magic"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK: diag_analysis_errors.mlir:[[# @LINE + 2]]:8: error: no sparsity rule for op 'stablehlo.custom_call' (unknown custom_call target 'my_kernel')
func.func @unknown_custom_call(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.custom_call @my_kernel(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// CHECK-NOT: error
func.func @fine(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}
