"""Prepared derivatives read back from disk: ``SparseJacobian.save(path)`` / ``SparseHessian.save(path)`` write
one ``.npz`` (the pattern, the coloring, the decompression tables and the serialized XLA program); :func:`load`
returns the object, ready to call without detection, coloring or compilation.  The format lives in
:mod:`stablehlo_sparsity.prepared.saving`; :func:`load` is here, above both prepared classes (the base class
below them does not import them back)."""

from __future__ import annotations

from .errors import InputError
from .hessian import SparseHessian
from .jacobian import SparseJacobian
from .prepared.saving import ForwardOnlyWarning, read_npz

__all__ = ["load", "ForwardOnlyWarning"]


def load(path):
    """Read a :class:`~stablehlo_sparsity.SparseJacobian` / :class:`~stablehlo_sparsity.SparseHessian` written
    by ``.save(path)``."""
    st = read_npz(path)
    classes = {"SparseJacobian": SparseJacobian, "SparseHessian": SparseHessian}
    cls = classes.get(st["meta"].get("class"))
    if cls is None:
        raise InputError(f"{path}: unknown saved class {st['meta'].get('class')!r}")
    obj = cls.__new__(cls)
    obj.__setstate__(st)
    return obj
