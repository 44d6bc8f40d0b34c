"""Ten million unknowns, end to end: the 2-D Brusselator at N = 2048 (8.4 M unknowns, 50 M nonzeros) detected,
colored and evaluated on one machine, with the time and peak memory of each stage.

    python benchmarks/scale.py                        # N = 2048
    python benchmarks/scale.py --N 512                # a quicker run
    python benchmarks/scale.py --effort 3             # more coloring effort (fewer colors, longer coloring)
    python benchmarks/scale.py --problem stencil --N 1000   # 2-D 5-point stencil + cubic term, N² unknowns

The preparation target of issue 14 (detection + coloring within 3× detection + 0.5 s) is checked on the
last line for the run's problem.

Stages, in one process (after a warm-up on N = 16 that loads the compiled kernels):

* detection — ``jacobian_sparsity(f, x)`` (lowering included);
* coloring — ``color_fewest_products(pattern)``, what ``sparse_jacobian(mode="auto")`` runs;
* evaluation, prepare — ``sparse_jacobian(f, x, coloring=..., output="values")`` (it detects again and checks
  the coloring, then builds the compressed program);
* evaluation, first call — tracing, XLA compilation and one evaluation;
* evaluation, warm — the best of ``--repeat`` further calls (values in CSR order, synchronized);
* primal — one jitted ``f(x)`` (warm), for the ratio "warm evaluation / primal" (the floor is about the
  number of colors).

Memory: the kernel's peak-RSS counter is reset before each stage (``/proc/self/clear_refs``); "peak RSS" is the
process's high-water mark during the stage, "Δ" that minus the RSS when the stage began — both include what
earlier stages left alive (the pattern, the coloring).  Evaluation is timed through the public API only,
whatever strategy ``sparse_jacobian`` chooses.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def _status() -> dict:
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = int(value.split()[0]) * 1024
    return out


class Stage:
    """Time and memory of one stage (a context manager)."""

    rows: list = []

    def __init__(self, name: str, note: str = ""):
        self.name, self.note = name, note

    def __enter__(self):
        gc.collect()
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        except OSError:  # not Linux: the peak is the process's since it started
            pass
        self.before = _status()["VmRSS"]
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.time = time.perf_counter() - self.t0
        s = _status()
        self.peak = s["VmHWM"]
        Stage.rows.append(self)
        print(f"  {self.name}: {self.time:.2f} s, peak RSS {self.peak / 2**20:,.0f} MiB "
              f"(Δ {(self.peak - self.before) / 2**20:,.0f} MiB) {self.note}", file=sys.stderr, flush=True)
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--N", type=int, default=2048)
    ap.add_argument("--problem", choices=["brusselator", "stencil"], default="brusselator")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--effort", type=float, default=1.0, help="coloring effort (see stablehlo_sparsity.coloring)")
    ap.add_argument("--float32", action="store_true", help="evaluate in float32 (default float64)")
    args = ap.parse_args(argv)

    import jax

    if not args.float32:
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, HERE)
    from detect import machine

    import stablehlo_sparsity as ss
    from stablehlo_sparsity.coloring import check_coloring
    from stablehlo_sparsity.coloring.bicoloring import color_fewest_products
    from stablehlo_sparsity.examples import brusselator

    N = args.N
    dtype = jnp.float32 if args.float32 else jnp.float64
    if args.problem == "brusselator":
        n, title = 2 * N * N, f"2-D Brusselator, N = {N}"
        f = lambda v: brusselator(v, N)  # noqa: E731
    else:
        n, title = N * N, f"2-D 5-point stencil + cubic term, {N}×{N}"
        f = lambda v: stencil(v, N)  # noqa: E731
    x = jnp.asarray(np.random.default_rng(0).uniform(0.5, 1.5, n), dtype)

    # warm-up: numba kernels and the JAX/XLA runtime
    xs = jnp.ones(512, dtype)
    ss.sparse_jacobian(lambda v: brusselator(v, 16), xs, output="values")(xs).block_until_ready()

    with Stage("detection") as st:
        pattern = ss.jacobian_sparsity(f, x)
    st.note = f"nnz {pattern.nnz:,}"
    nnz = pattern.nnz
    with Stage("coloring") as st:
        coloring = color_fewest_products(pattern, effort=args.effort, progress=True)
    st.note = f"{coloring.num_colors} colors ({coloring.kind}, {coloring.order}; lower bound {coloring.lower_bound})"
    assert check_coloring(pattern, coloring)
    with Stage("evaluation: prepare") as st:
        jac = ss.sparse_jacobian(f, x, coloring=coloring, output="values")
    with Stage("evaluation: first call") as st:
        values = jac(x)
        values.block_until_ready()
    with Stage("evaluation: warm") as st:
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            jac(x).block_until_ready()
            best = min(best, time.perf_counter() - t0)
    warm = best
    st.note = f"best of {args.repeat}: {warm:.3f} s"
    fj = jax.jit(f)
    fj(x).block_until_ready()
    with Stage("primal (jitted f)") as st:
        primal = float("inf")
        for _ in range(max(args.repeat, 5)):
            t0 = time.perf_counter()
            fj(x).block_until_ready()
            primal = min(primal, time.perf_counter() - t0)
    st.note = f"best: {primal * 1e3:.1f} ms"
    # a spot check of the values: a few random rows against jax.jvp columns would need n JVPs; instead the
    # compressed values reproduce J @ v for a random v through one JVP (the pattern and values together)
    v = jnp.asarray(np.random.default_rng(1).standard_normal(n), dtype)
    jv = np.asarray(jax.jvp(f, (x,), (v,))[1])
    csr = pattern.to_scipy()
    import scipy.sparse as sp

    J = sp.csr_array((np.asarray(values, np.float64), csr.indices, csr.indptr), shape=csr.shape)
    err = float(np.max(np.abs(J @ np.asarray(v, np.float64) - jv)) / max(1.0, float(np.max(np.abs(jv)))))
    tol = 1e-4 if args.float32 else 1e-9

    print(f"Scale benchmark — {time.strftime('%Y-%m-%d')} — {machine()}\n")
    print(f"{title}: {n:,} unknowns, {nnz:,} nonzeros, {coloring.num_colors} colors "
          f"({coloring.kind}), {'float32' if args.float32 else 'float64'}; J·v from the values agrees with "
          f"jax.jvp to {err:.1e} (relative)\n")
    print("| stage | time (s) | peak RSS (MiB) | Δ during the stage (MiB) | Δ / nnz (B) | |")
    print("|---|---:|---:|---:|---:|---|")
    for r in Stage.rows:
        t = warm if r.name == "evaluation: warm" else primal if r.name.startswith("primal") else r.time
        d = r.peak - r.before
        print(f"| {r.name} | {t:.3f} | {r.peak / 2**20:,.0f} | {d / 2**20:,.0f} | {d / nnz:.1f} | {r.note} |")
    det, col = Stage.rows[0].time, Stage.rows[1].time
    print(f"\nwarm evaluation / primal = {warm / primal:.1f} (colors: {coloring.num_colors}); preparation "
          f"(detection + coloring) {det + col:.2f} s against the target 3 × detection + 0.5 s = {3 * det + 0.5:.2f} s")
    return 0 if err < tol else 1


def stencil(x, M: int):
    """A 2-D 5-point Laplacian (zero Dirichlet boundary) plus a cubic term on an M×M grid."""
    import jax.numpy as jnp

    u = x.reshape(M, M)
    p = jnp.pad(u, 1)
    lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * u
    return (lap + u ** 3).ravel()


if __name__ == "__main__":
    sys.exit(main())
