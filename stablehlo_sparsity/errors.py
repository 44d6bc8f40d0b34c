"""Errors and warnings.  Every error that concerns an op names the op and its source location.

Messages and warnings point at the user's code: a location names the nearest source line outside JAX and this
library (:func:`user_file_location`), and a :class:`SparsityWarning` is attributed to the nearest Python frame
outside them (:func:`warn`), so ``-W error``, warning filters by module and IDEs point at the user's call.
"""

from __future__ import annotations

import os
import re
import sys
import warnings
from types import FrameType

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
    "user_file_location",
    "warn",
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


def library_folders() -> tuple[str, ...]:
    """The folders whose source is not the user's: this library's (its passes included, which a source checkout
    keeps in a folder of their own) and, once imported, JAX's and jaxlib's (each ending in a path separator, so
    that ``.../jax`` does not claim ``.../jax_foo``)."""
    folders = [os.path.dirname(os.path.abspath(__file__))]
    for name in ("stablehlo_sparsity.passes", "jax", "jaxlib"):
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            folders.append(os.path.dirname(os.path.abspath(file)))
    return tuple(os.path.join(f, "") for f in folders)


def _is_library_file(filename: str, folders: tuple[str, ...]) -> bool:
    return os.path.abspath(filename).startswith(folders)


def user_file_location(loc) -> str | None:
    """``file:line:col`` of the nearest user line an MLIR location names — its first file location (innermost
    frame first) outside JAX and this library (:func:`library_folders`) — or ``None`` when it names none (a
    name-only location such as ``"scatter:"("scatter")``, which JAX gives an op lowered inside its own library
    code, or only library frames)."""
    if loc is None:
        return None
    matches = _FILE_LOC.findall(str(loc))
    if not matches:
        return None
    folders = library_folders()
    for f, line, col in matches:
        if not _is_library_file(f, folders):
            return f"{f}:{line}:{col}"
    return None


def warn(message: str, category: type[Warning] | None = None) -> None:
    """Emit ``message`` as a warning (a :class:`SparsityWarning` by default) attributed to the user's own frame:
    the nearest Python frame outside JAX and this library — the user's call of the library — so that ``-W
    error``, filters by module (``-W ignore::...:mymodule``) and IDEs point at the user's code.

    One helper for Python 3.11 to 3.13: it finds that frame itself and reports through
    :func:`warnings.warn_explicit` with the frame's module and warning registry, as :func:`warnings.warn` does
    for the frame ``stacklevel`` names (3.12's ``skip_file_prefixes`` does the same skipping, but not on
    3.11).  When every frame is the library's or JAX's (a thread the library started), the library's caller."""
    category = SparsityWarning if category is None else category
    folders = library_folders()
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and _is_library_file(frame.f_code.co_filename, folders):
        frame = frame.f_back
    if frame is None:
        warnings.warn(message, category, stacklevel=2)
        return
    # (as warnings.warn: the module and registry of the frame's globals, and no module_globals — whose loader
    # would be asked for the source, which ``python -c``'s __main__ refuses with an ImportError)
    frame_globals = frame.f_globals
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno,
                           module=frame_globals.get("__name__", "<string>"),
                           registry=frame_globals.setdefault("__warningregistry__", {}))


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
