"""The first derivative, end to end, in fresh processes: ours against dense JAX and the peer (asdex).

Each measurement is a new Python process (nothing cached in memory; XLA's persistent compilation cache off) that
imports JAX and the library, builds the input, and then times **one thing from nothing to a ready result**:

* ``ours``: ``ss.sparse_jacobian(f, x)`` (or ``ss.sparse_hessian``) and its first call — tracing, lowering,
  detection, coloring, building and compiling the compressed program, decompression set-up, first evaluation;
* ``jacfwd`` / ``jacrev`` / ``hessian``: ``jax.jit(jax.jacfwd(f))(x)`` (``jax.jacrev``, ``jax.hessian``) — the
  dense first call (skipped where the dense matrix would not fit: more than ``--dense-limit`` entries);
* ``asdex``: ``asdex.jacobian_coloring(f, x)`` (``hessian_coloring``), then ``jax.jit(jacobian_from_coloring)``'s
  first call (where asdex imports: it needs jax >= 0.11).

The library's modules are byte-compiled first (``compileall``), as a wheel install leaves them: an editable
install under ``PYTHONDONTWRITEBYTECODE=1`` would otherwise compile every module the first derivative imports
lazily (coloring, evaluation, the containers) from source in every process — 10–30 ms that no installed copy
pays, and that JAX's own installed modules do not pay either.

The table gives the median over ``--runs`` processes and ``ours / jacfwd`` (``ours / hessian`` for Hessians);
the crossover is the smallest ``n`` from which ours is below the dense first call at every larger size measured.
``ours`` is also broken down by stage (``--stages``), timed inside the process by wrapping the library's own
functions: tracing and lowering for detection, the analysis walk, coloring, the rest of the preparation, then
the first call's tracing and lowering of the compressed program, its compilation, and the evaluation with the
containers (the decompression's device arrays, the ``BCOO``).

    python benchmarks/first_call.py                          # Jacobians and Hessians, n = 100 … 100,000
    python benchmarks/first_call.py --quick                  # n = 100, 1,000, 10,000; 1 run
    python benchmarks/first_call.py --problems line,bruss --n 1000,5000 --runs 5 --json out.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import textwrap

CHILD = textwrap.dedent(r'''
    import functools, json, sys, time
    problem, n, method, stages = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] == "1"
    import jax, jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)
    import stablehlo_sparsity as ss
    from stablehlo_sparsity.examples import brusselator

    if problem in ("bruss", "bruss_energy"):
        N = max(2, int(round((n / 2) ** 0.5)))
        n = 2 * N * N
        f = lambda x: brusselator(x, N)
    else:
        f = lambda x: x[1:] ** 2 - jnp.sin(x[:-1]) + 1.0
    hessian = problem in ("rosen", "bruss_energy")
    if problem == "rosen":
        f = lambda x: jnp.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)
    elif problem == "bruss_energy":
        g = f
        f = lambda x: 0.5 * jnp.sum(g(x) ** 2)
    x = jnp.linspace(0.1, 1.0, n)
    jax.block_until_ready(x)

    T = {}
    def timed(owner, name, key):
        fn = getattr(owner, name)
        @functools.wraps(fn)
        def w(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                T[key] = T.get(key, 0.0) + time.perf_counter() - t
        setattr(owner, name, w)

    if method == "ours" and stages:
        from stablehlo_sparsity.analysis import program
        from stablehlo_sparsity.analysis.second_order import api as second_order_api
        from stablehlo_sparsity.derivatives import hessian as hessian_module, jacobian as jacobian_module
        timed(program, "lowered_for_analysis", "detection: lowering")
        timed(second_order_api, "lowered_for_analysis", "detection: lowering")
        timed(program, "analyze_entry", "detection: analysis")
        timed(second_order_api, "hessian_pattern_of_entry", "detection: analysis")
        timed(jacobian_module, "choose_coloring", "coloring")
        timed(hessian_module, "_choose_hessian_coloring", "coloring")

    def ready(v):
        leaves = jax.tree_util.tree_leaves(v.data if hasattr(v, "data") else v)
        jax.block_until_ready(leaves)

    t0 = time.perf_counter()
    if method == "ours":
        obj = (ss.sparse_hessian if hessian else ss.sparse_jacobian)(f, x)
        t1 = time.perf_counter()
        if stages:
            tables = obj._index_arguments()
            lowered = obj._jitted.lower(tables, x)
            t2 = time.perf_counter()
            compiled = lowered.compile()
            t3 = time.perf_counter()
            T["first call: tracing and lowering"] = t2 - t1
            T["first call: compilation"] = t3 - t2
            # (the evaluation and the containers: the compiled program run, the BCOO built around it)
            y, aux, values = compiled(tables, x)
            from stablehlo_sparsity.derivatives.prepared.outputs import host_container, output_named
            ready(host_container(output_named(obj.output), values, obj.layout(), obj._index))
            T["first call: evaluation and containers"] = time.perf_counter() - t3
        else:
            ready(obj(x))
        T["preparation"] = t1 - t0
        T["colors"] = obj.num_colors
    elif method in ("jacfwd", "jacrev", "hessian"):
        ready(jax.jit(getattr(jax, method)(f))(x))
    elif method == "asdex":
        import asdex
        if hessian:
            col = asdex.hessian_coloring(f, x)
            ready(jax.jit(asdex.hessian_from_coloring(f, col))(x))
        else:
            col = asdex.jacobian_coloring(f, x)
            ready(jax.jit(asdex.jacobian_from_coloring(f, col))(x))
    T["total"] = time.perf_counter() - t0
    T["n"] = n
    print(json.dumps(T))
''')

JACOBIAN_PROBLEMS = ("line", "bruss")
HESSIAN_PROBLEMS = ("rosen", "bruss_energy")
TITLES = {"line": "1-D residual x[1:]² − sin(x[:-1]) + 1", "bruss": "Brusselator 2-D",
          "rosen": "chained Rosenbrock (Hessian)", "bruss_energy": "½‖Brusselator‖² (Hessian)"}


def _env() -> dict:
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    return env


def run_once(problem: str, n: int, method: str, stages: bool = False, timeout: float = 600) -> dict | None:
    """One fresh process; ``None`` when it failed (the reason printed to stderr)."""
    try:
        out = subprocess.run([sys.executable, "-c", CHILD, problem, str(n), method, "1" if stages else "0"],
                             capture_output=True, text=True, env=_env(), timeout=timeout)
    except subprocess.TimeoutExpired:
        print(f"  {problem} n={n} {method}: timed out after {timeout:.0f} s", file=sys.stderr)
        return None
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["?"])[-1][:200]
        print(f"  {problem} n={n} {method}: failed ({tail})", file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def byte_compile() -> None:
    """Write the package's ``.pyc`` files, as installing a wheel does (see the module docstring)."""
    import stablehlo_sparsity

    env = {k: v for k, v in _env().items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(stablehlo_sparsity.__file__)],
                   check=True, env=env, capture_output=True)


