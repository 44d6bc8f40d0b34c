"""The faithfulness oracle of the importer: a module compiled directly by XLA versus ``jax.jit`` of its import.

Integer and boolean results must agree bit for bit (XLA evaluates the same integer ops either way), and so
must floating-point results of modules whose float ops are all exact (data movement, comparisons, selects,
sorting, max/min, negation …); other float results agree to a tight tolerance (XLA may fuse the two
programs differently, and a transcendental's approximation may differ from its constant-folded value).
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

import numpy as np
import paths

ROOT = str(paths.REPO)

#: Ops whose floating-point results are exactly determined by their operands' bits (no rounding).
EXACT_OPS = frozenset("stablehlo." + n for n in (
    "constant iota reshape transpose broadcast_in_dim broadcast slice concatenate pad reverse gather scatter "
    "dynamic_slice dynamic_update_slice select compare clamp maximum minimum negate abs sort convert "
    "bitcast_convert and or xor not is_finite sign floor ceil round_nearest_even round_nearest_afz "
    "optimization_barrier while case if return get_dimension_size real imag complex shift_left "
    "shift_right_logical shift_right_arithmetic popcnt count_leading_zeros").split()) | {
    "func.return", "func.call", "func.func", "builtin.module", "stablehlo.return"}

#: Ops in :data:`EXACT_OPS` that round on a complex operand: ``abs`` is ``hypot(re, im)`` and ``sign`` is ``z / |z|``.
#: XLA computes them with its own expansion, JAX (from 0.12) lowers ``lax.abs`` of a complex number with another
#: formula, so the two programs may differ by an ulp (measured: 1 ulp in float32, e.g. 0.6526479 vs 0.65264785).
#: A module using them on complex values is compared with the rounded tolerance (:data:`ULPS`), not bit for bit.
ROUNDED_ON_COMPLEX = frozenset({"stablehlo.abs", "stablehlo.sign"})

#: Modules that must not be run (they never terminate, or take 10^9 iterations): imported and compiled only.
NOT_RUNNABLE = {"infinite_constant_loop.mlir": "its loop never terminates",
                "long_known_loop.mlir": "10^9 loop iterations"}


def module_ops(module) -> set[str]:
    from jaxlib.mlir import ir

    names: set[str] = set()

    def visit(op):
        names.add(op.operation.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return names


def rounds_on_complex(module) -> bool:
    """Whether an op of :data:`ROUNDED_ON_COMPLEX` takes a complex operand somewhere in ``module``."""
    from jaxlib.mlir import ir

    found = [False]

    def visit(op):
        if op.operation.name in ROUNDED_ON_COMPLEX and any("complex<" in str(v.type) for v in op.operation.operands):
            found[0] = True
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found[0]


def is_exact(module) -> bool:
    """Whether every float result of ``module`` is determined by its operands' bits (compared bit for bit)."""
    return module_ops(module) <= EXACT_OPS and not rounds_on_complex(module)


@dataclass
class Outcome:
    exact: bool
    worst: float  # largest |difference| / tolerance over float results (0 when bit-identical)


def is_float(dtype) -> bool:
    """Floating-point or complex, ``bfloat16`` and the other ``ml_dtypes`` floats included (NumPy gives them
    ``kind`` ``"V"``): the importer's own predicate."""
    from stablehlo_sparsity.dtypes import is_float as importer_is_float

    return importer_is_float(dtype)


def float_eps(dtype) -> float:
    """Machine epsilon of a float type (a complex type: that of its parts); ``ml_dtypes.finfo`` also knows
    ``bfloat16`` and the ``float8`` types, which ``np.finfo`` refuses."""
    import ml_dtypes

    dt = np.dtype(dtype)
    if dt.kind == "c":
        dt = np.dtype(np.float32 if dt.itemsize == 8 else np.float64)
    return float(ml_dtypes.finfo(dt).eps)


#: Tolerance of a rounded float result, in units of its type's epsilon (relative, and absolute near zero).
#: 64 for single and double precision; 4 for a type with at most 8 significand bits (``bfloat16``, ``float8``),
#: whose epsilon (2^-7 and coarser) is already the size of an honest difference: two roundings apart.
ULPS = 64
LOW_PRECISION_ULPS = 4


def tolerance_ulps(dtype) -> int:
    return LOW_PRECISION_ULPS if float_eps(dtype) >= 2.0 ** -7 else ULPS


