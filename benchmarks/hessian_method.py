"""Which Hessian method is faster, problem by problem: the data ``hessian_sparsity(method="auto")``'s cost model
is fitted on (``stablehlo_sparsity/analysis/second_order/method.py``), and the check that ``auto`` stays within
1.25× of the faster method.

    python benchmarks/hessian_method.py                 # measure direct, via-gradient and auto; print the table
    python benchmarks/hessian_method.py --fit           # also fit the coefficients (weighted logistic regression)
    python benchmarks/hessian_method.py --fit --load benchmarks/data/hessian_method_*.json   # refit the kept data
    python benchmarks/hessian_method.py --json out.json # keep the measurements
    python benchmarks/hessian_method.py --in-process    # all problems in this one process (see below)
    python benchmarks/hessian_method.py --held-out --stat median   # the held-out objectives (never fitted on)
    python benchmarks/hessian_method.py --study --load benchmarks/data/hessian_method_median.json \
        benchmarks/data/hessian_method_held_out.json    # refits without each family, budgeted walks simulated

Problems (the fitted set): the objectives of ``benchmarks/hessian_detect.py`` over a range of sizes (the
Brusselator energy, a sum of local terms, the test-suite objectives, the 2-D local energy at n = 65,536), and the
written-out and vectorized objectives of ``benchmarks/small_programs.py``; with ``--held-out``, the 30 families of
``benchmarks/hessian_held_out.py`` instead, which no fit reads.  Each time is the best (or with ``--stat median``
the median) CPU time of ``--repeat`` calls, 15 for a problem under 50 ms (fresh lambdas: nothing is reused from a
cache), tracing and lowering included; every time is kept in the JSON rows (``"times"``), and ``"auto_method"`` is
the method ``auto`` took.

Each problem is measured in fresh processes by default, each method in a process of its own
(:func:`measure_apart`; ``--together``: the methods of a problem in one process, alternating call by call, the
protocol before 2026-12-07 18:30 UTC, whose first call was always the direct walk's).  The direct walk of a large
vectorized problem writes tens of megabytes of short-lived arrays; a process that has not yet grown its heap maps
fresh pages for them, and the page faults are a third of the walk's time (``periodic_chain`` at n = 10⁵: 50 ms direct in a fresh process,
35 ms after a larger problem ran in the same process).  A long benchmark process would hide that cost, so the
model is fitted on fresh-process timings; ``--in-process`` measures the other regime, where ``auto`` must also
stay within 1.25×.  For the same reason a method whose call takes over 2 s (called once) is timed in a process of
its own (:func:`measure_fresh`): in a shared one, whichever of them ran first paid the page faults of the heap
the others then reused (up to 1.6 s at n = 10⁶, runs before 2026-12-07 05:00 UTC).
"""
from __future__ import annotations

import argparse
import gc
import itertools
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import stablehlo_sparsity as ss  # noqa: E402
from stablehlo_sparsity.analysis.second_order import method as cost  # noqa: E402

import hessian_detect as hd  # noqa: E402
import hessian_held_out as ho  # noqa: E402
import small_programs as sp  # noqa: E402


def held_out_problems(quick: bool):
    """``(label, f, n)`` of the held-out objectives (``benchmarks/hessian_held_out.py``): never fitted on."""
    for label, _family, _style, f, n in ho.problems(quick):
        yield label, f, n


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


#: A problem whose every method's median call is shorter than this (CPU seconds) after ``--repeat`` calls is called
#: until each method has :data:`SHORT_CALLS` calls: three calls of a 5 ms detection spread by ±40% here (a page fault
#: burst, a timer tick), more than the 1.25× the check resolves.
SHORT_CALL, SHORT_CALLS = 0.05, 15


#: A method's calls stop once they add up to this many seconds (with ``--together``: after one call over 2 s, the
#: rule before 2026-12-07 18:45 UTC, which kept only a cold first call's time when it passed 2 s and three calls when
#: it did not: ``graph_laplacian_scatter`` at 10⁶ gave 2.5 s or 1.2 s by which side of 2 s its first call fell).
LONG_CALLS = 5.0


