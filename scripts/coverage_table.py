"""Generate ``docs/reference/coverage.md``: every op of the StableHLO spec, the other ops of jaxlib's StableHLO and CHLO
dialects, and every known ``custom_call`` target, with the kind of its sparsity rule and where the importer
replays it.

The table is computed, not written by hand, from the live registry only: every rule registers its kind and
a note with it (``@deps_rule("stablehlo.gather", kind=..., note=...)``, ``rules.COVERAGE``), ops deliberately
without a rule are in ``rules.REFUSED``, custom-call kinds come from each target rule's ``kind``; the importer
column from ``importer.IMPORT_RULES`` (the module of each import rule) and ``importer.NOT_IMPORTABLE``.

Usage::

    python scripts/coverage_table.py            # write docs/reference/coverage.md
    python scripts/coverage_table.py --check    # exit 1 if the file is stale
    python scripts/coverage_table.py --stdout   # print instead of writing
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "reference" / "coverage.md"

#: The ops of the StableHLO specification (openxla/stablehlo ``docs/spec.md``, "Ops" section, at commit
#: 3c9301c1, 2026-08-13), in the spec's order.
SPEC_OPS = """
abs add after_all all_gather all_reduce all_to_all and async_done async_start atan2 batch_norm_grad
batch_norm_inference batch_norm_training bitcast_convert broadcast_in_dim case cbrt ceil cholesky clamp
collective_broadcast collective_permute collective_reduce compare complex composite concatenate constant
convert convolution cosine count_leading_zeros custom_call divide dot_general dynamic_broadcast_in_dim
dynamic_conv dynamic_gather dynamic_iota dynamic_pad dynamic_reshape dynamic_slice dynamic_update_slice
exponential exponential_minus_one fft floor gather get_dimension_size get_tuple_element if imag infeed iota
is_finite log log_plus_one logistic map maximum minimum multiply negate not optimization_barrier or outfeed
pad partition_id popcnt power real recv reduce reduce_precision reduce_scatter reduce_window remainder
replica_id reshape reverse rng rng_bit_generator round_nearest_afz round_nearest_even rsqrt scatter select
select_and_scatter send shift_left shift_right_arithmetic shift_right_logical sign sine slice sort sqrt
subtract tan tanh transpose triangular_solve tuple uniform_dequantize uniform_quantize while xor
""".split()

NOTES = """
## Notes

**Custom derivative rules.** StableHLO holds the primal program only: `jax.custom_jvp`, `jax.custom_vjp` and
`jax.lax.custom_linear_solve` rules are invisible, and the analysis finds the Jacobian of the primal *as
computed*.  Where a custom rule differentiates something else, `jax.jacfwd` / `jax.jacrev` can report entries
the primal pattern lacks — a straight-through estimator written as `custom_jvp` (`round` with an identity
JVP: primal pattern empty, `jacfwd` the identity), a JVP that mixes elements of an elementwise primal, a
`custom_linear_solve` whose `solve` ignores a `matvec` parameter that its implicit derivative uses.  The
straight-through estimator written with `stop_gradient` (`x + stop_gradient(round(x) - x)`) is sound as is:
the structural union does not cancel `x - x`.  JAX's own library functions (`jax.nn.relu`, `softplus`,
`logsumexp`, `jnp.linalg.norm`, …) differentiate their primal faithfully.  **What the API does**: the JAX
entry (`jacobian_sparsity`, `lower_and_analyze`, `sparse_jacobian`) looks at the jaxpr; when it uses a custom
rule defined outside JAX, it analyzes the lowered JVP program instead — its tangent outputs as a function of
its tangent inputs are exactly what `jax.jacfwd` evaluates, custom rules included (for `custom_vjp`: the
transposed pattern of the VJP program).  `derivatives="primal"` turns this off; `"jvp"` / `"vjp"` force it.
When JAX cannot form that program (reverse mode through a `while_loop`), the primal is analyzed with a
`SparsityWarning`.  A `.mlir` file entering through `analyze_module` or the driver has no jaxpr: its custom
rules, if any, are invisible.  Whether a function has custom rules
shows in its jaxpr (`custom_jvp_call`, `custom_vjp_call`, `custom_linear_solve` primitives).

