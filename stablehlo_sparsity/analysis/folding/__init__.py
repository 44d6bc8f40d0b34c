"""Folding helpers the rules share: trust in folded values (:mod:`.exactness`) and static index maps
(:mod:`.index_maps`).  The fold pass's module-wide constant lattice is
:mod:`stablehlo_sparsity.analysis.constant_lattice`."""
