// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// Binary elementwise ops: element i depends on both operands' element i (the union).

// CHECK-LABEL: func.func @add
// CHECK-SAME: %arg0: tensor<3xf32> {sparsity.offset = 0 : i64}, %arg1: tensor<3xf32> {sparsity.offset = 3 : i64}
// CHECK: stablehlo.add %arg0, %arg1 {sparsity.deps = "{0,3} {1,4} {2,5}"}
func.func @add(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.add %a, %b : tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @arith
// CHECK: stablehlo.subtract %arg0, %arg1 {sparsity.deps = "{0,2} {1,3}"}
// CHECK: stablehlo.multiply %arg0, %arg1 {sparsity.deps = "{0,2} {1,3}"}
// CHECK: stablehlo.divide %0, %1 {sparsity.deps = "{0,2} {1,3}"}
// CHECK: stablehlo.power %arg0, %arg1 {sparsity.deps = "{0,2} {1,3}"}
// CHECK: stablehlo.atan2 %arg0, %arg1 {sparsity.deps = "{0,2} {1,3}"}
// CHECK: stablehlo.maximum %arg0, %arg1 {sparsity.deps = "{0,2} {1,3}"}
// CHECK: stablehlo.minimum %arg0, %arg1 {sparsity.deps = "{0,2} {1,3}"}
func.func @arith(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.subtract %a, %b : tensor<2xf32>
  %1 = stablehlo.multiply %a, %b : tensor<2xf32>
  %2 = stablehlo.divide %0, %1 : tensor<2xf32>
  %3 = stablehlo.power %a, %b : tensor<2xf32>
  %4 = stablehlo.atan2 %a, %b : tensor<2xf32>
  %5 = stablehlo.maximum %a, %b : tensor<2xf32>
  %6 = stablehlo.minimum %a, %b : tensor<2xf32>
  %7 = stablehlo.add %2, %3 : tensor<2xf32>
  %8 = stablehlo.add %4, %5 : tensor<2xf32>
  %9 = stablehlo.add %7, %8 : tensor<2xf32>
  %10 = stablehlo.add %9, %6 : tensor<2xf32>
  return %10 : tensor<2xf32>
}

// -----

// The same operand twice: x * x still depends only on x.
// CHECK-LABEL: func.func @square
// CHECK: stablehlo.multiply %arg0, %arg0 {sparsity.deps = "{0} {1}"}
func.func @square(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.multiply %a, %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

// Unions accumulate through a chain: y = (a + b) * c.
// CHECK-LABEL: func.func @three_inputs
// CHECK: stablehlo.multiply {{.*}} {sparsity.deps = "{0,2,4} {1,3,5}"}
func.func @three_inputs(%a: tensor<2xf32>, %b: tensor<2xf32>, %c: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.add %a, %b : tensor<2xf32>
  %1 = stablehlo.multiply %0, %c : tensor<2xf32>
  return %1 : tensor<2xf32>
}
