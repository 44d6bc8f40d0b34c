"""Errors and warnings.  Every error that concerns an op names the op and its source location."""

from __future__ import annotations

import re

__all__ = [
    "SparsityError",
    "UnsupportedOpError",
    "UnsupportedTypeError",
    "DynamicShapeError",
    "PatternTooLargeError",
    "InputError",
    "LoweringError",
    "SparsityWarning",
    "format_location",
]

_FILE_LOC = re.compile(r'"([^"]+)":(\d+):(\d+)')


def format_location(loc) -> str:
    """``file:line:col`` from an MLIR location (the innermost file location it mentions), or ``<unknown>``."""
    if loc is None:
        return "<unknown>"
    text = str(loc)
    m = _FILE_LOC.findall(text)
    if m:
        # callsite(callee at caller): the first file location is the innermost frame — the user's own line
        # in a JAX-lowered module, not the outermost caller (a test runner or ``<module>``)
        f, line, col = m[0]
        return f"{f}:{line}:{col}"
    inner = re.match(r'loc\((.*)\)$', text)
    return inner.group(1) if inner else text


class SparsityError(Exception):
    """Base class of every error this package raises on bad input."""

    def __init__(self, message: str, location: str | None = None):
        super().__init__(message if location is None else f"{location}: {message}")
        self.message = message
        self.location = location


class UnsupportedOpError(SparsityError):
    """An op with no sparsity rule (pass ``on_unknown="conservative"`` to opt into the dense fallback)."""

    def __init__(self, op_name: str, location: str | None = None, detail: str = "", *,
                 conservative_helps: bool = True):
        msg = f"no sparsity rule for op '{op_name}'"
        if detail:
            msg += f" ({detail})"
        if conservative_helps:  # (not when the dense fallback cannot apply either, e.g. a shape change)
            msg += "; pass on_unknown='conservative' to treat it as dense"
        super().__init__(msg, location)
        self.op_name = op_name


class UnsupportedTypeError(SparsityError):
    """An element type the analysis cannot represent (e.g. f8 or i4)."""


class DynamicShapeError(SparsityError):
    """A tensor with a dynamic (``?``) dimension: patterns need static shapes."""


class PatternTooLargeError(SparsityError):
    """The pattern would not fit in the configured memory budget."""


class InputError(SparsityError):
    """Malformed input: bad argument shapes, unknown entry function, unparsable module."""


class LoweringError(InputError):
    """JAX could not trace or lower the function with the given arguments (shapes, dtypes, tracing errors)."""


class SparsityWarning(UserWarning):
    """The result is sound but conservative (a dynamic index, an unknown op under the conservative opt-in)."""
