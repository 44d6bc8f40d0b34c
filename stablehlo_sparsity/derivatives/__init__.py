"""stablehlo_sparsity.derivatives"""
