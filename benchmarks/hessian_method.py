"""Which Hessian method is faster, problem by problem: the data ``hessian_sparsity(method="auto")``'s cost model
is fitted on (``stablehlo_sparsity/analysis/second_order/method.py``), and the check that ``auto`` stays within
1.25× of the faster method.

    python benchmarks/hessian_method.py                 # measure direct, via-gradient and auto; print the table
    python benchmarks/hessian_method.py --fit           # also fit the coefficients (weighted least squares)
    python benchmarks/hessian_method.py --json out.json # keep the measurements

Problems: the objectives of ``benchmarks/hessian_detect.py`` over a range of sizes (the Brusselator energy, a
sum of local terms, the test-suite objectives, the 2-D local energy at n = 65,536), and the written-out and
vectorized objectives of ``benchmarks/small_programs.py``.  Each time is the best CPU time of ``--repeat`` calls
in this process (fresh lambdas: nothing is reused from a cache), tracing and lowering included.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import stablehlo_sparsity as ss  # noqa: E402
from stablehlo_sparsity.analysis.second_order import method as cost  # noqa: E402

import hessian_detect as hd  # noqa: E402
import small_programs as sp  # noqa: E402


def problems(quick: bool):
    bruss = (16, 32, 64) if quick else (16, 32, 64, 128, 256)
    for N in bruss:
        yield f"bruss N={N}", *hd.brusselator_energy(N)
    for n in ((10_000,) if quick else (10_000, 100_000, 1_000_000)):
        yield f"local n={n}", *hd.local_terms(n)
    sizes = (1_000, 10_000) if quick else (1_000, 10_000, 100_000)
    for name in ("rosenbrock", "separable", "energy_2d", "periodic_chain", "fori_energy", "conv_energy"):
        for n in sizes:
            yield f"{name} n={n}", *hd.suite_objective(name, n)
    yield "energy_2d n=65536", *hd.suite_objective("energy_2d", 65_536)
    for n in ((100, 300) if quick else (100, 300, 1_000)):
        yield f"written n={n}", *hd.written_out(n)
    for label, f, n in sp.problems("hessian", quick):
        yield f"{label} n={n}", f, n


def measure(f, n, repeat: int, methods) -> dict:
    """Best CPU time of each method, the methods interleaved call by call in alternating order (so a slow moment
    of the machine falls on all of them alike), each call after a garbage collection; a method whose call takes
    over 2 s is called once."""
    x = jnp.ones(n)
    feats = cost.program_features(jax.jit(f).trace(x).jaxpr)
    row: dict = {"n": n, "eqns": feats.eqns, "elements": feats.elements, "nonlinear": feats.nonlinear_elements}
    best = {m: float("inf") for m in methods}
    for rep in range(max(repeat, 1)):
        for m in (methods if rep % 2 == 0 else methods[::-1]):  # (alternating order: no method always goes first)
            if best[m] > 2.0 and best[m] != float("inf"):
                continue
            gc.collect()  # the garbage of the previous call is not collected during this one
            c0 = time.process_time()
            ss.hessian_sparsity(lambda v: f(v), x, method=m)
            best[m] = min(best[m], time.process_time() - c0)
    row.update(best)
    return row


def fit(rows) -> tuple[float, ...]:
    """Least squares of log(t_via-gradient / t_direct) on the model's row (see the module of the cost model)."""
    X = np.array([cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"]).as_row() for r in rows])
    y = np.array([np.log(r["via-gradient"] / r["direct"]) for r in rows])
    w, *_ = np.linalg.lstsq(X, y, rcond=None)
    print(f"residual standard deviation {np.std(X @ w - y):.3f} (log-ratio), {len(rows)} problems")
    return tuple(float(v) for v in w)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fit", action="store_true", help="fit the cost model's coefficients on this run")
    ap.add_argument("--json", help="write the measurements here")
    ap.add_argument("--load", help="read measurements from this JSON instead of measuring")
    args = ap.parse_args(argv)
    if args.load:
        with open(args.load) as fh:
            rows = json.load(fh)
    else:
        rows = []
        for label, f, n in problems(args.quick):
            r = measure(f, n, args.repeat, ("direct", "via-gradient") if args.fit else ("direct", "via-gradient", "auto"))
            r["label"] = label
            rows.append(r)
            print(f"  {label}: direct {r['direct'] * 1e3:.1f} ms, via-gradient {r['via-gradient'] * 1e3:.1f} ms, "
                  f"auto {r.get('auto', float('nan')) * 1e3:.1f} ms", file=sys.stderr, flush=True)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=1)
    if args.fit:
        cost.WEIGHTS = fit(rows)
        print("WEIGHTS =", cost.WEIGHTS)
    source = f"measurements read from {args.load}" if args.load else f"best of {args.repeat}"
    print(f"\nHessian method — {time.strftime('%Y-%m-%d')} — jax {jax.__version__}, CPU ms, {source}\n")
    print("| problem | n | eqns | elements | nonlinear | direct | via-gradient | predicted via / direct | model picks "
          "| picked / best | auto | auto / best |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|")
    worst_pick = worst_auto = 0.0
    for r in rows:
        feats = cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"])
        pick = cost.choose_method(feats)
        best = min(r["direct"], r["via-gradient"])
        worst_pick = max(worst_pick, r[pick] / best)
        line = (f"| {r['label']} | {r['n']:,} | {r['eqns']:,} | {r['elements']:,} | {r['nonlinear']:,} | "
                f"{r['direct'] * 1e3:.1f} | {r['via-gradient'] * 1e3:.1f} | {cost.predicted_ratio(feats):.2f} | {pick} | "
                f"{r[pick] / best:.2f} |")
        if "auto" in r:
            worst_auto = max(worst_auto, r["auto"] / best)
            line += f" {r['auto'] * 1e3:.1f} | {r['auto'] / best:.2f} |"
        else:
            line += " – | – |"
        print(line)
    print(f"\nworst picked / best: {worst_pick:.2f} (target ≤ 1.25): the method auto runs, timed in the direct and "
          "via-gradient columns")
    if worst_auto:
        print(f"worst auto / best: {worst_auto:.2f} (auto timed as a third method: the same computation as the method "
              "it picks plus the feature count, so the difference from 'picked / best' is the noise of timing one "
              "computation twice)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
