// RUN: not stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate 2>&1 | filecheck %s

// Parse errors are MLIR's diagnostics with file:line:col, one per failing chunk; the other chunks are
// still processed and the exit code is 1.

// CHECK: diag_parse_errors.mlir:[[# @LINE + 2]]:8: error: custom op 'stablehlo.no_such_op' is unknown
func.func @unknown_custom_op(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.no_such_op %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: diag_parse_errors.mlir:[[# @LINE + 2]]:8: error: unregistered operation 'stablehlo.bogus' found in dialect ('stablehlo') that does not allow unknown operations
func.func @unknown_generic_op(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = "stablehlo.bogus"(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// CHECK: diag_parse_errors.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: use of undeclared SSA value name
func.func @undeclared(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %nope : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// The verifier runs too: mismatched types.
// CHECK: diag_parse_errors.mlir:[[# @LINE + 2]]:3: error: type of return operand 0 ('tensor<2xf32>') doesn't match function result type ('tensor<3xf32>') in function @bad_return
func.func @bad_return(%a: tensor<2xf32>) -> tensor<3xf32> {
  return %a : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @fine
// CHECK: stablehlo.negate %arg0 {sparsity.deps = "{0} {1}"}
func.func @fine(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.negate %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}