def measure(f, n, repeat: int, methods, stat: str = "best", apart_budget: bool = True) -> dict:
    """CPU time of each method (``stat``: the best or the median of ``repeat`` calls, :data:`SHORT_CALLS` calls for
    a problem under :data:`SHORT_CALL`; every time is kept under ``"times"``), the methods interleaved call by call
    in alternating order (so a slow moment of the machine falls on all of them alike), each call after a garbage
    collection; a method stops being called once its calls add up to :data:`LONG_CALLS` s (a 10 s call is called
    once, a 2.4 s first call and its 1.2 s successors three times).  ``"auto_method"``: the method ``auto`` took."""
    x = jnp.ones(n)
    feats = cost.program_features(jax.jit(f).trace(x).jaxpr)
    row: dict = {"n": n, "eqns": feats.eqns, "elements": feats.elements, "nonlinear": feats.nonlinear_elements}
    times: dict = {m: [] for m in methods}
    rep = 0
    while rep < max(repeat, 1) or (rep < SHORT_CALLS and repeat > 1
                                   and max(float(np.median(t)) for t in times.values()) < SHORT_CALL):
        rep += 1
        for m in (methods if rep % 2 == 1 else methods[::-1]):  # (alternating order: no method always goes first)
            if (times[m] and sum(times[m]) > LONG_CALLS) if apart_budget else (times[m] and min(times[m]) > 2.0):
                continue
            gc.collect()  # the garbage of the previous call is not collected during this one
            c0 = time.process_time()
            p = ss.hessian_sparsity(lambda v: f(v), x, method=m)
            times[m].append(time.process_time() - c0)
            if m == "auto":
                row["auto_method"] = p.method
    row.update({m: float(np.median(t) if stat == "median" else min(t)) for m, t in times.items()})
    row["times"], row["stat"] = times, stat
    return row


def measure_apart(label: str, repeat: int, methods, stat: str = "best") -> dict:
    """:func:`measure` of one problem, each method in a new Python process of its own (this script with ``--one``):
    every method's first call pays its own process's start (its page faults, its first use of each module) and
    no other method's, and no method's time depends on which ran before it.  The default since 2026-12-07 18:30 UTC:
    with the three methods in one process, the first call of the process was always ``direct``'s, and at n = 10⁶
    the same direct walk took 250–664 ms as "direct" and 225–314 ms as "auto" in one process
    (``p_laplacian_2d``)."""
    rows = {m: _fresh_row(label, repeat, (m,), stat) for m in methods}
    row = dict(rows[methods[0]])
    row["times"] = {m: rows[m]["times"][m] for m in methods}
    row.update({m: rows[m][m] for m in methods})
    if "auto" in rows:
        row["auto_method"] = rows["auto"]["auto_method"]
    return row


def measure_fresh(label: str, repeat: int, methods, stat: str = "best") -> dict:
    """:func:`measure` of one problem in a new Python process (this script with ``--one``), the methods together
    (``--together``; the protocol before 2026-12-07 18:30 UTC).

    A method called once there (its call took over 2 s) is measured again in a process of its own, and that time
    is kept (the shared process's in ``"times_shared"``): of one call per method, the first pays the fresh
    process's page faults for the whole heap (about 1.7 ms per MB here: a second at a 1 GB peak) and the later ones
    reuse it, so the method listed first would always be the slow one.  On its own, each is a process's first
    call, as in a script that computes one Hessian."""
    row = _fresh_row(label, repeat, methods, stat)
    once = [m for m in methods if len(row["times"][m]) == 1 and repeat > 1]
    if once:
        row["times_shared"] = {m: row["times"][m] for m in once}
        for m in once:
            alone = _fresh_row(label, 1, (m,), stat)
            row[m] = alone[m]
            row["times"][m] = alone["times"][m]
            if m == "auto":
                row["auto_method"] = alone["auto_method"]
    return row


