// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// CHLO ops that JAX emits (tan, erf, lgamma, ...) are elementwise too; chlo.is_inf is a predicate.

// CHECK-LABEL: func.func @chlo_unary
// CHECK: chlo.tan %arg0 {sparsity.deps = "{0} {1}"}
// CHECK: chlo.erf %0 {sparsity.deps = "{0} {1}"}
// CHECK: chlo.lgamma %1 {sparsity.deps = "{0} {1}"}
// CHECK: chlo.is_inf %2 {sparsity.deps = "{}*2"}
// CHECK: stablehlo.select %3, %arg0, %2 {sparsity.deps = "{0} {1}"}
func.func @chlo_unary(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = chlo.tan %a : tensor<2xf32> -> tensor<2xf32>
  %1 = chlo.erf %0 : tensor<2xf32> -> tensor<2xf32>
  %2 = chlo.lgamma %1 : tensor<2xf32> -> tensor<2xf32>
  %3 = chlo.is_inf %2 : tensor<2xf32> -> tensor<2xi1>
  %4 = stablehlo.select %3, %a, %2 : tensor<2xi1>, tensor<2xf32>
  return %4 : tensor<2xf32>
}

// -----

// CHECK-LABEL: func.func @chlo_broadcast_binary
// CHECK: chlo.broadcast_add %arg0, %arg1 {sparsity.deps = "{0,2} {1,2}"}
func.func @chlo_broadcast_binary(%a: tensor<2xf32>, %b: tensor<f32>) -> tensor<2xf32> {
  %0 = chlo.broadcast_add %a, %b : (tensor<2xf32>, tensor<f32>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
