"""Compiled programs shared by prepared derivatives of the same program, in memory.

Each prepared object compiles its program through its own ``jax.jit``, and JAX's in-memory caches are keyed by
the function object: two objects prepared for the same function (a notebook cell run again, a function prepared in
a loop or inside a solver's callback, ``check_jacobian`` preparing its own) compiled the same program twice, and
XLA's compilation is the largest part of a first call (40–190 ms on the first-call benchmark's problems).

:class:`ProgramCache` keys an XLA executable by **what XLA compiles**: the SHA-256 of the lowered StableHLO
module's text without source locations (every constant printed in full: two closures over different arrays never
share), the argument and
result structures and types, and the devices and JAX release — so a hit is the same program by construction, not
by a guess about the user's function.  Tracing and lowering still run (they are what yields the key); only the
compilation is shared.  A call whose arguments are traced (inside ``jit``, ``vmap``, ``grad``) or whose argument
types differ from the compiled signature (a weakly typed Python scalar) goes through ``jax.jit`` as before.

Across processes, JAX's persistent compilation cache does the same by the same key when it is enabled
(``jax.config.update("jax_compilation_cache_dir", path)``; set ``jax_persistent_cache_min_compile_time_secs`` to
``0`` so that the short compilations of small programs are kept too): see docs/get-started/when-to-use.md.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from typing import Any

__all__ = ["ProgramCache", "PROGRAMS", "has_tracers"]


def has_tracers(leaves) -> bool:
    """Whether any of ``leaves`` is traced (the call is inside ``jit``, ``vmap``, ``grad`` …)."""
    import jax

    return any(isinstance(leaf, jax.core.Tracer) for leaf in leaves)


def _module_digest(lowered) -> str:
    """SHA-256 of the module's text without source locations (the same program written from two lines of the
    user's code compiles to the same executable) and with every element of every constant."""
    module = lowered.compiler_ir("stablehlo")
    with module.context:
        text = module.operation.get_asm(enable_debug_info=False, large_elements_limit=None, binary=True)
    return hashlib.sha256(text).hexdigest()


class ProgramCache:
    """At most ``size`` compiled executables, the most recently used kept (thread-safe)."""

    def __init__(self, size: int = 32):
        self.size = size
        self._entries: OrderedDict[tuple, Any] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def key(self, lowered) -> tuple:
        import jax

        devices = tuple((d.platform, d.id) for d in jax.devices())
        return (_module_digest(lowered), str(lowered.in_tree), str(lowered.out_tree), devices, jax.__version__)

    def compiled(self, lowered) -> Any:
        """The executable of ``lowered`` (a ``jax.stages.Lowered``): the one compiled for the same program, or a new
        compilation kept for the next."""
        key = self.key(lowered)
        with self._lock:
            hit = self._entries.get(key)
            if hit is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return hit
        exe = lowered.compile()
        with self._lock:
            self.misses += 1
            self._entries[key] = exe
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)
        return exe

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.hits = self.misses = 0


#: The process's cache of compiled derivative programs.
PROGRAMS = ProgramCache()
