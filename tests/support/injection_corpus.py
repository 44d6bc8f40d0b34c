"""The differential corpus of injected derivatives (not a test file: the worker the tests start).

For each module: ``sparsity-jacobian`` (platform ``auto``) on the function to differentiate, then, in this
process, which has run no JAX linear algebra (the worker never calls one eagerly):

* XLA compiles ``@main_jacobian`` directly from the module text (``importer.xla.compile_module``, which
  registers jaxlib's LAPACK kernels only when the text it compiles calls LAPACK) and the original entry too;
* no platform-specific ``custom_call`` may appear that the input lacked ("foreign");
* at two points, J·v (J from the injected values and the recorded CSR pattern) against central finite
  differences of XLA's execution of the original function along random directions v.  A disagreement where
  one-sided differences disagree with each other, or where two step sizes disagree, is at a
  non-differentiable point ("nondiff"), otherwise a "mismatch".

Sources: openxla/stablehlo's testdata (``@main`` calls ``@inputs()`` / ``@expected()`` and checks with
``check.expect_*``: :func:`testdata_function` turns the inputs into arguments and drops the checks) and JAX's
export back-compat modules (:func:`backcompat_cases`).

    python tests/support/injection_corpus.py FILE.mlir... BACKCOMPAT_NAME...     # one JSON line per module
    python tests/support/injection_corpus.py --run-all DIR [STRIDE]            # the long run: workers, a summary

Each line: ``{"name", "status", "detail", "ops", "injected_ops"}``; status ``ok``, ``nondiff``, ``mismatch``,
``foreign``, ``refused``, ``skipped``, ``error`` (an unexpected exception), ``crash`` (the worker died).
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import re
import subprocess
import sys
import traceback

import numpy as np
import paths

BACKCOMPAT_PACKAGE = "jax._src.internal_test_util.export_back_compat_test_data"
FLOAT_KINDS = "fc"



def _other_platform(foreign: list[str], original_text: str) -> list[str]:
    """The new platform-specific targets that change where the module runs: any, for a portable module; for one
    that already calls a platform's kernels, those of another platform (the passes' ``platform="auto"`` lowers
    such a module for its own platform: lgamma's derivative calls ``cpu_digamma_ffi`` beside ``cpu_lgamma_ffi``)."""
    from stablehlo_sparsity.ir.parsing import as_module
    from stablehlo_sparsity.modules.importer.platforms import accelerator_of, custom_call_targets, is_platform_specific

    have = {t for t in custom_call_targets(as_module(original_text)) if is_platform_specific(t)}
    if not have:
        return foreign
    home = accelerator_of(have)
    return [t for t in foreign if accelerator_of({t}) != home]

def _is_float(dtype) -> bool:
    from stablehlo_sparsity.dtypes import is_float

    return is_float(dtype)


# ---------------------------------------------------------------------------------------------- sources
def testdata_function(text: str):
    """(module text with ``@main(inputs...) -> results``, list of the ``@inputs()`` values): the call of
    ``@inputs`` becomes the entry's arguments, ``@expected`` and the ``check.*`` custom calls are dropped."""
    from jax._src.interpreters import mlir as jax_mlir
    from jaxlib.mlir import ir, passmanager

    from stablehlo_sparsity.modules.importer.xla import run_module

    with jax_mlir.make_ir_context():
        m = ir.Module.parse(text)
        table = ir.SymbolTable(m.operation)
        main = table["main"]
        if "inputs" not in table:  # a constant program: nothing to differentiate
            return text, []
        block = main.regions[0].blocks[0]
        for op in list(block.operations):
            name = op.operation.name
            if name == "func.call":
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                if callee == "inputs":
                    for r in op.results:
                        arg = block.add_argument(r.type, op.location)
                        r.replace_all_uses_with(arg)
                    op.operation.erase()
            elif name == "stablehlo.custom_call":
                target = ir.StringAttr(op.attributes["call_target_name"]).value
                if target.startswith("check."):
                    op.operation.erase()
        for op in list(block.operations):
            if op.operation.name == "func.call" and ir.FlatSymbolRefAttr(op.attributes["callee"]).value == "expected":
                op.operation.erase()
        results = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).results
        main.attributes["function_type"] = ir.TypeAttr.get(
            ir.FunctionType.get([a.type for a in block.arguments], results))
        passmanager.PassManager.parse("builtin.module(symbol-dce)").run(m.operation)
        return m.operation.get_asm(enable_debug_info=False), run_module(text, [], entry="inputs")