def peer_available() -> bool:
    return subprocess.run([sys.executable, "-c", "import asdex"], capture_output=True, env=_env()).returncode == 0


def measure(problems, sizes, runs: int, dense_limit: int, with_peer: bool) -> list[dict]:
    rows = []
    for problem in problems:
        hessian = problem in HESSIAN_PROBLEMS
        methods = ["ours"] + (["hessian"] if hessian else ["jacfwd", "jacrev"]) + (["asdex"] if with_peer else [])
        for n in sizes:
            row: dict = {"problem": problem, "n": n}
            for method in methods:
                if method != "ours" and method != "asdex" and n * n > dense_limit:
                    continue
                got = [r for r in (run_once(problem, n, method) for _ in range(runs)) if r is not None]
                if got:
                    row[method] = statistics.median(r["total"] for r in got)
                    row["n"] = got[0]["n"]
                    if method == "ours":
                        row["colors"] = got[0]["colors"]
            rows.append(row)
            print(f"  {row}", file=sys.stderr, flush=True)
    return rows


def crossover(rows: list[dict], dense: str) -> int | None:
    """The smallest n from which ours is below the dense first call at every larger n measured with both."""
    both = [r for r in rows if "ours" in r and dense in r]
    best = None
    for r in reversed(both):
        if r["ours"] < r[dense]:
            best = r["n"]
        else:
            break
    return best


