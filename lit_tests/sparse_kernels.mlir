// RUN: stablehlo-sparsity-opt %s --wrt=all --split-input-file --sparsity-annotate | filecheck %s

// Sparse-matrix kernels (rules/sparse_kernels.py): jaxlib's CSR product on CPU and cuSPARSE's SpMV.  The matrix is
// 3x4 with 4 stored values d0..d3 (inputs 0..3): row 0 holds columns 0 and 3, row 1 column 1, row 2 column 2;
// x is inputs 4..7.

// A BCSR product on CPU: operands (data, indptr, indices, x); y[i] reads the values of row i and x at their columns.
// CHECK-LABEL: func.func @cpu_csr_matvec
// CHECK: stablehlo.custom_call @cpu_csr_sparse_dense_ffi
// CHECK-SAME: sparsity.deps = "{0,1,4,7} {2,5} {3,6}"
func.func @cpu_csr_matvec(%d: tensor<4xf32>, %x: tensor<4xf32>) -> tensor<3xf32> {
  %indptr = stablehlo.constant dense<[0, 2, 3, 4]> : tensor<4xi32>
  %indices = stablehlo.constant dense<[0, 3, 1, 2]> : tensor<4xi32>
  %0 = stablehlo.custom_call @cpu_csr_sparse_dense_ffi(%d, %indptr, %indices, %x) {backend_config = "", mhlo.backend_config = {}, operand_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>], result_layouts = [dense<0> : tensor<1xindex>]} : (tensor<4xf32>, tensor<4xi32>, tensor<4xi32>, tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// A known exact zero among the stored values reads nothing of x (d1 = 0: y0 no longer reads x3).
// CHECK-LABEL: func.func @cpu_csr_known_zero
// CHECK: stablehlo.custom_call @cpu_csr_sparse_dense_ffi
// CHECK-SAME: sparsity.deps = "{0} {1} {2}"
func.func @cpu_csr_known_zero(%x: tensor<4xf32>) -> tensor<3xf32> {
  %d = stablehlo.constant dense<[1.0, 0.0, 2.0, 3.0]> : tensor<4xf32>
  %indptr = stablehlo.constant dense<[0, 2, 3, 4]> : tensor<4xi32>
  %indices = stablehlo.constant dense<[0, 3, 1, 2]> : tensor<4xi32>
  %0 = stablehlo.custom_call @cpu_csr_sparse_dense_ffi(%d, %indptr, %indices, %x) {backend_config = "", mhlo.backend_config = {}} : (tensor<4xf32>, tensor<4xi32>, tensor<4xi32>, tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

// cuSPARSE SpMV with op(A) = A^T (the last int32 of the opaque descriptor is CUSPARSE_OPERATION_TRANSPOSE):
// operands (data, indices, indptr, x), x has 3 elements (inputs 4..6), y = A^T x has 4; the workspace (i8) none.
// CHECK-LABEL: func.func @cusparse_csr_matvec_transposed
// CHECK: stablehlo.custom_call @cusparse_csr_matvec_ffi
// CHECK-SAME: sparsity.deps = ["{0,4} {2,5} {3,6} {1,4}", "{}*16"]
func.func @cusparse_csr_matvec_transposed(%d: tensor<4xf32>, %x: tensor<3xf32>) -> tensor<4xf32> {
  %indptr = stablehlo.constant dense<[0, 2, 3, 4]> : tensor<4xi32>
  %indices = stablehlo.constant dense<[0, 3, 1, 2]> : tensor<4xi32>
  %0:2 = stablehlo.custom_call @cusparse_csr_matvec_ffi(%d, %indices, %indptr, %x) {mhlo.backend_config = {opaque = "\00\00\00\00\02\00\00\00\03\00\00\00\04\00\00\00\04\00\00\00\01\00\00\00\00\00\00\00\00\00\00\00\03\00\00\00\00\00\00\00\04\00\00\00\01\00\00\00"}, operand_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>], result_layouts = [dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>]} : (tensor<4xf32>, tensor<4xi32>, tensor<4xi32>, tensor<3xf32>) -> (tensor<4xf32>, tensor<16xi8>)
  return %0#0 : tensor<4xf32>
}

// -----

// Indices passed as arguments are unknown: every stored value may sit anywhere (conservative, with a warning).
// CHECK-LABEL: func.func @cpu_csr_traced_indices
// CHECK: stablehlo.custom_call @cpu_csr_sparse_dense_ffi
// CHECK-SAME: sparsity.deps = "{0..7}*3"
func.func @cpu_csr_traced_indices(%d: tensor<4xf32>, %x: tensor<4xf32>, %indptr: tensor<4xi32>, %indices: tensor<4xi32>) -> tensor<3xf32> {
  %0 = stablehlo.custom_call @cpu_csr_sparse_dense_ffi(%d, %indptr, %indices, %x) {backend_config = "", mhlo.backend_config = {}} : (tensor<4xf32>, tensor<4xi32>, tensor<4xi32>, tensor<4xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
