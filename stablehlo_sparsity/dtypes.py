"""Element types, decided once for the whole library: which types are floats (differentiable), and which
integer type holds an index.

``ml_dtypes`` floats (``bfloat16``, the ``float8`` and ``float4`` types) are floats although NumPy gives them
``kind`` ``"V"``; complex types are floats too (they are differentiable).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

__all__ = ["INT32_LIMIT", "index_dtype", "is_float", "is_real_float", "is_complex"]

#: Indices below this fit in ``int32``.
INT32_LIMIT = 2**31 - 1


def index_dtype(*limits: int) -> type:
    """``int32`` if every index below the given limits fits, else ``int64``."""
    for x in limits:  # (a loop, not a generator: this runs for every pattern array built)
        if int(x) >= INT32_LIMIT:
            return np.int64
    return np.int32


@functools.lru_cache(maxsize=None)
def _is_ml_float(dt: np.dtype) -> bool:
    """An ``ml_dtypes`` float (``bfloat16``, ``float8_*``, ``float4_e2m1fn`` …: NumPy kind ``"V"``)."""
    import ml_dtypes

    try:
        ml_dtypes.finfo(dt)  # type: ignore[no-untyped-call, unused-ignore]
    except (ValueError, TypeError):
        return False
    return True


def is_real_float(dtype: Any) -> bool:
    """A real floating-point type: NumPy's and every ``ml_dtypes`` float."""
    dt = np.dtype(dtype)
    return dt.kind == "f" or (dt.kind == "V" and _is_ml_float(dt))


def is_complex(dtype: Any) -> bool:
    return bool(np.dtype(dtype).kind == "c")


def is_float(dtype: Any) -> bool:
    """A differentiable element type: real floating-point (``ml_dtypes`` floats included) or complex — the one
    float predicate of the library (the analysis, the folding trust model, the importer, the checks)."""
    dt = dtype if isinstance(dtype, np.dtype) else np.dtype(dtype)
    return dt.kind in "fc" or (dt.kind == "V" and _is_ml_float(dt))
