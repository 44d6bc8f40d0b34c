"""Prepared derivatives read back from disk: ``SparseJacobian.save(path)`` / ``SparseHessian.save(path)`` write
one ``.npz`` (the pattern, the coloring, the decompression tables and the serialized XLA program); :func:`load`
returns the object, ready to call without detection, coloring or compilation.  The code lives in
:mod:`stablehlo_sparsity.prepared` (:mod:`~stablehlo_sparsity.prepared.saving`); this module keeps the old
import path."""

from __future__ import annotations

from .prepared.base import load
from .prepared.saving import ForwardOnlyWarning

__all__ = ["load", "ForwardOnlyWarning"]
