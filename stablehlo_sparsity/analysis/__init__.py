"""stablehlo_sparsity.analysis"""
