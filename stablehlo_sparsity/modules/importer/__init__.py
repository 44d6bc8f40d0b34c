"""StableHLO → JAX: replay a module op by op with ``jax.lax``, so JAX's own derivative rules apply.

    >>> import numpy as np
    >>> from stablehlo_sparsity.modules.importer import import_module
    >>> f = import_module('''
    ... func.func @main(%x: tensor<3xf32>) -> tensor<2xf32> {
    ...   %0 = stablehlo.slice %x [1:3] : (tensor<3xf32>) -> tensor<2xf32>
    ...   %1 = stablehlo.slice %x [0:2] : (tensor<3xf32>) -> tensor<2xf32>
    ...   %2 = stablehlo.multiply %0, %1 : tensor<2xf32>
    ...   func.return %2 : tensor<2xf32>
    ... }''')
    >>> f(np.array([1.0, 2.0, 3.0], np.float32)).tolist()
    [2.0, 6.0]

:func:`import_module` returns an :class:`ImportedFunction`: a JAX-traceable function with the entry's
signature (flat arguments; the single result, or a tuple of results) — ``jax.jit``, ``jax.jacfwd``,
``jax.vmap`` … apply to it.  Each op is replayed by the rule ``IMPORT_RULES[op name]`` (one op family per
module of this package, each rule citing the spec section it mirrors), with the ``jax.lax`` primitive that
lowers to the same StableHLO op, so ``jax.jit`` of the imported function compiles to the module's own
program.  Ops with no ``jax.lax`` twin are re-emitted verbatim (:mod:`.replay`); an op the importer cannot
replay raises :class:`ImportError_` (an :class:`~stablehlo_sparsity.errors.UnsupportedOpError`) naming the op
and its ``file:line:col``.  :data:`NOT_IMPORTABLE` lists the analysis' ops that are refused, with reasons.

The folder: :mod:`.core` (the importer's side of the region engine: one import rule per op) and
:mod:`.bodies` (recognizing the small computations regions hold), then one op family per module —
:mod:`.elementwise`, :mod:`.structural`, :mod:`.calls`, :mod:`.control_flow`, :mod:`.reduction`,
:mod:`.windows`, :mod:`.dot_general`, :mod:`.convolution`, :mod:`.indexing`, :mod:`.sorting`,
:mod:`.custom_call`, :mod:`.linalg`, :mod:`.normalization`, :mod:`.random_numbers`, :mod:`.chlo`,
:mod:`.dynamic_shapes`, :mod:`.distribution` — and around them :mod:`.replay` (ops re-emitted verbatim),
:mod:`.platforms` (the platform a derivative program is lowered for) and :mod:`.xla` (a module compiled by XLA
directly: the reference the replay is compared with).

Rank 4 (``modules``) in ``tests/test_layout.py``: may import ``analysis`` (the region engine, values), ``ir`` (the
IR toolkit) and ranks 1 and 0, and nothing else: the module derivatives build on it.
"""

from __future__ import annotations

import numpy as np

from typing import Any

from ...ir.attrs import function_results
from ...errors import InputError
from ...ir.helpers import functions
from ...analysis.values import TensorType, tensor_type
from ...dtypes import is_real_float
from .core import IMPORT_RULES, NOT_IMPORTABLE, ImportContext, ImportError_, import_rule
from . import (calls, chlo, control_flow, convolution, custom_call, distribution, dot_general, dynamic_shapes,  # noqa: F401
               elementwise, indexing, linalg, normalization, random_numbers, reduction, sorting, structural, windows)

__all__ = ["import_module", "ImportedFunction", "IMPORT_RULES", "NOT_IMPORTABLE", "ImportError_", "import_rule",
           "entry_function"]

def entry_function(module: Any, entry: str) -> Any:
    """The ``func.func`` named ``entry`` (an :class:`InputError` listing the functions otherwise)."""
    table = functions(module)
    if entry in table:
        return table[entry]
    raise InputError(f"no entry function '@{entry}' in the module (functions: {', '.join(table) or 'none'})")


def _uses_64bit(types: list[TensorType]) -> bool:
    return any(np.dtype(t.dtype).itemsize == 8 and np.dtype(t.dtype).kind in "fiu"
               or np.dtype(t.dtype) == np.complex128 for t in types)


