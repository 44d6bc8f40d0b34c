// RUN: not stablehlo-sparsity-opt %s --split-input-file --sparsity-hessian 2>&1 | filecheck %s --check-prefix=HESS
// RUN: not stablehlo-sparsity-opt %s --split-input-file --sparsity-jacobian="mode=reverse" 2>&1 | filecheck %s --check-prefix=REV
// RUN: not stablehlo-sparsity-opt %s --split-input-file --sparsity-jacobian="wrt=5" 2>&1 | filecheck %s --check-prefix=WRT

// Input errors of the derivative passes: file:line:col of the entry, exit code 1, no traceback.

// HESS: sparsity_derivative_errors.mlir:[[# @LINE + 3]]:1: error: a Hessian needs a scalar function; @main returns {{.*}}(2,)
// REV-NOT: sparsity_derivative_errors.mlir:[[# @LINE + 2]]
// WRT: sparsity_derivative_errors.mlir:[[# @LINE + 1]]:1: error: argument index 5 out of range: @main has 1 arguments
func.func @main(%x: tensor<2xf32>) -> tensor<2xf32> {
  %s = stablehlo.sine %x : tensor<2xf32>
  return %s : tensor<2xf32>
}

// -----

// JAX cannot differentiate a while loop in reverse mode: forward only.
// REV: sparsity_derivative_errors.mlir:[[# @LINE + 1]]:1: error: @main contains a stablehlo.while loop, which JAX cannot differentiate in reverse mode; use mode='forward'
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %0:2 = stablehlo.while(%i = %zero, %x = %a) : tensor<i32>, tensor<4xf32>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %c : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %y = stablehlo.sine %x : tensor<4xf32>
      stablehlo.return %j, %y : tensor<i32>, tensor<4xf32>
    }
  return %0#1 : tensor<4xf32>
}

// -----

// A LAPACK kernel the importer replays for values but JAX cannot differentiate (the Hessenberg reduction):
// named, with the reason and its location.
// REV: sparsity_derivative_errors.mlir:[[# @LINE + 2]]:{{[0-9]+}}: error: cannot import op 'stablehlo.custom_call': custom_call target 'lapack_sgehrd_ffi' has no derivative rule: JAX defines no derivative for the Hessenberg reduction (lax.linalg.hessenberg)
func.func @main(%a: tensor<3x3xf32>) -> tensor<3x3xf32> {
  %0:3 = stablehlo.custom_call @lapack_sgehrd_ffi(%a) {mhlo.backend_config = {high = 3 : i32, low = 1 : i32}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>]} : (tensor<3x3xf32>) -> (tensor<3x3xf32>, tensor<2xf32>, tensor<i32>)
  return %0#0 : tensor<3x3xf32>
}
