"""MLIR passes (Python-defined, run by jaxlib's PassManager), installed as ``stablehlo_sparsity.passes``."""
