// RUN: stablehlo-sparsity-opt %s --emit=pattern | filecheck %s --check-prefix=MTX
// RUN: stablehlo-sparsity-opt %s --emit=json | filecheck %s --check-prefix=JSON
// RUN: stablehlo-sparsity-opt %s --emit=picture | filecheck %s --check-prefix=PIC
// RUN: stablehlo-sparsity-opt %s --emit=pattern -o %t.mtx
// RUN: filecheck %s --check-prefix=MTX --input-file %t.mtx

// --emit=pattern writes the Jacobian pattern in MatrixMarket coordinate format (1-based), --emit=json
// shapes, nnz and rows, --emit=picture a text picture.  Here y_i = x_{i-1} - 2 x_i + x_{i+1} (tridiagonal).

// MTX: %%MatrixMarket matrix coordinate pattern general
// MTX-NEXT: % Jacobian sparsity of @main
// MTX-NEXT: 4 4 10
// MTX-NEXT: 1 1
// MTX-NEXT: 1 2
// MTX-NEXT: 2 1
// MTX-NEXT: 2 2
// MTX-NEXT: 2 3
// MTX-NEXT: 3 2
// MTX-NEXT: 3 3
// MTX-NEXT: 3 4
// MTX-NEXT: 4 3
// MTX-NEXT: 4 4
// MTX-NOT: {{.}}

// JSON: {"entry": "main", "shape": [4, 4], "nnz": 10, "inputs": [{"shape": [4], "offset": 0}], "outputs": [{"shape": [4], "offset": 0}], "rows": {{\[\[}}0, 1], [0, 1, 2], [1, 2, 3], [2, 3]]}

// PIC: @main: 4x4 Jacobian pattern, nnz=10
// PIC-NEXT: ●●⋅⋅
// PIC-NEXT: ●●●⋅
// PIC-NEXT: ⋅●●●
// PIC-NEXT: ⋅⋅●●

func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %left = stablehlo.pad %x, %z, low = [1], high = [-1], interior = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %right = stablehlo.pad %x, %z, low = [-1], high = [1], interior = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %two = stablehlo.constant dense<2.0> : tensor<4xf32>
  %mid = stablehlo.multiply %two, %x : tensor<4xf32>
  %0 = stablehlo.add %left, %right : tensor<4xf32>
  %1 = stablehlo.subtract %0, %mid : tensor<4xf32>
  return %1 : tensor<4xf32>
}