def backcompat_cases(cpu_or_neutral: bool = True):
    """``(name, serialized module bytes, inputs)`` of JAX's shipped back-compat modules (CPU or platform-neutral
    ones when ``cpu_or_neutral``), sorted by name."""
    pkg = importlib.import_module(BACKCOMPAT_PACKAGE)
    out = []
    for path in sorted(glob.glob(os.path.join(os.path.dirname(pkg.__file__), "*.py"))):
        mod_name = os.path.basename(path)[:-3]
        if mod_name.startswith("_"):
            continue
        mod = importlib.import_module(f"{BACKCOMPAT_PACKAGE}.{mod_name}")
        for attr in sorted(vars(mod)):
            data = getattr(mod, attr)
            if not attr.startswith("data_") or not isinstance(data, dict):
                continue
            entries = data.items() if "mlir_module_serialized" not in data else [("", data)]
            for key, d in sorted(entries, key=lambda kv: str(kv[0])):
                if not isinstance(d, dict) or "mlir_module_serialized" not in d:
                    continue
                platform = d.get("platform", "")
                if cpu_or_neutral and platform not in ("cpu", "") and any(
                        not t.startswith(("annotate_device_placement", "Sharding", "SPMD", "xla.sdy"))
                        for t in d.get("custom_call_targets", [])):
                    continue
                if cpu_or_neutral and platform not in ("cpu", "tpu", ""):
                    continue
                name = f"{mod_name}.{attr}" + (f"[{key}]" if key != "" else "")
                out.append((name, d["mlir_module_serialized"], tuple(d.get("inputs", ()))))
    return out


# ---------------------------------------------------------------------------------------------- one check
def _count_ops(fn) -> int:
    from stablehlo_sparsity.ir.helpers import nested_ops

    return len(nested_ops(fn))


def _func(module, name):
    from jaxlib.mlir import ir

    for op in module.body.operations:
        if "sym_name" in op.attributes and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    return None


def _classify(message: str) -> str:
    msg = re.sub(r"\d+", "N", message.splitlines()[0])
    msg = re.sub(r"'[^']*'", "'…'", msg) if "custom_call target" not in msg else msg
    return msg[:140]


def check_module(name: str, module_or_text, inputs=None, entry: str = "main", seed: int = 0) -> dict:
    """Run the differential check on one module (see the module docstring); a result dictionary."""
    import jax

    from stablehlo_sparsity.errors import SparsityError
    from stablehlo_sparsity.modules.importer import import_module
    from stablehlo_sparsity.modules.importer.platforms import foreign_targets
    from stablehlo_sparsity.modules.importer.xla import compile_module, run_module
    from stablehlo_sparsity.ir.parsing import as_module
    from stablehlo_sparsity.passes.jacobian import inject_jacobian, read_pattern

    res = {"name": name, "status": "ok", "detail": "", "ops": None, "injected_ops": None}
    try:
        module = as_module(module_or_text)
        with module.context:
            original_text = module.operation.get_asm(enable_debug_info=False)
            f = import_module(module, entry)
            res["ops"] = _count_ops(_func(module, entry))
        float_args = [i for i, t in enumerate(f.arg_types) if _is_float(t.dtype) and t.size]
        float_results = [i for i, t in enumerate(f.result_types) if _is_float(t.dtype) and t.size]
        if not float_args or not float_results:
            res.update(status="skipped", detail="no floating-point argument or result")
            return res
        if any(np.dtype(f.arg_types[i].dtype).kind == "c" for i in float_args) or \
                any(np.dtype(f.result_types[i].dtype).kind == "c" for i in float_results):
            res.update(status="skipped", detail="complex arguments or results")
            return res
        needs_x64 = f._needs_x64
        ctx = jax.enable_x64(True) if needs_x64 else jax.enable_x64(jax.config.jax_enable_x64)
        with ctx:
            try:
                name_j = inject_jacobian(module, entry=entry, wrt=float_args)
            except SparsityError as e:
                res.update(status="refused", detail=_classify(e.message))
                return res
            with module.context:
                fn = _func(module, name_j)
                info = read_pattern(fn)
                res["injected_ops"] = _count_ops(fn) + sum(_count_ops(_func(module, h)) for h in info["helpers"])
                foreign = _other_platform(foreign_targets(as_module(original_text), module), original_text)
                text = module.operation.get_asm(enable_debug_info=False)
            if foreign:
                res.update(status="foreign", detail=", ".join(foreign))
                return res
            jac_exe = compile_module(text, name_j)
            f_exe = compile_module(original_text, entry)
            low = any(np.dtype(f.arg_types[i].dtype).itemsize < 4 for i in float_args) or \
                any(np.dtype(f.result_types[i].dtype).itemsize < 4 for i in float_results)
            points = [tuple(inputs)] if inputs is not None and len(inputs) == len(f.arg_types) else [f.random_args(seed)]
            rng = np.random.default_rng(seed + 1)
            p2 = []
            for i, a in enumerate(points[0]):
                a = np.asarray(a, dtype=f.arg_types[i].dtype)
                if i in float_args:
                    a = (a.astype(np.float64) * (1 + 1e-2 * rng.standard_normal(a.shape))).astype(a.dtype)
                p2.append(a)
            points.append(tuple(p2))
            worst = ("ok", "")
            for k, pt in enumerate(points):
                pt = tuple(np.asarray(a, dtype=t.dtype) for a, t in zip(pt, f.arg_types))
                values = run_module(None, pt, executable=jac_exe)[0]
                verdict = _compare(f_exe, f, pt, values, info, float_args, float_results, low, rng,
                                   rounding="stablehlo.reduce_precision" in original_text)
                if verdict[0] != "ok" and (worst[0] == "ok" or verdict[0] == "mismatch"):
                    worst = (verdict[0], f"point {k}: {verdict[1]}")
            res.update(status=worst[0], detail=worst[1])
    except SparsityError as e:
        res.update(status="refused", detail=_classify(e.message))
    except Exception as e:  # an unexpected failure: a bug to report
        res.update(status="error", detail=f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}",
                   trace=traceback.format_exc()[-1500:])
    return res


