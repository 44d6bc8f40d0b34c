"""Colors versus rows: how a prepared Jacobian spread over 1, 2 and 4 processes (one CPU device each, joined by
``jax.distributed`` and gloo) compares in time and peak memory per process, for three ways to lay out the work:

* ``replicated`` — each process evaluates its block of colors; one ``psum`` of the ``nnz`` values, which every
  process then holds in full (``devices=mesh``);
* ``rows/scatter`` — the same products, one ``psum_scatter`` of the values laid out by row blocks: each process
  ends with its own rows only (``devices=by_rows(mesh, "scatter")``);
* ``rows/exchange`` — the same products, one ``all_to_all`` sending each process just the values of its rows
  (``devices=by_rows(mesh, "exchange")``);
* ``rows/local`` — each process evaluates every color and gathers its own rows: no communication
  (``devices=by_rows(mesh, "local")``).

    python benchmarks/distributed.py                       # the table of docs/benchmarks/scaling.md
    python benchmarks/distributed.py --quick               # small sizes only
    python benchmarks/distributed.py --index               # index arrays: constants versus arguments (1 process)

Each configuration and layout runs ``python -m stablehlo_sparsity.launch -n P`` on this script (``--worker``).
In every process: a warm-up on a small problem, detection and coloring (not timed here; the coloring is the one
``sparse_jacobian`` chooses), then preparation, then, after ``gc`` and a reset of the kernel's peak-RSS counter
(``/proc/self/clear_refs``), the first call (compilation) and the best of ``--repeat`` warm calls.  "peak Δ" is
the process's RSS high-water mark during the first call (compilation and evaluation) and during the warm calls
(the peak counter reset in between), minus its RSS before the first call (so the preparation's detection is
not in it; the warm figure holds the executable, the index tables and the result); the table shows the largest over the processes (and the times of the slowest process).
The colors-sharded layouts evaluate each device's colors with ``vmap``; ``rows/local`` evaluates every product
with the plan's own strategy (``"auto"``: ``"unrolled"`` at these sizes).  The machine's cores are shared by all processes: with more processes
than cores, time per process does not fall; memory per process is what this measures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

from peak_memory import memory_status, reset_peak

HERE = os.path.dirname(os.path.abspath(__file__))
LAYOUTS = ("replicated", "rows/scatter", "rows/exchange", "rows/local")


def problem(name: str, N: int):
    from stablehlo_sparsity.examples import brusselator, stencil27

    if name == "brusselator":
        return (lambda v: brusselator(v, N)), 2 * N * N, f"2-D Brusselator N={N}"
    return (lambda v: stencil27(v, N)), N ** 3, f"3-D 27-point N={N}"


def worker(args) -> None:
    from stablehlo_sparsity.derivatives import distributed

    pid, count = distributed.initialize(timeout=300)
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import stablehlo_sparsity as ss
    from stablehlo_sparsity.derivatives.prepared.sharding import by_rows

    f, n, _title = problem(args.problem, args.N)
    x = np.random.default_rng(0).uniform(0.5, 1.5, n)
    mesh = distributed.global_mesh()
    xg = distributed.replicate(x, mesh)
    # warm-up: every layout once on a small problem, so that no layout pays the process's first compilations
    small, sn, _ = problem(args.problem, 8)
    xs = distributed.replicate(np.ones(sn), mesh)
    for layout in args.layouts.split(","):
        devices = mesh if layout == "replicated" else by_rows(mesh, layout.split("/")[1])
        jax.block_until_ready(ss.sparse_jacobian(small, jnp.ones(sn), output="values", devices=devices).values(xs))
    base = ss.sparse_jacobian(f, jnp.asarray(x), output="values")  # detection + coloring, once
    coloring, nnz = base.coloring, base.pattern.nnz
    del base
    rows = []
    for layout in args.layouts.split(","):
        devices = mesh if layout == "replicated" else by_rows(mesh, layout.split("/")[1])
        t0 = time.perf_counter()
        jac = ss.sparse_jacobian(f, jnp.asarray(x), coloring=coloring, output="values", devices=devices)
        prepare = time.perf_counter() - t0
        before = reset_peak()  # the evaluation only (preparation detects the pattern again)
        t0 = time.perf_counter()
        jax.block_until_ready(jac.values(xg))
        first = time.perf_counter() - t0
        first_peak = memory_status()["VmHWM"]
        reset_peak()  # the warm calls: the executable and the result live, no compilation
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            jax.block_until_ready(jac.values(xg))
            best = min(best, time.perf_counter() - t0)
        peak = memory_status()["VmHWM"]
        held = sum(s.data.nbytes for s in jac.values(xg).addressable_shards)
        rows.append({"layout": layout, "pid": pid, "count": count, "nnz": nnz, "colors": coloring.num_colors,
                     "prepare": prepare, "first": first, "warm": best, "first_delta": first_peak - before,
                     "delta": peak - before,
                     "result_bytes": held})
        del jac
    with open(os.path.join(args.out, f"p{pid}.json"), "w") as fh:
        json.dump(rows, fh)


def index_worker(args) -> None:
    """One process, one variant: the Jacobian with its index arrays as constants or as arguments."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    import stablehlo_sparsity as ss
    from stablehlo_sparsity.derivatives.prepared import evaluation

    f, n, title = problem(args.problem, args.N)
    x = jnp.asarray(np.random.default_rng(0).uniform(0.5, 1.5, n))
    small, sn, _ = problem(args.problem, 8)  # warm-up: the process's first compilations
    ss.sparse_jacobian(small, jnp.ones(sn), output="values")(jnp.ones(sn)).block_until_ready()
    coloring = ss.sparse_jacobian(f, x, output="values").coloring
    evaluation.INDEX_ARGUMENT_ENTRIES = 0 if args.index == "arguments" else 1 << 62
    jac = ss.sparse_jacobian(f, x, coloring=coloring, output="values")
    before = reset_peak()
    t0 = time.perf_counter()
    jac(x).block_until_ready()
    first = time.perf_counter() - t0
    best = float("inf")
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        jac(x).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    delta = memory_status()["VmHWM"] - before
    print(f"| {title} | {jac.pattern.nnz:,} | {jac.strategy} | {args.index} | {first:.2f} | {best:.3f} | "
          f"{delta / 2**20:,.0f} |", flush=True)


