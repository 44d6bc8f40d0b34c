// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §case / §if: with an unknown index the result is the union over branches; a known index selects one
// branch (the other is never reached, so its ops carry no annotation).

// CHECK-LABEL: func.func @unknown_branch
// CHECK: "stablehlo.case"(%1)
// CHECK: stablehlo.reverse %arg1, dims = [0] {sparsity.deps = "{3} {2} {1}"}
// CHECK: stablehlo.sine %arg1 {sparsity.deps = "{1} {2} {3}"}
// CHECK: }) {sparsity.deps = "{1,3} {2} {1,3}"}
func.func @unknown_branch(%p: tensor<f32>, %a: tensor<3xf32>) -> tensor<3xf32> {
  %cst = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.compare GT, %p, %cst, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
  %1 = stablehlo.convert %0 : (tensor<i1>) -> tensor<i32>
  %2 = "stablehlo.case"(%1) ({
    %3 = stablehlo.reverse %a, dims = [0] : tensor<3xf32>
    stablehlo.return %3 : tensor<3xf32>
  }, {
    %3 = stablehlo.sine %a : tensor<3xf32>
    stablehlo.return %3 : tensor<3xf32>
  }) : (tensor<i32>) -> tensor<3xf32>
  return %2 : tensor<3xf32>
}

// -----

// CHECK-LABEL: func.func @known_branch
// CHECK: "stablehlo.case"(%c)
// CHECK-NEXT: stablehlo.reverse %arg0, dims = [0] : tensor<3xf32>
// CHECK: stablehlo.sine %arg0 {sparsity.deps = "{0} {1} {2}"}
// CHECK: }) {sparsity.deps = "{0} {1} {2}"}
func.func @known_branch(%a: tensor<3xf32>) -> tensor<3xf32> {
  %c = stablehlo.constant dense<1> : tensor<i32>
  %2 = "stablehlo.case"(%c) ({
    %3 = stablehlo.reverse %a, dims = [0] : tensor<3xf32>
    stablehlo.return %3 : tensor<3xf32>
  }, {
    %3 = stablehlo.sine %a : tensor<3xf32>
    stablehlo.return %3 : tensor<3xf32>
  }) : (tensor<i32>) -> tensor<3xf32>
  return %2 : tensor<3xf32>
}

// -----

// stablehlo.if is the two-branch form.
// CHECK-LABEL: func.func @if
// CHECK: "stablehlo.if"
// CHECK: stablehlo.multiply %arg1, %1 {sparsity.deps = "{1,3} {2,3}"}
// CHECK: }) {sparsity.deps = "{1,3} {2,3}"}
func.func @if(%p: tensor<i1>, %a: tensor<2xf32>, %b: tensor<f32>) -> tensor<2xf32> {
  %0 = "stablehlo.if"(%p) ({
    stablehlo.return %a : tensor<2xf32>
  }, {
    %1 = stablehlo.broadcast_in_dim %b, dims = [] : (tensor<f32>) -> tensor<2xf32>
    %2 = stablehlo.multiply %a, %1 : tensor<2xf32>
    stablehlo.return %2 : tensor<2xf32>
  }) : (tensor<i1>) -> tensor<2xf32>
  return %0 : tensor<2xf32>
}
