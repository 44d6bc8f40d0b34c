"""Detection in bounded memory: the whole-program analysis against the streamed row blocks
(:mod:`stablehlo_sparsity.analysis.streaming`), time and peak RSS, each configuration in a fresh process.

    python benchmarks/stream_detect.py                              # 3-D 27-point stencil and Brusselator
    python benchmarks/stream_detect.py --problem stencil27 --L 100 --blocks 1 4 16
    python benchmarks/stream_detect.py --problem brusselator --N 1024 --blocks 4 16

Problems: the 3-D 27-point stencil ``x ↦ Σ c_d · x[shifted by d] + x³`` on an L×L×L grid with a zero
boundary (``n = L³``, about ``27 n`` nonzeros), and the 2-D Brusselator of ``stablehlo_sparsity.examples``
(``n = 2N²``, 6 nonzeros per row, ``jnp.roll`` stencils).  "whole" is ``jacobian_sparsity(f, x)``;
"B blocks" is ``jacobian_sparsity_blocks(f, x, rows_per_block=ceil(n / B))``, every block consumed (its nnz
counted) and dropped.  Time includes lowering; CPU is the process's CPU time (what a shared machine
does not inflate).  Peak RSS is the process's high-water mark during detection
(``/proc/self/clear_refs`` reset just before), "Δ" that minus the RSS before detection (JAX and the inputs).
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


def run_one(problem: str, size: int, blocks: int) -> dict:
    """One detection in this process: ``blocks = 0`` is the whole analysis."""

    import jax.numpy as jnp

    import stablehlo_sparsity as ss
    from stablehlo_sparsity.examples import brusselator, stencil27
    from stablehlo_sparsity.analysis.streaming import jacobian_sparsity_blocks

    if problem == "stencil27":
        n = size ** 3
        f = lambda v: stencil27(v, size)  # noqa: E731
    else:
        n = 2 * size * size
        f = lambda v: brusselator(v, size)  # noqa: E731
    x = jnp.ones(n, jnp.float32)
    small = jnp.ones(2 * 8 * 8, jnp.float32)  # warm-up: imports and the lowering machinery
    list(jacobian_sparsity_blocks(lambda v: brusselator(v, 8), small, rows_per_block=64))
    before = reset_peak()
    t0, c0 = time.perf_counter(), time.process_time()
    if blocks == 0:
        nnz, count = ss.jacobian_sparsity(f, x).nnz, 1
    else:
        nnz = count = 0
        for _, block in jacobian_sparsity_blocks(f, x, rows_per_block=-(-n // blocks)):
            nnz += block.nnz
            count += 1
            del block
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = memory_status()["VmHWM"]
    return {"problem": problem, "size": size, "n": n, "nnz": int(nnz), "blocks": blocks, "count": count,
            "time": elapsed, "cpu": cpu, "peak": peak, "delta": peak - before}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--problem", choices=["stencil27", "brusselator", "both"], default="both")
    ap.add_argument("--L", type=int, nargs="+", default=[100, 215], help="stencil grid sides (n = L³)")
    ap.add_argument("--N", type=int, nargs="+", default=[1024, 2236], help="Brusselator grid sides (n = 2N²)")
    ap.add_argument("--blocks", type=int, nargs="+", default=[0, 4, 16], help="0 = the whole analysis")
    ap.add_argument("--one", nargs=3, metavar=("PROBLEM", "SIZE", "BLOCKS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]), int(args.one[2]))))
        return 0

    sys.path.insert(0, HERE)
    from detect import machine

    runs = []
    if args.problem in ("stencil27", "both"):
        runs += [("stencil27", L) for L in args.L]
    if args.problem in ("brusselator", "both"):
        runs += [("brusselator", N) for N in args.N]
    print(f"Streamed detection — {time.strftime('%Y-%m-%d')} — {machine()}\n")
    print("| problem | n | nnz | detection | blocks | time (s) | CPU (s) | peak RSS (MiB) | Δ (MiB) | Δ / nnz (B) |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for problem, size in runs:
        for b in args.blocks:
            out = subprocess.run([sys.executable, __file__, "--one", problem, str(size), str(b)],
                                 capture_output=True, text=True)
            if out.returncode:
                print(f"| {problem} | {size} | | {'whole' if b == 0 else f'{b} blocks'} | failed: "
                      f"{out.stderr.strip().splitlines()[-1][:80] if out.stderr.strip() else out.returncode} |||||")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            label = "whole" if b == 0 else f"{b} blocks"
            print(f"| {problem} | {r['n']:,} | {r['nnz']:,} | {label} | {r['count']} | {r['time']:.2f} | {r['cpu']:.2f} | "
                  f"{r['peak'] / 2**20:,.0f} | {r['delta'] / 2**20:,.0f} | {r['delta'] / max(1, r['nnz']):.1f} |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