def index_comparison(args) -> None:
    """The same Jacobian with its index arrays as constants and as arguments, each in a fresh process."""
    sizes = [("brusselator", 512), ("brusselator", 1024), ("stencil", 48)] if not args.quick else \
        [("brusselator", 256), ("stencil", 32)]
    print("| problem | nnz | strategy | index arrays | first call (s) | warm (s) | peak Δ (MiB) |")
    print("| --- | --- | --- | --- | --- | --- | --- |", flush=True)
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    for name, N in sizes:
        for label in ("constants", "arguments"):
            subprocess.run([sys.executable, os.path.abspath(__file__), "--index", label, "--problem", name,
                            "--N", str(N), "--repeat", str(args.repeat)], env=env)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--problem", default="brusselator")
    ap.add_argument("--N", type=int, default=256)
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--index", nargs="?", const="both", choices=["both", "constants", "arguments"])
    ap.add_argument("--processes", default="1,2,4")
    ap.add_argument("--sizes", help="problem:N,… (default: the documented table)")
    args = ap.parse_args(argv)
    if args.worker:
        worker(args)
        return 0
    if args.index == "both":
        index_comparison(args)
        return 0
    if args.index:
        index_worker(args)
        return 0
    import tempfile

    sys.path.insert(0, HERE)
    from detect import machine

    sizes = [("brusselator", 256), ("stencil", 32)] if args.quick else \
        [("brusselator", 256), ("brusselator", 1024), ("stencil", 32), ("stencil", 48)]
    if args.sizes:
        sizes = [(p.split(":")[0], int(p.split(":")[1])) for p in args.sizes.split(",")]
    print(f"machine: {machine()}")
    print("| problem | nnz | colors | processes | layout | first call (s) | warm (s) | peak Δ first call (MiB) "
          "| peak Δ warm (MiB) | result per process (MiB) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["JAX_PLATFORMS"] = "cpu"
    for name, N in sizes:
        _f, _n, title = problem(name, N)
        for count in (int(c) for c in args.processes.split(",")):
            for layout in args.layouts.split(","):  # one launch per layout: no layout inherits another's memory
                with tempfile.TemporaryDirectory() as out:
                    run = subprocess.run([sys.executable, "-m", "stablehlo_sparsity.launch", "-n", str(count),
                                          "--timeout", "1800", os.path.abspath(__file__), "--worker", "--out", out,
                                          "--problem", name, "--N", str(N), "--layouts", layout,
                                          "--repeat", str(args.repeat)], env=env, capture_output=True, text=True)
                    if run.returncode != 0:
                        print(f"| {title} | failed with {count} processes, {layout}: {run.stderr[-500:]!r} |",
                              flush=True)
                        continue
                    rs = [json.load(open(os.path.join(out, f"p{p}.json")))[0] for p in range(count)]
                r0 = rs[0]
                print(f"| {title} | {r0['nnz']:,} | {r0['colors']} | {count} | {layout} | "
                      f"{max(r['first'] for r in rs):.2f} | {max(r['warm'] for r in rs):.3f} | "
                      f"{max(r['first_delta'] for r in rs) / 2**20:,.0f} | {max(r['delta'] for r in rs) / 2**20:,.0f} | "
                      f"{max(r['result_bytes'] for r in rs) / 2**20:,.1f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
