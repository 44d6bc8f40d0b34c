// XLA (jaxlib 0.10.2, CPU) segfaults compiling this module directly (the importer's oracle path;
// jax.jit of the program below crashes too for the first one). Found by the long random-program run of
// tests/test_importer.py::test_random_programs_are_faithful. Program:
// def f(x0, x1, x2):
//     v3 = jnp.fft.fft(x2).real
//     v4 = jnp.take_along_axis(v3, jnp.argsort(jnp.sin(v3), axis=0), axis=0)
//     v5 = lax.slice(x1, (1, 0, 1), (2, 3, 4), (3, 2, 3))
//     v6 = ste_round(v3)
//     v7 = lax.reduce((v6, v4), (-jnp.inf, 0.0), lambda x, y: (jnp.maximum(x[0], y[0]), jnp.where(x[0] >= y[0], x[1], y[1])), (0,))[1]
//     v8 = lax.scan(lambda c, r: (c + r * r, c * r), np.array([0.0]).reshape(()), v6, reverse=True)[1]
//     v9 = jnp.expand_dims(v8, 1)
//     return (v9, v4,)
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<4xf64>, %arg1: tensor<2x3x4xf64>, %arg2: tensor<3xf64>) -> (tensor<3x1xf64> {jax.result_info = "result[0]"}, tensor<3xf64> {jax.result_info = "result[1]"}) {
    %0 = call @fft(%arg2) : (tensor<3xf64>) -> tensor<3xcomplex<f64>>
    %1 = stablehlo.real %0 : (tensor<3xcomplex<f64>>) -> tensor<3xf64>
    %2 = stablehlo.sine %1 : tensor<3xf64>
    %3 = call @argsort(%2) : (tensor<3xf64>) -> tensor<3xi64>
    %4 = call @take_along_axis(%1, %3) : (tensor<3xf64>, tensor<3xi64>) -> tensor<3xf64>
    %5 = stablehlo.slice %arg1 [1:2:3, 0:3:2, 1:4:3] : (tensor<2x3x4xf64>) -> tensor<1x2x1xf64>
    %6 = call @round(%1) : (tensor<3xf64>) -> tensor<3xf64>
    %cst = stablehlo.constant dense<0xFFF0000000000000> : tensor<f64>
    %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %7:2 = stablehlo.reduce(%6 init: %cst), (%4 init: %cst_0) across dimensions = [0] : (tensor<3xf64>, tensor<3xf64>, tensor<f64>, tensor<f64>) -> (tensor<f64>, tensor<f64>)
     reducer(%arg3: tensor<f64>, %arg5: tensor<f64>) (%arg4: tensor<f64>, %arg6: tensor<f64>)  {
      %11 = stablehlo.maximum %arg3, %arg5 : tensor<f64>
      %12 = stablehlo.compare GE, %arg3, %arg5, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %13 = func.call @_where(%12, %arg4, %arg6) : (tensor<i1>, tensor<f64>, tensor<f64>) -> tensor<f64>
      stablehlo.return %11, %13 : tensor<f64>, tensor<f64>
    }
    %cst_1 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %8 = stablehlo.broadcast_in_dim %cst_2, dims = [] : (tensor<f64>) -> tensor<3xf64>
    %c = stablehlo.constant dense<0> : tensor<i64>
    %9:4 = stablehlo.while(%iterArg = %6, %iterArg_3 = %c, %iterArg_4 = %cst_1, %iterArg_5 = %8) : tensor<3xf64>, tensor<i64>, tensor<f64>, tensor<3xf64>
    cond {
      %c_6 = stablehlo.constant dense<3> : tensor<i64>
      %11 = stablehlo.compare LT, %iterArg_3, %c_6, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %11 : tensor<i1>
    } do {
      %c_6 = stablehlo.constant dense<3> : tensor<i64>
      %11 = stablehlo.subtract %c_6, %iterArg_3 : tensor<i64>
      %c_7 = stablehlo.constant dense<1> : tensor<i64>
      %12 = stablehlo.subtract %11, %c_7 : tensor<i64>
      %13 = func.call @dynamic_index_in_dim(%iterArg, %12) : (tensor<3xf64>, tensor<i64>) -> tensor<f64>
      %14:2 = func.call @closed_call(%iterArg_4, %13) : (tensor<f64>, tensor<f64>) -> (tensor<f64>, tensor<f64>)
      %15 = func.call @dynamic_update_index_in_dim(%iterArg_5, %14#1, %12) : (tensor<3xf64>, tensor<f64>, tensor<i64>) -> tensor<3xf64>
      %c_8 = stablehlo.constant dense<1> : tensor<i64>
      %16 = stablehlo.add %iterArg_3, %c_8 : tensor<i64>
      stablehlo.return %iterArg, %16, %14#0, %15 : tensor<3xf64>, tensor<i64>, tensor<f64>, tensor<3xf64>
    }
    %10 = stablehlo.broadcast_in_dim %9#3, dims = [0] : (tensor<3xf64>) -> tensor<3x1xf64>
    return %10, %4 : tensor<3x1xf64>, tensor<3xf64>
  }
  func.func private @fft(%arg0: tensor<3xf64>) -> tensor<3xcomplex<f64>> {
    %0 = stablehlo.convert %arg0 : (tensor<3xf64>) -> tensor<3xcomplex<f64>>
    %1 = stablehlo.fft %0, type = FFT, length = [3] : (tensor<3xcomplex<f64>>) -> tensor<3xcomplex<f64>>
    return %1 : tensor<3xcomplex<f64>>
  }
  func.func private @argsort(%arg0: tensor<3xf64>) -> tensor<3xi64> {
    %0 = stablehlo.iota dim = 0 : tensor<3xi64>
    %1:2 = "stablehlo.sort"(%arg0, %0) <{dimension = 0 : i64, is_stable = true}> ({
    ^bb0(%arg1: tensor<f64>, %arg2: tensor<f64>, %arg3: tensor<i64>, %arg4: tensor<i64>):
      %cst = stablehlo.constant dense<0.000000e+00> : tensor<f64>
      %2 = stablehlo.compare EQ, %arg1, %cst, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %cst_0 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
      %3 = stablehlo.select %2, %cst_0, %arg1 : tensor<i1>, tensor<f64>
      %4 = stablehlo.compare NE, %arg1, %arg1, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %cst_1 = stablehlo.constant dense<0x7FF8000000000000> : tensor<f64>
      %5 = stablehlo.select %4, %cst_1, %3 : tensor<i1>, tensor<f64>
      %cst_2 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
      %6 = stablehlo.compare EQ, %arg2, %cst_2, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %cst_3 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
      %7 = stablehlo.select %6, %cst_3, %arg2 : tensor<i1>, tensor<f64>
      %8 = stablehlo.compare NE, %arg2, %arg2, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %cst_4 = stablehlo.constant dense<0x7FF8000000000000> : tensor<f64>
      %9 = stablehlo.select %8, %cst_4, %7 : tensor<i1>, tensor<f64>
      %10 = stablehlo.compare LT, %5, %9, TOTALORDER : (tensor<f64>, tensor<f64>) -> tensor<i1>
      stablehlo.return %10 : tensor<i1>
    }) : (tensor<3xf64>, tensor<3xi64>) -> (tensor<3xf64>, tensor<3xi64>)
    return %1#1 : tensor<3xi64>
  }
  func.func private @take_along_axis(%arg0: tensor<3xf64>, %arg1: tensor<3xi64>) -> tensor<3xf64> {
    %0 = stablehlo.convert %arg1 : (tensor<3xi64>) -> tensor<3xi32>
    %c = stablehlo.constant dense<0> : tensor<i32>
    %1 = stablehlo.broadcast_in_dim %c, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %2 = stablehlo.compare LT, %0, %1, SIGNED : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi1>
    %c_0 = stablehlo.constant dense<3> : tensor<i32>
    %3 = stablehlo.broadcast_in_dim %c_0, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %4 = stablehlo.add %0, %3 : tensor<3xi32>
    %5 = stablehlo.select %2, %4, %0 : tensor<3xi1>, tensor<3xi32>
    %6 = stablehlo.reshape %5 : (tensor<3xi32>) -> tensor<3x1xi32>
    %c_1 = stablehlo.constant dense<2> : tensor<1xi32>
    %c_2 = stablehlo.constant dense<0> : tensor<i32>
    %7 = stablehlo.broadcast_in_dim %c_2, dims = [] : (tensor<i32>) -> tensor<3x1xi32>
    %8 = stablehlo.compare GE, %6, %7, SIGNED : (tensor<3x1xi32>, tensor<3x1xi32>) -> tensor<3x1xi1>
    %9 = stablehlo.broadcast_in_dim %c_1, dims = [1] : (tensor<1xi32>) -> tensor<1x1xi32>
    %10 = stablehlo.broadcast_in_dim %9, dims = [0, 1] : (tensor<1x1xi32>) -> tensor<3x1xi32>
    %11 = stablehlo.compare LE, %6, %10, SIGNED : (tensor<3x1xi32>, tensor<3x1xi32>) -> tensor<3x1xi1>
    %12 = stablehlo.and %8, %11 : tensor<3x1xi1>
    %c_3 = stablehlo.constant dense<true> : tensor<i1>
    %13 = stablehlo.reduce(%12 init: %c_3) applies stablehlo.and across dimensions = [1] : (tensor<3x1xi1>, tensor<i1>) -> tensor<3xi1>
    %14 = "stablehlo.gather"(%arg0, %6) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1>}> : (tensor<3xf64>, tensor<3x1xi32>) -> tensor<3xf64>
    %cst = stablehlo.constant dense<0x7FF8000000000000> : tensor<f64>
    %15 = stablehlo.broadcast_in_dim %cst, dims = [] : (tensor<f64>) -> tensor<3xf64>
    %16 = stablehlo.select %13, %14, %15 : tensor<3xi1>, tensor<3xf64>
    return %16 : tensor<3xf64>
  }
  func.func private @round(%arg0: tensor<3xf64>) -> tensor<3xf64> {
    %0 = stablehlo.round_nearest_even %arg0 : tensor<3xf64>
    return %0 : tensor<3xf64>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<f64>, %arg2: tensor<f64>) -> tensor<f64> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<f64>
    return %0 : tensor<f64>
  }
  func.func private @dynamic_index_in_dim(%arg0: tensor<3xf64>, %arg1: tensor<i64>) -> tensor<f64> {
    %0 = stablehlo.dynamic_slice %arg0, %arg1, sizes = [1] : (tensor<3xf64>, tensor<i64>) -> tensor<1xf64>
    %1 = stablehlo.reshape %0 : (tensor<1xf64>) -> tensor<f64>
    return %1 : tensor<f64>
  }
  func.func private @closed_call(%arg0: tensor<f64>, %arg1: tensor<f64>) -> (tensor<f64>, tensor<f64>) {
    %0 = stablehlo.multiply %arg1, %arg1 : tensor<f64>
    %1 = stablehlo.add %arg0, %0 : tensor<f64>
    %2 = stablehlo.multiply %arg0, %arg1 : tensor<f64>
    return %1, %2 : tensor<f64>, tensor<f64>
  }
  func.func private @dynamic_update_index_in_dim(%arg0: tensor<3xf64>, %arg1: tensor<f64>, %arg2: tensor<i64>) -> tensor<3xf64> {
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f64>) -> tensor<1xf64>
    %1 = stablehlo.dynamic_update_slice %arg0, %0, %arg2 : (tensor<3xf64>, tensor<1xf64>, tensor<i64>) -> tensor<3xf64>
    return %1 : tensor<3xf64>
  }
}
