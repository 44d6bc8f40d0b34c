"""stablehlo_sparsity.modules"""
