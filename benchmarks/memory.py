"""Memory benchmark: peak memory per pattern nonzero of detection and of the driver's emitters.

    python benchmarks/memory.py                  # the issue's cases (needs about 6 GiB free for the FFT)
    python benchmarks/memory.py --quick          # Brusselator N=512 and a small FFT
    python benchmarks/memory.py --cases bruss:2048 fft:22:31 --stages detect emit-pattern

Every measurement runs in a fresh subprocess: the child imports everything and warms up on a tiny problem,
resets the kernel's peak-RSS counter (``/proc/self/clear_refs``), notes its RSS, runs the stage once and
reports the peak (``VmHWM``).  "Δ peak / nnz" is (peak − RSS before the stage) / nonzeros: what the stage
itself costs per nonzero, the number ``max_pattern_nnz``'s default and the "pattern too large" message use.
"tracemalloc / nnz" is the peak of Python-tracked allocations (NumPy arrays included) in a second child.

Stages: ``detect`` — ``analyze_module`` on the lowered module (the pattern is the result);
``api`` — ``jacobian_sparsity(f, x)`` (lowering included); ``emit-pattern`` / ``emit-json`` — the driver
``stablehlo-sparsity-opt FILE --emit=pattern|json -o /dev/null`` in-process (parsing, analysis and writing).

Cases: ``bruss:N`` — the 2-D Brusselator on an N×N periodic grid (2N² unknowns, 12N² nonzeros);
``fft:A:C`` — ``irfftn`` over three dimensions of an ``A×A×C`` real input (a dense pattern:
A²·C columns × A²·2(C−1) rows; ``fft:22:31`` is the issue's 436-million-nonzero case).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from peak_memory import memory_status, reset_peak

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------- the child
def _problem(case: str):
    import jax.numpy as jnp

    from stablehlo_sparsity.examples import brusselator

    kind, *args = case.split(":")
    if kind == "bruss":
        N = int(args[0])
        return (lambda v: brusselator(v, N)), jnp.ones(2 * N * N)
    if kind == "fft":
        a, c = int(args[0]), int(args[1])
        return (lambda v: jnp.fft.irfftn(v + 0j, s=(a, a, 2 * (c - 1)))), jnp.ones((a, a, c), jnp.float32)
    raise SystemExit(f"unknown case {case!r}")


def child(case: str, stage: str, trace: bool, path: str | None) -> dict:
    import gc
    import tracemalloc

    import jax

    import stablehlo_sparsity as ss
    from stablehlo_sparsity.tools import driver
    from stablehlo_sparsity.examples import brusselator

    f, x = _problem(case)
    small, xs = (lambda v: brusselator(v, 8)), jax.numpy.ones(128)
    if stage == "detect":
        module = jax.jit(f).lower(x).compiler_ir("stablehlo")
        ss.analyze_module(jax.jit(small).lower(xs).compiler_ir("stablehlo"))  # warm-up
        run = lambda: ss.analyze_module(module).pattern  # noqa: E731
    elif stage == "api":
        ss.jacobian_sparsity(small, xs)
        run = lambda: ss.jacobian_sparsity(f, x)  # noqa: E731
    else:
        emit = stage.split("-", 1)[1]
        with tempfile.NamedTemporaryFile("w", suffix=".mlir", delete=False) as tmp:
            tmp.write(jax.jit(small).lower(xs).as_text())
        driver.main([tmp.name, f"--emit={emit}", "-o", os.devnull])
        os.unlink(tmp.name)

        def run():
            code = driver.main([path, f"--emit={emit}", "-o", os.devnull])
            if code != 0:
                raise SystemExit(f"driver exit code {code}")
            return None
    gc.collect()
    if trace:
        tracemalloc.start()
    before = reset_peak(collect=False)
    t0 = time.perf_counter()
    pattern = run()
    elapsed = time.perf_counter() - t0
    peak = memory_status()["VmHWM"]
    out = {"time": elapsed, "before": before, "peak": peak}
    if trace:
        out["traced"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    if pattern is not None:
        out["nnz"], out["shape"] = pattern.nnz, list(pattern.shape)
    return out


# ---------------------------------------------------------------------------------------------- the parent
def _run_child(case, stage, trace, path, timeout):
    cmd = [sys.executable, os.path.abspath(__file__), "--child", case, stage] + (["--trace"] if trace else [])
    if path:
        cmd += ["--path", path]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    if r.returncode != 0:
        tail = (r.stderr.strip().splitlines() or ["?"])[-1]
        killed = r.returncode < 0 and -r.returncode == 9
        return {"error": "killed (out of memory?)" if killed else f"exit {r.returncode}: {tail[:120]}"}
    return json.loads(r.stdout.strip().splitlines()[-1])


def _dims(case: str) -> tuple[int, int, int]:
    """(rows, columns, nonzeros) of a case's pattern, from its formula."""
    kind, *args = case.split(":")
    if kind == "bruss":
        N = int(args[0])
        return 2 * N * N, 2 * N * N, 12 * N * N
    a, c = int(args[0]), int(args[1])
    m, n = a * a * 2 * (c - 1), a * a * c
    return m, n, m * n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cases", nargs="*", default=None)
    ap.add_argument("--stages", nargs="*", default=None,
                    choices=["detect", "api", "emit-pattern", "emit-json"])
    ap.add_argument("--no-trace", action="store_true", help="skip the tracemalloc column")
    ap.add_argument("--timeout", type=float, default=1800)
    ap.add_argument("--child", nargs=2, metavar=("CASE", "STAGE"))
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--path")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child, args.trace, args.path)))
        return 0

    import jax

    sys.path.insert(0, HERE)
    from detect import machine

    cases = args.cases or (["bruss:512", "fft:12:13"] if args.quick else ["bruss:512", "bruss:2048", "fft:12:13",
                                                                           "fft:22:31"])
    stages = args.stages or ["detect", "api", "emit-pattern", "emit-json"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for case in cases:
            m, n, nnz = _dims(case)
            path = None
            if any(s.startswith("emit") for s in stages):
                f, x = _problem(case)
                path = os.path.join(tmp, case.replace(":", "_") + ".mlir")
                with open(path, "w") as fh:
                    fh.write(jax.jit(f).lower(x).as_text())
            for stage in stages:
                r = _run_child(case, stage, False, path, args.timeout)
                if "error" not in r and not args.no_trace and stage in ("detect", "api"):
                    r["traced"] = _run_child(case, stage, True, path, args.timeout).get("traced")
                r.update(case=case, stage=stage, m=m, n=n, nnz=r.get("nnz", nnz))
                rows.append(r)
                msg = r.get("error") or f"{r['time']:.2f} s, Δpeak {(r['peak'] - r['before']) / r['nnz']:.1f} B/nnz"
                print(f"  {case} {stage}: {msg}", file=sys.stderr, flush=True)

    print(f"Memory benchmark — {time.strftime('%Y-%m-%d')} — {machine()}\n")
    print("| case | m × n | nnz | stage | time (s) | peak RSS (MiB) | Δ peak RSS / nnz (B) | tracemalloc / nnz (B) |")
    print("|---|---:|---:|---|---:|---:|---:|---:|")
    for r in rows:
        kind, *a = r["case"].split(":")
        name = f"Brusselator N={a[0]}" if kind == "bruss" else f"irfftn 3-D, {a[0]}×{a[0]}×{a[1]} input"
        head = f"| {name} | {r['m']:,} × {r['n']:,} | {r['nnz']:,} | {r['stage']} |"
        if "error" in r:
            print(head + f" — | — | {r['error']} | — |")
            continue
        traced = f"{r['traced'] / r['nnz']:.1f}" if r.get("traced") else ""
        print(head + f" {r['time']:.2f} | {r['peak'] / 2**20:,.0f} | {(r['peak'] - r['before']) / r['nnz']:.1f} |"
                     f" {traced} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
