"""The ``sparsity-jacobian`` and ``sparsity-hessian`` passes: inject a module's compressed derivative.

``sparsity-jacobian`` (options ``entry``, ``wrt``, ``mode``, ``on-unknown``) adds a public function
``@<entry>_jacobian`` with the entry's arguments, returning one 1-D tensor: the Jacobian's nonzeros in the
row-major (CSR) order of the detected pattern — the order of ``--emit=pattern``'s coordinates.  It is the
program of :func:`~stablehlo_sparsity.sparse_jacobian_module` (the pattern from the module's own analysis,
one JVP per column color or one VJP per row color over the module's imported function, a static gather),
lowered by JAX and spliced in.  ``sparsity-hessian`` (options ``entry``, ``wrt``, ``on-unknown``) adds
``@<entry>_hessian`` for a scalar entry: the **full** symmetric Hessian (both triangles) in the CSR order of
its symmetric pattern.

The original functions are untouched.  The injected program's own helper functions (JAX's private
``func.func``s) are renamed ``@<new function>__<name>`` (with a numeric suffix when taken) so they never
clash.  The pattern is recorded on the new function as one discardable dictionary attribute,
``sparsity.derivative = {…}`` (``docs/reference/injected-derivatives.md``; one dictionary because XLA refuses a function
with a dozen separate discardable attributes):

* ``kind = "jacobian" | "hessian"``, ``entry = "<entry>"``, ``wrt = dense<[…]> : tensor<…xi64>`` (the
  differentiated arguments; columns are their flattened elements in order; rows the flattened results);
* ``shape = dense<[m, n]> : tensor<2xi64>``, ``nnz = K : i64``;
* ``row_pointers`` (``tensor<(m+1)xi64>``) and ``column_indices`` (``tensor<Kxi64>``): the CSR pattern; value
  ``k`` of the result is entry ``(i, column_indices[k])`` for ``row_pointers[i] <= k < row_pointers[i+1]``;
* ``mode = "forward" | "reverse" | "bidirectional" | "star"``, ``num_colors = C : i64``, ``colors``
  (``tensor<…xi32>``: the color of each column — forward, star — or of each row — reverse; bidirectional: the
  columns' colors, then the rows' shifted by the number of column colors, ``-1`` where a vertex is in no seed);
* ``helpers``: the names of the injected program's private functions (a rerun of the pass replaces them);
* Hessian only: ``triangle = "full"``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, cast

import numpy as np

from stablehlo_sparsity.ir.helpers import sym_name

from .base import SparsityPass, option

__all__ = ["inject_jacobian", "inject_hessian", "read_pattern", "ATTR_PREFIX", "JacobianPass", "HessianPass"]

ATTR_PREFIX = "sparsity."
_OWN = "sparsity.derivative"


def _symbols(module) -> set[str]:

    return {sym_name(op) for op in module.body.operations if "sym_name" in op.attributes}


def _fresh(base: str, taken: set[str]) -> str:
    name, k = base, 1
    while name in taken:
        name = f"{base}_{k}"
        k += 1
    taken.add(name)
    return name


def _remove_previous(module, name: str) -> None:
    """A function ``@name`` left by an earlier run of the pass is replaced (with its helpers); any other
    symbol of that name is an error."""
    from jaxlib.mlir import ir

    from stablehlo_sparsity.errors import InputError

    for op in list(module.body.operations):
        if "sym_name" in op.attributes and sym_name(op) == name:
            if _OWN not in op.attributes:
                from stablehlo_sparsity.errors import format_location

                raise InputError(f"the module already has a function '@{name}' that this pass did not write",
                                 format_location(op.location))
            helpers = [ir.StringAttr(a).value for a in ir.ArrayAttr(ir.DictAttr(op.attributes[_OWN])["helpers"])]
            op.operation.erase()
            for other in list(module.body.operations):
                if "sym_name" in other.attributes and sym_name(other) in helpers:
                    other.operation.erase()


def splice(module, lowered_text: str, name: str):
    """Parse the lowered program in ``module``'s context, rename its ``@main`` to ``name`` (public) and its
    private helpers to unique names, and append its functions to ``module``.  Returns the new function op and
    its helpers' names."""
    from jaxlib.mlir import ir

    from stablehlo_sparsity.errors import InputError

    with module.context:
        new = ir.Module.parse(lowered_text)
        taken = _symbols(module) | _symbols(new)
        table = ir.SymbolTable(new.operation)
        funcs = [op for op in new.body.operations if op.operation.name == "func.func"]
        others = [op.operation.name for op in new.body.operations if op.operation.name != "func.func"]
        if others:
            raise InputError(f"the derivative program holds top-level ops other than functions: {others}")
        renames = {}
        for op in funcs:
            old = sym_name(op)
            renames[old] = name if old == "main" else _fresh(f"{name}__{old.lstrip('_')}", taken)
        entry_op = None
        for old, target in renames.items():
            fn = table[old]
            if old != target:
                ir.SymbolTable.replace_all_symbol_uses(old, target, new.operation)
                ir.SymbolTable.set_symbol_name(fn, target)
            if old == "main":
                entry_op = fn
        helpers = [t for o, t in renames.items() if o != "main"]
        for op in funcs:
            op.operation.detach_from_parent()
            module.body.append(op.operation)
        return entry_op, helpers


