"""Folding helpers the rules share: trust in folded values (:mod:`.exactness`) and static index maps
(:mod:`.index_maps`).  The fold pass's module-wide constant lattice is
:mod:`stablehlo_sparsity.analysis.constant_lattice`.

* :mod:`.exactness` — how far a folded float may be from what XLA computes: the trust half of the constant lattice;
* :mod:`.index_maps` — NumPy index maps of the indexing ops (gather, scatter, the dynamic slices);
* :mod:`.ranges` — integer value ranges: an interval per element of an integer or boolean value.

Rank 2 (``analysis``) in ``tests/test_layout.py``: may import the rest of ``analysis`` (values, the IR toolkit),
``lattice`` and rank 0; the rules import it, never the other way round.
"""
