"""Prepared derivatives read back from disk: ``SparseJacobian.save(path)`` / ``SparseHessian.save(path)`` write
one ``.npz`` (the pattern, the coloring, the decompression tables and the serialized XLA program); :func:`load`
returns the object, ready to call without detection, coloring or compilation."""

from __future__ import annotations

import numpy as np

from .errors import InputError
from .hessian import SparseHessian
from .jacobian import SparseJacobian

__all__ = ["load"]


def load(path):
    """Read a :class:`SparseJacobian` / :class:`~stablehlo_sparsity.SparseHessian` written by ``.save(path)``."""
    import json

    try:
        with np.load(path, allow_pickle=False) as z:
            st = {k: z[k] for k in z.files}
    except (OSError, ValueError) as e:
        raise InputError(f"could not read a saved sparse Jacobian/Hessian from {path}: {e}") from None
    if "meta" not in st or "program" not in st:
        raise InputError(f"{path} is not a saved sparse Jacobian/Hessian (no meta/program entries)")
    st["meta"] = json.loads(st["meta"].tobytes().decode())
    st["program"] = st["program"].tobytes()
    classes = {"SparseJacobian": SparseJacobian, "SparseHessian": SparseHessian}
    cls = classes.get(st["meta"].get("class"))
    if cls is None:
        raise InputError(f"{path}: unknown saved class {st['meta'].get('class')!r}")
    obj = cls.__new__(cls)
    obj.__setstate__(st)
    return obj