def _fmt(v) -> str:
    return "—" if v is None else f"{v:.3f}"


def table(problem: str, rows: list[dict]) -> str:
    hessian = problem in HESSIAN_PROBLEMS
    dense = ["hessian"] if hessian else ["jacfwd", "jacrev"]
    peer = any("asdex" in r for r in rows)
    head = ["n", "colors", "ours (s)"] + [f"jax.jit(jax.{d}) (s)" for d in dense] + (["asdex 0.5 (s)"] if peer else [])
    head += [f"ours / {dense[0]}"] + (["ours / asdex"] if peer else [])
    lines = ["| " + " | ".join(head) + " |", "|" + "---:|" * len(head)]
    for r in rows:
        cells = [f"{r['n']:,}", str(r.get("colors", "—")), _fmt(r.get("ours"))]
        cells += [_fmt(r.get(d)) if d in r else "— (dense too large)" for d in dense]
        if peer:
            cells.append(_fmt(r.get("asdex")))
        ratio = r["ours"] / r[dense[0]] if "ours" in r and dense[0] in r else None
        cells.append("—" if ratio is None else f"{ratio:.2f}")
        if peer:
            cells.append(f"{r['ours'] / r['asdex']:.2f}" if "ours" in r and "asdex" in r else "—")
        lines.append("| " + " | ".join(cells) + " |")
    cross = crossover(rows, dense[0])
    lines.append("")
    lines.append(f"Crossover ({TITLES[problem]}): ours below the dense first call from n = {cross:,}." if cross else
                 f"Crossover ({TITLES[problem]}): ours is not below the dense first call at the largest n measured "
                 f"with both.")
    return "\n".join(lines)


def stage_table(problem: str, sizes, runs: int) -> str:
    """Median per stage of ours (fresh processes, the stages timed inside)."""
    keys = ["detection: lowering", "detection: analysis", "coloring", "preparation",
            "first call: tracing and lowering", "first call: compilation", "first call: evaluation and containers",
            "total"]
    lines = ["| n | " + " | ".join(keys) + " |", "|" + "---:|" * (len(keys) + 1)]
    for n in sizes:
        got = [r for r in (run_once(problem, n, "ours", stages=True) for _ in range(runs)) if r is not None]
        if not got:
            continue
        cells = [f"{got[0]['n']:,}"] + [f"{statistics.median(r.get(k, 0.0) for r in got):.3f}" for k in keys]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problems", default=",".join(JACOBIAN_PROBLEMS + HESSIAN_PROBLEMS))
    ap.add_argument("--n", default="100,300,1000,3000,10000,30000,100000")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dense-limit", type=float, default=2.5e8,
                    help="largest dense matrix (entries) a dense first call is measured for (2.5e8: 2 GB in float64)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-peer", action="store_true")
    ap.add_argument("--stages", action="store_true", help="also the per-stage table of ours")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    sizes = [100, 1000, 10000] if args.quick else [int(v) for v in args.n.split(",")]
    runs = 1 if args.quick else args.runs
    problems = args.problems.split(",")
    with_peer = not args.no_peer and peer_available()
    byte_compile()
    import jax
    import stablehlo_sparsity as ss

    print(f"First derivative end to end, fresh processes (median of {runs}); "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, load average "
          f"{', '.join(f'{v:.1f}' for v in os.getloadavg())}; Python {platform.python_version()}, jax "
          f"{jax.__version__}, stablehlo_sparsity {ss.__version__}; float64"
          f"{'; asdex available' if with_peer else '; asdex not importable here'}\n")
    results = {}
    for problem in problems:
        rows = measure([problem], sizes, runs, int(args.dense_limit), with_peer)
        results[problem] = rows
        print(f"### {TITLES[problem]}\n")
        print(table(problem, rows))
        print()
        if args.stages:
            print(f"Stages of ours ({TITLES[problem]}), seconds:\n")
            print(stage_table(problem, sizes, runs))
            print()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"machine": platform.platform(), "jax": jax.__version__, "results": results}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
