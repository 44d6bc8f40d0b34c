// RUN: stablehlo-sparsity-opt %s --split-input-file --sparsity-annotate | filecheck %s

// §custom_call: known targets are rules as data.

// Sharding markers are the identity.
// CHECK-LABEL: func.func @sharding_marker
// CHECK: stablehlo.custom_call @Sharding(%arg0) {sparsity.deps = "{0} {1} {2}"}
func.func @sharding_marker(%a: tensor<3xf32>) -> tensor<3xf32> {
  %0 = stablehlo.custom_call @Sharding(%a) : (tensor<3xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// LU with partial pivoting (LAPACK getrf) of a 2x2 matrix: the pivot choice is piecewise constant, so
// U00 and L10 depend on column 0, U01 on column 1, U11 on everything.  Pivots and info are integers.
// CHECK-LABEL: func.func @lu
// CHECK: stablehlo.custom_call @lapack_sgetrf_ffi(%arg0)
// CHECK-SAME: sparsity.deps = ["{0,2} {1,3} {0,2} {0..3}", "{}*2", "{}"]
func.func @lu(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %0:3 = stablehlo.custom_call @lapack_sgetrf_ffi(%a) {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "0"}} : (tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2xi32>, tensor<i32>)
  return %0#0 : tensor<2x2xf32>
}

// -----

// Batched: the two 2x2 matrices stay independent.
// CHECK-LABEL: func.func @lu_batched
// CHECK: stablehlo.custom_call @lapack_sgetrf_ffi(%arg0)
// CHECK-SAME: sparsity.deps = ["{0,2} {1,3} {0,2} {0..3} {4,6} {5,7} {4,6} {4..7}", "{}*4", "{}*2"]
func.func @lu_batched(%a: tensor<2x2x2xf32>) -> tensor<2x2x2xf32> {
  %0:3 = stablehlo.custom_call @lapack_sgetrf_ffi(%a) {mhlo.backend_config = {}, mhlo.frontend_attributes = {num_batch_dims = "1"}} : (tensor<2x2x2xf32>) -> (tensor<2x2x2xf32>, tensor<2x2xi32>, tensor<2xi32>)
  return %0#0 : tensor<2x2x2xf32>
}
