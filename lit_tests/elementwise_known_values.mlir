// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// Constants are values: multiplying by a known zero drops the dependency, and a known select predicate
// picks one side per element.

// CHECK-LABEL: func.func @mul_by_known_zeros
// CHECK-SAME: -> (tensor<4xf32> {sparsity.deps = "{0} {} {2} {}", sparsity.offset = 0 : i64})
// CHECK: stablehlo.multiply %arg0, %cst {sparsity.deps = "{0} {} {2} {}"}
// CHECK: stablehlo.multiply %cst_0, %arg0 {sparsity.deps = "{}*4"}
// CHECK: stablehlo.add %0, %1 {sparsity.deps = "{0} {} {2} {}"}
func.func @mul_by_known_zeros(%a: tensor<4xf32>) -> tensor<4xf32> {
  %m = stablehlo.constant dense<[1.0, 0.0, -2.0, 0.0]> : tensor<4xf32>
  %0 = stablehlo.multiply %a, %m : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<4xf32>
  %1 = stablehlo.multiply %z, %a : tensor<4xf32>
  %2 = stablehlo.add %0, %1 : tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// CHECK-LABEL: func.func @select_known_predicate
// CHECK: stablehlo.select %c, %arg0, %arg1 {sparsity.deps = "{0} {4} {2}"}
func.func @select_known_predicate(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %p = stablehlo.constant dense<[true, false, true]> : tensor<3xi1>
  %0 = stablehlo.select %p, %a, %b : tensor<3xi1>, tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A predicate computed from constants is known too (the constant lattice folds compare).
// CHECK-LABEL: func.func @select_folded_predicate
// CHECK: stablehlo.compare LT
// CHECK: stablehlo.select {{.*}} {sparsity.deps = "{0} {1} {6} {7}"}
func.func @select_folded_predicate(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %i = stablehlo.iota dim = 0 : tensor<4xi32>
  %two = stablehlo.constant dense<2> : tensor<4xi32>
  %p = stablehlo.compare LT, %i, %two, SIGNED : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi1>
  %0 = stablehlo.select %p, %a, %b : tensor<4xi1>, tensor<4xf32>
  return %0 : tensor<4xf32>
}
