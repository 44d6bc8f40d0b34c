// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// Integer and boolean values carry no derivative; a round trip through an integer type cuts the
// dependency, a float-to-float convert keeps it.

// CHECK-LABEL: func.func @through_integers
// CHECK: stablehlo.convert %arg0 {sparsity.deps = "{}*3"} : (tensor<3xf32>) -> tensor<3xi32>
// CHECK: stablehlo.add %0, %arg1 {sparsity.deps = "{}*3"} : tensor<3xi32>
// CHECK: stablehlo.convert %1 {sparsity.deps = "{}*3"} : (tensor<3xi32>) -> tensor<3xf32>
// CHECK: stablehlo.convert %arg0 {sparsity.deps = "{0} {1} {2}"} : (tensor<3xf32>) -> tensor<3xf64>
// CHECK: stablehlo.convert %3 {sparsity.deps = "{0} {1} {2}"} : (tensor<3xf64>) -> tensor<3xf32>
// CHECK: stablehlo.add %2, %4 {sparsity.deps = "{0} {1} {2}"}
func.func @through_integers(%a: tensor<3xf32>, %i: tensor<3xi32>) -> tensor<3xf32> {
  %0 = stablehlo.convert %a : (tensor<3xf32>) -> tensor<3xi32>
  %1 = stablehlo.add %0, %i : tensor<3xi32>
  %2 = stablehlo.convert %1 : (tensor<3xi32>) -> tensor<3xf32>
  %3 = stablehlo.convert %a : (tensor<3xf32>) -> tensor<3xf64>
  %4 = stablehlo.convert %3 : (tensor<3xf64>) -> tensor<3xf32>
  %5 = stablehlo.add %2, %4 : tensor<3xf32>
  return %5 : tensor<3xf32>
}

// -----

// Complex numbers: the parts of a complex value depend on both real inputs' elements.
// CHECK-LABEL: func.func @complex
// CHECK: stablehlo.complex %arg0, %arg1 {sparsity.deps = "{0,2} {1,3}"}
func.func @complex(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.complex %a, %b : tensor<2xcomplex<f32>>
  %1 = stablehlo.abs %0 : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  return %1 : tensor<2xf32>
}

// -----

// f64, f16 and bf16 are analyzed alike.
// CHECK-LABEL: func.func @float_types
// CHECK: stablehlo.sine %arg0 {sparsity.deps = "{0} {1}"} : tensor<2xf64>
// CHECK: stablehlo.sine %arg1 {sparsity.deps = "{2} {3}"} : tensor<2xf16>
// CHECK: stablehlo.sine %arg2 {sparsity.deps = "{4} {5}"} : tensor<2xbf16>
func.func @float_types(%a: tensor<2xf64>, %b: tensor<2xf16>, %c: tensor<2xbf16>) -> (tensor<2xf64>, tensor<2xf16>, tensor<2xbf16>) {
  %0 = stablehlo.sine %a : tensor<2xf64>
  %1 = stablehlo.sine %b : tensor<2xf16>
  %2 = stablehlo.sine %c : tensor<2xbf16>
  return %0, %1, %2 : tensor<2xf64>, tensor<2xf16>, tensor<2xbf16>
}
