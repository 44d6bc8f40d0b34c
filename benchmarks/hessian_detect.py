"""Hessian detection benchmark: direct (second-order analysis of the primal program) vs via-gradient (the
Jacobian of the lowered gradient program) vs asdex, side by side in one run.

    python benchmarks/hessian_detect.py            # N = 64 … 512, n = 1e6, test-suite objectives at n = 1e4 / 1e5
    python benchmarks/hessian_detect.py --quick    # smaller sizes
    python benchmarks/hessian_detect.py --full     # adds the Brusselator energy at N = 1024 (n = 2,097,152) and
                                                   # the written-out objective at n = 10,000 (minutes per peer)
    python benchmarks/hessian_detect.py --only written   # the problems whose spec starts with this

Problems: the Brusselator energy, a sum of local terms, the Hessian objectives of the test suite, and a
CUTEst-style objective written out term by term (thousands of scalar ops: the regime where lowering the
gradient program dominates the gradient path).

Each (method, problem) runs in a fresh subprocess, so its peak resident memory is its own: "peak MB" is the
peak RSS minus the RSS after imports and building the arguments.  Times include tracing and lowering (what a
user pays); every call wraps f in a fresh lambda so nothing is reused from a cache; "first" is the first call
in the process, "warm" the best of ``--repeat`` further calls, as wall seconds and (in parentheses) CPU
seconds of the process; the ratios are taken on the CPU seconds.  "lower grad" is the time to lower the gradient
program alone (``jax.jit(jax.grad(f)).lower(x)``), the floor under via-gradient; "lower primal" the time to trace
and lower the primal program alone (``jax.jit(f).trace(x).lower()``), the floor under direct detection — and
under any method that reads the primal StableHLO.  Ratios: peer CPU / direct CPU, warm (> 1: direct is faster).
"ceiling" is via-gradient / lower primal: the largest ratio over via-gradient that any such method could
reach, with an analysis that took no time at all (below 5: the issue's 5× target is out of reach there).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings

METHODS = ("direct", "via-gradient", "asdex", "lower-grad", "lower-primal")


# ---------------------------------------------------------------------------------------------- the problems
def brusselator_energy(N):
    from stablehlo_sparsity.examples import brusselator

    import jax.numpy as jnp

    return lambda x: 0.5 * jnp.sum(brusselator(x, N) ** 2), 2 * N * N


def local_terms(n):
    """A sum of local terms: chained Rosenbrock plus a three-point coupling."""
    import jax.numpy as jnp

    def f(x):
        return jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2) + jnp.sum(jnp.sin(x[2:] * x[:-2]))

    return f, n


def suite_objective(name, n):
    """The Hessian objectives of tests/derivatives/test_sparse_hessian.py, at size n."""
    import jax
    import jax.numpy as jnp

    side = int(round(n ** 0.5))
    table = {
        "rosenbrock": (lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2), n),
        "separable": (lambda x: jnp.sum(jnp.sin(x) * x ** 2), n),
        "energy_2d": (lambda x: (lambda u: jnp.sum((u[1:] - u[:-1]) ** 2) + jnp.sum((u[:, 1:] - u[:, :-1]) ** 2)
                                 + jnp.sum(u ** 4))(x.reshape(side, side)), side * side),
        "periodic_chain": (lambda x: jnp.sum(jnp.cos(x - jnp.roll(x, 1)) * x), n),
        "fori_energy": (lambda x: jnp.sum(jax.lax.fori_loop(
            0, 3, lambda i, u: u + 0.1 * (jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)) - 0.01 * u ** 3, x) ** 2), n),
        "conv_energy": (lambda x: jnp.sum(jax.lax.conv_general_dilated(
            x[None, None, :], jnp.asarray([[[0.5, -1.0, 0.25]]]), (1,), "SAME") ** 2 * x), n),
    }
    return table[name]


def written_out(n):
    """A CUTEst-style objective written out term by term (as SIF translations are): n − 1 scalar element
    functions ``(c_i·x_i·x_{i+1} − 1)² + c_i·sin(x_i)``, each indexing scalars.  The program has about 17 ops
    per term and no vectorized op: lowering the gradient program is most of the cost of the gradient path (the
    issue's CUTEst ``VANDANMSLS`` case), and the direct analysis pays a per-op cost instead of a per-entry one."""
    import numpy as np

    import jax.numpy as jnp

    c = np.random.default_rng(0).uniform(0.5, 2.0, n)

    def f(x):
        total = 0.0
        for i in range(n - 1):
            total = total + (c[i] * x[i] * x[i + 1] - 1.0) ** 2 + jnp.sin(x[i]) * c[i]
        return total

    return f, n


def problem(spec: str):
    kind, _, arg = spec.partition(":")
    if kind == "bruss":
        return brusselator_energy(int(arg))
    if kind == "local":
        return local_terms(int(arg))
    if kind == "written":
        return written_out(int(arg))
    name, _, size = arg.partition("@")
    return suite_objective(name, int(size))


def problems(quick: bool, full: bool):
    bruss = [64, 128] if quick else [64, 128, 256, 512] + ([1024] if full else [])
    for N in bruss:
        yield f"Brusselator energy, N={N} (n={2 * N * N:,})", f"bruss:{N}"
    n_local = 100_000 if quick else 1_000_000
    yield f"sum of local terms, n={n_local:,}", f"local:{n_local}"
    sizes = [10_000] if quick else [10_000, 100_000]
    for name in ("rosenbrock", "separable", "energy_2d", "periodic_chain", "fori_energy", "conv_energy"):
        for n in sizes:
            yield f"{name}, n={n:,}", f"suite:{name}@{n}"
    for n in [300] if quick else [1_000] + ([10_000] if full else []):
        yield f"written out term by term, n={n:,}", f"written:{n}"


# ---------------------------------------------------------------------------------------------- one measurement
def rss_mb() -> float:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def measure(method: str, spec: str, repeat: int) -> dict:
    import jax
    import jax.numpy as jnp

    import stablehlo_sparsity as ss

    f, n = problem(spec)
    x = jnp.ones(n)
    if method == "asdex":
        import asdex

        def run():
            return int(asdex.hessian_sparsity(lambda v: f(v), x).nnz)
    elif method == "lower-grad":
        def run():
            jax.jit(jax.grad(lambda v: f(v))).lower(x).compiler_ir("stablehlo")
            return None
    elif method == "lower-primal":
        def run():
            jax.jit(lambda v: f(v), keep_unused=True).trace(x).lower().compiler_ir("stablehlo")
            return None
    else:
        def run():
            return ss.hessian_sparsity(lambda v: f(v), x, method=method).nnz

    base = rss_mb()
    t0, c0 = time.perf_counter(), time.process_time()
    nnz = run()
    first, cpu = time.perf_counter() - t0, time.process_time() - c0
    warm = first
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        run()
        warm = min(warm, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3  # kB on Linux
    return {"first": first, "warm": warm, "cpu": cpu, "nnz": nnz, "peak_mb": max(peak - base, 0.0)}


def run_one(method: str, spec: str, repeat: int, timeout: float) -> dict:
    if spec.startswith("written:"):
        # seconds per call: one warm call (the program is too big for caches to matter); from n = 1e4 on (a
        # minute and more per peer call) the first call only
        repeat = min(repeat, 1) if int(spec.partition(":")[2]) < 10_000 else 0
    cmd = [sys.executable, __file__, "--one", method, spec, "--repeat", str(repeat)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"> {timeout:.0f} s"}
    if proc.returncode < 0:  # killed by a signal: SIGKILL is what the out-of-memory killer sends
        return {"error": f"killed (signal {-proc.returncode}{': out of memory?' if proc.returncode == -9 else ''})"}
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": last[:80]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------------------- the table
def fmt_t(r):
    return r["error"] if "error" in r else f"{r['warm']:.3g} s ({r['cpu']:.3g})"


def ratio(peer, direct):
    """Peer over direct, on CPU seconds: on a machine shared with other jobs, a process's own CPU time moves
    far less with the load than its wall time (every measured call is single-threaded work)."""
    if "error" in peer or "error" in direct or direct["cpu"] <= 0:
        return "–"
    return f"{peer['cpu'] / direct['cpu']:.1f}×"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--no-asdex", action="store_true")
    ap.add_argument("--only", default="", help="run only the problems whose spec starts with this")
    ap.add_argument("--one", nargs=2, metavar=("METHOD", "SPEC"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        warnings.simplefilter("ignore")
        print(json.dumps(measure(args.one[0], args.one[1], args.repeat)))
        return 0
    methods = [m for m in METHODS if not (m == "asdex" and args.no_asdex)]
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from detect import machine  # (the parent only: the measured children never import it)

    print(f"Hessian detection, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} — {machine()}\n")
    print("| problem | nnz direct | nnz via-grad | nnz asdex | direct | via-gradient | asdex | lower grad | "
          "lower primal | via-grad / direct | asdex / direct | lower grad / direct | ceiling | "
          "peak MB direct / via / asdex |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, spec in problems(args.quick, args.full):
        if not spec.startswith(args.only):
            continue
        res = {m: run_one(m, spec, args.repeat, args.timeout) for m in methods}
        res.setdefault("asdex", {"error": "skipped"})
        d, v, a, g, p = res["direct"], res["via-gradient"], res["asdex"], res["lower-grad"], res["lower-primal"]
        nnz = lambda r: r.get("nnz", "–") if "error" not in r else "–"  # noqa: E731
        peak = " / ".join(f"{r['peak_mb']:.0f}" if "error" not in r else "–" for r in (d, v, a))
        print(f"| {label} | {nnz(d)} | {nnz(v)} | {nnz(a)} | {fmt_t(d)} | {fmt_t(v)} | {fmt_t(a)} | {fmt_t(g)} | "
              f"{fmt_t(p)} | {ratio(v, d)} | {ratio(a, d)} | {ratio(g, d)} | {ratio(v, p)} | {peak} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
