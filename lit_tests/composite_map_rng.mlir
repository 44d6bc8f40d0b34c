// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// §composite is analyzed through its decomposition function (annotated like any callee).
// CHECK-LABEL: func.func @composite
// CHECK: stablehlo.composite "my.softplus" %arg0 {decomposition = @softplus_impl, sparsity.deps = "{0} {1} {2}"}
// CHECK-LABEL: func.func private @softplus_impl
// CHECK: stablehlo.exponential %arg0 {sparsity.deps = "{0} {1} {2}"}
func.func @composite(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.composite "my.softplus" %a {decomposition = @softplus_impl} : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
func.func private @softplus_impl(%x: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.exponential %x : tensor<3xf32>
  %1 = stablehlo.log_plus_one %0 : tensor<3xf32>
  return %1 : tensor<3xf32>
}

// -----

// §map applies its scalar body elementwise.
// CHECK-LABEL: func.func @map
// CHECK: "stablehlo.map"
// CHECK: }) {sparsity.deps = "{0,3} {1,4} {2,5}"}
func.func @map(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %0 = "stablehlo.map"(%a, %b) <{dimensions = array<i64: 0>}> ({
  ^bb0(%x: tensor<f32>, %y: tensor<f32>):
    %m = stablehlo.multiply %x, %y : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// Random bits are integers: no derivative flows through them.
// CHECK-LABEL: func.func @random_bits
// CHECK: stablehlo.rng_bit_generator %arg0, algorithm = DEFAULT {sparsity.deps = ["{}*2", "{}*2"]}
// CHECK: stablehlo.multiply %0, %arg1 {sparsity.deps = "{2} {3}"}
func.func @random_bits(%k: tensor<2xui64>, %a: tensor<2xf32>) -> tensor<2xf32> {
  %s, %bits = stablehlo.rng_bit_generator %k, algorithm = DEFAULT : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2xui32>)
  %f = stablehlo.convert %bits : (tensor<2xui32>) -> tensor<2xf32>
  %0 = stablehlo.multiply %f, %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}
