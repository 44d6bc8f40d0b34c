// A spatial dimension index of 100000 in dim_numbers: StableHLO's parser allocates memory in proportion to
// the index before rejecting it (with 2147483648 it takes ~17 GB and 40 s: an upstream parser issue,
// found by scripts/fuzz_driver.py); at 100000 it is cheap and must be a clear error.
func.func @main(%x: tensor<1x1x5xf32>, %k: tensor<1x1x3xf32>) -> tensor<1x1x3xf32> {
  %0 = stablehlo.convolution(%x, %k) dim_numbers = [b, f, 100000]x[o, i, 0]->[b, f, 0], window = {stride = [1], pad = [[0, 0]], lhs_dilate = [1], rhs_dilate = [1], reverse = [false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x1x5xf32>, tensor<1x1x3xf32>) -> tensor<1x1x3xf32>
  return %0 : tensor<1x1x3xf32>
}
