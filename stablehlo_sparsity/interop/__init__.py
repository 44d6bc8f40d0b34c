"""stablehlo_sparsity.interop"""
