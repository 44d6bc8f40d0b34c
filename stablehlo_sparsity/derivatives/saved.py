"""Prepared derivatives read back from disk: ``SparseJacobian.save(path)`` / ``SparseHessian.save(path)`` write
one ``.npz`` (the pattern, the coloring, the decompression tables and the serialized XLA program, under a
manifest of SHA-256 digests); :func:`load` returns the object, ready to call without detection, coloring or
compilation.  The container lives in :mod:`stablehlo_sparsity.derivatives.prepared.archive`, the checks of what it
holds in
:mod:`stablehlo_sparsity.derivatives.prepared.validation`; :func:`load` is here, above both prepared classes (the base
class
below them does not import them back).

``.save`` / :func:`load` is the format meant for exchange.  ``pickle`` of a prepared object is as unsafe as any
pickle: unpickling runs whatever code the pickle names, so never unpickle a file you did not write.
"""

from __future__ import annotations

import os

from ..errors import InputError
from .hessian import SparseHessian
from .jacobian import SparseJacobian
from .prepared.archive import FORMAT, LEGACY_FORMATS, file_sha256, read_archive
from .prepared.saving import ForwardOnlyWarning, read_npz

__all__ = ["load", "upgrade", "file_sha256", "ForwardOnlyWarning"]

_CLASSES: dict[str, type[SparseJacobian] | type[SparseHessian]] = {"SparseJacobian": SparseJacobian,
                                                                   "SparseHessian": SparseHessian}


def _source(path) -> str:
    return str(os.fspath(path)) if isinstance(path, (str, os.PathLike)) else repr(path)


def load(path, sha256: str | None = None):
    """Read a :class:`~stablehlo_sparsity.SparseJacobian` / :class:`~stablehlo_sparsity.SparseHessian` written
    by ``.save(path)``.

    What it guarantees, for any file — truncated, bit-flipped, edited or crafted: the result is the saved object
    or an :class:`~stablehlo_sparsity.errors.InputError` naming what is wrong, never a wrong pattern or a crash.

    * **Integrity**: every member's SHA-256 (and the manifest's own) is recomputed and compared before anything
      is read from it; ``sha256``: the expected SHA-256 of the whole file (hex), for artifacts you pin (e.g.
      the digest :func:`file_sha256` printed when you published it).
    * **Validation**, independent of the digests: the CSR pattern is well formed, the colors are a valid
      coloring of it for the saved mode, the decompression indices are the pattern's coordinates, the program's
      signature matches the manifest and the pattern, and the program contains no ``custom_call`` outside the
      targets this library emits (LAPACK / cuSOLVER / TPU linear algebra, sharding markers), no host callback,
      no host transfer.
    * **No code runs** while loading, and none outside the compiled XLA program afterwards: the file holds
      NumPy arrays and StableHLO (no pickle).

    What it does not guarantee: someone who can rewrite the file can also rewrite its digests, and so ship a
    *different* program (with the same signature and allowed ops) that computes other numbers.  Pin the file's
    digest (``sha256=``) or get it over a channel you trust.  A file of format 1 (earlier versions, no digests)
    is refused; :func:`upgrade` converts one you trust.

    Raises:
        InputError: the file cannot be read, is not a saved derivative of the current format (a format-1 file:
            see ``upgrade``), does not match ``sha256`` or its own digests, or fails a structural check.

    Warns:
        ForwardOnlyWarning: the saved program has no reverse-mode derivative.

    Examples:
        >>> import os, tempfile
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.derivatives.saved import file_sha256
        >>> path = os.path.join(tempfile.mkdtemp(), "jac.npz")
        >>> ss.sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(4)).save(path)
        >>> jac = ss.load(path, sha256=file_sha256(path))       # pinned: the digest printed at publication
        >>> jac(jnp.arange(4.0)).todense().tolist()
        [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 2.0]]
    """
    source = _source(path)
    st = read_npz(path, sha256)
    cls = _CLASSES.get(st["meta"].get("class"))
    if cls is None:
        raise InputError(f"unknown saved class {st['meta'].get('class')!r:.80}", source)
    obj = cls.__new__(cls)
    obj._restore(st, source)
    return obj


def upgrade(old_path, new_path) -> str:
    """Convert a file saved by an earlier version (format ``stablehlo_sparsity.prepared/1``, no digests) to the
    current format, and return the new file's SHA-256.

    Format 1 has no digests, so nothing can tell whether such a file changed after it was saved: call this only
    on a file you trust.  The conversion still runs every structural check of :func:`load` (pattern, colors,
    decompression indices, the program's custom calls) and writes the digests of what it read; the program is
    written without the source locations an earlier version kept in it (the user's and the library's paths:
    :func:`~stablehlo_sparsity.derivatives.prepared.saving.shareable`), so the new file is the one ``.save``
    writes today.  A current-format file is refused (there is nothing to convert).

    Raises:
        InputError: the file cannot be read, is already in the current format (nothing to convert) or fails a
            structural check.
        OSError: the new file cannot be written.

    Examples:
        >>> import os, tempfile
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.derivatives.saved import upgrade
        >>> folder = tempfile.mkdtemp()
        >>> ss.sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(3)).save(os.path.join(folder, "jac.npz"))
        >>> upgrade(os.path.join(folder, "jac.npz"), os.path.join(folder, "new.npz"))    # current format already
        Traceback (most recent call last):
        ...
        stablehlo_sparsity.errors.InputError: ...nothing to upgrade: saved with format ...
    """
    source = _source(old_path)
    st = read_archive(old_path, legacy=True)
    meta = st["meta"]
    if meta.get("format") not in LEGACY_FORMATS:
        raise InputError(f"nothing to upgrade: saved with format {meta.get('format')!r:.80} (this version writes "
                         f"{FORMAT!r})", source)
    cls = _CLASSES.get(meta.get("class"))
    if cls is None:
        raise InputError(f"unknown saved class {meta.get('class')!r:.80}", source)
    if not isinstance(st.get("program"), bytes):
        raise InputError("no program member", source)
    from .prepared.saving import shareable
    from .prepared.validation import deserialize_program, program_signature

    exp = deserialize_program(st["program"], source)
    try:
        signature = program_signature(exp)
        program = bytes(shareable(exp).serialize(vjp_order=1 if exp.has_vjp() else 0))
    except Exception as e:
        raise InputError(f"the program does not read back ({type(e).__name__}: {e})", source) from None
    state = dict(st, program=program, meta=dict(meta, format=FORMAT, host_callback=False, signature=signature))
    obj = cls.__new__(cls)
    obj._restore(state, source)  # every check of load (and the program's signature against the pattern)
    obj.save(new_path)
    return file_sha256(new_path)
