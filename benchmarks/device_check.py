"""One-command device check: detection, preparation, evaluation and the library's own checks on whatever JAX
backend is present (CPU, GPU or TPU), compared with dense AD on that device, in one JSON file.

    python benchmarks/device_check.py                 # the full run (sized for one GPU: under 5 minutes)
    python benchmarks/device_check.py --quick         # small sizes (CI, on CPU: under a minute)
    python benchmarks/device_check.py --json out.json --x64

Problems (``--quick`` size / full size):

* ``brusselator``: the 2-D Brusselator of ``stablehlo_sparsity.examples`` (N = 32 / 96: n = 2,048 / 18,432);
* ``laplacian3d``: a 7-point 3-D Laplacian minus a cubic term (L = 12 / 24: n = 1,728 / 13,824);
* ``hessian``: the Hessian of a sum of local terms (n = 2,000 / 16,384), ``sparse_hessian`` and ``check_hessian``;
* ``bcoo_smvm``: ``y = A(data) x`` with ``A`` a BCOO matrix (constant indices), the Jacobian w.r.t. the stored
  values (n = 2,000 / 4,000 rows, 10 per row), also compared with its closed form ``J[row_k, k] = x[col_k]``;
* ``sharded``: the Brusselator's colors spread over every device (``sparse_jacobian(..., devices=D)``), compared
  with the one-device values.  With one CPU device it runs in a subprocess with two virtual devices
  (``XLA_FLAGS=--xla_force_host_platform_device_count=2``), so the sharded path is exercised on any machine; with
  one accelerator it is skipped.

For each: the detection time (``jacobian_sparsity`` / ``hessian_sparsity``), the preparation (detection, coloring,
plan), the first call (compilation) and the warm evaluation (best of ``--repeat``), the jitted primal ``f`` (for a
Hessian also its gradient) and the jitted dense ``jax.jacfwd`` (``jax.hessian``; ``jax.jacrev`` when it has fewer
products) on the device; the values against that dense Jacobian (the largest difference relative to its largest
entry, and its nonzeros outside the detected pattern), and ``ss.check_jacobian`` / ``ss.check_hessian`` (dense up
to ``--check-dense-limit`` entries, random probes beyond).  Everything is float32 unless ``--x64``.

The JSON (``--json``, default ``device_check.json`` in the working directory) holds the backend, the devices, the
versions, the sizes and, per problem, the timings, the comparisons, ``passed`` and a one-line ``reason``.  The
command exits 1 when a check fails, after printing one line per failure.

Sizing the full run: on a GPU the products and the dense Jacobians take milliseconds; what remains is host work
(detection and coloring, linear in the nonzeros) and XLA compilation, which this 2-core CPU machine measures as an
upper bound.  The largest dense Jacobian is 18,432² float32 (1.4 GB), its batched ``jax.jacfwd`` a few times that:
the full run fits a 16 GB GPU.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

PROBLEMS = ("brusselator", "laplacian3d", "hessian", "bcoo_smvm", "sharded")
#: (quick, full) sizes of each problem: N, L, n, rows (see the module docstring).
SIZES = {"brusselator": (32, 96), "laplacian3d": (12, 24), "hessian": (2_000, 16_384), "bcoo_smvm": (2_000, 4_000),
         "sharded": (32, 96)}
#: Values must match dense AD to this many times the largest entry (float32, float64).
TOLERANCE = {"float32": 1e-4, "float64": 1e-10}


@dataclass
class Problem:
    """A function, its point, whether its derivative is a Hessian, and an optional closed form of the values (in
    the CSR order of the pattern)."""

    name: str
    f: Callable
    x: object
    hessian: bool = False
    closed_form: Callable | None = None
    info: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------ the problems
def laplacian3d(x, L: int):
    """A 7-point 3-D Laplacian (zero Dirichlet boundary) minus a cubic term on an ``L × L × L`` grid."""
    import jax.numpy as jnp

    u = x.reshape(L, L, L)
    p = jnp.pad(u, 1)
    lap = (p[2:, 1:-1, 1:-1] + p[:-2, 1:-1, 1:-1] + p[1:-1, 2:, 1:-1] + p[1:-1, :-2, 1:-1] + p[1:-1, 1:-1, 2:]
           + p[1:-1, 1:-1, :-2] - 6.0 * u)
    return (lap - u**3).ravel()


def local_terms(x):
    """A scalar sum of local terms: nearest-neighbour springs, a coupling at distance 2, a quartic on-site term."""
    import jax.numpy as jnp

    return 0.5 * jnp.sum((x[1:] - x[:-1]) ** 2) + jnp.sum(jnp.cos(x[:-2] * x[2:])) + 0.25 * jnp.sum(x**4)


def make_problem(name: str, quick: bool, dtype) -> Problem:
    import jax.numpy as jnp
    from jax.experimental import sparse

    from stablehlo_sparsity.examples import brusselator

    size = SIZES[name][0 if quick else 1]
    rng = np.random.default_rng(0)
    if name in ("brusselator", "sharded"):
        x = jnp.asarray(rng.uniform(0.5, 1.5, 2 * size * size), dtype)
        return Problem(name, lambda v: brusselator(v, size), x, info={"N": size})
    if name == "laplacian3d":
        x = jnp.asarray(rng.uniform(0.5, 1.5, size**3), dtype)
        return Problem(name, lambda v: laplacian3d(v, size), x, info={"L": size})
    if name == "hessian":
        return Problem(name, local_terms, jnp.asarray(rng.uniform(-1.0, 1.0, size), dtype), hessian=True)
    # SMVM w.r.t. the stored values: 10 random columns per row, in row-major order (the CSR order of J's pattern is
    # then the order of the stored values, and J's values are x at their columns)
    per_row = 10
    rows = np.repeat(np.arange(size), per_row)
    cols = np.sort(np.argsort(rng.random((size, size)), axis=1)[:, :per_row], axis=1).ravel()
    indices = jnp.asarray(np.stack([rows, cols], 1).astype(np.int32))
    vec = rng.uniform(0.5, 1.5, size)
    xv = jnp.asarray(vec, dtype)
    data = jnp.asarray(rng.standard_normal(rows.size), dtype)

    def smvm(d):
        return sparse.BCOO((d, indices), shape=(size, size), indices_sorted=True, unique_indices=True) @ xv

    return Problem(name, smvm, data, closed_form=lambda: vec[cols], info={"rows": size, "stored": rows.size})


# ------------------------------------------------------------------------------------------------ running one
def best_of(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def one_line(e: BaseException) -> str:
    text = getattr(e, "message", None) or str(e) or repr(e)
    return f"{type(e).__name__}: {text.strip().splitlines()[0][:300]}"


def dense_reference(p: Problem, m: int, n: int):
    """The jitted dense derivative to compare with: ``jax.hessian``, else ``jax.jacfwd`` unless ``jax.jacrev``
    needs fewer products (more inputs than outputs)."""
    import jax

    if p.hessian:
        return "jax.hessian", jax.jit(jax.hessian(p.f))
    return ("jax.jacrev", jax.jit(jax.jacrev(p.f))) if n > m else ("jax.jacfwd", jax.jit(jax.jacfwd(p.f)))


def compare_dense(values, pattern, dense) -> dict:
    """Our values against the dense derivative, on the device: the largest difference on the pattern relative to
    the largest entry, and the dense nonzeros outside the pattern."""
    import jax.numpy as jnp

    rows, cols = pattern.to_coo()
    dense = jnp.reshape(dense, pattern.shape)
    scale = float(jnp.max(jnp.abs(dense))) or 1.0
    on = dense[rows, cols]
    outside = dense.at[rows, cols].set(0)
    return {"max_rel_diff": float(jnp.max(jnp.abs(values - on))) / scale if rows.size else 0.0,
            "missed_nonzeros": int(jnp.sum(outside != 0)), "scale": scale}


def run_problem(p: Problem, devices, repeat: int, check_dense_limit: int, tol: float) -> dict:
    """Detection, preparation, evaluation, the check and the dense comparison of one problem (see the module
    docstring); ``devices``: ``None`` for one device, else what ``sparse_jacobian(devices=...)`` takes."""
    import jax

    import stablehlo_sparsity as ss

    out: dict = {"name": p.name, "kind": "hessian" if p.hessian else "jacobian", **p.info, "timings_s": {}}
    t = out["timings_s"]
    t0 = time.perf_counter()
    pattern = (ss.hessian_sparsity if p.hessian else ss.jacobian_sparsity)(p.f, p.x)
    t["detection"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    prepare = ss.sparse_hessian if p.hessian else ss.sparse_jacobian
    kwargs = {} if devices is None else {"devices": devices}
    der = prepare(p.f, p.x, output="values", **kwargs)
    t["preparation"] = time.perf_counter() - t0
    m, n = der.pattern.shape
    out.update(m=m, n=n, nnz=der.pattern.nnz, colors=int(der.num_colors), mode=str(der.mode),
               strategy=der.strategy, pattern_equal_detection=bool(der.pattern == pattern))
    t0 = time.perf_counter()
    values = jax.block_until_ready(der(p.x))
    t["first_call"] = time.perf_counter() - t0
    t["evaluation"] = best_of(lambda: jax.block_until_ready(der(p.x)), repeat)
    primal = jax.jit(p.f)
    jax.block_until_ready(primal(p.x))
    t["primal"] = best_of(lambda: jax.block_until_ready(primal(p.x)), repeat)
    if p.hessian:
        grad = jax.jit(jax.grad(p.f))
        jax.block_until_ready(grad(p.x))
        t["gradient"] = best_of(lambda: jax.block_until_ready(grad(p.x)), repeat)
    ref_name, ref = dense_reference(p, m, n)
    t0 = time.perf_counter()
    dense = jax.block_until_ready(ref(p.x))
    t["dense_first_call"] = time.perf_counter() - t0
    t["dense"] = best_of(lambda: jax.block_until_ready(ref(p.x)), max(2, repeat // 2))
    out["dense_reference"] = ref_name
    out["dense"] = compare_dense(values, der.pattern, dense)
    del dense
    out["ratios"] = {"evaluation_over_primal": t["evaluation"] / t["primal"],
                     "dense_over_evaluation": t["dense"] / t["evaluation"]}
    check = ss.check_hessian if p.hessian else ss.check_jacobian
    report = check(p.f, p.x, raise_on_error=False, dense_limit=check_dense_limit,
                   **({"hessian": der} if p.hessian else {"jacobian": der}))
    out["check"] = {"ok": bool(report.ok), "method": report.method, "max_error": float(report.max_error),
                    "worst": float(report.worst), "points": report.points, "message": str(report).splitlines()[0]}
    if p.closed_form is not None:
        expected = p.closed_form()
        out["closed_form_max_rel_diff"] = float(np.max(np.abs(np.asarray(values) - expected)) / np.max(np.abs(expected)))
    if devices is not None:
        one = jax.block_until_ready(prepare(p.f, p.x, output="values")(p.x))
        out["one_device_max_rel_diff"] = float(np.max(np.abs(np.asarray(values) - np.asarray(one)))) / out["dense"]["scale"]
    out["reason"] = failure(out, tol)
    out["status"] = "failed" if out["reason"] else "passed"
    return out


def failure(r: dict, tol: float) -> str | None:
    """The one-line reason a finished problem fails, or ``None``."""
    what = "check_hessian" if r["kind"] == "hessian" else "check_jacobian"
    if not r["check"]["ok"]:
        return f"{what} failed: {r['check']['message']}"
    if r["dense"]["missed_nonzeros"]:
        return f"{r['dense_reference']} has {r['dense']['missed_nonzeros']} nonzeros outside the detected pattern"
    for key, against in (("max_rel_diff", r["dense_reference"]), ("closed_form_max_rel_diff", "the closed form"),
                         ("one_device_max_rel_diff", "the one-device values")):
        value = r["dense"][key] if key == "max_rel_diff" else r.get(key)
        if value is not None and value > tol:
            return f"values differ from {against} by {value:.2e} of the largest entry (tolerance {tol:.0e})"
    return None


# ------------------------------------------------------------------------------------------------ the sharded one
def sharded_in_subprocess(args) -> dict:
    """The sharded problem in a fresh process with two virtual CPU devices (the flag must be set before JAX starts)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "sharded.json")
        cmd = [sys.executable, os.path.abspath(__file__), "--only", "sharded", "--json", path, "--no-subprocess",
               "--repeat", str(args.repeat), "--check-dense-limit", str(args.check_dense_limit)]
        cmd += ["--quick"] if args.quick else []
        cmd += ["--x64"] if args.x64 else []
        flags = os.environ.get("XLA_FLAGS", "")
        env = {**os.environ, "XLA_FLAGS": f"{flags} --xla_force_host_platform_device_count=2".strip(),
               "JAX_PLATFORMS": "cpu", "TF_CPP_MIN_LOG_LEVEL": os.environ.get("TF_CPP_MIN_LOG_LEVEL", "1")}
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=args.subprocess_timeout)
        if not os.path.exists(path):
            tail = (proc.stderr.strip().splitlines() or ["(no output)"])[-1]
            return {"name": "sharded", "status": "failed",
                    "reason": f"the 2-device subprocess exited {proc.returncode}: {tail[:300]}"}
        with open(path) as fh:
            child = json.load(fh)
    result = child["problems"][0]
    result["subprocess"] = {"devices": child["devices"], "xla_flags": env["XLA_FLAGS"]}
    if result["status"] == "skipped":   # the flag did not give two devices: the sharded path went unchecked
        result.update(status="failed", reason=f"the subprocess saw {len(child['devices'])} device(s), not 2")
    return result


