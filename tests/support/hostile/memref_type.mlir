// Buffers are not tensors.
func.func @main(%a: memref<4xf32>) -> memref<4xf32> {
  return %a : memref<4xf32>
}
