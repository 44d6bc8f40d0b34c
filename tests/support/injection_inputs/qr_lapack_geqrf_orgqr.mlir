// JAX's CPU lowering of jnp.linalg.qr(a, mode="complete") on a 4x3 float64 matrix: LAPACK geqrf + orgqr
// custom calls (issue 21: replayed, differentiated with JAX's QR derivative).
module @jit__lambda attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4x3xf64>) -> (tensor<4x4xf64> {jax.result_info = "result.Q"}, tensor<4x3xf64> {jax.result_info = "result.R"}) {
    %0:2 = call @qr(%arg0) : (tensor<4x3xf64>) -> (tensor<4x4xf64>, tensor<4x3xf64>)
    return %0#0, %0#1 : tensor<4x4xf64>, tensor<4x3xf64>
  }
  func.func private @qr(%arg0: tensor<4x3xf64>) -> (tensor<4x4xf64>, tensor<4x3xf64>) {
    %0:2 = stablehlo.custom_call @lapack_dgeqrf_ffi(%arg0) {backend_config = "", mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], [m]) {i=4, j=3, k=4, l=3, m=3}, custom>} : (tensor<4x3xf64>) -> (tensor<4x3xf64>, tensor<3xf64>)
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %1 = stablehlo.pad %0#0, %cst, low = [0, 0], high = [0, 1], interior = [0, 0] : (tensor<4x3xf64>, tensor<f64>) -> tensor<4x4xf64>
    %2 = stablehlo.custom_call @lapack_dorgqr_ffi(%1, %0#1) {backend_config = "", mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k])->([l, m]) {i=4, j=4, k=3, l=4, m=4}, custom>} : (tensor<4x4xf64>, tensor<3xf64>) -> tensor<4x4xf64>
    %3 = stablehlo.iota dim = 0 : tensor<4x3xi64>
    %c = stablehlo.constant dense<-1> : tensor<i64>
    %4 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i64>) -> tensor<4x3xi64>
    %5 = stablehlo.add %3, %4 : tensor<4x3xi64>
    %6 = stablehlo.iota dim = 1 : tensor<4x3xi64>
    %7 = stablehlo.compare GE, %5, %6, SIGNED : (tensor<4x3xi64>, tensor<4x3xi64>) -> tensor<4x3xi1>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %8 = stablehlo.broadcast_in_dim %cst_0, dims = [] : (tensor<f64>) -> tensor<4x3xf64>
    %9 = stablehlo.select %7, %8, %0#0 : tensor<4x3xi1>, tensor<4x3xf64>
    return %2, %9 : tensor<4x4xf64>, tensor<4x3xf64>
  }
}