def _compare(f_exe, f, pt, values, info, float_args, float_results, low, rng, rounding=False):
    """("ok" | "nondiff" | "mismatch" | "skipped", detail): J·v against central differences.

    ``rounding``: the module rounds with §reduce_precision, a staircase whose derivative is 0 between its
    steps; the importer keeps JAX's straight-through rule (the rounding's derivative is the identity's), so
    differences that vanish exactly at both step sizes are a staircase's flat part, not a mismatch."""
    import scipy.sparse as sp

    from stablehlo_sparsity.modules.importer.xla import run_module

    J = sp.csr_array((np.asarray(values, np.float64), info["indices"], info["indptr"]), shape=info["shape"])
    res_sizes = [int(np.prod(t.shape, dtype=np.int64)) for t in f.result_types]
    f0 = run_module(None, pt, executable=f_exe)

    def flat(outs):
        return np.concatenate([np.asarray(o, np.float64).reshape(-1) if k in float_results
                               else np.zeros(res_sizes[k]) for k, o in enumerate(outs)])

    base = flat(f0)
    if not np.any(np.isfinite(base)):
        return "skipped", "the function is not finite at this point"
    if low:
        return "ok", "low precision: compiled, values not checked"
    f64 = all(np.dtype(f.arg_types[i].dtype).itemsize == 8 for i in float_args)
    rel_h = 1e-5 if f64 else 3e-3
    tol = 1e-4 if f64 else 3e-2
    for _ in range(2):
        v_parts = []
        for i in info["wrt"]:
            a = np.asarray(pt[i], np.float64)
            scale_i = np.where(np.isfinite(a), np.abs(a), 0.0) + 1.0
            v_parts.append(rng.standard_normal(a.shape) * scale_i)
        v = np.concatenate([p.reshape(-1) for p in v_parts]) if v_parts else np.zeros(0)
        jv = J @ v

        def at(t):
            args = list(pt)
            for i, p in zip(info["wrt"], v_parts):
                args[i] = (np.asarray(pt[i], np.float64) + t * p).astype(f.arg_types[i].dtype)
            return flat(run_module(None, args, executable=f_exe))

        h = rel_h
        fp, fm, fq, fr = at(h), at(-h), at(h / 4), at(-h / 4)
        # outputs that are finite around the point (an input outside a function's domain gives NaN there)
        keep = np.isfinite(base) & np.isfinite(fp) & np.isfinite(fm) & np.isfinite(fq) & np.isfinite(fr)
        if not np.any(keep):
            return "skipped", "the function is not finite around this point"
        jv, c1, c2 = jv[keep], ((fp - fm) / (2 * h))[keep], ((fq - fr) / (h / 2))[keep]
        fwd, bwd = ((fp - base) / h)[keep], ((base - fm) / h)[keep]
        scale = max(1.0, float(np.max(np.abs(c2), initial=0)), float(np.max(np.abs(jv), initial=0)))
        if not np.all(np.isfinite(jv)):
            return "mismatch", "non-finite derivative values where the function is finite"
        err = float(np.max(np.abs(jv - c2), initial=0)) / scale
        if err > tol:
            kink = float(np.max(np.abs(fwd - bwd), initial=0)) / scale
            rich = float(np.max(np.abs(c1 - c2), initial=0)) / scale
            if kink > tol or rich > tol:
                return "nondiff", f"|Jv - fd| / scale = {err:.3g} (one-sided {kink:.3g}, step {rich:.3g})"
            if rounding and not np.any(c1) and not np.any(c2):
                return "nondiff", "a rounding staircase (reduce_precision): flat between its steps"
            return "mismatch", f"|Jv - fd| / scale = {err:.3g}"
    return "ok", ""