def _i64_dense(values) -> object:
    from jaxlib.mlir import ir

    arr = np.ascontiguousarray(np.asarray(values, dtype=np.int64))
    dense = cast(Any, ir.DenseElementsAttr)
    return dense.get(arr, type=ir.IntegerType.get_signless(64)) if arr.size else \
        dense.get(np.zeros((0,), np.int64))


def _record(fn, kind: str, entry: str, wrt, pattern, coloring, mode: str, helpers, extra: dict | None = None):
    """Write ``sparsity.derivative = {…}`` on the new function (one dictionary: XLA's export of discardable
    attributes refuses functions with a dozen separate ones)."""
    from jaxlib.mlir import ir

    csr = pattern.to_scipy()
    m, n = csr.shape
    i64 = ir.IntegerType.get_signless(64)
    colors = np.ascontiguousarray(np.asarray(coloring.colors, np.int32))
    fields: dict[str, Any] = {
        "kind": ir.StringAttr.get(kind),
        "entry": ir.StringAttr.get(entry),
        "wrt": _i64_dense(list(wrt)),
        "shape": _i64_dense([m, n]),
        "nnz": ir.IntegerAttr.get(i64, int(csr.nnz)),
        "row_pointers": _i64_dense(csr.indptr),
        "column_indices": _i64_dense(csr.indices),
        "mode": ir.StringAttr.get(mode),
        "num_colors": ir.IntegerAttr.get(i64, int(coloring.num_colors)),
        "colors": cast(Any, ir.DenseElementsAttr).get(colors if colors.size else np.zeros((0,), np.int32)),
        "helpers": ir.ArrayAttr.get([ir.StringAttr.get(h) for h in helpers]),
    }
    for k, v in (extra or {}).items():
        fields[k] = ir.StringAttr.get(v)
    fn.attributes[_OWN] = ir.DictAttr.get(fields)


class _at_entry:
    """Input errors without a location get the entry function's (``file:line:col``)."""

    def __init__(self, module, entry):
        self.module, self.entry = module, entry

    def __enter__(self):
        return self

    def __exit__(self, kind, err, tb):
        from stablehlo_sparsity.errors import InputError, format_location
        from stablehlo_sparsity.modules.importer import entry_function

        if isinstance(err, InputError) and not err.location:
            with self.module.context:
                loc = format_location(entry_function(self.module, self.entry).location)
            raise InputError(err.message, loc) from None
        return False


def _x64_if_needed(module, entry: str):
    """JAX's 64-bit mode for the duration of the pass when the entry has 64-bit types (a module's types are
    what they are; the pass must not depend on a global flag of the calling process)."""
    import contextlib

    import jax

    from stablehlo_sparsity.modules.importer import ImportedFunction

    if ImportedFunction(module, entry)._needs_x64 and not cast(Any, jax.config).jax_enable_x64:
        return jax.enable_x64(True)
    return contextlib.nullcontext()


def _lower_text(prepared, module, platform: str) -> str:
    """The compressed program's StableHLO (values output, every entry argument kept), lowered by JAX for
    ``platform`` (:mod:`stablehlo_sparsity.modules.importer.platforms`: ``"portable"`` keeps to StableHLO's own ops).
    JAX's refusals (a derivative it cannot form) become input errors naming the entry, and so does a portable
    derivative that would need a platform-specific custom call the module does not make."""
    from stablehlo_sparsity.errors import InputError, SparsityError
    from stablehlo_sparsity.modules.importer.platforms import foreign_targets, lowering_for

    try:
        with lowering_for(platform):
            lowered = prepared.lower(output="values")
        text = lowered.as_text()
        lowered_module = lowered.compiler_ir("stablehlo")
    except SparsityError:
        raise
    except Exception as e:
        raise InputError(f"could not build the derivative program of @{prepared.entry}: {type(e).__name__}: "
                         f"{str(e).splitlines()[0][:300]}") from None
    if platform == "portable":  # (with "portable-or-input" the module already runs on one platform only)
        foreign = foreign_targets(module, lowered_module)
        if foreign:
            raise InputError(f"the derivative program of @{prepared.entry} would call {', '.join(foreign)}, "
                             "which the module does not: it would no longer be portable; pass platform=cpu "
                             "(--platform=cpu) to allow it")
    return text


