"""Every difference between the JAX releases this library supports, in one place.

Supported: ``jax`` and ``jaxlib`` of the same release, from 0.10.2 up to (not including) 0.13 — 0.10.2 on
Python 3.11, 0.11.x and 0.12.x on Python 3.12 and 3.13 (JAX 0.11 dropped Python 3.11).  The package checks the
installed versions when it is imported (:func:`check_jax_versions`), from the installed distributions'
metadata and before ``jax`` itself is imported, so a mismatched pair fails with one message naming both
versions instead of deep inside an analysis.

Each difference below names the JAX release that changed it.  Code elsewhere asks this module, never
``jax.__version__``, and never probes with ``try: import … except ImportError``.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import re
import threading

__all__ = ["SUPPORTED_JAX", "SUPPORTED_RANGE_TEXT", "JaxVersionError", "parse_version", "installed_versions",
           "check_jax_versions", "JAX_VERSION", "constants_in_module", "STABLEHLO_EXP2_LOG2_FMA",
           "CHOLESKY_JVP_SYMMETRIZES_BOTH_TRIANGLES", "release_lowering_caches", "uncached_lowering",
           "jax_context_factory", "rewrite_exported"]

#: The supported JAX releases, ``[low, high)`` (jax and jaxlib alike).
SUPPORTED_JAX: tuple[tuple[int, int, int], tuple[int, int, int]] = ((0, 10, 2), (0, 13, 0))
SUPPORTED_RANGE_TEXT = "jax == jaxlib, >= 0.10.2 and < 0.13"


class JaxVersionError(ImportError):
    """The installed ``jax`` / ``jaxlib`` are outside the supported range, or are not the same release."""


def parse_version(text: str) -> tuple[int, ...]:
    """``"0.12.0.1"`` → ``(0, 12, 0, 1)``; a suffix such as ``.dev20261101`` or ``rc1`` is ignored."""
    parts = []
    for piece in text.split("."):
        m = re.match(r"\d+", piece)
        if m is None:
            break
        parts.append(int(m.group()))
        if m.end() != len(piece):
            break
    return tuple(parts)


def installed_versions() -> tuple[str | None, str | None]:
    """The installed ``jax`` and ``jaxlib`` distribution versions (``None`` for one that is not installed)."""
    found: list[str | None] = []
    for name in ("jax", "jaxlib"):
        try:
            found.append(importlib.metadata.version(name))
        except importlib.metadata.PackageNotFoundError:
            found.append(None)
    return found[0], found[1]


def _release(v: tuple[int, ...]) -> tuple[int, ...]:
    # jax 0.12.0.1 is a jax-only post release beside jaxlib 0.12.0.1; compare the first three numbers
    return (v + (0, 0, 0))[:3]


def check_jax_versions(jax: str | None = None, jaxlib: str | None = None) -> tuple[int, ...]:
    """Raise :class:`JaxVersionError` unless ``jax`` and ``jaxlib`` (default: the installed ones) are the same
    release inside :data:`SUPPORTED_JAX`; return the parsed jax version.

    Raises:
        JaxVersionError: ``jax`` or ``jaxlib`` is missing, they are different releases, or a release is outside
            the supported range (an ``ImportError``).

    Examples:
        >>> from stablehlo_sparsity import check_jax_versions
        >>> check_jax_versions("0.10.2", "0.10.2")
        (0, 10, 2)
        >>> check_jax_versions("0.11.0", "0.10.2")
        Traceback (most recent call last):
        ...
        stablehlo_sparsity._compat.JaxVersionError: ...jax and jaxlib are different releases...
    """
    if jax is None and jaxlib is None:
        jax, jaxlib = installed_versions()
    if jax is None or jaxlib is None:
        missing = " and ".join(n for n, v in (("jax", jax), ("jaxlib", jaxlib)) if v is None)
        raise JaxVersionError(f"stablehlo_sparsity needs {missing} installed (supported: {SUPPORTED_RANGE_TEXT}); "
                              f"found jax {jax or 'missing'}, jaxlib {jaxlib or 'missing'}. "
                              "Install them with: pip install 'jax[cpu]>=0.10.2,<0.13'")
    jv, lv = parse_version(jax), parse_version(jaxlib)
    low, high = SUPPORTED_JAX
    problems = []
    if _release(jv) != _release(lv):
        problems.append("jax and jaxlib are different releases")
    for name, v, text in (("jax", jv, jax), ("jaxlib", lv, jaxlib)):
        if not low <= _release(v) < high:
            problems.append(f"{name} {text} is outside the supported range")
    if problems:
        raise JaxVersionError(f"stablehlo_sparsity supports {SUPPORTED_RANGE_TEXT}; found jax {jax} and jaxlib "
                              f"{jaxlib} ({'; '.join(problems)}). Install a matching pair, e.g. "
                              f"pip install 'jax=={jax}' 'jaxlib=={jax}' or pip install -U 'jax>=0.10.2,<0.13'")
    return jv


#: The installed jax release, parsed (set by :func:`check_jax_versions` at package import).
JAX_VERSION: tuple[int, ...] = check_jax_versions()


# ---------------------------------------------------------------------------------------------------- derivatives
#: JAX 0.11.2 changed ``lax.linalg.cholesky``'s JVP to read only the factor's triangle of the tangent
#: (``Ȧ ← tril(Ȧ) + tril(Ȧ, -1)ᴴ``), as the LAPACK ``potrf`` the primal calls does.  Before it the JVP read both
#: triangles (a function of a Hermitian matrix).  Compressed Jacobians are evaluated with JAX's JVPs, so the
#: Cholesky rule must mirror the installed JVP: both triangles before 0.11.2, the factor's triangle from it on.
CHOLESKY_JVP_SYMMETRIZES_BOTH_TRIANGLES: bool = _release(JAX_VERSION) < (0, 11, 2)


# ------------------------------------------------------------------------------------------------------ op set
#: JAX 0.12.1 (its jaxlib's StableHLO) added ``stablehlo.exp2``, ``stablehlo.log2`` and ``stablehlo.fma``, and lowers
#: ``jnp.exp2``, ``jnp.log2`` and parts of ``lax.erf_inv`` to them; a module holding one parses only from that
#: release on.  The rules for them are registered on every release (a name the parser never produces costs nothing).
STABLEHLO_EXP2_LOG2_FMA: bool = _release(JAX_VERSION) >= (0, 12, 1)


# ---------------------------------------------------------------------------------------------------- lowering
#: JAX 0.11.0 made ``pxla._dce_jaxpr`` (a weak-keyed LRU cache) return its key jaxpr itself when
#: ``keep_unused=True``: the cached value holds its own weak key, so the entry — and every lowering cached against
#: that jaxpr, with its MLIR context (about a megabyte) — lives until 2,048 newer entries push it out.  The
#: analyses lower with ``keep_unused=True`` (every argument is a column), so they drop that cache's entries after
#: lowering; it only maps a jaxpr to itself here, and recomputing it for another function costs nothing.
_DCE_CACHE_PINS_LOWERINGS: bool = _release(JAX_VERSION) >= (0, 11, 0)


def release_lowering_caches() -> None:
    """Let the jaxprs (and MLIR contexts) of finished ``keep_unused=True`` lowerings be freed (JAX >= 0.11.0)."""
    if not _DCE_CACHE_PINS_LOWERINGS:
        return
    from jax._src.interpreters import pxla

    pxla._dce_jaxpr.cache_clear()


#: JAX 0.12.1 turned ``jax_use_simplified_jaxpr_constants`` on: a constant the function closes over (a NumPy array:
#: a permutation, a stencil, a sparse matrix) is no longer a ``stablehlo.constant`` of the module but an argument of
#: its entry function marked ``{jax.const = true}``, its value held outside the module.  The analysis reads
#: constants as values (a gather's indices, a matrix's zeros, a scan's sequence) and maps the entry's arguments
#: onto the function's inputs, so it lowers with the option off (:func:`constants_in_module`), as every earlier
#: release does by default; the option only changes where a constant's value lives, never the program.
_SIMPLIFIED_CONSTANTS_OPTION = "use_simplified_jaxpr_constants"


def constants_in_module():
    """A context in which JAX lowers the constants a function closes over into the module, as
    ``stablehlo.constant`` ops (the option JAX 0.12.1 turned on, off: see :data:`_SIMPLIFIED_CONSTANTS_OPTION`);
    where the option is missing the lowering is unchanged.  Tracing outside the block and lowering inside it is
    enough: the option is read when the module is emitted."""
    from jax._src import config as jax_config

    option = getattr(jax_config, _SIMPLIFIED_CONSTANTS_OPTION, None)
    return option(False) if option is not None else contextlib.nullcontext()


def innermost_locations():
    """A context in which JAX lowers with the innermost user frame only in each op's location (its
    ``traceback_in_locations_limit`` option at 1; the default, 100 frames, is a call-site chain per op).

    The analysis reads a location only to name the user's line in a message, which is the innermost frame
    (:func:`stablehlo_sparsity.errors.format_location`), and building the chains costs about a tenth of
    lowering a written-out program.  The same private option on every supported release, named once here;
    where it is missing the lowering keeps JAX's default."""
    from jax._src import config as jax_config

    option = getattr(jax_config, "traceback_in_locations_limit", None)
    return option(1) if option is not None else contextlib.nullcontext()