**JAX's derivative conventions.** Compressed Jacobians are evaluated with JAX's JVPs, so rules follow JAX's
AD where it differs from the primal's literal dependence: Cholesky is differentiated as a function of a
Hermitian matrix (both triangles of the leading block count, although the factorization reads one), and
triangular solves mask the tangent to the read triangle (as the primal does).

**Not analyzed.** Dynamic shapes (`DynamicShapeError`; run `stablehlo-refine-shapes` first), tuples and
tokens (`UnsupportedTypeError`; functions with ordered effects take a token argument and are refused rather
than misread), quantized types (not parseable in JAX's MLIR context), cross-device collectives.
"""


#: Ops of the StableHLO dialect that only the newer supported jaxlib releases have (jaxlib 0.12.1).
LATER_OPS = ("stablehlo.exp2", "stablehlo.fma", "stablehlo.log2")


def dialect_ops(module_name: str) -> list[str]:
    import importlib

    mod = importlib.import_module(f"jaxlib.mlir.dialects.{module_name}")
    names = set()
    for attr in dir(mod):
        cls = getattr(mod, attr)
        name = getattr(cls, "OPERATION_NAME", None)
        if attr.endswith("Op") and isinstance(name, str):
            names.add(name)
    return sorted(names)


def classify(name: str):
    """(kind, note, module) of an op from the registry; module is ``None`` without a rule."""
    from stablehlo_sparsity.analysis.rules import COVERAGE, REFUSED
    from stablehlo_sparsity.analysis.rules.registry import ERROR

    cov = COVERAGE.get(name)
    if cov is not None:
        return cov.kind, cov.note, cov.module
    if name in REFUSED:
        return ERROR, REFUSED[name], None
    return ERROR, "no rule: UnsupportedOpError (or the conservative opt-in)", None


def importer_cell(name: str) -> str:
    """How the importer (``stablehlo_sparsity.modules.importer``) replays an op, from its registry: the module of its
    import rule, or the refusal with its reason."""
    from stablehlo_sparsity.modules.importer import IMPORT_RULES, NOT_IMPORTABLE

    if name in NOT_IMPORTABLE:
        return "refused: " + NOT_IMPORTABLE[name]
    rule = IMPORT_RULES.get(name)
    if rule is None:
        return "—"
    return f"`importer/{rule.__module__.rsplit('.', 1)[-1]}.py`"


def _custom_call_importer_table() -> list[str]:
    """The importer's side of ``stablehlo_sparsity.ir.custom_calls.FAMILIES``: how each family is replayed."""
    from stablehlo_sparsity.ir.custom_calls import FAMILIES

    out = ["### `stablehlo.custom_call` in the importer", "",
           "From `stablehlo_sparsity/ir/custom_calls.py`, the table the analysis reads too. A known call is "
           "re-emitted "
           "verbatim (the module's own kernel computes the values); its derivative is JAX's, of the function "
           "named, or refused with the reason given.", "",
           "| family | targets | importer |", "|---|---|---|"]
    for fam in FAMILIES:
        if fam.sharding_marker:
            how = "identity (a shape-changing marker is refused)"
        elif fam.zero_derivative:
            how = "replayed; zero derivative"
        elif fam.jvp is not None:
            how = f"replayed; derivative of `{fam.jax_function}`"
        else:
            how = f"refused: {fam.refused}" if fam.callback else f"replayed; derivative refused: {fam.refused}"
        out.append(f"| {fam.name} | {', '.join(f'`{t}`' for t in fam.targets)} | {how} |")
    out.append("")
    return out


CROSS_PLATFORM_TEST = ROOT / "tests" / "analysis" / "test_cross_platform.py"


def _test_file_tables() -> dict:
    """The literal tables of the cross-platform test (read from its source: importing it would import JAX and the
    test suite): ``PLATFORMS``, ``SUITE_SAMPLE``, ``COARSER``, ``INJECTION_REFUSED``, and the number of
    ``PROGRAMS``."""
    import ast

    found: dict = {}
    for node in ast.parse(CROSS_PLATFORM_TEST.read_text()).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        name, value = getattr(target, "id", None), getattr(node, "value", None)
        if name == "PROGRAMS" and isinstance(value, ast.Dict):
            found[name] = len(value.keys)
        elif name in ("PLATFORMS", "SUITE_SAMPLE", "COARSER", "COARSER_FROM_JAX", "INJECTION_REFUSED") and value:
            found[name] = ast.literal_eval(value)
    return found


def _cross_platform_section() -> list[str]:
    """"Cross-platform lowerings": the platforms, the corpus size and the tables of
    ``tests/analysis/test_cross_platform.py``."""
    t = _test_file_tables()
    platforms = ", ".join(f"`{p}`" for p in t["PLATFORMS"])
    out = ["## Cross-platform lowerings", "",
           f"`tests/analysis/test_cross_platform.py` exports each program of its corpus with `jax.export` for "
           f"{platforms} (on a CPU-only machine) and analyzes every module: {len(t['SUITE_SAMPLE']) + t['PROGRAMS']} "
           f"programs — {len(t['SUITE_SAMPLE'])} of the soundness suite and {t['PROGRAMS']} more: solves, Cholesky, "
           "QR, LU, eigh, SVD, triangular and tridiagonal solves, expm, det, inv, lstsq, pinv, sorts, top-k, FFT, "
           "scans, while loops, conditionals, cumulative ops, segment sums, sharding markers, random numbers, and "
           "`BCOO` / `BCSR` products with respect to the dense operand and to the stored values (`sparse.sparsify`, "
           "and the cuSPARSE / hipSPARSE kernels of `jax_bcoo_cusparse_lowering` and the `CSR` / `COO` classes). "
           "Every module's pattern holds every nonzero of `jax.jacfwd` on CPU at random points (0 missed, 0 "
           "errors, on JAX 0.10.2, 0.11.2 and 0.12.0.1) and equals the CPU module's pattern, except:", "",
           "| program | platform | coarser than on CPU because |", "|---|---|---|"]
    since = t.get("COARSER_FROM_JAX", {})
    out += [f"| `{name}` | `{platform}` | {f'(JAX ≥ {since[name, platform]}) ' if (name, platform) in since else ''}"
            f"{why} |" for (name, platform), why in t["COARSER"].items()]
    out += ["", "Injected derivatives (`sparsity-jacobian`) of a module exported for an accelerator are lowered "
                "with that platform's rules, so they call its kernels only (a cuSOLVER LU is differentiated with "
                "cuSOLVER, not LAPACK); the importer refuses, with an `UnsupportedOpError` naming the target:", "",
            "| program | platform | refused because |", "|---|---|---|"]
    out += [f"| `{name}` | `{platform}` | {why} |" for (name, platform), why in t["INJECTION_REFUSED"].items()]
    out.append("")
    return out


def render() -> tuple[str, list[str]]:
    from stablehlo_sparsity.analysis.engine import TERMINATORS  # part of their parent op, not ops with a rule
    from stablehlo_sparsity.analysis.rules import DEPS_RULES, FOLD_RULES
    from stablehlo_sparsity.analysis.rules.custom_call import CUSTOM_CALL_TARGETS
    from stablehlo_sparsity.analysis.rules.registry import CONSERVATIVE as CONS
    from stablehlo_sparsity.analysis.rules.registry import ERROR, EXACT, ZERO
    from stablehlo_sparsity.analysis.rules.registry import VALUE_AWARE as VALUE

    lines = [
        "# Op coverage",
        "",
        "Generated by `python scripts/coverage_table.py` from the rule registry and the importer's — do not edit by "
        "hand.",
        "",
        "*importer*: the module of `stablehlo_sparsity/modules/importer/` that replays the op with `jax.lax` "
        "(named after "
        "the rule family, as in `rules/`), or why it is refused.",
        "",
        "Rule kinds:",
        "",
        "- **exact** — the pattern equals the union of the local Jacobian patterns at generic points "
        "(tested against `jax.jacfwd`);",
        "- **value-aware exact** — exact, and tighter where operands are known constants (known zeros, "
        "indices, predicates, trip counts) or integers of known range (computed start indices);",
        "- **conservative** — sound, but may contain entries no input value realizes (stated per op);",
        "- **zero-derivative** — results never depend on the inputs (integers, booleans, constants, "
        "piecewise-constant functions);",
        "- **error** — refused with a `SparsityError` naming the op and its location, never a wrong answer.",
        "",
        "Results of integer or boolean type get empty index sets whatever the rule. *fold*: the op is "
        "evaluated on known constants (the constant lattice).",
        "",
    ]
    counts: dict[str, int] = defaultdict(int)

    def table(names, title, intro=""):
        lines.extend([f"## {title}", ""])
        if intro:
            lines.extend([intro, ""])
        lines.extend(["| op | kind | fold | rule | importer | notes |", "|---|---|---|---|---|---|"])
        for name in names:
            kind, note, module = classify(name)
            counts[kind] += 1
            fold = "yes" if name in FOLD_RULES else ""
            rule = f"`rules/{module}.py`" if module else "—"
            lines.append(f"| `{name}` | {kind} | {fold} | {rule} | {importer_cell(name)} | {note} |")
        lines.append("")

    spec = [f"stablehlo.{o}" for o in SPEC_OPS]
    table(spec, f"StableHLO specification ops ({len(spec)})")
    spec_counts = dict(counts)
    try:
        extra = [n for n in dialect_ops("stablehlo") if n not in spec and n not in TERMINATORS]
    except Exception:  # pragma: no cover - bindings missing
        extra = []
    extra = sorted(set(extra) | set(LATER_OPS))  # (the same table from every supported jaxlib)
    table(extra, f"Other ops of jaxlib's StableHLO dialect ({len(extra)})",
          "Not in the specification (legacy, dynamic-shape or experimental ops) but parseable. "
          + ", ".join(f"`{n}`" for n in LATER_OPS) + " parse from jaxlib 0.12.1 on.")
    try:
        chlo = dialect_ops("chlo")
    except Exception:  # pragma: no cover
        chlo = []
    table(chlo, f"CHLO ops ({len(chlo)})", "JAX emits CHLO for special functions (`lax.erf_inv`, `lgamma`, "
          "`digamma`, `bessel_i1e`, `polygamma`, `zeta`, `igamma`'s pieces), hyperbolic and inverse "
          "trigonometric functions, and `lax.top_k`.")
    others = sorted(n for n in DEPS_RULES if not n.startswith(("stablehlo.", "chlo.")))
    table(others, "Other dialects", "Calls and Shardy sharding markers.")

    # custom_call targets, grouped by rule
    groups: dict = defaultdict(list)
    for target, rule in CUSTOM_CALL_TARGETS.items():
        groups[rule].append(target)
    lines.extend([f"## `stablehlo.custom_call` targets ({len(CUSTOM_CALL_TARGETS)})", "",
                  "Keyed by `call_target_name`. Linear-algebra kernels are block diagonal across the batch "
                  "(leading dims; `num_batch_dims` when JAX sets it). Any other target: `UnsupportedOpError` "
                  "naming it, or with `on_unknown=\"conservative\"` every result depends on every operand "
                  "(warns).", "",
                  "| kind | targets | rule |", "|---|---|---|"])
    for rule, targets in sorted(groups.items(), key=lambda kv: (str(getattr(kv[0], "kind", "")), sorted(kv[1])[0])):
        doc = " ".join((rule.__doc__ or "").split())
        doc = doc.replace("|", "\\|")
        names = ", ".join(f"`{t}`" for t in sorted(targets))
        lines.append(f"| {getattr(rule, 'kind', 'unclassified')} | {names} | {doc} |")
    lines.append("")
    lines.extend(_custom_call_importer_table())
    lines.extend(_cross_platform_section())

    lines.extend(NOTES.strip("\n").splitlines())
    lines.append("")

    summary = ", ".join(f"{spec_counts.get(k, 0)} {k}" for k in (EXACT, VALUE, CONS, ZERO, ERROR)
                        if spec_counts.get(k, 0))
    lines.insert(lines.index("Rule kinds:"), f"Specification ops: {len(spec)} — {summary}.\n")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail if docs/reference/coverage.md is stale")
    ap.add_argument("--stdout", action="store_true", help="print the table instead of writing it")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    text = render()
    if args.stdout:
        print(text)
    elif args.check:
        ok = OUT.exists() and OUT.read_text() == text
        if not ok:
            print(f"{OUT} is stale: run python scripts/coverage_table.py", file=sys.stderr)
        return 0 if ok else 1
    else:
        OUT.parent.mkdir(parents=True, exist_ok=True)
        OUT.write_text(text)
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
