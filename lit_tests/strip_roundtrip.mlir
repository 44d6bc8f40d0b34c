// Annotating then stripping gives back exactly the module the parser produced (custom and generic form).
// RUN: stablehlo-sparsity-opt %s --split-input-file > %t.plain
// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate --sparsity-strip > %t.roundtrip
// RUN: diff %t.plain %t.roundtrip
// RUN: stablehlo-sparsity-opt %s --split-input-file --mlir-print-op-generic > %t.generic
// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-fold-constants --sparsity-annotate --sparsity-strip --mlir-print-op-generic > %t.generic_roundtrip
// RUN: diff %t.generic %t.generic_roundtrip
// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate | filecheck %s
// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate --sparsity-strip | filecheck %s --check-prefix=STRIP

// CHECK: sparsity.deps
// STRIP-NOT: sparsity.
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  %1 = call @roll(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %c = stablehlo.constant dense<[1.0, 0.0, 1.0, 0.0]> : tensor<4xf32>
  %2 = stablehlo.multiply %1, %c : tensor<4xf32>
  return %2 : tensor<4xf32>
}
func.func private @roll(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.slice %x [3:4] : (tensor<4xf32>) -> tensor<1xf32>
  %1 = stablehlo.slice %x [0:3] : (tensor<4xf32>) -> tensor<3xf32>
  %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<1xf32>, tensor<3xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// A JAX-style module whose function already has (empty) argument attribute lists.
module @jit_g attributes {mhlo.num_partitions = 1 : i32} {
  func.func public @main(%arg0: tensor<2xf32> {mhlo.sharding = "{replicated}"}, %arg1: tensor<2xf32>) -> (tensor<2xf32> {jax.result_info = "result"}) {
    %0 = stablehlo.multiply %arg0, %arg1 : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}

// -----

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{}, {}], function_type = (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>, sym_name = "main"}> ({
  ^bb0(%a: tensor<2xf32>, %b: tensor<2xf32>):
    %0 = "stablehlo.add"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
    "func.return"(%0) : (tensor<2xf32>) -> ()
  }) : () -> ()
}) : () -> ()