def run_one(name: str, args, dtype, tol: float) -> dict:
    import jax

    devices = None
    if name == "sharded":
        count = len(jax.devices())
        if count < 2:
            if jax.default_backend() == "cpu" and not args.no_subprocess:
                return sharded_in_subprocess(args)
            return {"name": name, "status": "skipped", "reason": f"one {jax.default_backend()} device"}
        devices = count
    try:
        result = run_problem(make_problem(name, args.quick, dtype), devices, args.repeat, args.check_dense_limit, tol)
    except Exception as e:  # any error is this problem's failure, reported in one line
        return {"name": name, "status": "failed", "reason": one_line(e)}
    if devices is not None:
        result["devices_used"] = devices
    return result


# ------------------------------------------------------------------------------------------------ the report
def environment() -> dict:
    import importlib.metadata

    import jax

    versions = {"python": platform.python_version()}
    for dist in ("jax", "jaxlib", "stablehlo_sparsity", "numpy", "scipy"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = None
    devs = jax.devices()
    return {"backend": jax.default_backend(), "devices": [str(d) for d in devs],
            "device_kinds": sorted({d.device_kind for d in devs}), "device_count": len(devs),
            "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "system": platform.system()},
            "versions": versions}


def table(problems: list[dict]) -> str:
    lines = ["| problem | n | nnz | colors (mode) | prep (s) | first call (s) | eval (ms) | × primal | dense (ms) | "
             "dense / eval | check | status |", "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for r in problems:
        if "timings_s" not in r or "evaluation" not in r.get("timings_s", {}):
            lines.append(f"| {r['name']} |" + " |" * 10 + f" {r['status']}: {r.get('reason')} |")
            continue
        t, q = r["timings_s"], r["ratios"]
        lines.append(f"| {r['name']} | {r['n']:,} | {r['nnz']:,} | {r['colors']} ({r['mode']}) | "
                     f"{t['preparation']:.2f} | {t['first_call']:.2f} | {t['evaluation'] * 1e3:.2f} | "
                     f"{q['evaluation_over_primal']:.1f} | {t['dense'] * 1e3:.1f} | {q['dense_over_evaluation']:.0f}× | "
                     f"{r['check']['method']}, {'ok' if r['check']['ok'] else 'FAILED'} | {r['status']} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes (CI)")
    ap.add_argument("--json", default="device_check.json", help="where to write the results (default: %(default)s)")
    ap.add_argument("--only", nargs="*", choices=PROBLEMS, help="run only these problems")
    ap.add_argument("--x64", action="store_true", help="float64 instead of float32")
    ap.add_argument("--repeat", type=int, default=None, help="warm calls, best taken (default 5, full run 10)")
    ap.add_argument("--check-dense-limit", type=int, default=10_000_000,
                    help="check_jacobian/check_hessian compare dense up to this many entries, probes beyond")
    ap.add_argument("--no-subprocess", action="store_true",
                    help="with one CPU device, skip the sharded problem instead of running it with 2 virtual devices")
    ap.add_argument("--subprocess-timeout", type=float, default=600)
    args = ap.parse_args(argv)
    args.repeat = args.repeat or (5 if args.quick else 10)

    import jax

    if args.x64:
        jax.config.update("jax_enable_x64", True)
    dtype = np.float64 if args.x64 else np.float32
    tol = TOLERANCE[np.dtype(dtype).name]
    started = time.time()
    report = {"command": [os.path.basename(sys.executable), *sys.argv], "quick": args.quick,
              "dtype": np.dtype(dtype).name, "tolerance": tol,
              "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **environment(), "problems": []}
    for name in args.only or PROBLEMS:
        result = run_one(name, args, dtype, tol)
        report["problems"].append(result)
        print(f"  {name}: {result['status']}" + (f" ({result['reason']})" if result.get("reason") else ""),
              file=sys.stderr, flush=True)
    report["elapsed_s"] = time.time() - started
    failures = [f"{r['name']}: {r['reason']}" for r in report["problems"] if r["status"] == "failed"]
    report["passed"], report["failures"] = not failures, failures
    with open(args.json, "w") as fh:
        json.dump(report, fh, indent=1)
    print(f"Device check — {report['started']} — {report['backend']} ({', '.join(report['device_kinds'])}) × "
          f"{report['device_count']}; jax {report['versions']['jax']}; {report['dtype']}; "
          f"{'quick' if args.quick else 'full'} run in {report['elapsed_s']:.0f} s\n")
    print(table(report["problems"]))
    print(f"\nwrote {args.json}")
    for line in failures:
        print(f"device_check: FAIL {line}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
