// XLA (jaxlib 0.10.2, CPU) segfaults compiling this module directly; the importer's replay of it compiles.
// Found by the long random-program faithfulness run. Program:
// def f(x0, x1, x2):
//     v3 = jnp.expand_dims(x1, 0)
//     v4 = lax.fori_loop(0, 3, lambda i, c: jnp.sin((jnp.flip(c, 0) * (jnp.broadcast_to(x2.reshape(-1)[16], (3, 4, 3))))) * (jnp.broadcast_to(x2.reshape(-1)[16], (3, 4, 3))), x2)
//     v5 = jnp.fft.irfft(x0)
//     v6 = jax.nn.sigmoid(v5)
//     v7 = lax.reduce((v5, v6), (-jnp.inf, 0.0), lambda x, y: (jnp.maximum(x[0], y[0]), jnp.where(x[0] >= y[0], x[1], y[1])), (0,))[1]
//     v8 = v7[:, np.array([-1, 3, -2], dtype=np.int32).reshape((3,))]
//     v9 = lax.conv_general_dilated(v5.reshape((1, 1, 6)), np.array([2.0, -0.5]).reshape((1, 1, 2)), window_strides=(2,), padding=((2, 2),), lhs_dilation=(2,), rhs_dilation=(2,), dimension_numbers=('NCH', 'OIH', 'NCH'), feature_group_count=1)
//     return (v9,)
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<1x1x4xf64>, %arg1: tensor<f64>, %arg2: tensor<3x4x3xf64>) -> (tensor<1x1x7xf64> {jax.result_info = "result[0]"}) {
    %c = stablehlo.constant dense<[-1, 3, -2]> : tensor<3xi32>
    %c_0 = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
    %cst = stablehlo.constant dense<[[[2.000000e+00, -5.000000e-01]]]> : tensor<1x1x2xf64>
    %0 = stablehlo.broadcast_in_dim %arg1, dims = [] : (tensor<f64>) -> tensor<1xf64>
    %c_1 = stablehlo.constant dense<0> : tensor<i64>
    %c_2 = stablehlo.constant dense<0> : tensor<i64>
    %1:4 = stablehlo.while(%iterArg = %arg2, %iterArg_8 = %c_2, %iterArg_9 = %c_1, %iterArg_10 = %arg2) : tensor<3x4x3xf64>, tensor<i64>, tensor<i64>, tensor<3x4x3xf64>
    cond {
      %c_11 = stablehlo.constant dense<3> : tensor<i64>
      %16 = stablehlo.compare LT, %iterArg_8, %c_11, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %16 : tensor<i1>
    } do {
      %16:2 = func.call @closed_call(%iterArg, %iterArg_9, %iterArg_10) : (tensor<3x4x3xf64>, tensor<i64>, tensor<3x4x3xf64>) -> (tensor<i64>, tensor<3x4x3xf64>)
      %c_11 = stablehlo.constant dense<1> : tensor<i64>
      %17 = stablehlo.add %iterArg_8, %c_11 : tensor<i64>
      stablehlo.return %iterArg, %17, %16#0, %16#1 : tensor<3x4x3xf64>, tensor<i64>, tensor<i64>, tensor<3x4x3xf64>
    }
    %2 = call @fft(%arg0) : (tensor<1x1x4xf64>) -> tensor<1x1x6xf64>
    %3 = stablehlo.negate %2 : tensor<1x1x6xf64>
    %4 = stablehlo.exponential %3 : tensor<1x1x6xf64>
    %cst_3 = stablehlo.constant dense<1.000000e+00> : tensor<f64>
    %5 = stablehlo.broadcast_in_dim %cst_3, dims = [] : (tensor<f64>) -> tensor<1x1x6xf64>
    %6 = stablehlo.add %5, %4 : tensor<1x1x6xf64>
    %cst_4 = stablehlo.constant dense<1.000000e+00> : tensor<f64>
    %7 = stablehlo.broadcast_in_dim %cst_4, dims = [] : (tensor<f64>) -> tensor<1x1x6xf64>
    %8 = stablehlo.divide %7, %6 : tensor<1x1x6xf64>
    %cst_5 = stablehlo.constant dense<0xFFF0000000000000> : tensor<f64>
    %cst_6 = stablehlo.constant dense<0.000000e+00> : tensor<f64>
    %9:2 = stablehlo.reduce(%2 init: %cst_5), (%8 init: %cst_6) across dimensions = [0] : (tensor<1x1x6xf64>, tensor<1x1x6xf64>, tensor<f64>, tensor<f64>) -> (tensor<1x6xf64>, tensor<1x6xf64>)
     reducer(%arg3: tensor<f64>, %arg5: tensor<f64>) (%arg4: tensor<f64>, %arg6: tensor<f64>)  {
      %16 = stablehlo.maximum %arg3, %arg5 : tensor<f64>
      %17 = stablehlo.compare GE, %arg3, %arg5, FLOAT : (tensor<f64>, tensor<f64>) -> tensor<i1>
      %18 = func.call @_where(%17, %arg4, %arg6) : (tensor<i1>, tensor<f64>, tensor<f64>) -> tensor<f64>
      stablehlo.return %16, %18 : tensor<f64>, tensor<f64>
    }
    %c_7 = stablehlo.constant dense<6> : tensor<i32>
    %10 = stablehlo.broadcast_in_dim %c_7, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %11 = stablehlo.add %c, %10 : tensor<3xi32>
    %12 = stablehlo.select %c_0, %11, %c : tensor<3xi1>, tensor<3xi32>
    %13 = stablehlo.broadcast_in_dim %12, dims = [0] : (tensor<3xi32>) -> tensor<3x1xi32>
    %14 = "stablehlo.gather"(%9#1, %13) <{dimension_numbers = #stablehlo.gather<offset_dims = [0], collapsed_slice_dims = [1], start_index_map = [1], index_vector_dim = 1>, indices_are_sorted = false, slice_sizes = array<i64: 1, 1>}> : (tensor<1x6xf64>, tensor<3x1xi32>) -> tensor<1x3xf64>
    %15 = stablehlo.convolution(%2, %cst) dim_numbers = [b, f, 0]x[o, i, 0]->[b, f, 0], window = {stride = [2], pad = [[2, 2]], lhs_dilate = [2], rhs_dilate = [2], reverse = [false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64, precision_config = [#stablehlo<precision DEFAULT>, #stablehlo<precision DEFAULT>]} : (tensor<1x1x6xf64>, tensor<1x1x2xf64>) -> tensor<1x1x7xf64>
    return %15 : tensor<1x1x7xf64>
  }
  func.func private @closed_call(%arg0: tensor<3x4x3xf64>, %arg1: tensor<i64>, %arg2: tensor<3x4x3xf64>) -> (tensor<i64>, tensor<3x4x3xf64>) {
    %c = stablehlo.constant dense<1> : tensor<i64>
    %0 = stablehlo.add %arg1, %c : tensor<i64>
    %1 = call @_flip(%arg2) : (tensor<3x4x3xf64>) -> tensor<3x4x3xf64>
    %2 = stablehlo.reshape %arg0 : (tensor<3x4x3xf64>) -> tensor<36xf64>
    %3 = stablehlo.slice %2 [16:17] : (tensor<36xf64>) -> tensor<1xf64>
    %4 = stablehlo.reshape %3 : (tensor<1xf64>) -> tensor<f64>
    %5 = stablehlo.broadcast_in_dim %4, dims = [] : (tensor<f64>) -> tensor<3x4x3xf64>
    %6 = stablehlo.multiply %1, %5 : tensor<3x4x3xf64>
    %7 = stablehlo.sine %6 : tensor<3x4x3xf64>
    %8 = stablehlo.reshape %arg0 : (tensor<3x4x3xf64>) -> tensor<36xf64>
    %9 = stablehlo.slice %8 [16:17] : (tensor<36xf64>) -> tensor<1xf64>
    %10 = stablehlo.reshape %9 : (tensor<1xf64>) -> tensor<f64>
    %11 = stablehlo.broadcast_in_dim %10, dims = [] : (tensor<f64>) -> tensor<3x4x3xf64>
    %12 = stablehlo.multiply %7, %11 : tensor<3x4x3xf64>
    return %0, %12 : tensor<i64>, tensor<3x4x3xf64>
  }
  func.func private @_flip(%arg0: tensor<3x4x3xf64>) -> tensor<3x4x3xf64> {
    %0 = stablehlo.reverse %arg0, dims = [0] : tensor<3x4x3xf64>
    return %0 : tensor<3x4x3xf64>
  }
  func.func private @fft(%arg0: tensor<1x1x4xf64>) -> tensor<1x1x6xf64> {
    %0 = stablehlo.convert %arg0 : (tensor<1x1x4xf64>) -> tensor<1x1x4xcomplex<f64>>
    %1 = stablehlo.fft %0, type = IRFFT, length = [6] : (tensor<1x1x4xcomplex<f64>>) -> tensor<1x1x6xf64>
    return %1 : tensor<1x1x6xf64>
  }
  func.func private @_where(%arg0: tensor<i1>, %arg1: tensor<f64>, %arg2: tensor<f64>) -> tensor<f64> {
    %0 = stablehlo.select %arg0, %arg1, %arg2 : tensor<i1>, tensor<f64>
    return %0 : tensor<f64>
  }
}
