// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §cholesky (lower): L00 depends on a00 only, L10 on a00 and a10.  (The upper triangle's values are
// implementation-defined, and L11 is checked loosely: either is sound when conservative.)
// CHECK-LABEL: func.func @cholesky
// CHECK: stablehlo.cholesky %arg0, lower = true
// CHECK-SAME: sparsity.deps = "{0} {{[^ ]+}} {0,2} {{[^"]+}}"
func.func @cholesky(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0 = stablehlo.cholesky %a, lower = true : tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}

// -----

// §triangular_solve with a lower-triangular 2x2 matrix: x0 depends on a00 and b0; x1 on everything
// in the lower triangle and both of b.
// CHECK-LABEL: func.func @triangular_solve
// CHECK: "stablehlo.triangular_solve"
// CHECK-SAME: sparsity.deps = "{0,4} {0,2..5}"
func.func @triangular_solve(%a: tensor<2x2xf32>, %b: tensor<2x1xf32>) -> tensor<2x1xf32> {
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<2x2xf32>, tensor<2x1xf32>) -> tensor<2x1xf32>
  return %0 : tensor<2x1xf32>
}

// -----

// §fft mixes every element along the transformed dimension.
// CHECK-LABEL: func.func @fft
// CHECK: stablehlo.fft %0, type = FFT, length = [4] {sparsity.deps = "{0..3}*4"}
func.func @fft(%a: tensor<4xf32>) -> tensor<4xcomplex<f32>> {
  %0 = stablehlo.convert %a : (tensor<4xf32>) -> tensor<4xcomplex<f32>>
  %1 = stablehlo.fft %0, type = FFT, length = [4] : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  return %1 : tensor<4xcomplex<f32>>
}
