"""Which platform a derivative program is lowered for, and the runtime state LAPACK replays need.

A module without platform-specific ``custom_call``s (no ``lapack_*``, ``cusolver_*`` …) is **portable**: any
StableHLO consumer (XLA on CPU, GPU or TPU, IREE …) can compile it.  JAX, however, lowers its linear algebra
per platform, and its CPU rules call LAPACK through ``custom_call``s (``lapack_strsm_ffi``, ``lapack_spotrf_ffi``)
that exist only in jaxlib's CPU runtime.  The derivative of a portable module must stay portable, so
:func:`lowering_for` lowers it with JAX's **generic** rules for the primitives whose generic rule is StableHLO's
own op: §triangular_solve and §cholesky.  (Lowering for another platform instead — TPU, say — would be
portable for these two but would also switch every other primitive to that platform's rules, and those are
not what the module's consumer compiles.)

``platform`` (the passes' option, the driver's ``--platform``):

* ``"auto"`` (default) — lowered as ``"portable"``; a platform-specific custom call the input lacks is an
  error when the input is platform-neutral, and allowed when the input already calls that platform's
  kernels (it runs only there anyway);
* ``"portable"`` — StableHLO's own ops, and only the custom calls the input makes (the module's own LAPACK
  calls, replayed, stay); a derivative that would need another platform-specific call is an error naming it;
* ``"cpu"`` — JAX's CPU lowering (LAPACK calls allowed, e.g. ``lapack_strsm_ffi`` for a triangular solve).

``auto`` for a module exported for an accelerator (its calls are all cuSOLVER / cuSPARSE …, all hipSOLVER …, or
all XLA TPU expanders) resolves to ``"portable-or-cuda"`` / ``"-rocm"`` / ``"-tpu"``: the derivative is lowered
with that platform's rules (:func:`lowering_for`), so the derivative of a ``cusolver_getrf_ffi`` call factors with
cuSOLVER too — with the CPU's rules it would call LAPACK, and the module would run nowhere.

:func:`ensure_lapack_kernels` fills jaxlib's LAPACK kernel table, which JAX does lazily when it first lowers
a linear-algebra op: a process that compiles or runs a ``lapack_*_ffi`` call before that dies with SIGSEGV.
"""

from __future__ import annotations

from typing import Any, Iterator

import contextlib
import re

__all__ = ["PLATFORMS", "ensure_lapack_kernels", "custom_call_targets", "is_platform_specific", "accelerator_of",
           "resolve_platform", "lowering_for", "foreign_targets"]

#: the values of the ``platform`` option
PLATFORMS = ("auto", "portable", "cpu")

#: ``custom_call`` targets that exist in one platform's runtime only: jaxlib's CPU LAPACK and sparse kernels,
#: CUDA/ROCm solvers, BLAS and kernels, Mosaic/Triton kernels, and XLA's TPU linear-algebra expanders
_PLATFORM_SPECIFIC = re.compile(r"^(lapack_|cpu_|cusolver|cublas|cusparse|cu_|hipsolver|hipblas|hipsparse|hip_|"
                                r"tpu_|mosaic|__gpu|triton)")
_TPU_TARGETS = frozenset({"LuDecomposition", "Qr", "Eigh", "ProductOfElementaryHouseholderReflectors"})
#: the accelerator whose runtime alone has a target (JAX's platform names)
_ACCELERATOR_TARGETS = (("cuda", re.compile(r"^(cusolver|cublas|cusparse|cu_|cuhybrid)")),
                        ("rocm", re.compile(r"^(hipsolver|hipblas|hipsparse|hip_|hiphybrid)")),
                        ("tpu", re.compile(r"^tpu_|^(" + "|".join(sorted(_TPU_TARGETS)) + ")$")))

_LAPACK_READY = False


def ensure_lapack_kernels() -> None:
    """Register jaxlib's CPU LAPACK kernels with XLA (once; cheap).  JAX does it when it first lowers one of
    its linear-algebra primitives for CPU; a replayed ``lapack_*_ffi`` call does not go through those rules."""
    global _LAPACK_READY
    if _LAPACK_READY:
        return
    from jax._src.lib import lapack

    lapack._lapack.initialize()
    _LAPACK_READY = True


