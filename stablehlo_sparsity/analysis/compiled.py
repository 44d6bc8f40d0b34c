"""``njit`` with an on-disk cache, and a clear message when numba is missing.

Greedy coloring is inherently sequential (each vertex looks at the colors its neighbours already took), and
so is a counting-sort fill of a CSR; such kernels are compiled with numba.  ``cache=True`` stores the machine
code next to the sources, so the compilation cost is paid once per machine, not once per process.  Importing
numba takes a while: a module imports its kernels where it first needs them.
"""

from __future__ import annotations

try:
    from numba import njit as _njit
except ImportError as e:  # pragma: no cover - numba is a declared dependency
    raise ImportError("stablehlo_sparsity needs numba for its compiled kernels (pip install numba)") from e


def njit(fn):
    return _njit(cache=True, nogil=True)(fn)
