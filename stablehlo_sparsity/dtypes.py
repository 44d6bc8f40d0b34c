"""Element types, decided once for the whole library: which types are floats (differentiable), and which
integer type holds an index.

``ml_dtypes`` floats (``bfloat16``, the ``float8`` and ``float4`` types) are floats although NumPy gives them
``kind`` ``"V"``; complex types are floats too (they are differentiable).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["INT32_LIMIT", "index_dtype", "is_float", "is_real_float", "is_complex"]

#: Indices below this fit in ``int32``.
INT32_LIMIT = 2**31 - 1


def index_dtype(*limits: int) -> type:
    """``int32`` if every index below the given limits fits, else ``int64``."""
    return np.int32 if max((int(x) for x in limits), default=0) < INT32_LIMIT else np.int64


def is_real_float(dtype: Any) -> bool:
    """A real floating-point type: NumPy's and every ``ml_dtypes`` float."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return True
    if dt.kind != "V":
        return False
    import ml_dtypes

    try:
        ml_dtypes.finfo(dt)  # type: ignore[no-untyped-call, unused-ignore]
    except (ValueError, TypeError):
        return False
    return True


def is_complex(dtype: Any) -> bool:
    return bool(np.dtype(dtype).kind == "c")


def is_float(dtype: Any) -> bool:
    """A differentiable element type: real floating-point (``ml_dtypes`` floats included) or complex."""
    return is_complex(dtype) or is_real_float(dtype)