class ImportedFunction:
    """The entry function of a StableHLO module as a JAX-traceable Python function.

    ``f(*args)`` takes one array per entry argument (the declared shapes; dtypes are cast to the declared
    ones) and returns the single result, or a tuple of results.  Attributes: ``module`` (the ``ir.Module``),
    ``entry``, ``arg_types`` / ``result_types`` (:class:`~stablehlo_sparsity.analysis.values.TensorType`).

    Raises:
        InputError: (a call) 64-bit types while ``jax_enable_x64`` is off, another number of arguments, or an
            argument of another shape than the module declares.
        UnsupportedOpError: (a call) an op the importer cannot replay (``ImportError_``, naming the op and its
            location).

    Examples:
        >>> import jax, numpy as np
        >>> import stablehlo_sparsity as ss
        >>> f = ss.import_module('''func.func @main(%x: tensor<3xf32>) -> tensor<2xf32> {
        ...   %a = stablehlo.slice %x [1:3] : (tensor<3xf32>) -> tensor<2xf32>
        ...   func.return %a : tensor<2xf32>
        ... }''')                                         # an ImportedFunction
        >>> f.entry, [t.shape for t in f.arg_types], jax.jit(f)(np.arange(3.0)).tolist()
        ('main', [(3,)], [1.0, 2.0])
    """

    def __init__(self, module: Any, entry: str = "main"):
        from ...errors import format_location

        self.module = module
        self.entry = entry
        with module.context:
            fn = entry_function(module, entry)
            loc = format_location(fn.location)
            if not len(fn.regions[0].blocks):
                raise InputError(f"entry function '@{entry}' has no body (it is a declaration)", loc)
            ftype = fn.regions[0].blocks[0]
            self.arg_types: list[TensorType] = [tensor_type(a.type, loc) for a in ftype.arguments]
            self.result_types: list[TensorType] = [tensor_type(t, loc) for t in function_results(fn)]
        self._needs_x64 = _uses_64bit(self.arg_types + self.result_types)
        self.__name__ = entry
        self.__qualname__ = entry

    def example_args(self) -> tuple[Any, ...]:
        """``jax.ShapeDtypeStruct`` of each argument (for ``jax.jit(f).lower(*f.example_args())``)."""
        import jax

        return tuple(jax.ShapeDtypeStruct(t.shape, t.dtype) for t in self.arg_types)

    def random_args(self, seed: int = 0) -> tuple[np.ndarray, ...]:
        """Random arguments of the declared types: standard normal floats, small integers, random booleans."""
        rng = np.random.default_rng(seed)
        out = []
        for t in self.arg_types:
            dt = np.dtype(t.dtype)
            if is_real_float(dt):
                out.append(rng.standard_normal(t.shape).astype(dt))
            elif dt.kind == "c":
                out.append((rng.standard_normal(t.shape) + 1j * rng.standard_normal(t.shape)).astype(dt))
            elif dt == np.bool_:
                out.append(rng.random(t.shape) < 0.5)
            else:
                lo = 0 if dt.kind == "u" else -3
                out.append(rng.integers(lo, 8, t.shape).astype(dt))
        return tuple(out)

    def __call__(self, *args: Any) -> Any:
        import jax
        import jax.numpy as jnp

        if self._needs_x64 and not jax.config.read("jax_enable_x64"):
            raise InputError(f"@{self.entry} uses 64-bit types; enable them first: "
                             "jax.config.update('jax_enable_x64', True)")
        if len(args) != len(self.arg_types):
            raise InputError(f"@{self.entry} takes {len(self.arg_types)} arguments, got {len(args)}")
        vals = []
        for i, (a, t) in enumerate(zip(args, self.arg_types)):
            if tuple(np.shape(a)) != tuple(t.shape):
                raise InputError(f"argument {i} of @{self.entry} has shape {tuple(np.shape(a))}, the module "
                                 f"declares {t.shape}")
            a = jnp.asarray(a)
            vals.append(a if a.dtype == t.dtype else a.astype(t.dtype))
        with self.module.context:
            ctx = ImportContext(self.module)
            outs = ctx.call(self.entry, vals)
        outs = [jnp.asarray(o) if isinstance(o, np.ndarray) else o for o in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    def __repr__(self) -> str:
        sig = ", ".join(f"{t.shape}:{t.dtype}" for t in self.arg_types)
        return f"ImportedFunction(@{self.entry}({sig}) -> {len(self.result_types)} result(s))"


def import_module(module_or_text: Any, entry: str = "main") -> ImportedFunction:
    """Import the StableHLO module (an ``ir.Module``, text, MLIR bytecode, a portable artifact, a
    ``jax.export.Exported`` or its serialized bytes) as a JAX-traceable function of its entry ``entry`` (an
    ``Exported``'s takes the Exported's own inputs).

    Raises:
        InputError: the module cannot be read or parsed, it has no function ``entry``, or ``entry`` is a
            declaration.
        UnsupportedTypeError: an argument or result type the importer cannot represent.
        DynamicShapeError: an argument or result with a dynamic (``?``) dimension.

    Examples:
        >>> import jax, numpy as np
        >>> import stablehlo_sparsity as ss
        >>> f = ss.import_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.multiply %x, %x : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> f(np.ones(3, np.float32)).tolist(), jax.jacfwd(f)(np.ones(3, np.float32)).tolist()
        ([1.0, 1.0, 1.0], [[2.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 0.0, 2.0]])
    """
    from ...ir.parsing import as_module

    return ImportedFunction(as_module(module_or_text), entry)