# ---------------------------------------------------------------------------------------------- the lowering cache
class _UncachedWhileAsked(set):
    """JAX's set of the primitives whose lowering it never caches (``mlir._uncacheable_primitives``), which holds
    every primitive while the current thread lowers under :func:`uncached_lowering` — for other threads, and
    outside that block, exactly the set it replaced (JAX adds to it as before)."""

    __slots__ = ()

    def __contains__(self, primitive) -> bool:
        return getattr(_LOWERING, "uncached", False) or set.__contains__(self, primitive)


_LOWERING = threading.local()


@contextlib.contextmanager
def uncached_lowering():
    """A context in which JAX lowers each equation by its lowering rule in place, without its per-equation
    lowering cache.

    JAX (0.10.2, 0.11.2 and 0.12.0.1 checked) emits the lowering of each distinct equation as a function and
    inlines a copy of it at each use: for a program written out term by term, whose thousands of equations repeat
    a few dozen, that pays; for a small vectorized program, whose equations are nearly all distinct, it costs a
    third of its lowering.  The module is the same (checked, locations included, in
    ``tests/analysis/test_lowering_cache.py``).  JAX reads the set by name at each equation, so the set is swapped
    once for one that answers per thread (:class:`_UncachedWhileAsked`); where it is missing or not a set, the
    lowering keeps JAX's cache."""
    from jax._src.interpreters import mlir as jax_mlir

    current = getattr(jax_mlir, "_uncacheable_primitives", None)
    if type(current) is set:
        current = jax_mlir._uncacheable_primitives = _UncachedWhileAsked(current)
    if not isinstance(current, _UncachedWhileAsked):
        yield False
        return
    before = getattr(_LOWERING, "uncached", False)
    _LOWERING.uncached = True
    try:
        yield True
    finally:
        _LOWERING.uncached = before