def inject_jacobian(module, entry: str | None = None, wrt=None, mode: str = "auto",
                    on_unknown: str = "error", platform: str = "auto") -> str:
    """Add ``@<entry>_jacobian`` to ``module`` (in place); returns its name.  ``platform``: ``"auto"``,
    ``"portable"`` or ``"cpu"`` (:mod:`stablehlo_sparsity.modules.importer.platforms`).

    Raises:
        InputError: no function ``entry`` (or no way to choose one), a function ``@<entry>_jacobian`` this pass did
            not write, a bad ``wrt``, ``mode`` or ``platform``, a derivative JAX cannot form, or one that would
            need a platform-specific call in a portable module; the errors of ``sparse_jacobian_module``.
        UnsupportedOpError: an op without a sparsity rule (with ``on_unknown="error"``) or one the importer cannot
            replay.
        UnsupportedTypeError: an element type the analysis cannot represent.
        DynamicShapeError: a tensor with a dynamic (``?``) dimension.
        PatternTooLargeError: an intermediate pattern would exceed the analysis' memory budget.

    Examples:
        >>> import numpy as np
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import inject_jacobian
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> name = inject_jacobian(module)
        >>> name, ss.compile_module(module, name)(np.ones(3, np.float32)).tolist()    # the 3 nonzeros
        ('main_jacobian', [1.0, 1.0, 1.0])
    """
    from stablehlo_sparsity.modules.module_derivatives import ModuleSparseJacobian

    from stablehlo_sparsity.modules.importer.platforms import resolve_platform

    from .annotate import resolve_entry

    module = getattr(module, "opview", module)
    entry = resolve_entry(module, entry)
    name = f"{entry}_jacobian"
    _remove_previous(module, name)
    platform = resolve_platform(platform, module)
    with _x64_if_needed(module, entry), _at_entry(module, entry):
        sj = ModuleSparseJacobian(module, entry, wrt, mode=mode, output="values", on_unknown=on_unknown)
        text = _lower_text(sj, module, platform)
    fn, helpers = splice(module, text, name)
    with module.context:
        _record(fn, "jacobian", entry, sj.wrt, sj.pattern, sj.coloring, sj.mode, helpers)
    return name


def inject_hessian(module, entry: str | None = None, wrt=None, on_unknown: str = "error",
                   platform: str = "auto") -> str:
    """Add ``@<entry>_hessian`` (the full symmetric Hessian of a scalar entry) to ``module``; returns its name.
    ``platform`` as :func:`inject_jacobian`.

    Raises:
        InputError: no function ``entry`` (or no way to choose one), an entry that does not return one scalar or
            holds a ``stablehlo.while`` loop, a function ``@<entry>_hessian`` this pass did not write, a bad
            ``wrt`` or ``platform``; the errors of ``sparse_hessian_module``.
        UnsupportedOpError: an op without a sparsity rule (with ``on_unknown="error"``) or one the importer cannot
            replay.
        UnsupportedTypeError: an element type the analysis cannot represent.
        DynamicShapeError: a tensor with a dynamic (``?``) dimension.
        PatternTooLargeError: an intermediate pattern would exceed the analysis' memory budget.

    Examples:
        >>> import numpy as np
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import inject_hessian
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
        ...   %0 = stablehlo.multiply %x, %x : tensor<3xf32>
        ...   %z = stablehlo.constant dense<0.0> : tensor<f32>
        ...   %s = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [0]
        ...       : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
        ...   func.return %s : tensor<f32>
        ... }''')
        >>> name = inject_hessian(module)
        >>> name, ss.compile_module(module, name)(np.ones(3, np.float32)).tolist()    # the diagonal: 2, 2, 2
        ('main_hessian', [2.0, 2.0, 2.0])
    """
    from stablehlo_sparsity.modules.module_derivatives import ModuleSparseHessian

    from stablehlo_sparsity.modules.importer.platforms import resolve_platform

    from .annotate import resolve_entry

    module = getattr(module, "opview", module)
    entry = resolve_entry(module, entry)
    name = f"{entry}_hessian"
    _remove_previous(module, name)
    platform = resolve_platform(platform, module)
    with _x64_if_needed(module, entry), _at_entry(module, entry):
        sh = ModuleSparseHessian(module, entry, wrt, output="values", on_unknown=on_unknown)
        text = _lower_text(sh, module, platform)
    fn, helpers = splice(module, text, name)
    with module.context:
        _record(fn, "hessian", entry, sh.wrt, sh.pattern, sh.coloring, "star", helpers, {"triangle": "full"})
    return name


