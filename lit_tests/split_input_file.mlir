// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate | filecheck %s
// RUN: stablehlo-sparsity-opt - --split-input-file --sparsity-annotate < %s | filecheck %s
// RUN: stablehlo-sparsity-opt %s --split-input-file --mlir-print-debuginfo | filecheck %s --check-prefix=LOC
// RUN: not stablehlo-sparsity-opt - --split-input-file < %s --entry=x --sparsity-annotate 2>&1 | filecheck %s --check-prefix=STDIN

// --split-input-file processes each chunk between `// -----` lines as its own module, prints the
// results separated the same way, and keeps the original file's line numbers in locations.

// CHECK-LABEL: func.func @first
// CHECK: // -----
// CHECK-LABEL: func.func @second
// CHECK: // -----
// CHECK-LABEL: func.func @third
// CHECK-NOT: // -----

// LOC: loc("{{.*}}split_input_file.mlir":[[# @LINE + 1]]:1)
func.func @first(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}

// -----

// LOC: loc("{{.*}}split_input_file.mlir":[[# @LINE + 1]]:1)
func.func @second(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}

// -----
// A chunk with several top-level functions is wrapped in a module, like mlir-opt does.
// LOC: loc("{{.*}}split_input_file.mlir":[[# @LINE + 2]]:1)
// STDIN: <stdin>:[[# @LINE + 1]]:1: error: no entry function '@x'
func.func @third(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = call @helper(%a) : (tensor<2xf32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
func.func private @helper(%a: tensor<2xf32>) -> tensor<2xf32> {
  return %a : tensor<2xf32>
}
