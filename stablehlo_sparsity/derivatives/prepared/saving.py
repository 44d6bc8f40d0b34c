"""Prepared derivatives as data: a pytree with no leaves, pickling, ``.save`` / :func:`load`.

The saved program is a :mod:`jax.export` serialization of the compressed program (StableHLO bytecode) with
its VJP, so reverse-mode AD works on a restored object.  A program JAX cannot differentiate in reverse mode
(a ``while_loop`` with a dynamic trip count, a host callback) is saved without it: the restored object is
**forward-only** — it evaluates, jits and vmaps, says so when it is loaded (:class:`ForwardOnlyWarning`)
and in its ``repr``, and raises a clear :class:`~stablehlo_sparsity.errors.InputError` when reverse-mode AD
reaches it.

The ``.npz`` container (members, SHA-256 digests, the manifest) is :mod:`.archive`; the structural checks of
what it holds — run before anything restored is used — are :mod:`.validation`.  ``.save`` / ``load`` is the
format meant for exchange; ``pickle`` of a prepared object is as unsafe as any pickle.

Saved and pickled programs are **safe to share**: JAX writes each op's source location (the user's script, this
library's install folder) into the module it exports; :func:`shareable` strips every location from the program
and from its VJP before they are serialized, and the reason of a forward-only program is stored without paths or
memory addresses, so the file holds no local path and the same derivative saved from any folder, install or
machine (with the same versions) has the same bytes and SHA-256.
"""

from __future__ import annotations

import re

import numpy as np

from ...errors import InputError, SparsityWarning, warn
from .archive import FORMAT, read_archive, write_archive

__all__ = ["STATE_FORMAT", "ForwardOnlyWarning", "StaticRef", "register_pytree", "export_program",
           "shareable", "strip_locations", "restored_call", "write_npz", "read_npz"]

#: Version tag of pickled / saved prepared objects (2: the saved file carries a manifest with digests; a
#: format-1 file is refused, see :func:`stablehlo_sparsity.derivatives.saved.upgrade`).
STATE_FORMAT = FORMAT


class ForwardOnlyWarning(SparsityWarning):
    """A restored prepared derivative whose program was saved without a reverse-mode derivative."""


class StaticRef:
    """The pytree auxiliary data of a prepared object: the object itself, compared by identity.  A prepared
    object has no array leaves (its pattern, coloring and index arrays are static), so passing it into a
    jitted function retraces only for another object, never for another call."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __eq__(self, other):
        return isinstance(other, StaticRef) and other.obj is self.obj

    def __hash__(self):
        return id(self.obj)


_REGISTERED: set = set()


def register_pytree(cls) -> None:
    """Register a prepared class as a pytree with no leaves (lazily: ``import stablehlo_sparsity`` does not
    import JAX)."""
    if cls in _REGISTERED:
        return
    import jax

    jax.tree_util.register_pytree_node(cls, lambda p: ((), StaticRef(p)), lambda aux, _: aux.obj)
    _REGISTERED.add(cls)


def export_program(fn, example, what: str) -> tuple[bytes, str | None]:
    """``(bytes, reason)``: ``fn`` at the shapes of ``example`` exported for CPU, CUDA and TPU (when every op
    lowers for all three, else for the platform in use) and serialized with its VJP; when JAX has no
    reverse-mode derivative of it, without (``reason`` says why; ``None`` when the VJP is there)."""
    import jax
    from jax import export as jexport

    jitted = jax.jit(fn)
    try:
        exp = jexport.export(jitted, platforms=("cpu", "cuda", "tpu"))(*example)
    except Exception:
        try:
            exp = jexport.export(jitted)(*example)
        except Exception as e:
            why = str(e).splitlines()[0][:200]
            if "host_callback" in why:  # jax.pure_callback / io_callback: Python code of this process
                raise InputError(f"this sparse {what} cannot be saved or pickled: its program calls back into "
                                 "Python (jax.pure_callback / io_callback), which jax.export cannot serialize; "
                                 "prepare it again in the other process") from e
            raise InputError(f"this sparse {what} cannot be saved or pickled: jax.export could not export its "
                             f"program ({type(e).__name__}: {why})") from e
    exp = shareable(exp)
    try:
        return bytes(exp.serialize(vjp_order=1)), None
    except ImportError as e:  # pragma: no cover - flatbuffers is a dependency
        raise InputError(f"saving needs the flatbuffers package: {e}") from e
    except Exception as e:
        # No reverse-mode derivative (lax.while_loop with a dynamic trip count, a callback …): the program
        # still evaluates, so it is saved without one.
        reason = _without_paths(f"{type(e).__name__}: {str(e).splitlines()[0][:200]}")
    try:
        return bytes(exp.serialize(vjp_order=0)), reason
    except ValueError as e:
        if "PyTreeDef" not in str(e):
            raise
        # (an argument or result of a pytree type jax.export cannot write, e.g. an equinox Module)
        raise InputError(f"this sparse {what} cannot be saved: jax.export cannot write the structure of its "
                         f"arguments ({str(e).splitlines()[0][:160]}); pass the array leaves as a list "
                         "(jax.tree_util.tree_flatten) or close over the model, and prepare it again") from None


def strip_locations(module) -> None:
    """Replace every source location in ``module`` (an ``ir.Module``; ops, block and function arguments) by
    ``loc(unknown)``: MLIR's builtin ``strip-debuginfo`` pass."""
    from jaxlib.mlir import passmanager

    passmanager.PassManager.parse("builtin.module(strip-debuginfo)").run(module.operation)