# ---------------------------------------------------------------------------------------------- workers
def worker(argv) -> int:
    """Check each module named in ``argv`` — a ``.mlir`` path (openxla testdata format) or a back-compat case
    name — printing ``{"start": name}`` then its result, one JSON line each."""
    items = []
    wanted = [a for a in argv if not a.endswith(".mlir")]
    compat = {n: (b, inp) for n, b, inp in backcompat_cases(cpu_or_neutral=False)} if wanted else {}
    for a in argv:
        if a.endswith(".mlir"):
            with open(a, encoding="utf-8") as fh:
                items.append((_key(a), fh.read(), None))
        elif a in compat:
            items.append((a, *compat[a]))
        else:
            print(json.dumps({"name": a, "status": "error", "detail": "no such module"}), flush=True)
    # modules that call no LAPACK first: one that does registers jaxlib's kernels in this process
    items.sort(key=lambda it: "lapack_" in str(it[1]))
    for name, src, inputs in items:
        print(json.dumps({"start": name}), flush=True)
        try:
            if isinstance(src, str):
                text, inputs = testdata_function(src)
                res = check_module(name, text, inputs)
            else:
                res = check_module(name, src, inputs)
        except Exception as e:
            res = {"name": name, "status": "error", "detail": f"{type(e).__name__}: {str(e)[:200]}"}
        print(json.dumps(res), flush=True)
    return 0


def _key(item: str) -> str:
    return os.path.basename(item)[:-5] if item.endswith(".mlir") else item


def run_workers(names: list[str], per_process: int = 25, timeout: float = 900, log=None) -> list[dict]:
    """Run the worker on ``names`` (``.mlir`` paths in the testdata format, back-compat case names),
    ``per_process`` per subprocess; a worker that dies marks the module it was on as ``crash`` and the rest run again.
    ``log``: a file each result is appended to as it comes."""
    results = _Results(log)
    todo = list(names)
    while todo:
        chunk, todo = todo[:per_process], todo[per_process:]
        env = dict(os.environ)
        env.setdefault("JAX_PLATFORMS", "cpu")
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), *chunk], capture_output=True,
                                  text=True, timeout=timeout, env=env)
            stdout, stderr, code = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout or ""
            stdout = out.decode() if isinstance(out, bytes) else out
            stderr, code = f"timed out after {timeout} s", "timeout"
        started, done = None, set()
        for line in stdout.splitlines():
            if not line.startswith("{"):
                continue
            rec = json.loads(line)
            if "start" in rec:
                started = rec["start"]
            else:
                results.append(rec)
                done.add(rec["name"])
                started = None
        if code != 0:
            results.append({"name": started or "?", "status": "timeout" if code == "timeout" else "crash",
                            "detail": f"worker exit {code}: {stderr.strip()[-300:]}"})
            rest = [p for p in chunk if _key(p) not in done and _key(p) != started]
            todo = rest + todo
    return results


class _Results(list):
    def __init__(self, log):
        super().__init__()
        self.log = log

    def append(self, rec):
        super().append(rec)
        if self.log is not None:
            self.log.write(json.dumps(rec) + "\n")
            self.log.flush()


def summarize(results: list[dict]) -> str:
    from collections import Counter

    counts = Counter(r["status"] for r in results)
    lines = [f"{len(results)} modules: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))]
    for status in ("crash", "timeout", "foreign", "mismatch", "error", "refused", "nondiff", "skipped"):
        reasons = Counter(r["detail"] if status in ("refused", "skipped", "error") else r["name"]
                          for r in results if r["status"] == status)
        for reason, n in reasons.most_common(40):
            lines.append(f"  {status}: {n} × {reason}")
    blow = sorted((r for r in results if r.get("injected_ops") and r.get("ops")),
                  key=lambda r: -r["injected_ops"] / max(r["ops"], 1))[:5]
    for r in blow:
        lines.append(f"  largest injected/original op ratio: {r['name']}: {r['injected_ops']} / {r['ops']}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.path.insert(0, str(paths.REPO))
    if sys.argv[1] == "--run-all":
        paths = sorted(glob.glob(os.path.join(sys.argv[2], "*.mlir")))
        stride = int(sys.argv[3]) if len(sys.argv) > 3 else 1
        with open(os.environ.get("SHS_CORPUS_OUT", "corpus_results.jsonl"), "w") as fh:
            out = run_workers(paths[::stride], log=fh)
        print(summarize(out))
        raise SystemExit(0)
    raise SystemExit(worker(sys.argv[1:]))
