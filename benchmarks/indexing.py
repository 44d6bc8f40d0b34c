"""Indexing benchmark: ``x[idx1] * jnp.sin(x[idx2])`` with random permutations, ours vs asdex.

    python benchmarks/indexing.py                 # n = 1e4, 1e5, 1e6
    python benchmarks/indexing.py --sizes 10000   # pick sizes
    python benchmarks/indexing.py --no-asdex

Detection time includes tracing and lowering (what a user pays): every call wraps the function in a fresh
lambda, so neither tool reuses a cached trace.  "first" is the first call at that size, "best" the best of
all calls (the first and ``--repeat`` / ``--asdex-repeat`` more).  Ratio = asdex best / ours best.  The index arrays are NumPy constants, which JAX
embeds in the program and normalizes (negative-index handling) with compare/select/add chains: our constant
lattice folds them, so each gather is an exact permutation.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp

import stablehlo_sparsity as ss

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from detect import best_of, machine  # noqa: E402


def problem(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    idx1, idx2 = rng.permutation(n), rng.permutation(n)

    def f(x):
        return x[idx1] * jnp.sin(x[idx2])

    truth = sp.csr_array((np.ones(2 * n, bool), (np.tile(np.arange(n), 2), np.concatenate([idx1, idx2]))),
                         shape=(n, n))
    truth.sum_duplicates()
    return f, jnp.ones(n), truth


def _as_csr(p) -> sp.csr_array:
    if hasattr(p, "to_scipy"):
        return sp.csr_array(p.to_scipy(), dtype=bool)
    if hasattr(p, "rows") and hasattr(p, "cols"):  # asdex: COO entries
        m = sp.csr_array((np.ones(len(p.rows), bool), (np.asarray(p.rows), np.asarray(p.cols))), shape=p.shape)
        m.sum_duplicates()
        return m
    return sp.csr_array(np.asarray(p.todense()), dtype=bool)


def _same(a: sp.csr_array, b: sp.csr_array) -> bool:
    return a.shape == b.shape and (a != b).nnz == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs after the first (ours)")
    ap.add_argument("--asdex-repeat", type=int, default=2, help="timed runs after the first (asdex)")
    ap.add_argument("--no-asdex", action="store_true")
    args = ap.parse_args(argv)
    asdex = None
    if not args.no_asdex:
        try:
            import asdex
        except ImportError:
            print("asdex is not installed (pip install '.[bench]'): timing ours only", file=sys.stderr)

    rows = []
    for n in args.sizes:
        f, x, truth = problem(n)
        pat, first, best = best_of(lambda: ss.jacobian_sparsity(lambda v: f(v), x), args.repeat)
        ours = _as_csr(pat)
        row = {"n": n, "nnz": ours.nnz, "exact": _same(ours, truth), "ours_first": first, "ours": best}
        if asdex is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                apat, afirst, abest = best_of(lambda: asdex.jacobian_sparsity(lambda v: f(v), x), args.asdex_repeat)
            theirs = _as_csr(apat)
            row.update(asdex_first=afirst, asdex=abest, asdex_nnz=theirs.nnz, asdex_exact=_same(theirs, truth))
        rows.append(row)
        msg = f"  n={n:.0e}: ours {best:.4f}s"
        if "asdex" in row:
            msg += f", asdex {row['asdex']:.3f}s ({row['asdex'] / best:.0f}×)"
        print(msg, file=sys.stderr, flush=True)

    print(f"Indexing benchmark `x[idx1] * jnp.sin(x[idx2])` — {time.strftime('%Y-%m-%d')} — {machine()}\n")
    hdr = "| n | nnz (ours) | exact | ours first (s) | ours best (s) |"
    sep = "|---:|---:|:---:|---:|---:|"
    if asdex is not None:
        hdr += " asdex first (s) | asdex best (s) | nnz (asdex) | asdex exact | asdex / ours |"
        sep += "---:|---:|---:|:---:|---:|"
    print(hdr)
    print(sep)
    for r in rows:
        line = (f"| {r['n']:.0e} | {r['nnz']:,} | {'yes' if r['exact'] else 'NO'} | {r['ours_first']:.4f} | "
                f"{r['ours']:.4f} |")
        if asdex is not None:
            line += (f" {r['asdex_first']:.3f} | {r['asdex']:.3f} | {r['asdex_nnz']:,} | "
                     f"{'yes' if r['asdex_exact'] else 'no'} | {r['asdex'] / r['ours']:.0f}× |")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
