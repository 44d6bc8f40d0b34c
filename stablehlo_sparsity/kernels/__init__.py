"""Compiled kernels, shared by the analysis and the coloring: sequential loops (greedy coloring, orderings,
counting-sort fills of a CSR) written once in Python and compiled.

* :mod:`.compiled` — ``@njit``: a :class:`~.compiled.Kernel` runs its C twin when the package's native library
  has one, else numba's compiled kernel (imported on first use, cached on disk); ``SHS_KERNELS=numba`` runs numba
  everywhere;
* :mod:`.native` — the C twins: ``_kernels<EXT_SUFFIX>`` at the package root (built by ``setup.py`` from
  ``csrc/``), loaded with ctypes, bound to the numba kernel they replace.

Rank 1 in ``tests/test_layout.py``: may import ``errors`` only (and NumPy, numba, ctypes).  Beside the lattice and
the IR toolkit; the analysis and the coloring import it.
"""
