// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate | filecheck %s

// func.call analyzes the callee on the caller's lattices.  A private function reached from several
// call sites is annotated with the union over all of them (what holds at any call).

// CHECK-LABEL: func.func @roll_twice
// CHECK: call @roll(%arg0) {sparsity.deps = "{2} {0} {1}"}
// CHECK: call @roll(%0) {sparsity.deps = "{1} {2} {0}"}
// CHECK-LABEL: func.func private @roll
// CHECK: stablehlo.slice %arg0 [2:3] {sparsity.deps = "{1,2}"}
// CHECK: stablehlo.slice %arg0 [0:2] {sparsity.deps = "{0,2} {0,1}"}
// CHECK: stablehlo.concatenate %0, %1, dim = 0 {sparsity.deps = "{1,2} {0,2} {0,1}"}
func.func @roll_twice(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = call @roll(%a) : (tensor<3xf32>) -> tensor<3xf32>
  %1 = call @roll(%0) : (tensor<3xf32>) -> tensor<3xf32>
  return %1 : tensor<3xf32>
}
func.func private @roll(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.slice %x [2:3] : (tensor<3xf32>) -> tensor<1xf32>
  %1 = stablehlo.slice %x [0:2] : (tensor<3xf32>) -> tensor<2xf32>
  %2 = stablehlo.concatenate %0, %1, dim = 0 : (tensor<1xf32>, tensor<2xf32>) -> tensor<3xf32>
  return %2 : tensor<3xf32>
}

// -----

// Nested calls with several results; an unused private function gets no annotation.
// CHECK-LABEL: func.func @nested
// CHECK: %0:2 = call @split(%arg0) {sparsity.deps = ["{0}", "{1}"]}
// CHECK-LABEL: func.func private @split
// CHECK: call @first(%arg0) {sparsity.deps = "{0}"}
// CHECK-LABEL: func.func private @first
// CHECK-LABEL: func.func private @unused
// CHECK-NEXT: stablehlo.negate %arg0 : tensor<2xf32>
func.func @nested(%a: tensor<2xf32>) -> tensor<1xf32> {
  %0:2 = call @split(%a) : (tensor<2xf32>) -> (tensor<1xf32>, tensor<1xf32>)
  %1 = stablehlo.multiply %0#0, %0#1 : tensor<1xf32>
  return %1 : tensor<1xf32>
}
func.func private @split(%x: tensor<2xf32>) -> (tensor<1xf32>, tensor<1xf32>) {
  %0 = call @first(%x) : (tensor<2xf32>) -> tensor<1xf32>
  %1 = stablehlo.slice %x [1:2] : (tensor<2xf32>) -> tensor<1xf32>
  return %0, %1 : tensor<1xf32>, tensor<1xf32>
}
func.func private @first(%x: tensor<2xf32>) -> tensor<1xf32> {
  %0 = stablehlo.slice %x [0:1] : (tensor<2xf32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}
func.func private @unused(%x: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.negate %x : tensor<2xf32>
  return %0 : tensor<2xf32>
}
