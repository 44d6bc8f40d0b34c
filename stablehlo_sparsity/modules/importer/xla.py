"""Compile a StableHLO module with XLA directly (no JAX tracing) and run it: the reference the importer's
replay is compared with.  XLA compiles the function named ``main``; another entry is renamed (and a
function already called ``main`` moved aside) in a copy of the module."""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ...ir.attrs import has_attr, string_attr

__all__ = ["compile_module", "run_module", "entry_as_main_text", "register_kernels_for"]


def entry_as_main_text(module: Any, entry: str) -> str:
    """The module's text with ``entry`` renamed ``main`` (public) and every function it does not reach removed
    (``symbol-dce``): XLA compiles exactly the program a consumer of that function would."""
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir

    text = module.operation.get_asm(enable_debug_info=False) if hasattr(module, "operation") else str(module)
    with jax_mlir.make_ir_context():
        m = ir.Module.parse(text)
        table = ir.SymbolTable(m.operation)
        names = {string_attr(op, "sym_name") for op in m.body.operations if has_attr(op, "sym_name")}
        if "main" in names and entry != "main":
            aside = "main_"
            while aside in names:
                aside += "_"
            ir.SymbolTable.replace_all_symbol_uses("main", aside, m.operation)
            ir.SymbolTable.set_symbol_name(table["main"], aside)
        fn = table[entry]
        if entry != "main":
            ir.SymbolTable.replace_all_symbol_uses(entry, "main", m.operation)
            ir.SymbolTable.set_symbol_name(fn, "main")
        for op in m.body.operations:
            if op.operation.name == "func.func":
                op.attributes["sym_visibility"] = ir.StringAttr.get("private")
        del fn.attributes["sym_visibility"]  # public
        from jaxlib.mlir import passmanager

        passmanager.PassManager.parse("builtin.module(symbol-dce)").run(m.operation)
        return str(m.operation.get_asm(enable_debug_info=False))


def register_kernels_for(text: str) -> None:
    """Register jaxlib's LAPACK kernels when the program ``text`` calls one: XLA running a ``lapack_*`` custom
    call in a process where no JAX linear-algebra op ran first dies with SIGSEGV (TOOLCHAIN.md); and its CPU
    sparse kernels (``cpu_csr_sparse_dense_ffi``, a ``BCSR`` product), which importing
    ``jax.experimental.sparse`` registers (else XLA has "no FFI handler" for them)."""
    if "lapack_" in text:
        from .platforms import ensure_lapack_kernels

        ensure_lapack_kernels()
    if "cpu_csr_sparse" in text:
        import jax.experimental.sparse  # noqa: F401  (registers jaxlib's CPU sparse kernels with XLA)


def compile_module(module_or_text: Any, entry: str = "main") -> Any:
    """An XLA executable (CPU) of the module's ``entry`` function (jaxlib's LAPACK kernels registered first
    when the program calls LAPACK)."""
    import jax
    from jax._src import xla_bridge
    from jax._src.interpreters import mlir as jax_mlir
    from jax._src.lib import xla_client
    from jaxlib.mlir import ir

    if isinstance(module_or_text, str):
        from ...ir.parsing import parse_module

        module_or_text = parse_module(module_or_text)
    text = entry_as_main_text(module_or_text, entry)
    register_kernels_for(text)
    backend = xla_bridge.get_backend("cpu")
    devices = jax.devices("cpu")
    with jax_mlir.make_ir_context():
        m = ir.Module.parse(text)
        return backend.compile_and_load(m, xla_client.DeviceList(tuple(devices[:1])), xla_client.CompileOptions())


def run_module(module_or_text: Any, args: Sequence[Any], entry: str = "main", executable: Any = None
               ) -> list[np.ndarray]:
    """Run the module's ``entry`` on ``args`` (NumPy arrays of the declared types) with XLA; NumPy results."""
    import jax

    exe = executable if executable is not None else compile_module(module_or_text, entry)
    dev = jax.devices("cpu")[0]
    bufs = [jax.device_put(np.asarray(a), dev) for a in args]
    outs = exe.execute(bufs)
    return [np.asarray(o) for o in outs]
