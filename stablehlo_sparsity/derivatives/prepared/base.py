"""The public base of every prepared derivative: :class:`PreparedDerivative`.

A prepared derivative holds a pattern, a coloring and a compiled program ``args ↦ (f(x) or None, aux,
nonzeros in the CSR order of the pattern)``.  This class gives what :class:`~stablehlo_sparsity.SparseJacobian`,
:class:`~stablehlo_sparsity.SparseHessian` and the module derivatives share: argument checks, the compiled
core, output containers (:mod:`.outputs`), pytree blocks, lowering, export, pickling and ``.save``
(:mod:`.saving`).  A subclass sets the state through :meth:`bind` and :meth:`set_plan` and defines
``_values_on(args, shard=None)``.
"""

from __future__ import annotations

from typing import Any, Self, Sequence, cast

import numpy as np
import scipy.sparse as sp

from ..._compat import constants_in_module
from ...errors import InputError
from .evaluation import STRATEGIES, EvaluationPlan, static_gather
from ...lattice.pattern import SparsityPattern
from ...analysis.auxiliary import AuxSplit
from ...analysis.program import cyclic_gc_paused
from .inputs import check_call_arguments, struct
from ...dtypes import index_dtype
from .outputs import Layout, host_container, import_in_background, output_named
from .saving import STATE_FORMAT, export_program, register_pytree, restored_call, warn_forward_only, write_npz
from .validation import check_state, deserialize_program, program_signature

__all__ = ["PreparedDerivative", "ELIDE_CONSTANT_ELEMENTS", "check_strategy"]

#: :meth:`PreparedDerivative.as_text` prints constants with more elements than this as
#: ``dense_resource<__elided__>``.
ELIDE_CONSTANT_ELEMENTS = 64


def check_strategy(strategy, chunk_size) -> None:
    if strategy not in STRATEGIES:
        raise InputError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    if chunk_size is not None and (isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer))
                                   or chunk_size < 1):
        raise InputError(f"chunk_size must be a positive integer, got {chunk_size!r}")


