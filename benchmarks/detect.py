"""Detection benchmark: ours vs asdex (jaxpr-level peer), side by side in one process.

    python benchmarks/detect.py            # full table (asdex at n = 1e6 takes a while)
    python benchmarks/detect.py --quick    # smaller sizes

Times include tracing and lowering (what a user pays): every call wraps the function in a fresh lambda, so
neither tool reuses a cached trace.  "first" is the first call in the process (cold caches), "warm" the best of
``--repeat`` further calls.  Ratio = asdex warm / ours warm.  ns/nnz = our warm time per pattern nonzero.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings

import jax
import jax.numpy as jnp
import numpy as np

import stablehlo_sparsity as ss
from stablehlo_sparsity.examples import brusselator, laplacian_cubic, make_conv2d


def best_of(fn, repeat):
    """``(result, first call's time, best time over 1 + repeat calls)``."""
    t0 = time.perf_counter()
    out = fn()
    first = time.perf_counter() - t0
    best = first
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return out, first, best


def machine() -> str:
    try:
        import subprocess

        cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                             capture_output=True, text=True).stdout.strip()
    except Exception:
        cpu = platform.processor()
    return (f"{cpu or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
            f"jax {jax.__version__}, {peer_version()}")


def peer_version() -> str:
    """The peer's installed release (asdex 0.5.2 needs jax 0.11.x; 0.5.1 is the last for jax 0.10.2)."""
    import importlib.metadata

    try:
        return f"asdex {importlib.metadata.version('asdex')}"
    except importlib.metadata.PackageNotFoundError:
        return "asdex not installed"


def problems(quick: bool):
    sizes_1d = [10_000, 100_000] if quick else [10_000, 100_000, 1_000_000]
    for n in sizes_1d:
        yield f"1-D Laplacian + cubic, n={n:.0e}", laplacian_cubic, jnp.ones(n)
    for N in ([32, 128] if quick else [32, 128, 512]):
        yield f"Brusselator 2-D, N={N} (n={2 * N * N})", (lambda x, N=N: brusselator(x, N)), jnp.ones(2 * N * N)
    conv, n = make_conv2d()
    yield "conv2d 1×1×64×64 → 8 ch, 3×3", conv, jnp.ones(n)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-asdex", action="store_true")
    args = ap.parse_args(argv)
    try:
        import asdex
    except ImportError:
        asdex = None
    if args.no_asdex:
        asdex = None

    rows = []
    for name, f, x in problems(args.quick):
        try:
            # A fresh wrapper per call: JAX re-traces and re-lowers, as for a new user function.
            pat, first, warm = best_of(lambda: ss.jacobian_sparsity(lambda v: f(v), x), args.repeat)
        except ss.UnsupportedOpError as e:
            print(f"  {name}: skipped ({e.message})", file=sys.stderr)
            continue
        row = {"name": name, "n": x.size, "nnz": pat.nnz, "ours_first": first, "ours": warm}
        if asdex is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ap_pat, a_first, a_warm = best_of(lambda: asdex.jacobian_sparsity(lambda v: f(v), x),
                                                args.repeat if x.size <= 100_000 else 0)
            row.update(asdex_first=a_first, asdex=a_warm)
            row["agree"] = _agree(pat, ap_pat)
        rows.append(row)
        print(f"  {name}: ours {warm:.4f}s" + (f", asdex {row['asdex']:.3f}s" if "asdex" in row else ""),
              file=sys.stderr, flush=True)

    print(f"Detection benchmark — {time.strftime('%Y-%m-%d')} — {machine()}\n")
    hdr = "| problem | n | nnz | ours first (s) | ours warm (s) | ns / nnz |"
    sep = "|---|---:|---:|---:|---:|---:|"
    if asdex is not None:
        hdr += " asdex first (s) | asdex warm (s) | asdex / ours (warm) | same pattern |"
        sep += "---:|---:|---:|:---:|"
    print(hdr)
    print(sep)
    for r in rows:
        line = (f"| {r['name']} | {r['n']:,} | {r['nnz']:,} | {r['ours_first']:.4f} | {r['ours']:.4f} | "
                f"{r['ours'] / max(r['nnz'], 1) * 1e9:.0f} |")
        if asdex is not None:
            line += f" {r['asdex_first']:.3f} | {r['asdex']:.3f} | {r['asdex'] / r['ours']:.0f}× | {r['agree']} |"
        print(line)
    return 0


def _agree(ours, theirs) -> str:
    try:
        import scipy.sparse as sp

        if hasattr(theirs, "to_scipy"):
            t = theirs.to_scipy()
        elif hasattr(theirs, "rows") and hasattr(theirs, "cols"):
            t = sp.csr_array((np.ones(len(theirs.rows), bool), (np.asarray(theirs.rows), np.asarray(theirs.cols))),
                             shape=theirs.shape)
        else:
            t = sp.csr_array(np.asarray(theirs.todense()))
        o = ours.to_scipy()
        if t.shape != o.shape:
            return "shape differs"
        t = sp.csr_array(t, dtype=bool)
        if (t != o).nnz == 0:
            return "yes"
        extra_theirs = (t > o).nnz
        extra_ours = (o > t).nnz
        return f"no (+{extra_ours} ours, +{extra_theirs} asdex)"
    except Exception as e:  # pragma: no cover - reporting only
        return f"? ({type(e).__name__})"


if __name__ == "__main__":
    sys.exit(main())
