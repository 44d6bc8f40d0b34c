"""First-call latency: a fresh process imports the package and prepares and calls the README's sparse Jacobian.

Each run is a new Python process (nothing cached in memory; XLA's persistent compilation cache off), timing

* ``import``: ``import jax, stablehlo_sparsity``;
* ``prepare``: ``ss.sparse_jacobian(residual, x)`` — lowering, detection, coloring (no compilation yet);
* ``first call``: ``jac(x)`` to a ready result — tracing and XLA compilation of the compressed program;
* ``warm call``: the second ``jac(x)``;

on the README example (``residual(x) = x[1:]**2 - sin(x[:-1]) + 1`` at ``n = 10,000``), and prints the minimum
and the median over the runs as a Markdown table, with ``jax.jacfwd``'s dense first call for scale (at
``n = 2,000``: the dense Jacobian at 10,000 needs 400 MB).  ``--profile`` runs one process under
``pyinstrument`` (if installed) and prints where the first call's time goes.

    python benchmarks/first_call.py [--runs 5] [--n 10000] [--profile]
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

CHILD = textwrap.dedent("""
    import json, sys, time
    t0 = time.perf_counter()
    import jax, jax.numpy as jnp
    import stablehlo_sparsity as ss
    t1 = time.perf_counter()

    def residual(x):
        return x[1:] ** 2 - jnp.sin(x[:-1]) + 1.0

    x = jnp.linspace(0.0, 1.0, int(sys.argv[1]))
    t2 = time.perf_counter()
    jac = ss.sparse_jacobian(residual, x)
    t3 = time.perf_counter()
    jax.block_until_ready(jac(x).data)
    t4 = time.perf_counter()
    jax.block_until_ready(jac(x).data)
    t5 = time.perf_counter()
    xd = jnp.linspace(0.0, 1.0, 2000)
    t6 = time.perf_counter()
    jax.block_until_ready(jax.jacfwd(residual)(xd))
    t7 = time.perf_counter()
    print(json.dumps({"import": t1 - t0, "prepare": t3 - t2, "first call": t4 - t3, "warm call": t5 - t4,
                      "dense jacfwd first call (n=2000)": t7 - t6}))
""")


def _env() -> dict:
    env = {**os.environ, "JAX_PLATFORMS": os.environ.get("JAX_PLATFORMS", "cpu")}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    env["JAX_ENABLE_COMPILATION_CACHE"] = "false"
    return env


def run_once(n: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(n)], capture_output=True, text=True, env=_env(),
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def profile(n: int) -> None:
    try:
        import pyinstrument  # noqa: F401
    except ImportError:
        print("pyinstrument is not installed (pip install pyinstrument)")
        return
    script = CHILD.replace("import json, sys, time", "import json, sys, time\nsys.argv = ['', %d]" % n)
    subprocess.run([sys.executable, "-m", "pyinstrument", "--show-all", "-c", script], env=_env(), check=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)
    if args.profile:
        profile(args.n)
        return 0
    runs = [run_once(args.n) for _ in range(args.runs)]
    print(f"First call in a fresh process, README example, n = {args.n}; {args.runs} processes; "
          f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}\n")
    print("| phase | min (s) | median (s) |")
    print("|---|---|---|")
    for key in runs[0]:
        vals = [r[key] for r in runs]
        print(f"| {key} | {min(vals):.3f} | {statistics.median(vals):.3f} |")
    total = [r["import"] + r["prepare"] + r["first call"] for r in runs]
    print(f"| import + prepare + first call | {min(total):.3f} | {statistics.median(total):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
