"""One table from an output name to its container: how the nonzeros (in the CSR order of the pattern) become
what a prepared derivative returns — inside the compiled program, around it on the host, and per pytree
block (:meth:`~stablehlo_sparsity.derivatives.prepared.PreparedDerivative.blocks`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse as sp

from ...errors import InputError
from ...dtypes import index_dtype

__all__ = ["Layout", "Output", "OUTPUTS", "output_named"]


@dataclass(frozen=True)
class Layout:
    """The static index data of a pattern's nonzeros: ``(m, n)``, COO rows and columns (CSR order) and the CSR
    arrays."""

    shape: tuple[int, int]
    rows: np.ndarray
    cols: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray

    @classmethod
    def of(cls, pattern, rows=None, cols=None) -> "Layout":
        csr = pattern.to_scipy()
        r, c = pattern.to_coo() if rows is None else (rows, cols)
        return cls(tuple(csr.shape), np.asarray(r), np.asarray(c), csr.indptr, csr.indices)


def _dense(values, lay: Layout):
    import jax.numpy as jnp

    return jnp.zeros(lay.shape, values.dtype).at[lay.rows, lay.cols].set(
        values, indices_are_sorted=True, unique_indices=True)


def _bcoo(values, lay: Layout):
    import jax.numpy as jnp
    from jax.experimental import sparse as jsparse

    idx = jnp.asarray(np.stack([lay.rows, lay.cols], axis=1))
    return jsparse.BCOO((values, idx), shape=lay.shape, indices_sorted=True, unique_indices=True)


def _bcsr(values, lay: Layout):
    import jax.numpy as jnp
    from jax.experimental import sparse as jsparse

    t = index_dtype(max(len(lay.indices), lay.shape[1]))
    return jsparse.BCSR((values, jnp.asarray(lay.indices.astype(t)), jnp.asarray(lay.indptr.astype(t))),
                        shape=lay.shape, indices_sorted=True, unique_indices=True)


def _scipy(values, lay: Layout):
    import jax

    try:
        v = np.asarray(values)
    except jax.errors.TracerArrayConversionError:
        raise InputError("output='scipy' cannot be used inside jax.jit/vmap (SciPy matrices live on the "
                         "host); use output='bcoo', 'bcsr' or 'dense' there") from None
    return sp.csr_array((v, lay.indices.copy(), lay.indptr.copy()), shape=lay.shape)


def _keep(values, lay: Layout, device_index: Callable):
    return values


def _host_scipy(values, lay: Layout, device_index: Callable):
    return _scipy(values, lay)


# The pytree constructors skip the validation of __init__ (tens of µs per call); the index arrays are ours,
# canonical (sorted, unique) and already on the device.
def _host_bcoo(values, lay: Layout, device_index: Callable):
    from jax.experimental import sparse as jsparse

    info = {"shape": lay.shape, "indices_sorted": True, "unique_indices": True}
    return jsparse.BCOO.tree_unflatten(info, (values, device_index("coo")))


def _host_bcsr(values, lay: Layout, device_index: Callable):
    from jax.experimental import sparse as jsparse

    info = {"shape": lay.shape, "indices_sorted": True, "unique_indices": True}
    return jsparse.BCSR.tree_unflatten(info, (values, device_index("indices"), device_index("indptr")))


def _block_dense(v, idx, shape):
    import jax.numpy as jnp

    return jnp.zeros(shape, v.dtype).at[tuple(idx.T)].set(v)


def _block_bcoo(v, idx, shape):
    from jax.experimental import sparse as jsparse

    return jsparse.BCOO((v, idx), shape=shape, indices_sorted=True, unique_indices=True)


@dataclass(frozen=True)
class Output:
    """An output container.  ``in_program``: built inside the traced program from the values (``None``: not
    traceable); ``compiled``: the compiled core returns the dense matrix rather than the values;
    ``on_host``: built around the compiled call from ``(values, layout, device_index)`` (the values or dense
    matrix as returned, a JAX sparse container around the cached device-resident index arrays that
    ``device_index(name)`` gives — ``"coo"``, ``"indices"``, ``"indptr"`` — or a SciPy matrix);
    ``block``: one pytree block from ``(values, (out, in) indices, shape)``, or ``"scipy"`` for a 2-D SciPy
    block."""

    name: str
    in_program: Callable | None
    compiled_dense: bool
    on_host: Callable
    block: Callable | str
    exportable: bool
    #: the module the host container comes from, when it is not imported with the library
    module: str | None = None


#: Every output a prepared derivative can return, by name.
OUTPUTS: dict[str, Output] = {o.name: o for o in (
    Output("bcoo", _bcoo, False, _host_bcoo, _block_bcoo, False, "jax.experimental.sparse"),
    Output("bcsr", _bcsr, False, _host_bcsr, _block_bcoo, False, "jax.experimental.sparse"),
    Output("dense", _dense, True, _keep, _block_dense, True),
    Output("scipy", None, False, _host_scipy, "scipy", False),
    Output("values", lambda values, lay: values, False, _keep, _block_bcoo, True),
)}


def import_in_background(module: str | None) -> None:
    """Start importing ``module`` in a daemon thread unless it is imported already: ``jax.experimental.sparse``
    (the BCOO and BCSR containers) imports SciPy's linear algebra, 0.2 s of a fresh process, longer than the
    preparation and the first call's compilation of a small program together.  Before it starts, the submodules
    that import loads but no derivative uses are deferred to their first use (:mod:`.deferred_imports`: SciPy's
    sparse linear algebra, most of those 0.2 s); the rest, about 11 ms of Python that holds the GIL, is started
    when the first call's program goes to XLA, whose compilation releases the GIL, so the two overlap (started
    at the preparation instead, it competed with the preparation's own Python: measured on a 1-D residual at
    n = 1,000 in alternating fresh processes, 160 -> 134 ms to the first BCOO, median of 12).  The container's
    own import then finds it done, or waits for it (Python's per-module import lock)."""
    import sys

    if module is None or module in sys.modules:
        return
    import importlib
    import threading

    from .deferred_imports import defer

    defer(module)

    def load():
        try:
            importlib.import_module(module)
        except Exception:  # pragma: no cover - the main thread's own import reports it
            pass

    threading.Thread(target=load, name=f"import {module}", daemon=True).start()


def output_named(name, *, traceable: bool = False) -> Output:
    """The :class:`Output` called ``name`` (``traceable``: one that can be built inside a program)."""
    out = OUTPUTS.get(name) if isinstance(name, str) else None
    if out is None or (traceable and out.in_program is None):
        choices = [k for k, o in OUTPUTS.items() if o.in_program is not None or not traceable]
        raise InputError(f"output must be one of {', '.join(choices)}{' here' * traceable}, got {name!r}")
    return out


def host_container(out: Output, values, lay: Layout, device_index: Callable):
    """The container of ``out`` around a compiled call's result (``device_index(name)`` gives the cached
    device-resident ``"coo"`` / ``"indices"`` / ``"indptr"`` arrays)."""
    return out.on_host(values, lay, device_index)


__all__ += ["host_container"]
