"""Joining JAX's distributed runtime from a process started by :mod:`stablehlo_sparsity.launch`.

``python -m stablehlo_sparsity.launch -n N script.py`` starts ``N`` copies of ``script.py`` with three
environment variables (:data:`COORDINATOR`, :data:`NUM_PROCESSES`, :data:`PROCESS_ID`); the script calls
:func:`initialize` before anything else touches JAX's devices.  After it, ``jax.devices()`` lists the devices
of every process, ``jax.local_devices()`` this process's, and a prepared derivative with
``devices=jax.devices()`` spreads its colors over all processes (multi-controller: every process runs the same
program on its own devices, and the collectives go over gloo on CPU).

What differs from one process, for a prepared derivative ``jac`` over a global mesh:

* the arguments must be arrays on the whole mesh: :func:`replicate` puts a host value (the same in every
  process) on every device of the mesh;
* the result is a global array replicated on the mesh; :func:`to_host` reads it back as NumPy in every
  process (``multihost_utils.process_allgather``);
* with ``devices=stablehlo_sparsity.derivatives.prepared.sharding.by_rows(mesh)`` the result is instead sharded by
rows: each
  device (so each process) holds only its own block of rows' values, a ``(D, width)`` global array (see
  :class:`~stablehlo_sparsity.derivatives.prepared.evaluation.RowBlocks`), and more processes mean less memory per
  process;
* :func:`row_block` gives this process's block of rows as a SciPy CSR matrix — for a row-sharded result from
  the values this process holds, never gathering the others'.

On a cluster, run the same script under the scheduler's launcher and call ``jax.distributed.initialize()``
(which reads SLURM/Open MPI/TPU environments) instead of :func:`initialize`.
"""

from __future__ import annotations

import os

from ..analysis.rows import process_row_range  # noqa: F401  (public here too)
from ..errors import InputError

__all__ = ["COORDINATOR", "NUM_PROCESSES", "PROCESS_ID", "initialize", "replicate", "to_host", "row_block",
           "global_mesh", "process_row_range"]

#: ``host:port`` of the coordinator (process 0).
COORDINATOR = "STABLEHLO_SPARSITY_COORDINATOR"
#: The number of processes.
NUM_PROCESSES = "STABLEHLO_SPARSITY_NUM_PROCESSES"
#: This process's id, ``0 … N - 1``.
PROCESS_ID = "STABLEHLO_SPARSITY_PROCESS_ID"


def _env_int(name: str) -> int:
    raw = os.environ.get(name)
    try:
        return int(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"{name}={raw!r}: an integer is needed (start the script with "
                         "'python -m stablehlo_sparsity.launch -n N script.py')") from None


def initialize(*, timeout: int = 60) -> tuple[int, int]:
    """Join the distributed runtime described by the launcher's environment variables and return
    ``(process_id, num_processes)``.  Sets the gloo CPU collectives first (the default has none across
    processes).  Must run before JAX initializes its backends.

    Raises:
        InputError: the launcher's environment variables are missing or not integers, the process id is out of
            range, or JAX's distributed runtime or backends are already initialized.

    Examples:
        >>> from stablehlo_sparsity.derivatives.distributed import initialize
        >>> initialize()      # in a script not started by ``python -m stablehlo_sparsity.launch``: refused
        Traceback (most recent call last):
        ...
        stablehlo_sparsity.errors.InputError: STABLEHLO_SPARSITY_COORDINATOR is not set: ...
    """
    import jax
    from jax._src import xla_bridge

    if COORDINATOR not in os.environ:
        raise InputError(f"{COORDINATOR} is not set: start the script with "
                         "'python -m stablehlo_sparsity.launch -n N script.py'")
    address = os.environ[COORDINATOR]
    count, pid = _env_int(NUM_PROCESSES), _env_int(PROCESS_ID)
    if count < 1 or not 0 <= pid < count:
        raise InputError(f"process id {pid} of {count} processes is out of range")
    if jax.distributed.is_initialized():
        raise InputError("the JAX distributed runtime is already initialized in this process")
    if xla_bridge.backends_are_initialized():
        raise InputError("JAX's backends are already initialized: call stablehlo_sparsity.derivatives.distributed."
                         "initialize() before any JAX computation or jax.devices()")
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=address, num_processes=count, process_id=pid,
                               initialization_timeout=timeout)
    return pid, count


def global_mesh(axis: str = "colors"):
    """A one-axis :class:`jax.sharding.Mesh` over every device of every process.

    Examples:
        >>> import jax
        >>> from stablehlo_sparsity.derivatives.distributed import global_mesh
        >>> mesh = global_mesh()
        >>> mesh.axis_names, mesh.devices.size == len(jax.devices())
        (('colors',), True)
    """
    import jax
    import numpy as np
    from jax.sharding import Mesh

    return Mesh(np.array(jax.devices()), (axis,))