def shareable(exp):
    """``exp`` (a :class:`jax.export.Exported`) without source locations, in its module and in its VJP's at every
    order (the VJP is exported by JAX when serialization asks for it, with locations, and stripped then).

    JAX records in each op's location the Python frames that made it — the user's script and this library's
    files, as absolute paths — so a serialized program would leak user names and folders, and the same
    derivative saved from two folders would differ in bytes and SHA-256.  The locations only name lines in
    messages; what the program computes is unchanged."""
    from ..._compat import rewrite_exported

    return rewrite_exported(exp, strip_locations)


#: An absolute path of at least two parts (``/home/me/x.py``, ``C:\x\y.py``), or a memory address (``0x7f…``).
_PATH_OR_ADDRESS = re.compile(r"(?<![\w.~])(?:[A-Za-z]:)?(?:[\\/][^\s\\/:'\"()\[\]<>,;]+){2,}|\b0x[0-9a-fA-F]{4,}\b")


def _without_paths(text: str) -> str:
    """``text`` (a message JAX wrote, stored in a saved file) with absolute paths and memory addresses replaced
    by ``<path>`` / ``<address>``: the file must name no local folder and not depend on the process."""
    return _PATH_OR_ADDRESS.sub(lambda m: "<address>" if m.group().startswith("0x") else "<path>", text)


def _mapped(fn):
    """``fn`` with a batching rule: a sequential ``lax.map`` over the batched arguments (``call_exported``
    has no batching rule of its own)."""
    import jax

    @jax.custom_batching.custom_vmap
    def call(*args):
        return fn(*args)

    @call.def_vmap
    def _rule(_axis_size, in_batched, *args):
        flat, tree = jax.tree_util.tree_flatten(args)
        flags = jax.tree_util.tree_leaves(in_batched)

        def one(batched):
            it = iter(batched)
            return fn(*jax.tree_util.tree_unflatten(tree, [next(it) if b else a for a, b in zip(flat, flags)]))

        out = jax.lax.map(one, [a for a, b in zip(flat, flags) if b])
        return out, jax.tree_util.tree_map(lambda _: True, out)

    return call


def restored_call(exp, forward_only: str | None = None, what: str = "derivative"):
    """The values function of a restored object: the exported program, batchable (a sequential map) and
    differentiable in reverse mode through its serialized VJP — or, ``forward_only`` (the reason), raising
    a clear error when reverse mode reaches it."""
    import jax

    forward = _mapped(exp.call)
    if forward_only is None:
        backward = _mapped(lambda args, ct: jax.vjp(exp.call, *args)[1](ct))
    else:
        def backward(args, ct):
            raise InputError(f"this restored sparse {what} is forward-only: its program was saved without a "
                             f"reverse-mode derivative, which JAX could not form ({forward_only})")

    @jax.custom_vjp
    def call(*args):
        return forward(*args)

    def fwd(*args):
        return forward(*args), args

    def bwd(args, ct):
        return tuple(backward(args, ct))

    call.defvjp(fwd, bwd)
    return call


def warn_forward_only(what: str, reason: str) -> None:
    warn(f"this sparse {what} was saved forward-only (its program has no reverse-mode derivative: {reason}); it "
         "evaluates, jits and vmaps, and reverse-mode AD through it raises", ForwardOnlyWarning)


#: The members of a saved derivative besides the manifest (``meta``) and its digest.
SAVED_MEMBERS = frozenset({"program", "indptr", "indices", "colors", "rows", "cols"})


def write_npz(path, state: dict) -> None:
    """One ``.npz`` (no pickle inside): the manifest (the metadata, the versions that wrote it, the SHA-256,
    dtype and shape of every member), the program's bytes, the arrays — see :mod:`.archive`."""
    import jax
    import jaxlib

    from ..._version import __version__

    meta = dict(state["meta"], library=f"stablehlo_sparsity {__version__}", jax=jax.__version__,
                jaxlib=jaxlib.__version__)
    arrays = {k: np.require(v, requirements="C") for k, v in state.items() if isinstance(v, np.ndarray)}
    arrays["program"] = np.frombuffer(state["program"], np.uint8)
    write_archive(path, meta, arrays)


def read_npz(path, sha256: str | None = None) -> dict:
    """The state :func:`write_npz` wrote, every member's digest checked (and the whole file's against
    ``sha256`` when given), or an ``InputError`` naming the member that is wrong.  The structural checks of
    what the members hold come after (:func:`.validation.check_state`, in ``__setstate__``)."""
    return read_archive(path, sha256, members=SAVED_MEMBERS)


__all__ += ["warn_forward_only"]