# ---------------------------------------------------------------------------------------------------- MLIR context
def jax_context_factory():
    """JAX's own MLIR context factory (every dialect JAX emits registered); the same private entry point on every
    supported release, named once here."""
    from jax._src.interpreters import mlir as jax_mlir

    return jax_mlir.make_ir_context


# ---------------------------------------------------------------------------------------------------- jax.export
def rewrite_exported(exp, rewrite):
    """``exp`` (a :class:`jax.export.Exported`) whose module has been through ``rewrite(module)`` (an ``ir.Module``
    changed in place), and whose VJP, when asked for (``exp.vjp()``, which ``serialize(vjp_order=k)`` calls), is
    rewritten the same way, at every order.

    The module is read and written back with JAX's own portable-artifact codec, as ``jax.export`` writes it (the
    same StableHLO target version and Shardy handling), so the result deserializes and runs like ``exp``.  The
    codec (``_jax.mlir.deserialize_portable_artifact``, ``_export._module_to_bytecode``) and the ``_get_vjp``
    field of the ``Exported`` dataclass are private, the same on 0.10.2, 0.11.2 and 0.12.0.1: named once here."""
    import dataclasses

    from jax._src.export import _export
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib import _jax

    with jax_mlir.make_ir_context():
        module = _jax.mlir.deserialize_portable_artifact(exp.mlir_module_serialized)
        rewrite(module)
        data = _export._module_to_bytecode(module)
    vjp = None if exp._get_vjp is None else (lambda _primal: rewrite_exported(exp.vjp(), rewrite))
    return dataclasses.replace(exp, mlir_module_serialized=data, _get_vjp=vjp)
