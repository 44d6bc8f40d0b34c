"""Compiled kernels: a C twin when the package's native library has one, else numba's ``njit`` with an on-disk cache.

Greedy coloring is inherently sequential (each vertex looks at the colors its neighbours already took), and
so is a counting-sort fill of a CSR; such kernels are written once in Python and compiled.  ``@njit`` makes a
:class:`Kernel`: called from Python, it runs the kernel's C twin (:mod:`.native`, built from ``csrc/kernels.c``:
the kernels of the default ``sparse_jacobian`` / ``sparse_hessian`` path), which computes exactly what the numba
kernel computes and loads in microseconds; every other kernel runs under numba, imported on the first call that
needs it (importing numba and loading a cached kernel costs about 0.6 s per process: a process whose kernels all
have twins never pays it).  ``cache=True`` stores numba's machine code next to the sources, so its compilation
cost is paid once per machine, not once per process.

``SHS_KERNELS=numba`` in the environment runs every kernel under numba (comparisons, and an escape hatch);
without the library (a source checkout that was not built with ``pip install -e .``) numba runs them all too.
"""

from __future__ import annotations

import functools
import os
from typing import Any

__all__ = ["njit", "Kernel", "KERNELS_ENV", "kernels_mode", "native_kernels", "kernels_start_free"]

#: The environment variable that chooses the kernels: ``auto`` (default: C twins where they exist) or ``numba``.
KERNELS_ENV = "SHS_KERNELS"
_MODES = ("auto", "numba")
_UNRESOLVED: Any = object()


def kernels_mode() -> str:
    """``SHS_KERNELS`` (read at every call, so that a test or a session may switch): ``"auto"`` or ``"numba"``."""
    mode = os.environ.get(KERNELS_ENV, "auto").strip().lower() or "auto"
    if mode not in _MODES:
        from ..errors import InputError

        raise InputError(f"{KERNELS_ENV}={mode!r} is not a kernel choice: set it to 'numba' or 'auto', or unset it")
    return mode


def native_kernels() -> bool:
    """Whether the C twins run in this process (the library is loaded and ``SHS_KERNELS`` allows them): then a
    kernel with a twin costs nothing to start, where numba's first kernel costs a good fraction of a second."""
    from .native import library

    return kernels_mode() == "auto" and library() is not None


def kernels_start_free() -> bool:
    """Whether calling a kernel with a twin costs nothing to start here: its C twin runs (:func:`native_kernels`), or
    this process has imported numba already.  A caller with a NumPy fallback takes the kernel only then (a one-off
    detection would otherwise pay numba's import for a few milliseconds saved)."""
    import sys

    return native_kernels() or "numba" in sys.modules


def _numba_njit():
    try:
        from numba import njit as _njit
    except ImportError as e:  # pragma: no cover - numba is a declared dependency
        raise ImportError("stablehlo_sparsity needs numba for its compiled kernels (pip install numba)") from e
    return _njit


class Kernel:
    """A compiled kernel: its C twin when there is one, else numba's ``njit(cache=True, nogil=True)`` of ``py_func``.

    Kernels that call other kernels are compiled by numba, which types a global ``Kernel`` as its numba dispatcher
    (``_numba_type_``): a callee keeps working inside numba code whether or not it has a twin."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.py_func = fn
        self._dispatcher = None
        self._twin = _UNRESOLVED

    @property
    def dispatcher(self):
        """numba's compiled kernel (numba is imported, and the kernel loaded from its cache, on first use)."""
        if self._dispatcher is None:
            self._dispatcher = _numba_njit()(cache=True, nogil=True)(self.py_func)
        return self._dispatcher

    @property
    def _numba_type_(self):  # how numba types this object as a global of a kernel it compiles
        return self.dispatcher._numba_type_

    @property
    def twin(self):
        """The C twin (:mod:`.native`), or ``None`` when the library is missing or has none for this kernel."""
        if self._twin is _UNRESOLVED:
            from .native import twin

            self._twin = twin(f"{self.py_func.__module__}.{self.py_func.__qualname__}")
        return self._twin

    def __call__(self, *args, **kwargs):
        if not kwargs and kernels_mode() == "auto":
            twin = self.twin
            if twin is not None:
                out = twin(*args)
                if out is not NotImplemented:
                    return out
        return self.dispatcher(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<compiled kernel {self.py_func.__module__}.{self.py_func.__qualname__}>"


def njit(fn) -> Kernel:
    return Kernel(fn)
