// XLA (jaxlib 0.10.2, CPU) segfaults compiling this module directly (the importer's oracle path;
// jax.jit of the program below crashes too for the first one). Found by the long random-program run of
// tests/test_importer.py::test_random_programs_are_faithful. Program:
// def f(x0, x1, x2):
//     v3 = lax.reduce((x2, jnp.cos(x2)), (-jnp.inf, 0.0), lambda x, y: (jnp.maximum(x[0], y[0]), jnp.where(x[0] >= y[0], x[1], y[1])), (1,))[1]
//     v4 = lax.top_k(v3, 2)[0]
//     v5 = jnp.take(x2, np.array([-2], dtype=np.int32).reshape((1,)), axis=0, mode='clip')
//     v6 = jnp.broadcast_to(v5, (1, 1, 1))
//     v7 = jnp.linalg.inv((x0.reshape(-1)[:4].reshape((2, 2)) + 4.0 * jnp.eye(2)))
//     return (v7,)
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3x3xf64>, %arg1: tensor<f64>, %arg2: tensor<3x1xf64>) -> (tensor<2x2xf64> {jax.result_info = "result[0]"}) {
    %c = stablehlo.constant dense<-2> : tensor<1xi32>
    %0 = stablehlo.cosine %arg2 : tensor<3x1xf64>
    %cst = stablehlo.constant dense<0xFFF0000000000000> : tensor<f64>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %1:2 = stablehlo.reduce(%arg2 init: %cst), (%0 init: %cst_0) across dimensions = [1] : (tensor<3x1xf64>, tensor<3x1xf64>, tensor<f64>, tensor<f64>) -> (tensor<3xf64>, tensor<3xf64>)
     reducer(%arg3: tensor<f64>, %arg5: tensor<f64>) (%arg4: tensor<f64>, %arg6: tensor<f64>)  {
      %17 = stablehlo.maximum %arg3, %arg5 : tensor<f64>
      %18 = stablehlo.compare GE, %arg3, %arg5, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %19 = func.call @_where(%18, %arg4, %arg6) : (tensor<i1>, tensor<f64>, tensor<f64>) -> tensor<f64>
      stablehlo.return %17, %19 : tensor<f64>, tensor<f64>
    }
    %values, %indices = chlo.top_k(%1#1, k = 2) : tensor<3xf64> -> (tensor<2xf64>, tensor<2xi32>)
    %2 = call @_take(%arg2, %c) : (tensor<3x1xf64>, tensor<1xi32>) -> tensor<1x1xf64>
    %3 = stablehlo.broadcast_in_dim %2, dims = [1, 2] : (tensor<1x1xf64>) -> tensor<1x1x1xf64>
    %4 = stablehlo.reshape %arg0 : (tensor<2x3x3xf64>) -> tensor<18xf64>
    %5 = stablehlo.slice %4 [0:4] : (tensor<18xf64>) -> tensor<4xf64>
    %6 = stablehlo.reshape %5 : (tensor<4xf64>) -> tensor<2x2xf64>
    %7 = stablehlo.iota dim = 0 : tensor<2x2xi64>
    %8 = stablehlo.iota dim = 1 : tensor<2x2xi64>
    %c_1 = stablehlo.constant dense<0> : tensor<i64>
    %9 = stablehlo.broadcast_in_dim %c_1, dims = [] : (tensor<i64>) -> tensor<2x2xi64>
    %10 = stablehlo.add %7, %9 : tensor<2x2xi64>
    %11 = stablehlo.compare EQ, %10, %8, SIGNED : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
    %12 = stablehlo.convert %11 : (tensor<2x2xi1>) -> tensor<2x2xf64>
    %cst_2 = stablehlo.constant dense<4.000000e+00> : tensor<f64>
    %13 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f64>) -> tensor<2x2xf64>
    %14 = stablehlo.multiply %13, %12 : tensor<2x2xf64>
    %15 = stablehlo.add %6, %14 : tensor<2x2xf64>
    %16 = call @inv(%15) : (tensor<2x2xf64>) -> tensor<2x2xf64>
    return %16 : tensor<2x2xf64>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<f64>, %arg2: tensor<f64>) -> tensor<f64> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<f64>
    return %0 : tensor<f64>
  }
  func.func private @_take(%arg0: tensor<3x1xf64>, %arg1: tensor<1xi32>) -> tensor<1x1xf64> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [0] : (tensor<1xi32>) -> tensor<1x1xi32>
    %1 = "stablehlo.gather"(%arg0, %0) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<3x1xf64>, tensor<1x1xi32>) -> tensor<1x1xf64>
    return %1 : tensor<1x1xf64>
  }
  func.func private @inv(%arg0: tensor<2x2xf64>) -> tensor<2x2xf64> {
    %0 = stablehlo.iota dim = 0 : tensor<2x2xi64>
    %1 = stablehlo.iota dim = 1 : tensor<2x2xi64>
    %c = stablehlo.constant dense<0> : tensor<i64>
    %2 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i64>) -> tensor<2x2xi64>
    %3 = stablehlo.add %0, %2 : tensor<2x2xi64>
    %4 = stablehlo.compare EQ, %3, %1, SIGNED : (tensor<2x2xi64>, tensor<2x2xi64>) -> tensor<2x2xi1>
    %5 = stablehlo.convert %4 : (tensor<2x2xi1>) -> tensor<2x2xf64>
    %6 = call @solve(%arg0, %5) : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
    return %6 : tensor<2x2xf64>
  }
  func.func private @solve(%arg0: tensor<2x2xf64>, %arg1: tensor<2x2xf64>) -> tensor<2x2xf64> {
    %0:3 = stablehlo.custom_call @lapack_dgetrf_ffi(%arg0) {backend_config = "", mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>, dense<> : tensor<0xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([k, l], [m], []) {i=2, j=2, k=2, l=2, m=2}, custom>} : (tensor<2x2xf64>) -> (tensor<2x2xf64>, tensor<2xi32>, tensor<i32>)
    %c = stablehlo.constant dense<1> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %2 = stablehlo.subtract %0#1, %1 : tensor<2xi32>
    %c_0 = stablehlo.constant dense<0> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<i32>
    %4 = stablehlo.compare GE, %0#2, %3, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<i1>) -> tensor<1x1xi1>
    %cst = stablehlo.constant dense<0x7FF8000000000000> : tensor<f64>
    %6 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f64>) -> tensor<2x2xf64>
    %7 = stablehlo.broadcast_in_dim %5, dims = [0, 1] : (tensor<1x1xi1>) -> tensor<2x2xi1>
    %8 = stablehlo.select %7, %0#0, %6 : tensor<2x2xi1>, tensor<2x2xf64>
    %9 = stablehlo.iota dim = 0 : tensor<2xi32>
    %c_1 = stablehlo.constant dense<0> : tensor<i64>
    %c_2 = stablehlo.constant dense<0> : tensor<i64>
    %10:4 = stablehlo.while(%iterArg = %2, %iterArg_3 = %c_2, %iterArg_4 = %c_1, %iterArg_5 = %9) : tensor<2xi32>, tensor<i64>, tensor<i64>, tensor<2xi32>
    cond {
      %c_6 = stablehlo.constant dense<2> : tensor<i64>
      %14 = stablehlo.compare LT, %iterArg_3, %c_6, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %14 : tensor<i1>
    } do {
      %14:2 = func.call @closed_call(%iterArg, %iterArg_4, %iterArg_5) : (tensor<2xi32>, tensor<i64>, tensor<2xi32>) -> (tensor<i64>, tensor<2xi32>)
      %c_6 = stablehlo.constant dense<1> : tensor<i64>
      %15 = stablehlo.add %iterArg_3, %c_6 : tensor<i64>
      stablehlo.return %iterArg, %15, %14#0, %14#1 : tensor<2xi32>, tensor<i64>, tensor<i64>, tensor<2xi32>
    }
    %11 = stablehlo.transpose %arg1, dims = [1, 0] : (tensor<2x2xf64>) -> tensor<2x2xf64>
    %12 = call @_lu_solve(%8, %10#3, %11) : (tensor<2x2xf64>, tensor<2xi32>, tensor<2x2xf64>) -> tensor<2x2xf64>
    %13 = stablehlo.transpose %12, dims = [1, 0] : (tensor<2x2xf64>) -> tensor<2x2xf64>
    return %13 : tensor<2x2xf64>
  }
  func.func private @closed_call(%arg0: tensor<2xi32>, %arg1: tensor<i64>, %arg2: tensor<2xi32>) -> (tensor<i64>, tensor<2xi32>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %0 = stablehlo.add %arg1, %c : tensor<i64>
    %c_0 = stablehlo.constant dense<0> : tensor<i64>
    %1 = stablehlo.compare LT, %arg1, %c_0, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %2 = stablehlo.convert %arg1 : tensor<i64>
    %c_1 = stablehlo.constant dense<2> : tensor<i64>
    %3 = stablehlo.add %2, %c_1 : tensor<i64>
    %4 = stablehlo.select %1, %3, %arg1 : tensor<i1>, tensor<i64>
    %5 = stablehlo.dynamic_slice %arg0, %4, sizes = [1] : (tensor<2xi32>, tensor<i64>) -> tensor<1xi32>
    %6 = stablehlo.reshape %5 : (tensor<1xi32>) -> tensor<i32>
    %c_2 = stablehlo.constant dense<0> : tensor<i64>
    %7 = stablehlo.compare LT, %arg1, %c_2, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %8 = stablehlo.convert %arg1 : tensor<i64>
    %c_3 = stablehlo.constant dense<2> : tensor<i64>
    %9 = stablehlo.add %8, %c_3 : tensor<i64>
    %10 = stablehlo.select %7, %9, %arg1 : tensor<i1>, tensor<i64>
    %11 = stablehlo.dynamic_slice %arg2, %10, sizes = [1] : (tensor<2xi32>, tensor<i64>) -> tensor<1xi32>
    %12 = stablehlo.reshape %11 : (tensor<1xi32>) -> tensor<i32>
    %c_4 = stablehlo.constant dense<0> : tensor<i32>
    %13 = stablehlo.compare LT, %6, %c_4, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_5 = stablehlo.constant dense<2> : tensor<i32>
    %14 = stablehlo.add %6, %c_5 : tensor<i32>
    %15 = stablehlo.select %13, %14, %6 : tensor<i1>, tensor<i32>
    %16 = stablehlo.dynamic_slice %arg2, %15, sizes = [1] : (tensor<2xi32>, tensor<i32>) -> tensor<1xi32>
    %17 = stablehlo.reshape %16 : (tensor<1xi32>) -> tensor<i32>
    %c_6 = stablehlo.constant dense<0> : tensor<i64>
    %18 = stablehlo.compare LT, %arg1, %c_6, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
    %c_7 = stablehlo.constant dense<2> : tensor<i64>
    %19 = stablehlo.add %arg1, %c_7 : tensor<i64>
    %20 = stablehlo.select %18, %19, %arg1 : tensor<i1>, tensor<i64>
    %21 = stablehlo.convert %20 : (tensor<i64>) -> tensor<i32>
    %22 = stablehlo.broadcast_in_dim %21, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %23 = "stablehlo.scatter"(%arg2, %22, %17) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg3: tensor<i32>, %arg4: tensor<i32>):
      stablehlo.return %arg4 : tensor<i32>
    }) : (tensor<2xi32>, tensor<1xi32>, tensor<i32>) -> tensor<2xi32>
    %c_8 = stablehlo.constant dense<0> : tensor<i32>
    %24 = stablehlo.compare LT, %6, %c_8, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %c_9 = stablehlo.constant dense<2> : tensor<i32>
    %25 = stablehlo.add %6, %c_9 : tensor<i32>
    %26 = stablehlo.select %24, %25, %6 : tensor<i1>, tensor<i32>
    %27 = stablehlo.broadcast_in_dim %26, dims = [] : (tensor<i32>) -> tensor<1xi32>
    %28 = "stablehlo.scatter"(%23, %27, %12) <{indices_are_sorted = true, scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true}> ({
    ^bb0(%arg3: tensor<i32>, %arg4: tensor<i32>):
      stablehlo.return %arg4 : tensor<i32>
    }) : (tensor<2xi32>, tensor<1xi32>, tensor<i32>) -> tensor<2xi32>
    return %0, %28 : tensor<i64>, tensor<2xi32>
  }
  func.func private @_lu_solve(%arg0: tensor<2x2xf64>, %arg1: tensor<2xi32>, %arg2: tensor<2x2xf64>) -> tensor<2x2xf64> {
    %0 = stablehlo.broadcast_in_dim %arg2, dims = [0, 1] : (tensor<2x2xf64>) -> tensor<2x2x1xf64>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %2 = stablehlo.compare LT, %arg1, %1, SIGNED : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi1>
    %c_0 = stablehlo.constant dense<2> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<2xi32>
    %4 = stablehlo.add %arg1, %3 : tensor<2xi32>
    %5 = stablehlo.select %2, %4, %arg1 : tensor<2xi1>, tensor<2xi32>
    %6 = stablehlo.broadcast_in_dim %5, dims = [0] : (tensor<2xi32>) -> tensor<2x1xi32>
    %7 = "stablehlo.gather"(%0, %6) <{dimension_numbers = #stablehlo.gather<offset_dims = [0, 2], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 2, 1, 1>}> : (tensor<2x2x1xf64>, tensor<2x1xi32>) -> tensor<2x2x1xf64>
    %8 = stablehlo.transpose %7, dims = [1, 2, 0] : (tensor<2x2x1xf64>) -> tensor<2x1x2xf64>
    %9 = stablehlo.reshape %8 : (tensor<2x1x2xf64>) -> tensor<2x2xf64>
    %10 = stablehlo.custom_call @lapack_dtrsm_ffi(%arg0, %9) {backend_config = "", mhlo.backend_config = {diag = 85 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 76 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) {i=2, j=2, k=2, l=2, m=2, n=2}, custom>} : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
    %11 = stablehlo.reshape %10 : (tensor<2x2xf64>) -> tensor<2x1x2xf64>
    %12 = stablehlo.reshape %11 : (tensor<2x1x2xf64>) -> tensor<2x2xf64>
    %13 = stablehlo.custom_call @lapack_dtrsm_ffi(%arg0, %12) {backend_config = "", mhlo.backend_config = {diag = 78 : ui8, side = 76 : ui8, trans_x = 78 : ui8, uplo = 85 : ui8}, mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>], output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [], operand_index = 1, operand_tuple_indices = []>], result_layouts = [dense<[0, 1]> : tensor<2xindex>], sdy.sharding_rule = #sdy.op_sharding_rule<([i, j], [k, l])->([m, n]) {i=2, j=2, k=2, l=2, m=2, n=2}, custom>} : (tensor<2x2xf64>, tensor<2x2xf64>) -> tensor<2x2xf64>
    %14 = stablehlo.reshape %13 : (tensor<2x2xf64>) -> tensor<2x1x2xf64>
    %15 = stablehlo.transpose %14, dims = [2, 0, 1] : (tensor<2x1x2xf64>) -> tensor<2x2x1xf64>
    %16 = stablehlo.reshape %15 : (tensor<2x2x1xf64>) -> tensor<2x2xf64>
    return %16 : tensor<2x2xf64>
  }
}