def is_platform_specific(target: str) -> bool:
    """Whether a ``custom_call`` target exists in one platform's runtime only."""
    return bool(_PLATFORM_SPECIFIC.match(target)) or target in _TPU_TARGETS


def custom_call_targets(module_or_op: Any) -> set[str]:
    """The ``call_target_name`` of every ``stablehlo.custom_call`` in the module (or op), regions included."""
    from jaxlib.mlir import ir

    from ...ir.attrs import has_attr, string_attr

    op = getattr(module_or_op, "operation", module_or_op)
    found: set[str] = set()

    def visit(o: Any) -> Any:
        if o.operation.name == "stablehlo.custom_call" and has_attr(o, "call_target_name"):
            found.add(string_attr(o, "call_target_name"))
        return ir.WalkResult.ADVANCE

    op.walk(visit)
    return found


def accelerator_of(targets: set[str]) -> str | None:
    """The one accelerator (``"cuda"``, ``"rocm"``, ``"tpu"``) whose kernels the platform-specific ``targets``
    are, or ``None`` (none of them is an accelerator's, or they belong to several platforms)."""
    specific = {t for t in targets if is_platform_specific(t)}
    owners = {name for t in specific for name, pattern in _ACCELERATOR_TARGETS if pattern.match(t)}
    claimed = {t for t in specific if any(pattern.match(t) for _, pattern in _ACCELERATOR_TARGETS)}
    return owners.pop() if len(owners) == 1 and claimed == specific else None


def resolve_platform(platform: str | None, module: Any) -> str:
    """``"portable"``, ``"portable-or-input"`` (``auto`` for a module that already calls platform-specific
    kernels: lowered portably, new calls of that kind allowed), ``"portable-or-cuda"`` / ``"-rocm"`` /
    ``"-tpu"`` (``auto`` for a module that calls one accelerator's kernels: lowered for it) or ``"cpu"``: what
    ``platform`` (see the module docstring) means for ``module``."""
    from ...errors import InputError

    platform = platform or "auto"
    if platform not in PLATFORMS:
        raise InputError(f"platform must be one of {', '.join(PLATFORMS)}, got {platform!r}")
    if platform != "auto":
        return platform
    targets = custom_call_targets(module)
    if not any(is_platform_specific(t) for t in targets):
        return "portable"
    accelerator = accelerator_of(targets)
    return f"portable-or-{accelerator}" if accelerator else "portable-or-input"


def _generic_rule_primitives() -> tuple[Any, ...]:
    """JAX primitives whose CPU lowering calls LAPACK and whose generic lowering is one StableHLO op."""
    from jax._src.lax import linalg

    return (linalg.triangular_solve_p, linalg.cholesky_p)


@contextlib.contextmanager
def lowering_for(platform: str) -> Iterator[None]:
    """Within the block, ``jax.jit(...).lower()`` uses the lowering ``platform`` (``"portable"`` / ``"cpu"``)
    asks for: ``"portable"`` sets aside JAX's CPU rules of :func:`_generic_rule_primitives`, so their generic
    rules (``stablehlo.triangular_solve``, ``stablehlo.cholesky``) apply; ``"portable-or-cuda"`` (``-rocm``,
    ``-tpu``) puts that platform's rules in the CPU's place; ``"cpu"`` changes nothing.  Not thread-safe (it
    edits JAX's lowering table for the duration of the block)."""
    from jax._src.interpreters import mlir

    cpu = mlir._platform_specific_lowerings["cpu"]
    accelerator = platform.removeprefix("portable-or-")
    if accelerator in ("cuda", "rocm", "tpu"):  # lower as JAX does for that platform: its rules replace the CPU's
        everything = dict(cpu)
        cpu.clear()
        cpu.update(mlir._platform_specific_lowerings.get(accelerator, {}))
        try:
            yield
        finally:
            cpu.clear()
            cpu.update(everything)
        return
    if platform not in ("portable", "portable-or-input"):
        yield
        return
    saved = {p: cpu.pop(p) for p in _generic_rule_primitives() if p in cpu}
    try:
        yield
    finally:
        cpu.update(saved)


def foreign_targets(input_module: Any, lowered_module: Any) -> list[str]:
    """Platform-specific ``custom_call`` targets of ``lowered_module`` that ``input_module`` does not call."""
    have = custom_call_targets(input_module)
    return sorted(t for t in custom_call_targets(lowered_module) if t not in have and is_platform_specific(t))