class PreparedDerivative:
    """What every prepared sparse derivative shares (see the module docstring).

    Attributes: ``pattern``, ``coloring``, ``mode``, ``output``, ``argnums``, ``has_aux``, ``with_value``,
    ``num_colors``, ``shape``, ``example_args`` (the prepared structures), ``out_tree`` / ``out_shapes`` (of
    the differentiated output), ``forward_only`` (a restored object without reverse-mode derivative)."""

    #: what the object is called in messages ("Jacobian", "Hessian")
    kind = "derivative"
    #: the serialized program (see :meth:`program_bytes`), made on the first save or pickle
    _program: bytes | None = None
    #: why a restored object has no reverse-mode derivative (``None``: it has one, or it is not restored)
    forward_only: str | None = None
    strategy_requested: str = "auto"
    chunk_size: int | None = None
    #: ``None`` (one device) or a one-axis :class:`jax.sharding.Mesh` (see :meth:`set_devices`)
    devices: Any = None
    #: ``None``, or how a result sharded by rows is computed (see
    #: :func:`~stablehlo_sparsity.derivatives.prepared.sharding.by_rows`)
    row_method: str | None = None
    constant_seeds: bool | None = None
    _argnums_int = True
    #: the non-array leaves of the prepared arguments (static: a call must hold the same), ``None`` without any
    #: (:mod:`stablehlo_sparsity.analysis.arguments`)
    _statics = None
    _layout = None
    _executable = None
    _plan: EvaluationPlan | None = None
    _rows: np.ndarray
    _cols: np.ndarray

    # ------------------------------------------------------------------ preparation
    @classmethod
    def from_request(cls, req: Any) -> Self:
        """The derivative a face function asks for (``req``: its ``derivatives.request.DerivativeRequest``): the
        object made without ``__init__``, then the subclass's ``prepare_request(req)``."""
        self = cls.__new__(cls)
        self.prepare_paused(req)
        return self

    def prepare_paused(self, req: Any) -> None:
        """:meth:`prepare_request` with Python's cyclic garbage collector paused
        (:func:`~stablehlo_sparsity.analysis.program.cyclic_gc_paused`).

        A preparation allocates tens of thousands of short-lived objects (tracers, equations, MLIR handles) and
        keeps a few thousand.  With the collector on, its young-generation collections promote the temporaries
        alive at that moment, and in a fresh process the first full collection, due from the imports (JAX's,
        SciPy's: 100k objects, 40–140 ms to scan), fired inside it.  Paused, the preparation promotes nothing.
        That full collection comes at the next allocations after it, as it does after ``jax.jit(jax.jacfwd(f))``:
        measured, one full collection in a follow-up workload after either."""
        with cyclic_gc_paused():
            self.prepare_request(req)

    def prepare_request(self, req: Any) -> None:
        """Detect, color and plan for ``req`` (each kind of derivative defines it)."""
        raise NotImplementedError

    def bind(self, fn, args, argnums, *, has_aux: bool, output: str, with_value: bool, argnums_int: bool = True,
             constant_seeds: bool | None = None, strategy: str = "auto", chunk_size: int | None = None,
             devices=None, statics=None) -> None:
        """Keep the function, the example structures and the evaluation options (checked).  ``fn`` and ``args``
        are the traced parts of the user's (``statics``: the non-array leaves held out, see
        :mod:`stablehlo_sparsity.analysis.arguments`)."""
        import jax

        out = output_named(output)
        self.output = out.name
        check_strategy(strategy, chunk_size)
        self.strategy_requested, self.chunk_size = strategy, chunk_size
        self.constant_seeds = constant_seeds
        self.argnums = tuple(argnums)
        self.has_aux = bool(has_aux)
        self.with_value = bool(with_value)
        self._argnums_int = bool(argnums_int)
        self._fn = fn
        self._statics = statics
        self._example = jax.tree_util.tree_map(struct, tuple(args))
        self._in_tree = jax.tree_util.tree_structure(tuple(args))
        self._aux = AuxSplit()
        self.set_devices(devices)

    def set_devices(self, devices) -> None:
        """Check and keep ``devices`` (``None``: one device; else a sequence of devices, a count, a one-axis
        :class:`jax.sharding.Mesh`, or :func:`~stablehlo_sparsity.derivatives.prepared.sharding.by_rows` of one for a
        result
        sharded by rows) — see :mod:`stablehlo_sparsity.derivatives.prepared.sharding`."""
        self.row_method = None
        if devices is None:
            self.devices = None
            return
        from . import sharding

        if isinstance(devices, sharding.ByRows):
            if self.output != "values":
                raise InputError("a result sharded by rows is returned as output='values' (a (devices, width) "
                                 f"array of row blocks), not output={self.output!r}; "
                                 "stablehlo_sparsity.derivatives.distributed.row_block gives a process's rows as "
                                 "SciPy CSR")
            self.row_method = sharding.ROW_METHOD if devices.method == "auto" else devices.method
            devices = devices.devices
        self.devices = sharding.resolve_devices(devices)

    @property
    def row_blocks(self):
        """The :class:`~stablehlo_sparsity.derivatives.prepared.evaluation.RowBlocks` of a result sharded by rows
        (``None``: the
        result is replicated)."""
        return None if self._plan is None else self._plan.rows

    def set_plan(self, sides, source, rows, cols) -> None:
        """Keep the evaluation plan (the products and where each nonzero is read), the index arrays of the
        output containers, and fresh compiled wrappers."""
        t = index_dtype(max(*self.shape, 1))
        self._rows, self._cols = np.asarray(rows).astype(t), np.asarray(cols).astype(t)
        self._colors = self.coloring.colors.astype(np.int32)
        self._layout = None
        self._plan = EvaluationPlan(sides, source, self.strategy_requested, self.chunk_size,
                                    itemsize=self.itemsize())
        if self.row_method is not None:
            axis = self.devices.axis_names[0]
            self._plan.shard_rows(np.asarray(_csr_arrays(self.pattern)[0]), self.devices.shape[axis],
                                  self.row_method)
        self.reset_compiled()

    def itemsize(self) -> int:
        """Bytes per value of the differentiated arguments (8 without any)."""
        import jax
        import jax.numpy as jnp

        leaves = jax.tree_util.tree_leaves(tuple(self._example[i] for i in self.argnums))
        return int(np.dtype(jnp.result_type(*leaves)).itemsize) if leaves else 8

    def reset_compiled(self) -> None:
        import jax

        self._jitted = jax.jit(self._core)
        self._executable = None  # (made on the first call outside any trace: :meth:`_compiled_call`)
        self._jitted_values = None
        self._device_index: dict = {}
        self._device_tables: dict | None = None

    # ------------------------------------------------------------------ what it is
    @property
    def num_colors(self) -> int:
        return self.coloring.num_colors

    @property
    def shape(self) -> tuple[int, int]:
        return self.pattern.shape

    @property
    def example_args(self) -> tuple:
        """The prepared argument structures (``jax.ShapeDtypeStruct`` leaves)."""
        return self._example

    @property
    def out_tree(self):
        """The pytree structure of the differentiated output (rows)."""
        return self._out_tree

    @property
    def out_shapes(self) -> list[tuple[int, ...]]:
        """The shapes of the differentiated output's leaves."""
        return list(self._out_shapes)

    @property
    def strategy(self) -> str:
        """The evaluation strategy in use (``"vmap"``, ``"unrolled"`` or ``"loop"``; see
        :mod:`stablehlo_sparsity.derivatives.prepared.evaluation`)."""
        plan = self._plan
        return plan.strategy if plan is not None else getattr(self, "_strategy_restored", "vmap")

    def layout(self) -> Layout:
        """The static index data of the containers (see :class:`~.outputs.Layout`)."""
        lay = self.__dict__.get("_lay")
        if lay is None or lay.rows is not self._rows:
            lay = self._lay = Layout(self.shape, self._rows, self._cols, *_csr_arrays(self.pattern))
        return lay

    # ------------------------------------------------------------------ evaluation
    @property
    def index_arguments(self) -> bool:
        """Whether the decompression's index arrays are arguments of the compiled program (held on the device
        by this object) rather than constants: above
        :data:`~stablehlo_sparsity.derivatives.prepared.evaluation.INDEX_ARGUMENT_ENTRIES` nonzeros."""
        return self._plan is not None and self._plan.index_arguments

    def _index_arguments(self) -> dict:
        """The plan's index arrays as device arrays when they are arguments (``{}`` when they are constants):
        made once; on a mesh, the per-device tables are sharded over its axis (each device holds its own
        row) and the others replicated."""
        if not self.index_arguments:
            return {}
        if self._device_tables is None:
            import jax

            from .evaluation import PER_DEVICE

            plan = self._plan
            assert plan is not None  # index_arguments is False without a plan
            if self.devices is None:
                tables = plan.index_tables()
                # a first call may come under jit: the arrays must be concrete, never that trace's tracers
                with jax.ensure_compile_time_eval():
                    self._device_tables = {k: jax.device_put(v) for k, v in tables.items()}
            else:
                from jax.sharding import NamedSharding, PartitionSpec as P

                mesh = self.devices
                axis = mesh.axis_names[0]
                tables = plan.index_tables(mesh.shape[axis])
                placed = {}
                for k, v in tables.items():
                    sharding = NamedSharding(mesh, P(axis) if k.startswith(PER_DEVICE) else P())
                    # every process builds only the rows its devices hold (the mesh may span processes)
                    with jax.ensure_compile_time_eval():
                        placed[k] = jax.make_array_from_callback(v.shape, sharding,
                                                                 cast(Any, lambda i, v=v: v[i]))
                self._device_tables = placed
                plan.drop_host_tables()
        return self._device_tables

    def _values_with(self, tables: dict, *args):
        """``(f(x) or None, aux leaves, nonzeros in CSR order)``, reading the index arrays from ``tables``
        (``{}``: constants): on one device, or spread over :attr:`devices` with ``shard_map`` (see
        :mod:`stablehlo_sparsity.derivatives.prepared.sharding`)."""
        plan = self._plan
        if plan is None:  # restored from its serialized program
            return self._values(*args)
        if self.devices is None:
            with plan.bound(tables):
                return self._values_on(args)
        from .sharding import sharded_call

        return sharded_call(self._values_on, args, self.devices, tables, plan.bound, plan.rows is not None)

    def _values(self, *args):
        """:meth:`_values_with` the index arrays as the plan keeps them (device arguments above the
        threshold, closed over; else constants)."""
        return self._values_with(self._index_arguments(), *args)

    def _values_on(self, args, shard=None):  # pragma: no cover - every subclass defines it
        raise NotImplementedError

    def check_args(self, args) -> tuple:
        """The pattern and the program are specific to the prepared structure, shapes and kinds of dtype;
        returns the arguments' traced parts, another float width converted to the prepared dtype with a warning
        (:func:`.inputs.check_call_arguments`)."""
        import jax

        if self._statics is not None:  # (the non-array leaves must be those it was prepared with)
            args = self._statics.check(args, self.kind)
        leaves, tree = jax.tree_util.tree_flatten(args)
        if cast(Any, tree) != self._in_tree:
            raise InputError(f"arguments have structure {tree}, the {self.kind} was prepared for {self._in_tree}")
        examples = jax.tree_util.tree_leaves(self._example)
        converted = check_call_arguments(leaves, examples, self.kind)
        if any(a is not b for a, b in zip(converted, leaves)):
            return tuple(jax.tree_util.tree_unflatten(tree, converted))
        return args

    def _package(self, y, aux, mat):
        if self.with_value:
            return ((y, aux) if self.has_aux else y), mat
        return (mat, aux) if self.has_aux else mat

    def _core(self, tables, *args):
        """The compiled part: ``(f(x) or None, aux leaves, values or dense matrix)``, the decompression's index
        arrays ``tables`` as arguments (``{}``: constants).  Sparse containers are built outside, around
        device-resident index arrays, so a call does not copy constant indices out."""
        y, aux, values = self._values_with(tables, *args)
        out = output_named(self.output)
        if out.compiled_dense:
            values = out.in_program(values, self.layout())
        return (y if self.with_value else None), aux, values

    def _index(self, name):
        import jax

        if name not in self._device_index:
            indptr, indices = _csr_arrays(self.pattern)
            t = index_dtype(max(len(indices), *self.shape, 1))
            arr = {"coo": lambda: np.stack([self._rows, self._cols], axis=1), "indices": lambda: indices,
                   "indptr": lambda: indptr}[name]().astype(t)
            # A first call may come under jit/vmap/grad: the cached array must be a concrete device array,
            # never that trace's tracer (which would leak into the next trace — issue 11).  (device_put: a
            # transfer; jnp.asarray costs 15 ms more on a process's first call.)
            with jax.ensure_compile_time_eval():
                self._device_index[name] = jax.device_put(arr)
        return self._device_index[name]

    def __call__(self, *args):
        """The derivative at ``args`` (of the prepared structure, shapes and kinds of dtype), as ``output`` says.

        Raises:
            InputError: arguments of another pytree structure, another shape or another kind of dtype (an integer
                array where a float was prepared) than the prepared ones.

        Examples:
            >>> import jax.numpy as jnp
            >>> import stablehlo_sparsity as ss
            >>> jac = ss.sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(3), output="dense")
            >>> jac(jnp.arange(3.0)).tolist()
            [[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]]
            >>> jac(jnp.ones(4))
            Traceback (most recent call last):
            ...
            stablehlo_sparsity.errors.InputError: argument shape (4,) differs from the prepared shape (3,); ...
        """
        args = self.check_args(args)
        y, aux, values = self._compiled_call(self._index_arguments(), args)
        return self._package(y, self._aux.join(aux),
                             host_container(output_named(self.output), values, self.layout(), self._index))

    def _compiled_call(self, tables: dict, args: tuple):
        """The compiled core at ``args``: on the first call outside any trace (on one device), the executable is
        taken from, or added to, the process's cache of compiled programs keyed by the lowered module
        (:mod:`.compiled_cache`: another object prepared for the same program skips XLA's compilation); a call
        inside ``jit``/``vmap``/``grad``, or with argument types the executable was not compiled for (a weakly
        typed Python scalar), goes through ``jax.jit``."""
        exe = self._executable
        if exe is None:
            import jax

            from .compiled_cache import PROGRAMS, has_tracers

            if self.devices is not None or has_tracers(jax.tree_util.tree_leaves((tables, args))):
                return self._jitted(tables, *args)
            with cyclic_gc_paused():  # (tracing, lowering, compiling: short-lived objects, as in prepare_paused)
                lowered = self._jitted.lower(tables, *args)
                # the container's module is imported while XLA compiles (which releases the GIL), not after
                import_in_background(output_named(self.output).module)
                exe = self._executable = PROGRAMS.compiled(lowered)
        try:
            return exe(tables, *args)
        except TypeError:  # (raised before running: traced arguments, or other argument types)
            return self._jitted(tables, *args)

    def values(self, *args):
        """The nonzeros at ``args`` in the CSR order of :attr:`pattern` (jit-compatible).

        Raises:
            InputError: arguments of another pytree structure, another shape or another kind of dtype (an integer
                array where a float was prepared) than the prepared ones.

        Examples:
            >>> import jax.numpy as jnp
            >>> import stablehlo_sparsity as ss
            >>> jac = ss.sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(3))
            >>> jac.values(jnp.arange(3.0)).tolist(), jac.pattern.indices.tolist()
            ([1.0, 0.0, 2.0, 1.0], [0, 1, 1, 2])
        """
        import jax

        args = self.check_args(args)
        if self._jitted_values is None:
            self._jitted_values = jax.jit(lambda t, *a: self._values_with(t, *a)[2])
        return self._jitted_values(self._index_arguments(), *args)

    def with_output(self, output: str):
        """A traceable function returning the result with ``output`` built inside the program (auxiliary data:
        its array leaves)."""
        out = output_named(output, traceable=True)

        def fn(*args):
            y, aux, values = self._values(*args)
            return self._package(y, aux, out.in_program(values, self.layout()))

        return fn

    _with_output = with_output

    def _lower_jit(self, fn):
        import jax

        return jax.jit(fn)

    def lower(self, *args, output: str | None = None):
        """``jax.jit(...).lower(...)`` of the compressed program (at the prepared shapes by default), the
        container built inside it (``output`` overrides it; ``"values"`` gives the bare data vector)."""
        out = output or (self.output if output_named(self.output).in_program is not None else "values")
        with constants_in_module():  # (its tables are constants of the module, on every JAX release)
            return self._lower_jit(self.with_output(out)).lower(*(args or self._example))

    def as_text(self, *args, output: str | None = None, debug_info: bool = False,
                keep_large_constants: bool = False) -> str:
        """The StableHLO text of the compressed program: the batched products, the seed matrix (or the color
        vector it is built from) and the gather indices of the decompression appear as constants.

        Constants with more than :data:`ELIDE_CONSTANT_ELEMENTS` elements print as
        ``dense_resource<__elided__>`` (the full text of a large problem is megabytes of indices);
        ``keep_large_constants=True`` prints them in full (the text then parses back)."""
        module = self.lower(*args, output=output).compiler_ir("stablehlo")
        with module.context:
            return module.operation.get_asm(
                large_elements_limit=None if keep_large_constants else ELIDE_CONSTANT_ELEMENTS,
                enable_debug_info=debug_info)

    def export(self, platforms: Sequence[str] = ("cpu", "cuda", "tpu"), output: str = "values"):
        """A :class:`jax.export.Exported` of the program for ``platforms``.

        The default ``output="values"`` exports the data vector (nonzeros in :attr:`pattern` CSR order, whose
        index arrays are static: ``pattern.indptr`` / ``pattern.indices``); ``"dense"`` exports the dense
        matrix.  ``exp.call(*args)`` runs it; ``exp.serialize()`` needs the ``flatbuffers`` package."""
        import jax
        from jax import export as jexport

        if not output_named(output, traceable=True).exportable:
            raise InputError("export supports output='values' or 'dense' (plain arrays)")
        return jexport.export(jax.jit(self.with_output(output)), platforms=tuple(platforms))(*self._example)

    # ------------------------------------------------------------------ pytree blocks
    def blocks(self, *args):
        """The derivative at ``args`` split per (output leaf, input leaf) and nested as ``jax.jacfwd`` (or
        ``jax.hessian``) returns it: ``blocks[out][in]`` has shape ``out_leaf.shape + in_leaf.shape``.

        Each block is a ``BCOO`` of that shape (``output="bcoo"``/``"bcsr"``/``"values"``), a dense array
        (``"dense"``) or a 2-D ``scipy.sparse.csr_array`` of shape ``(out_leaf.size, in_leaf.size)``
        (``"scipy"``).  The split is static index math; it works under ``jit`` (except ``"scipy"``).

        Raises:
            InputError: arguments of another pytree structure, another shape or another kind of dtype than the
                prepared ones, or a result sharded by rows (``devices=by_rows(...)``).

        Examples:
            >>> import jax.numpy as jnp
            >>> import stablehlo_sparsity as ss
            >>> f = lambda x: {"d": x[1:] - x[:-1], "s": x.sum()}
            >>> blocks = ss.sparse_jacobian(f, jnp.ones(3), output="dense").blocks(jnp.ones(3))
            >>> blocks["d"].tolist(), blocks["s"].tolist()
            ([[-1.0, 1.0, 0.0], [0.0, -1.0, 1.0]], [1.0, 1.0, 1.0])
        """
        return self.blocks_from_values(self.values(*args))

    def _row_shapes(self, in_shapes):
        """The shapes of the row leaves (a Hessian's rows are its inputs)."""
        return [tuple(s) for s in self._out_shapes]

    def _row_tree(self, inner):
        return self._out_tree

    def _block_layout(self):
        """Static per-block index data: for each (output leaf, input leaf) the CSR positions of its nonzeros
        and their local (row, col)."""
        import jax

        if self._layout is not None:
            return self._layout
        in_shapes = [tuple(leaf.shape) for leaf in jax.tree_util.tree_leaves(
            tuple(jax.tree_util.tree_unflatten(self._in_tree, jax.tree_util.tree_leaves(self._example))[i]
                  for i in self.argnums))]
        out_shapes = self._row_shapes(in_shapes)
        rows, cols = self.pattern.to_coo()
        r_off = np.cumsum([0] + [int(np.prod(s, dtype=np.int64)) for s in out_shapes])
        c_off = np.cumsum([0] + [int(np.prod(s, dtype=np.int64)) for s in in_shapes])
        r_leaf = np.searchsorted(r_off, rows, side="right") - 1
        c_leaf = np.searchsorted(c_off, cols, side="right") - 1
        key = r_leaf * len(in_shapes) + c_leaf
        order = np.argsort(key, kind="stable")
        bounds = np.searchsorted(key[order], np.arange(len(out_shapes) * len(in_shapes) + 1))
        layout = []
        for o, osh in enumerate(out_shapes):
            row = []
            for i, ish in enumerate(in_shapes):
                b = o * len(in_shapes) + i
                pos = order[bounds[b]:bounds[b + 1]]
                row.append((osh, ish, pos, rows[pos] - r_off[o], cols[pos] - c_off[i]))
            layout.append(row)
        self._layout = layout
        return layout

    def _inner_tree(self):
        """The input structure of one block row: the selected argument's tree for an integer ``argnums``,
        else the tuple of the selected arguments' trees (as ``jax.jacfwd``)."""
        import jax

        children = self._in_tree.children()
        if self._argnums_int and len(self.argnums) == 1:
            return children[self.argnums[0]]
        return jax.tree_util.treedef_tuple([children[i] for i in self.argnums])

    def blocks_from_values(self, values):
        """:meth:`blocks` from the nonzeros of :meth:`values` (CSR order of :attr:`pattern`)."""
        import jax
        import jax.numpy as jnp

        if self.row_blocks is not None:
            raise InputError("blocks: this result is sharded by rows (devices=by_rows(...)); take the CSR order "
                             "vector from prepared.row_blocks.values(...) or a process's rows from "
                             "stablehlo_sparsity.derivatives.distributed.row_block")

        inner = self._inner_tree()
        outer = self._row_tree(inner)
        block = output_named(self.output).block
        out_rows = []
        for row in self._block_layout():
            blocks = []
            for osh, ish, pos, r, c in row:
                shape = tuple(osh) + tuple(ish)
                if block == "scipy":
                    v = np.asarray(values)[pos]
                    blocks.append(sp.csr_array((v, (r, c)), shape=(int(np.prod(osh, dtype=np.int64)),
                                                                    int(np.prod(ish, dtype=np.int64)))))
                    continue
                v = static_gather(values, pos) if len(pos) else jnp.zeros((0,), values.dtype)
                idx = np.concatenate([np.stack(np.unravel_index(r, osh), 1) if osh else np.zeros((len(r), 0), int),
                                      np.stack(np.unravel_index(c, ish), 1) if ish else np.zeros((len(c), 0), int)],
                                     axis=1).astype(index_dtype(max(max(shape, default=1), 1)))
                blocks.append(block(v, idx, shape))
            out_rows.append(jax.tree_util.tree_unflatten(inner, blocks))
        return jax.tree_util.tree_unflatten(outer, out_rows)

    # ------------------------------------------------------------------ pytree, pickle, save / load
    def __new__(cls, *args, **kwargs):
        register_pytree(cls)
        return super().__new__(cls)

    def program_bytes(self) -> bytes:
        """The compressed program ``args ↦ (f(args) or None, aux leaves, values)`` serialized with
        :mod:`jax.export` — with its VJP when JAX can form it, else forward-only (see :mod:`.saving`)."""
        if self._program is None:
            if self._fn is None:  # restored: the bytes are kept
                raise InputError(f"this sparse {self.kind} has no program to save")
            # the single-device program: a saved object evaluates wherever it is loaded
            self._program, self._forward_only_reason = export_program(
                lambda *a: self._values_on(a), self._example, self.kind)
        return self._program

    def _program_signature(self) -> dict:
        """The manifest's record of the program's signature (:func:`.validation.program_signature`)."""
        sig = self.__dict__.get("_signature")
        if sig is None:
            sig = self._signature = program_signature(deserialize_program(self.program_bytes(), None))
        return sig

    def _state(self) -> dict:
        """Everything a restored object needs, as NumPy arrays, plain values and the program's bytes."""
        c = self.coloring
        program = self.program_bytes()
        reason = self.forward_only or getattr(self, "_forward_only_reason", None)
        meta = {"format": STATE_FORMAT, "class": getattr(self, "saved_as", type(self).__name__),
                "host_callback": False, "signature": self._program_signature(),
                "shape": list(self.shape),
                "output": self.output, "has_aux": self.has_aux, "with_value": self.with_value,
                "argnums": list(self.argnums), "mode": None if getattr(self, "mode", None) is None else str(self.mode),
                "argnums_int": bool(self._argnums_int), "forward_only": reason,
                "coloring": {"kind": str(c.kind), "num_colors": int(c.num_colors), "order": str(c.order),
                             "lower_bound": int(c.lower_bound), "shape": list(c.shape),
                             "num_column_colors": int(getattr(c, "num_column_colors", 0))},
                **self._extra_meta()}
        indptr, indices = _csr_arrays(self.pattern)
        return {"meta": meta, "indptr": np.asarray(indptr), "indices": np.asarray(indices),
                "colors": np.asarray(c.colors), "rows": np.asarray(self._rows), "cols": np.asarray(self._cols),
                "program": program}

    def _extra_meta(self) -> dict:
        """What a subclass adds to the saved metadata (plain JSON values)."""
        return {}

    def __getstate__(self) -> dict:
        """The pickled state (pickle keeps any auxiliary data).  Unpickling is as unsafe as any pickle — it can
        run arbitrary code — so unpickle only what you wrote; :meth:`save` / :func:`~stablehlo_sparsity.load`
        is the format for exchange.  A restored state is checked all the same (:meth:`_restore`)."""
        state = self._state()
        if self._aux.has_static:
            state["aux"] = self._aux  # pickle keeps any Python object
        if self._statics is not None:
            state["statics"] = self._statics
        return state

    def __setstate__(self, state: dict) -> None:
        self._restore(state, None)

    def _restore(self, state: dict, source: str | None) -> None:
        """Restore from a saved or pickled state: every structural check first (:func:`.validation.check_state`:
        the pattern, the colors, the decompression indices, the program's signature and custom calls), then the
        object — nothing of the state is used before it is checked.  ``source``: the file, for messages."""
        import jax

        meta = state.get("meta") if isinstance(state, dict) else None
        fmt = meta.get("format") if isinstance(meta, dict) else None
        if fmt != STATE_FORMAT:
            raise InputError(f"not a saved sparse Jacobian/Hessian of this version (format {fmt!r:.80}, expected "
                             f"{STATE_FORMAT!r}): prepare it again with this version", source)
        assert isinstance(meta, dict)  # fmt == STATE_FORMAT was read from it
        checked = check_state(state, source)
        m, n = checked.shape
        self.pattern = SparsityPattern(sp.csr_array(
            (np.ones(len(checked.indices), bool), checked.indices, checked.indptr), shape=(m, n)))
        self.coloring = _restored_coloring(meta["coloring"], np.asarray(checked.colors, np.int32))
        self.output, self.has_aux, self.with_value = meta["output"], meta["has_aux"], meta["with_value"]
        self.argnums = tuple(meta["argnums"])
        self._argnums_int = meta.get("argnums_int", True)
        if meta.get("mode") is not None:
            self.mode = self._mode_from_text(meta["mode"])
        self._rows, self._cols = state["rows"], state["cols"]
        self._colors = self.coloring.colors
        self.constant_seeds = None
        self.analysis = None  # the detection result (an ir.Module) is not kept: the pattern is
        self._fn = None
        self._aux = state.get("aux") or AuxSplit()
        self._statics = state.get("statics")
        self._program = bytes(state["program"])
        self.forward_only = meta.get("forward_only")
        exp = checked.exported
        self._signature = meta["signature"]
        self._in_tree = exp.in_tree.children()[0]
        self._example = jax.tree_util.tree_unflatten(
            self._in_tree, [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in exp.in_avals])
        cast(Any, self)._values = restored_call(exp, self.forward_only, self.kind)
        out_tree = exp.out_tree.children()[0]  # (y, aux, values) → y
        self._out_tree = out_tree
        self._out_shapes = [tuple(a.shape) for a in exp.out_avals[:out_tree.num_leaves]]
        self._layout = None
        self._plan = None
        self.reset_compiled()
        if self.forward_only:
            warn_forward_only(self.kind, self.forward_only)

    def _mode_from_text(self, text: str):
        return text

    def save(self, path) -> None:
        """Save pattern, coloring and compiled program as one ``.npz`` artifact (no pickle inside), to be
        read back with :func:`stablehlo_sparsity.load` — in another process, without ``f``'s source.

        The program is a :mod:`jax.export` serialization (StableHLO bytecode, with its VJP): a restored
        object evaluates, works under ``jit``, ``vmap`` (as a sequential map) and reverse-mode AD; forward
        mode (``jvp``) through it is not available.  A program without reverse-mode derivative (a
        ``while_loop`` with a dynamic trip count) is saved forward-only (see :mod:`.saving`).

        This is the format meant for exchange: the file carries a manifest with the SHA-256 of every member, and
        :func:`~stablehlo_sparsity.load` checks the digests and the structure of everything before using it
        (see :func:`~stablehlo_sparsity.load` for what that guarantees and what it does not).  ``pickle`` of a
        prepared object is as unsafe as any pickle — unpickling can run arbitrary code — so unpickle only what
        you wrote yourself.  The same object saves to the same bytes: the file's SHA-256
        (:func:`stablehlo_sparsity.derivatives.saved.file_sha256`) can be pinned with ``load(path, sha256=...)``.  The
        checks run here too: a program ``load`` would refuse (a ``custom_call`` outside the library's targets)
        is refused when it is saved.

        Raises:
            InputError: the auxiliary data holds values that are not arrays (``pickle`` keeps them), or the program
                holds something ``load`` would refuse (a ``custom_call`` outside the library's targets).
            OSError: the file cannot be written.

        Examples:
            >>> import os, tempfile
            >>> import jax.numpy as jnp
            >>> import stablehlo_sparsity as ss
            >>> path = os.path.join(tempfile.mkdtemp(), "jac.npz")
            >>> ss.sparse_jacobian(lambda x: x[1:] * x[:-1], jnp.ones(3)).save(path)
            >>> ss.load(path)(jnp.arange(3.0)).todense().tolist()
            [[1.0, 0.0, 0.0], [0.0, 2.0, 1.0]]
        """
        if self._aux.has_static:
            raise InputError("cannot save: the auxiliary data holds values that are not arrays "
                             f"({', '.join(type(v).__name__ for v in self._aux.static.values())}); "
                             "pickle keeps them")
        if self._statics is not None:
            raise InputError(f"cannot save: the arguments hold values that are not arrays "
                             f"({', '.join(self._statics.paths)}), which a saved program cannot take; close over them "
                             "(equinox.partition the model and combine it inside f) and prepare again, or pickle "
                             "it")
        state = self._state()
        try:  # what save writes, load reads: the same checks, here with a message about saving
            exp = check_state(state, None).exported
            if exp.has_vjp():
                exp.vjp()  # (checked when read)
        except InputError as e:
            raise InputError(f"cannot save this sparse {self.kind}: {e.message} (load would refuse it)") from None
        write_npz(path, state)


def _restored_coloring(cm: dict, colors: np.ndarray):
    """The coloring of a saved object; a bicoloring comes back as one (its colors: the columns', then the
    rows' shifted by the number of column colors)."""
    from ...coloring import Bicoloring, Coloring
    from ...coloring.kinds import ColoringKind

    if cm["kind"] == ColoringKind.BIDIRECTIONAL:
        n = int(cm["shape"][1])
        cc, rc = colors[:n], colors[n:]
        kc = int(cm.get("num_column_colors", cc.max() + 1 if len(cc) else 0))
        return Bicoloring.from_sides(cc, np.where(rc >= 0, rc - kc, -1), tuple(cm["shape"]), cm["order"],
                                     cm["lower_bound"])
    return Coloring(colors, cm["num_colors"], cm["kind"], tuple(cm["shape"]), cm["order"], cm["lower_bound"])


def _csr_arrays(pattern):
    csr = pattern.to_scipy()
    return csr.indptr, csr.indices