def compare_outputs(ref, got, exact: bool, what: str = "") -> Outcome:
    """Assert ``got`` (the import) equals ``ref`` (XLA on the module); returns how close they are."""
    worst = 0.0
    assert len(ref) == len(got), f"{what}: {len(ref)} results from XLA, {len(got)} from the import"
    for i, (r, g) in enumerate(zip(ref, got)):
        r, g = np.asarray(r), np.asarray(g)
        assert r.shape == g.shape and r.dtype == g.dtype, f"{what}: result {i}: {r.shape}/{r.dtype} vs {g.shape}/{g.dtype}"
        if not is_float(r.dtype) or exact:
            same = np.array_equal(r.reshape(-1).view(np.uint8), g.reshape(-1).view(np.uint8))
            if not same and is_float(r.dtype):  # NaN payloads may differ; the NaN-ness may not
                same = np.array_equal(r, g, equal_nan=True)
            assert same, f"{what}: result {i} differs bit for bit: {r.ravel()[:8]} vs {g.ravel()[:8]}"
            continue
        ulps = tolerance_ulps(r.dtype)
        rtol = atol = ulps * float_eps(r.dtype)
        fin = np.isfinite(r) & np.isfinite(g)
        assert np.array_equal(np.isnan(r), np.isnan(g)) or not r.size, f"{what}: result {i}: NaNs differ"
        assert np.array_equal(r[~fin & ~np.isnan(r)], g[~fin & ~np.isnan(g)]), f"{what}: result {i}: infinities differ"
        wide = np.complex128 if r.dtype.kind == "c" else np.float64  # (a bf16 difference would be rounded)
        rf, gf = r[fin].astype(wide), g[fin].astype(wide)
        scale = np.maximum(np.abs(rf), 1.0)
        err = np.abs(rf - gf) / (atol + rtol * scale) if fin.any() else np.zeros(1)
        w = float(err.max()) if err.size else 0.0
        assert w <= 1.0, f"{what}: result {i}: |difference| {w:.3g}× the tolerance (rtol {rtol:.2g})"
        worst = max(worst, w)
    return Outcome(exact, worst)


def accelerator_only(module) -> bool:
    """Whether ``module`` calls a kernel that only a GPU or TPU runtime has (no CPU compilation of it exists)."""
    from jaxlib.mlir import ir

    from stablehlo_sparsity.modules.importer.platforms import is_platform_specific

    found = [False]

    def visit(op):
        if op.operation.name == "stablehlo.custom_call":
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            found[0] |= is_platform_specific(target) and not target.startswith(("cpu_", "lapack_"))
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found[0]


def runnable_by_xla(module) -> bool:
    """False for hand-written LAPACK (and CPU sparse) ``custom_call``s without ``operand_layouts``: XLA's FFI kernels then read
    their buffers with the wrong layout and crash the process (checked: a segfault), so such modules are only
    imported and compiled; and for a GPU kernel (cuSPARSE, cuSOLVER, …), which has no handler on the host."""
    from jaxlib.mlir import ir

    ok = [True]

    def visit(op):
        if op.operation.name == "stablehlo.custom_call":
            target = ir.StringAttr(op.attributes["call_target_name"]).value
            if target.startswith(("cusparse", "hipsparse", "cusolver", "hipsolver", "cu_", "hip_")):
                ok[0] = False
            elif "operand_layouts" not in op.attributes and target.startswith(("lapack_", "cpu_")):
                ok[0] = False
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return ok[0]


def check_faithful(module, entry: str = "main", seeds=(0, 1), what: str = "", run: bool = True) -> Outcome | None:
    """Import ``module``'s ``entry``; compile it with XLA directly; compare both on random arguments."""
    import jax

    from stablehlo_sparsity.modules.importer import import_module
    from stablehlo_sparsity.modules.importer.xla import compile_module, run_module

    f = import_module(module, entry)
    ops = module_ops(module)
    exact = is_exact(module)
    jitted = jax.jit(f)
    if not run or not runnable_by_xla(module):
        if not accelerator_only(module):  # (a GPU kernel: the import is all this CPU can check)
            jitted.lower(*f.example_args()).compile()
        return None
    exe = compile_module(module, entry)
    out = Outcome(exact, 0.0)
    for seed in seeds:
        args = f.random_args(seed)
        if "stablehlo.cholesky" in ops:  # the spec defines the factor of positive-definite matrices only
            args = tuple(_positive_definite(a) for a in args)
        ref = run_module(None, args, executable=exe)
        got = jitted(*args)
        got = list(got) if isinstance(got, tuple) else [got]
        o = compare_outputs(ref, [np.asarray(g) for g in got], exact, f"{what} seed {seed}")
        out.worst = max(out.worst, o.worst)
    return out


def _positive_definite(a):
    a = np.asarray(a)
    if not is_float(a.dtype) or a.dtype.kind == "c" or a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        return a
    k = a.shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + k * np.eye(k, dtype=a.dtype)).astype(a.dtype)


def split_chunks(path: str) -> list[tuple[str, int]]:
    text = open(path, encoding="utf-8", errors="surrogateescape").read()
    chunks, cur, start = [], [], 1
    for i, line in enumerate(text.splitlines(keepends=True), start=1):
        if line.strip() == "// -----":
            chunks.append(("".join(cur), start))
            cur, start = [], i + 1
        else:
            cur.append(line)
    chunks.append(("".join(cur), start))
    return chunks


def lit_modules():
    """(id, module, public function names) for every chunk of every lit-test ``.mlir`` file that parses."""
    from jaxlib.mlir import ir

    from stablehlo_sparsity.passes.pipeline import parse_source

    out = []
    for path in sorted(glob.glob(os.path.join(ROOT, "lit_tests", "*.mlir"))):
        for text, line in split_chunks(path):
            if "func.func" not in text:
                continue
            try:
                m = parse_source(text, os.path.basename(path), first_line=line)
            except Exception:
                continue  # a parse-error test
            names = []
            for op in m.body.operations:
                if op.operation.name == "func.func" and len(op.regions[0].blocks) and \
                        "sym_visibility" not in op.attributes:
                    names.append(ir.StringAttr(op.attributes["sym_name"]).value)
            out.append((f"{os.path.basename(path)}:{line}", m, names))
    return out
