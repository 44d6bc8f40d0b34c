// 2^32 x 2^32 elements: the element count overflows 64-bit arithmetic (2^64 wraps to 0).
func.func @main(%a: tensor<4294967296x4294967296xf32>) -> tensor<4294967296x4294967296xf32> {
  %0 = stablehlo.sine %a : tensor<4294967296x4294967296xf32>
  return %0 : tensor<4294967296x4294967296xf32>
}
