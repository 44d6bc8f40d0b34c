"""Element-type predicates the importer shares: ``bfloat16`` and the other ``ml_dtypes`` floats (``float8_*``,
``float4_e2m1fn`` …) are floats, although NumPy gives them ``kind`` ``"V"`` — ``np.dtype(d).kind in "fc"``
misses them."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["is_float", "is_real_float", "is_complex"]


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
