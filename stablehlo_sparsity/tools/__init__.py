"""stablehlo_sparsity.tools"""
