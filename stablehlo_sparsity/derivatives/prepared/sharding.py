"""Spreading the products of a prepared sparse Jacobian or Hessian over several devices.

``sparse_jacobian(f, x, devices=...)`` / ``sparse_hessian(..., devices=...)`` evaluate the compressed program
with :func:`jax.shard_map` over a one-axis mesh: every device receives the (replicated) arguments, evaluates
its own block of ``ceil(K / D)`` consecutive colors — ``jax.vmap`` over its seeds, built on the device from
the color vector and its position on the mesh — and writes the nonzeros those products give into a zero
vector; one ``psum`` over the mesh adds the disjoint parts.  Every nonzero is read from exactly one product,
so the sum adds zeros only and the values equal the single-device ones (up to the rounding of a differently
fused product).  The result is replicated on every device of the mesh, unless ``devices=by_rows(...)`` asks for
it sharded by rows (each device keeps only its block of rows: see :func:`by_rows`).  Decompression by substitution
(``sparse_hessian(mode="substitution")``) gathers all products on every device (``all_gather``) first.

``devices`` may be

* an int ``D``: the first ``D`` of ``jax.devices()``;
* a sequence of devices, e.g. ``jax.devices("gpu")`` or ``jax.devices()[:4]``;
* a one-axis :class:`jax.sharding.Mesh` (its axis is used).

On GPUs: ``sparse_jacobian(f, x, devices=jax.devices("gpu"))`` puts the colors of one Jacobian on all the
GPUs of the host (each GPU evaluates ``K / D`` JVPs, the ``psum`` is one all-reduce of ``nnz`` values over
NVLink or PCIe).  That pays when the products dominate — large ``K`` or an expensive ``f`` — rather than the
``nnz``-sized all-reduce.  To spread *points* instead (many Jacobians of one pattern), keep one device per
Jacobian and shard the batch: ``jax.jit(jax.vmap(jac))`` on a batch placed with
``jax.device_put(xs, NamedSharding(mesh, P("batch")))`` partitions the vmapped program along the batch axis.

Across processes (``jax.distributed``; see :mod:`stablehlo_sparsity.derivatives.distributed` and
``python -m stablehlo_sparsity.launch``) the same code runs unchanged: after ``initialize()``, ``jax.devices()``
spans every process, a mesh over them makes every process evaluate its devices' colors, and the ``psum`` goes
between processes (gloo on CPU).  The result is replicated, so every process holds all ``nnz`` values, unless
it is sharded by rows (:func:`by_rows`): then each process holds only its own rows.

On one CPU host, ``XLA_FLAGS=--xla_force_host_platform_device_count=4`` (set before JAX initializes) gives four
virtual devices; they share the machine's cores, so this tests the program rather than speeding it up.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ...errors import InputError

__all__ = ["resolve_devices", "sharded_call", "AXIS", "ByRows", "by_rows"]

#: The mesh axis name used when ``devices`` is not a Mesh.
AXIS = "colors"


@dataclass(frozen=True)
class ByRows:
    """``devices=by_rows(devices)``: the mesh of ``devices``, and a result sharded by rows (see :func:`by_rows`).

    Examples:
        >>> from stablehlo_sparsity.derivatives.prepared.sharding import ByRows, by_rows
        >>> isinstance(by_rows(1), ByRows), by_rows(1, method="local").method
        (True, 'local')
    """

    devices: object
    method: str = "auto"


def by_rows(devices, method: str = "auto") -> ByRows:
    """Ask for the result sharded by rows over the mesh of ``devices`` (as ``devices=`` takes them):
    ``sparse_jacobian(f, x, devices=by_rows(jax.devices()), output="values")`` returns, instead of all ``nnz``
    values on every device, a ``(D, width)`` global array sharded over the mesh's axis whose row ``d`` holds
    the nonzeros of the ``d``-th block of ``ceil(m / D)`` rows (then zeros): each device keeps its own rows only
    (see :class:`~stablehlo_sparsity.derivatives.prepared.evaluation.RowBlocks`, ``prepared.row_blocks``, and
    :func:`stablehlo_sparsity.derivatives.distributed.row_block` for a process's rows as SciPy CSR).

    ``method``: ``"exchange"`` (each device its block of colors, one ``all_to_all`` of the values each other
    device's rows need), ``"scatter"`` (each device its block of colors, one ``psum_scatter`` of ``nnz``
    values), ``"local"`` (each device every product, no communication) or ``"auto"`` (:data:`ROW_METHOD`,
    chosen by ``benchmarks/distributed.py``; see ``docs/benchmarks/scaling.md``).

    Raises:
        InputError: an unknown ``method``; when the derivative is prepared, ``devices`` that do not resolve (see
            ``resolve_devices``) or an ``output`` other than ``"values"``.

    Examples:
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.derivatives.prepared.sharding import by_rows
        >>> jac = ss.sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(5), output="values", devices=by_rows(1))
        >>> jac(jnp.arange(5.0)).tolist()                # one device: one block of all 4 rows
        [[1.0, 0.0, 2.0, 1.0, 3.0, 2.0, 4.0, 3.0]]
    """
    from .evaluation import ROW_METHODS

    if method != "auto" and method not in ROW_METHODS:
        raise InputError(f"by_rows: method must be 'auto' or one of {', '.join(ROW_METHODS)}, got {method!r}")
    return ByRows(devices, method)


#: The method ``by_rows(..., method="auto")`` takes: ``"exchange"`` had the fastest warm call and the lowest peak
#: of the colors-sharded layouts at 2 and 4 processes, and the only peak that falls with the process count
#: (docs/benchmarks/scaling.md, "Where the result lives").
ROW_METHOD = "exchange"


def resolve_devices(devices):
    """A one-axis :class:`jax.sharding.Mesh` for ``devices`` (an int, a sequence of devices or a Mesh).

    Raises:
        InputError: a Mesh with more than one axis, a count outside ``[1, len(jax.devices())]``, an empty
            sequence, something that is not a device, or a device listed twice.

    Examples:
        >>> from stablehlo_sparsity.derivatives.prepared.sharding import resolve_devices
        >>> mesh = resolve_devices(1)
        >>> mesh.axis_names, mesh.devices.size
        (('colors',), 1)
        >>> resolve_devices(0)
        Traceback (most recent call last):
        ...
        stablehlo_sparsity.errors.InputError: devices=0: ... device(s) available ...
    """
    import jax
    import numpy as np
    from jax.sharding import Mesh

    if isinstance(devices, Mesh):
        if len(devices.axis_names) != 1:
            raise InputError(f"devices: a Mesh with one axis is needed, got axes {devices.axis_names}")
        return devices
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        available = jax.devices()
        if devices < 1 or devices > len(available):
            raise InputError(f"devices={devices}: {len(available)} device(s) available "
                             f"({available[0].platform}); on CPU set "
                             "XLA_FLAGS=--xla_force_host_platform_device_count=N before JAX starts")
        return Mesh(np.array(available[:devices]), (AXIS,))
    try:
        devs = list(devices)
    except TypeError:
        raise InputError(f"devices must be an int, a sequence of devices or a one-axis Mesh, got "
                         f"{type(devices).__name__}") from None
    if not devs or not all(isinstance(d, jax.Device) for d in devs):
        raise InputError("devices must be a non-empty sequence of jax devices (e.g. jax.devices()[:4])")
    if len(set(devs)) != len(devs):
        raise InputError("devices: the same device appears twice")
    return Mesh(np.array(devs), (AXIS,))


def sharded_call(values_on: Callable, args: tuple, mesh, tables: dict | None = None,
                 bound: Callable | None = None, by_rows: bool = False):
    """``values_on(args, shard=(axis, D))`` under ``jax.shard_map`` over ``mesh``: arguments and results
    replicated, the products split by color blocks (see the module docstring).

    ``tables``: index arrays passed as arguments (see
    :meth:`~stablehlo_sparsity.derivatives.prepared.evaluation.EvaluationPlan.
    index_tables`): those named with the per-device prefix are split over the mesh's axis (each device gets its
    own row), the others replicated; ``bound(local tables)`` is the context in which ``values_on`` reads them.
    ``by_rows``: the values come out as one row block per device, sharded over the axis.

    Examples:
        >>> import jax.numpy as jnp
        >>> from stablehlo_sparsity.derivatives.prepared.sharding import resolve_devices, sharded_call
        >>> values_on = lambda args, shard: args[0] * 2        # shard: (axis name, device count)
        >>> sharded_call(values_on, (jnp.arange(3.0),), resolve_devices(1)).tolist()
        [0.0, 2.0, 4.0]
    """
    import contextlib

    import jax
    from jax.sharding import PartitionSpec as P

    from .evaluation import PER_DEVICE

    axis = mesh.axis_names[0]
    count = mesh.shape[axis]
    tables = tables or {}
    table_specs = {k: P(axis) if k.startswith(PER_DEVICE) else P() for k in tables}

    def body(local, *a):
        with (bound(local) if bound is not None else contextlib.nullcontext()):
            return values_on(a, (axis, count))

    # check_vma=False: the products vary by device while the arguments (and the VJP closures built from them)
    # are replicated; every output is replicated by construction (the psum, and f(x) computed alike everywhere)
    out_specs = (P(), P(), P(axis)) if by_rows else P()
    return jax.shard_map(body, mesh=mesh, in_specs=(table_specs, *(P() for _ in args)), out_specs=out_specs,
                         check_vma=False)(tables, *args)