def _fresh_row(label: str, repeat: int, methods, stat: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--one", label, "--repeat", str(repeat), "--stat", stat,
           "--methods", *methods] + (["--together"] if len(methods) > 1 else [])
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"measuring {label!r} in a fresh process failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def fit(rows, margin: float = 0.1, ridge: float = 1e-2) -> tuple[float, ...]:
    """The cost model's weights: a logistic regression of which method was faster on the model's row, each
    problem weighted by ``|log(t_via-gradient / t_direct)|`` (what a wrong pick costs there).  ``margin``: the
    log-ratio scale of the logistic; ``ridge``: a small penalty on the slopes (the classes can be separable)."""
    from scipy.optimize import minimize

    X = np.array([cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"]).as_row() for r in rows])
    y = np.array([np.log(r["via-gradient"] / r["direct"]) for r in rows])
    sign, weight = np.sign(y), np.abs(y)

    def loss(w):
        z = -sign * (X @ w) / margin
        return float(weight @ np.logaddexp(0.0, z)) + ridge * float(w[1:] @ w[1:])

    def grad(w):
        z = -sign * (X @ w) / margin
        g = X.T @ (weight * (-sign / margin) / (1.0 + np.exp(-z)))
        g[1:] += 2 * ridge * w[1:]
        return g

    start, *_ = np.linalg.lstsq(X, y, rcond=None)
    return tuple(round(float(v), 5) for v in minimize(loss, start, jac=grad, method="BFGS").x)


def regret(rows, weights) -> np.ndarray:
    """Time of the method ``weights`` picks over the faster one, per row."""
    return np.array([r[cost.choose_method(cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"]), weights)]
                     / min(r["direct"], r["via-gradient"]) for r in rows])


def leave_one_out(rows) -> np.ndarray:
    """:func:`regret` of each row under a fit without its problem (all rows of that label)."""
    out = np.ones(len(rows))
    for label in {r["label"] for r in rows}:
        inside = [i for i, r in enumerate(rows) if r["label"] == label]
        rest = [r for r in rows if r["label"] != label]
        out[inside] = regret([rows[i] for i in inside], fit(rest))
    return out


def family(label: str) -> str:
    """The family of a problem label (``"lennard_jones_chain n=100000"`` → ``"lennard_jones_chain"``)."""
    return label.split(" ")[0]


def leave_one_family_out(rows) -> np.ndarray:
    """:func:`regret` of each row under a fit without its family (every size of it)."""
    out = np.ones(len(rows))
    for fam in {family(r["label"]) for r in rows}:
        inside = [i for i, r in enumerate(rows) if family(r["label"]) == fam]
        out[inside] = regret([rows[i] for i in inside], fit([r for r in rows if family(r["label"]) != fam]))
    return out


def budget_study(fitted, tested, factors=(0.75, 1.0, 1.5, 2.0, 3.0)) -> None:
    """What a budgeted direct walk would give (the issue's first proposal), simulated on measured rows: ``auto``
    picks as the model does; where it picks direct on a program of 50,000 elements or more, the walk is stopped
    after ``factor`` × a predicted via-gradient time and the gradient path runs (cost: the budget plus the
    via-gradient time).  The prediction is a least-squares fit of ``log t_via-gradient`` on the model's row over
    ``fitted``; prints its error on both sets and the worst ``auto`` / best on each for every factor, and the same
    with the measured via-gradient time in place of the prediction (the best any prediction could do)."""
    X = np.array([cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"]).as_row() for r in fitted])
    w = np.linalg.lstsq(X, np.log([r["via-gradient"] for r in fitted]), rcond=None)[0]

    def predicted(r):
        return float(np.exp(w @ cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"]).as_row()))

    for name, rows in (("fitted", fitted), ("tested", tested)):
        err = np.log([r["via-gradient"] / predicted(r) for r in rows])
        print(f"via-gradient time predicted on the {name} rows: log error sd {err.std():.2f}, "
              f"worst factor {np.exp(np.abs(err).max()):.1f}")
    def exact(r):
        return r["via-gradient"]

    for guess, how in ((predicted, "predicted"), (exact, "the measured (an oracle)")):
        for factor in factors:
            worst = []
            for rows in (fitted, tested):
                ratios = []
                for r in rows:
                    pick = cost.choose_method(cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"]))
                    spent = r[pick]
                    if pick == "direct" and r["elements"] >= 50_000 and r["direct"] > factor * guess(r):
                        spent = factor * guess(r) + r["via-gradient"]
                    ratios.append(spent / min(r["direct"], r["via-gradient"]))
                worst.append(f"{max(ratios):.2f} ({sum(v > 1.25 for v in ratios)} above 1.25)")
            print(f"budget {factor} × {how} via-gradient time: worst auto / best {worst[0]} fitted, {worst[1]} tested")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fit", action="store_true", help="fit the cost model's coefficients on this run")
    ap.add_argument("--json", help="write the measurements here")
    ap.add_argument("--load", nargs="+", help="read measurements from these JSON files instead of measuring")
    ap.add_argument("--in-process", action="store_true", help="measure every problem in this one process")
    ap.add_argument("--together", action="store_true",
                    help="each problem's methods in one fresh process (the protocol before 2026-12-07 18:30 UTC); "
                         "by default each method runs in a fresh process of its own")
    ap.add_argument("--held-out", action="store_true", help="the held-out objectives (benchmarks/hessian_held_out.py)")
    ap.add_argument("--stat", choices=("best", "median"), default="best", help="of the --repeat calls")
    ap.add_argument("--only", help="the problems whose label starts with this")
    ap.add_argument("--study", action="store_true",
                    help="with --load: the model refitted with each family left out, and the budgeted direct walk "
                         "simulated (fitted on the benchmark rows, tested on the held-out ones)")
    ap.add_argument("--one", help=argparse.SUPPRESS)       # (internal: measure this problem, print one JSON row)
    ap.add_argument("--methods", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        for label, f, n in itertools.chain(held_out_problems(False), problems(False)):
            if label == args.one:
                print(json.dumps(measure(f, n, args.repeat, tuple(args.methods), args.stat, not args.together)))
                return 0
        raise SystemExit(f"no problem {args.one!r}")
    if args.load:
        rows = []
        for path in args.load:
            with open(path) as fh:
                rows += json.load(fh)
    else:
        rows = []
        methods = ("direct", "via-gradient") if args.fit else ("direct", "via-gradient", "auto")
        for label, f, n in (held_out_problems if args.held_out else problems)(args.quick):
            if args.only and not label.startswith(args.only):
                continue
            r = (measure(f, n, args.repeat, methods, args.stat, not args.together) if args.in_process
                 else measure_fresh(label, args.repeat, methods, args.stat) if args.together
                 else measure_apart(label, args.repeat, methods, args.stat))
            r["label"] = label
            r["process"] = "shared" if args.in_process else "fresh" if args.together else "apart"
            rows.append(r)
            print(f"  {label}: direct {r['direct'] * 1e3:.1f} ms, via-gradient {r['via-gradient'] * 1e3:.1f} ms, "
                  f"auto {r.get('auto', float('nan')) * 1e3:.1f} ms", file=sys.stderr, flush=True)
        if args.json:
            with open(args.json, "w") as fh:
                json.dump(rows, fh, indent=1)
    weights = cost.WEIGHTS
    if args.study:
        held = {name for name, *_ in ho.FAMILIES}
        fitted = [r for r in rows if family(r["label"]) not in held]
        tested = [r for r in rows if family(r["label"]) in held]
        lofo = leave_one_family_out(rows)
        print(f"refitted with each family left out ({len(rows)} rows): worst picked / best {lofo.max():.2f}, "
              f"{int((lofo > 1.25).sum())} rows above 1.25")
        budget_study(fitted, tested)
    if args.fit:
        weights = fit(rows)
        print("WEIGHTS =", weights)
        print(f"worst picked / best of the fit: {regret(rows, weights).max():.2f}; with each problem left out of "
              f"the fit that picks for it: {leave_one_out(rows).max():.2f} ({len(rows)} rows)")
    source = (f"measurements read from {', '.join(args.load)}" if args.load else
              f"{args.stat} of {args.repeat}, " + ("all problems in one process" if args.in_process else
                                                    "each problem in a fresh process" if args.together else
                                                    "each problem's each method in a fresh process of its own")
              + (", the held-out objectives" if args.held_out else ""))
    print(f"\nHessian method — {time.strftime('%Y-%m-%d')} — jax {jax.__version__}, CPU ms, {source}\n")
    print("| problem | process | n | eqns | elements | nonlinear | direct | via-gradient | via / direct | score "
          "| model picks | picked / best | auto | auto / best |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|:---:|---:|---:|---:|")
    worst_pick = worst_auto = 0.0
    regrets = []
    for r in rows:
        feats = cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"])
        pick = cost.choose_method(feats, weights)
        best = min(r["direct"], r["via-gradient"])
        worst_pick = max(worst_pick, r[pick] / best)
        regrets.append((r[pick] / best, r["label"]))
        if weights == cost.WEIGHTS and r.get("auto_method", pick) != pick:
            print(f"  (auto took {r['auto_method']} on {r['label']}, the model picks {pick})", file=sys.stderr)
        line = (f"| {r['label']} | {r.get('process', 'shared')} | {r['n']:,} | {r['eqns']:,} | {r['elements']:,} | "
                f"{r['nonlinear']:,} | {r['direct'] * 1e3:.1f} | {r['via-gradient'] * 1e3:.1f} | "
                f"{r['via-gradient'] / r['direct']:.2f} | {cost.score(feats, weights):.2f} | {pick} | {r[pick] / best:.2f} |")
        if "auto" in r:
            worst_auto = max(worst_auto, r["auto"] / best)
            line += f" {r['auto'] * 1e3:.1f} | {r['auto'] / best:.2f} |"
        else:
            line += " – | – |"
        print(line)
    over = sorted((v, label) for v, label in regrets if v > 1.25)[::-1]
    print(f"\nworst picked / best: {worst_pick:.2f} (target ≤ 1.25): the method auto runs, timed in the direct and "
          f"via-gradient columns; above 1.25 on {len(over)} of {len(rows)} rows"
          + (": " + ", ".join(f"{label} {v:.2f}" for v, label in over) if over else ""))
    if worst_auto:
        print(f"worst auto / best: {worst_auto:.2f} (auto timed as a third method: the same computation as the method "
              "it picks plus the feature count, so the difference from 'picked / best' is the noise of timing one "
              "computation twice)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