def replicate(value, mesh):
    """``value`` (a host array or pytree, the same in every process) as global arrays replicated on ``mesh``.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity.derivatives.distributed import global_mesh, replicate
        >>> x = replicate(np.arange(3, dtype=np.float32), global_mesh())
        >>> x.sharding.is_fully_replicated, x.shape
        (True, (3,))
    """
    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec as P

    sharding = NamedSharding(mesh, P())
    return jax.tree_util.tree_map(
        lambda a: jax.make_array_from_process_local_data(sharding, np.asarray(a)), value)


def to_host(value):
    """A global (replicated) array or pytree as NumPy in this process.

    Examples:
        >>> import numpy as np
        >>> from stablehlo_sparsity.derivatives.distributed import global_mesh, replicate, to_host
        >>> host = to_host({"x": replicate(np.arange(3, dtype=np.float32), global_mesh())})
        >>> type(host["x"]).__name__, host["x"].tolist()
        ('ndarray', [0.0, 1.0, 2.0])
    """
    import jax
    import numpy as np

    def one(a):
        if isinstance(a, jax.Array) and not a.is_fully_addressable:
            # replicated: every process holds the whole value on its own devices
            if a.sharding.is_fully_replicated:
                return np.asarray(a.addressable_data(0))
            from jax.experimental import multihost_utils

            return np.asarray(multihost_utils.process_allgather(a, tiled=True))
        return np.asarray(a)

    return jax.tree_util.tree_map(one, value)


def row_block(prepared, values, process_id: int | None = None, num_processes: int | None = None):
    """This process's block of rows of the matrix with nonzeros ``values`` as a ``scipy.sparse.csr_array`` of
    shape ``(rows, n)``; also returns the first row's index.

    ``values`` replicated (in ``prepared.pattern``'s CSR order): the ``process_id``-th of ``num_processes``
    blocks of ``ceil(m / N)`` consecutive rows (default: this process of all).  ``values`` sharded by rows
    (``devices=by_rows(...)``): the rows of the blocks this process's devices hold, read from its own shards
    only (``process_id`` / ``num_processes`` do not apply).

    Raises:
        InputError: ``process_id`` / ``num_processes`` given for a result sharded by rows, ``values`` that are not
            this derivative's row-sharded values, or row blocks of this process that are not consecutive.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.derivatives.distributed import row_block
        >>> jac = ss.sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(5), output="values")
        >>> block, first = row_block(jac, jac(jnp.arange(5.0)), process_id=1, num_processes=2)
        >>> first, block.toarray().tolist()
        (2, [[0.0, 0.0, 3.0, 2.0, 0.0], [0.0, 0.0, 0.0, 4.0, 3.0]])
    """
    import jax
    import numpy as np
    import scipy.sparse as sp

    blocks = getattr(prepared, "row_blocks", None)
    if blocks is not None:
        if process_id is not None or num_processes is not None:
            raise InputError("row_block: a result sharded by rows gives the rows of this process's own shards; "
                             "process_id/num_processes apply to a replicated result only")
        return _own_rows(prepared, values, blocks)
    pid = jax.process_index() if process_id is None else process_id
    count = jax.process_count() if num_processes is None else num_processes
    vals = to_host(values)
    pat = prepared.pattern
    m, n = pat.shape
    indptr, indices = np.asarray(pat.indptr), np.asarray(pat.indices)
    lo, hi = process_row_range(m, pid, count)
    a, b = int(indptr[lo]), int(indptr[hi])
    return sp.csr_array((vals[a:b], indices[a:b], indptr[lo:hi + 1] - a), shape=(hi - lo, n)), lo


def _own_rows(prepared, values, blocks):
    """The CSR block of the row blocks held by this process's shards of a ``(D, width)`` row-sharded result."""
    import jax
    import numpy as np
    import scipy.sparse as sp

    if not isinstance(values, jax.Array) or values.shape != (blocks.devices, blocks.width):
        raise InputError(f"row_block: expected the ({blocks.devices}, {blocks.width}) row-sharded values of "
                         f"this prepared derivative, got {type(values).__name__} {getattr(values, 'shape', '')}")
    own = {}
    for shard in values.addressable_shards:
        first = shard.index[0].start or 0
        data = np.asarray(shard.data)
        for j in range(data.shape[0]):  # one row block per device (a loop over this process's devices)
            own[first + j] = data[j]
    ids = sorted(own)
    if ids != list(range(ids[0], ids[-1] + 1)):
        raise InputError(f"row_block: this process holds the row blocks {ids}, which are not consecutive "
                         "(order the mesh's devices by process, as jax.devices() does)")
    counts = blocks.counts
    vals = np.concatenate([own[d][:counts[d]] for d in ids])
    lo, hi = int(blocks.row_bounds[ids[0]]), int(blocks.row_bounds[ids[-1] + 1])
    indptr, indices = np.asarray(prepared.pattern.indptr), np.asarray(prepared.pattern.indices)
    a, b = int(indptr[lo]), int(indptr[hi])
    m, n = prepared.pattern.shape
    return sp.csr_array((vals, indices[a:b], indptr[lo:hi + 1] - a), shape=(hi - lo, n)), lo