def read_pattern(fn) -> dict:
    """The ``sparsity.derivative`` dictionary of an injected function, read back as Python / NumPy values
    (``kind``, ``entry``, ``wrt``, ``shape``, ``nnz``, ``indptr``, ``indices``, ``mode``, ``num_colors``,
    ``colors``, ``helpers``, and ``triangle`` for a Hessian) — a consumer's view; the public reader is
    :func:`stablehlo_sparsity.read_injected`.

    Raises:
        InputError: the function has no record, or a malformed one.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import inject_jacobian, read_pattern
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> name = inject_jacobian(module)
        >>> fn = [f for f in module.body.operations if f.attributes["sym_name"].value == name][0]
        >>> d = read_pattern(fn)
        >>> d["shape"], d["indices"].tolist(), d["mode"]
        ((3, 3), [2, 1, 0], 'forward')
    """
    from stablehlo_sparsity.modules.injected import read_function_record

    return read_function_record(fn).as_dict()


_ENTRY = "entry function (default: main, else the only public one)"
_WRT = "differentiated entry arguments: comma-separated indices or 'all' (default: 0)"
_ON_UNKNOWN = "ops without a rule: error or conservative"
_PLATFORM = ("target of the derivative program: auto (portable when the module is), portable (StableHLO ops "
             "only) or cpu (LAPACK calls allowed)")


@dataclass(frozen=True)
class JacobianPass(SparsityPass):
    """Add @<entry>_jacobian: the entry's arguments -> its Jacobian's nonzeros in CSR order of the detected
    pattern (compressed by coloring; pattern recorded as the sparsity.derivative attribute).

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import run_pipeline
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> run_pipeline(module, "builtin.module(sparsity-jacobian{mode=forward})")
        >>> ss.read_injected(module, "main_jacobian").num_colors
        1
    """

    argument: ClassVar[str] = "sparsity-jacobian"
    entry: str | None = option(None, _ENTRY, kind="str")
    wrt: str | None = option(None, _WRT, kind="str")
    mode: str = option("auto", "coloring: auto (fewest products), forward (columns, JVPs) or reverse (rows, VJPs)",
                       choices=("auto", "forward", "reverse"))
    on_unknown: str = option("error", _ON_UNKNOWN, choices=("error", "conservative"))
    platform: str = option("auto", _PLATFORM, choices=("auto", "portable", "cpu"))

    def run(self, module_op) -> None:
        inject_jacobian(module_op, entry=self.entry or None, wrt=self.wrt, mode=self.mode, on_unknown=self.on_unknown,
                        platform=self.platform)


@dataclass(frozen=True)
class HessianPass(SparsityPass):
    """Add @<entry>_hessian for a scalar entry: the full symmetric Hessian's nonzeros in CSR order of its
    pattern (star coloring; pattern recorded as the sparsity.derivative attribute).

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import run_pipeline
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<f32> {
        ...   %0 = stablehlo.multiply %x, %x : tensor<3xf32>
        ...   %z = stablehlo.constant dense<0.0> : tensor<f32>
        ...   %s = stablehlo.reduce(%0 init: %z) applies stablehlo.add across dimensions = [0]
        ...       : (tensor<3xf32>, tensor<f32>) -> tensor<f32>
        ...   func.return %s : tensor<f32>
        ... }''')
        >>> run_pipeline(module, "builtin.module(sparsity-hessian)")
        >>> ss.read_injected(module, "main_hessian").nnz
        3
    """

    argument: ClassVar[str] = "sparsity-hessian"
    entry: str | None = option(None, _ENTRY, kind="str")
    wrt: str | None = option(None, _WRT, kind="str")
    on_unknown: str = option("error", _ON_UNKNOWN, choices=("error", "conservative"))
    platform: str = option("auto", _PLATFORM, choices=("auto", "portable", "cpu"))

    def run(self, module_op) -> None:
        inject_hessian(module_op, entry=self.entry or None, wrt=self.wrt, on_unknown=self.on_unknown,
                       platform=self.platform)
