// RUN: stablehlo-sparsity-opt %s --pass-pipeline='builtin.module(canonicalize,func.func(cse),symbol-dce,sparsity-annotate{max-elements=8})' | filecheck %s
// RUN: stablehlo-sparsity-opt %s --canonicalize --cse --symbol-dce --inline --sparsity-annotate=max-elements=8 | filecheck %s
// RUN: not stablehlo-sparsity-opt %s --sparsity-annotate --cse --sparsity-strip --pass-pipeline='' 2>&1 | filecheck %s --check-prefix=BOTH

// Our passes mix with MLIR's: cse merges the duplicated add, symbol-dce drops the dead private function,
// then the analysis annotates what is left.

// CHECK-LABEL: func.func @main
// CHECK: %[[S:.*]] = stablehlo.add %arg0, %arg0 {sparsity.deps = "{0} {1}"}
// CHECK-NOT: stablehlo.add
// CHECK: stablehlo.multiply %[[S]], %[[S]] {sparsity.deps = "{0} {1}"}
// CHECK-NOT: @dead
// BOTH: error: --pass-pipeline cannot be combined with individual pass flags
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %a : tensor<2xf32>
  %1 = stablehlo.add %a, %a : tensor<2xf32>
  %2 = stablehlo.multiply %0, %1 : tensor<2xf32>
  return %2 : tensor<2xf32>
}
func.func private @dead(%x: tensor<2xf32>) -> tensor<2xf32> {
  return %x : tensor<2xf32>
}
