// The driver writes MLIR bytecode (-o OUT.mlirbc, or --emit-bytecode) and reads it back: the round trip
// through bytecode prints the same module, injected derivative and recorded pattern included.
// RUN: stablehlo-sparsity-opt %s --sparsity-jacobian -o %t.mlirbc
// RUN: %PYTHON -c "import sys; sys.exit(not open(sys.argv[1], 'rb').read().startswith(b'ML'))" %t.mlirbc
// RUN: stablehlo-sparsity-opt %t.mlirbc | filecheck %s
// RUN: stablehlo-sparsity-opt %s --sparsity-jacobian --emit-bytecode | stablehlo-sparsity-opt - | filecheck %s
// RUN: stablehlo-sparsity-opt %s --sparsity-jacobian > %t.text.mlir
// RUN: stablehlo-sparsity-opt %t.mlirbc > %t.roundtrip.mlir
// RUN: diff %t.text.mlir %t.roundtrip.mlir
// RUN: stablehlo-sparsity-opt %t.mlirbc --emit=pattern | filecheck %s --check-prefix=PATTERN
// RUN: not stablehlo-sparsity-opt %s --emit-bytecode --emit=json 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not stablehlo-sparsity-opt %s --split-input-file -o %t.split.mlirbc 2>&1 | filecheck %s --check-prefix=SPLIT

// CHECK-LABEL: func.func @main(
// CHECK: func.func public @main_jacobian(%{{.*}}: tensor<5xf32>) -> (tensor<8xf32>
// CHECK-SAME: sparsity.derivative = {colors = dense<[0, 1, 0, 1, 0]> : tensor<5xi32>
// CHECK-SAME: row_pointers = dense<[0, 2, 4, 6, 8]> : tensor<5xi64>
// CHECK: stablehlo.gather

// PATTERN: 4 5 8

// ERR: error: --emit-bytecode writes the module's IR; it cannot be combined with --emit=json
// SPLIT: error: --emit-bytecode writes one module; it cannot be combined with --split-input-file

func.func @main(%x: tensor<5xf32>) -> tensor<4xf32> {
  %a = stablehlo.slice %x [1:5] : (tensor<5xf32>) -> tensor<4xf32>
  %b = stablehlo.slice %x [0:4] : (tensor<5xf32>) -> tensor<4xf32>
  %m = stablehlo.multiply %a, %b : tensor<4xf32>
  %s = stablehlo.sine %m : tensor<4xf32>
  return %s : tensor<4xf32>
}
