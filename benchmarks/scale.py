"""Ten million unknowns, end to end: the 2-D Brusselator at N = 2048 (8.4 M unknowns, 50 M nonzeros) detected,
colored and evaluated on one machine, with the time and peak memory of each stage.

    python benchmarks/scale.py                        # N = 2048
    python benchmarks/scale.py --N 512                # a quicker run
    python benchmarks/scale.py --effort 3             # more coloring effort (fewer colors, longer coloring)
    python benchmarks/scale.py --problem stencil --N 1000   # 2-D 5-point stencil + cubic term, N² unknowns
    python benchmarks/scale.py --problem stencil3d --L 334 --float32        # 3-D 27-point stencil, 1.0e9 nonzeros
    python -m stablehlo_sparsity.launch -n 2 benchmarks/scale.py --problem stencil3d --L 334 --float32

The 3-D 27-point stencil (``--problem stencil3d``, ``n = L³`` unknowns, ``nnz ≈ 27 n``) runs in bounded memory,
stage by stage, in each process of the launch (``-n P``; one process without the launcher):

* detection, blocked — process ``p`` detects its ``⌈m/P⌉`` rows block by block
  (``streaming.write_pattern_shards``) into NPZ shards in ``--dir``;
* coloring, streamed — process 0 colors the columns from the shards (``coloring.color_columns_streamed``,
  two passes, memory ``O(n + window)``); the others wait for ``colors.npy``;
* evaluation, through the library — ``blocked_jacobian(f, x, blocks=..., coloring=..., process=(p, P))``
  (:mod:`stablehlo_sparsity.derivatives.blocked`) for process ``p``'s rows ``[lo, hi)``: the products (``prepared.products``,
  the 27 JVPs each cut to those rows: ``K × (hi - lo)`` values), then the decompression block by block
  (``prepared.blocks``; only the shards holding those rows are read), each block reduced at once into its rows
  of ``J·v`` for a random ``v``;
* check — process 0 stacks the processes' rows of ``J·v`` and compares with one ``jax.jvp``.

The processes exchange nothing but files in ``--dir`` (shards, colors, their rows of ``J·v``, their stage
tables): no stage needs a collective, so none waits in one.  ``sparse_jacobian`` itself is not used at this
scale: a prepared derivative holds the whole pattern's index arrays (``O(nnz)``; 8–16 GB at 1e9).

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
import os
import sys
import time

from peak_memory import memory_status, reset_peak

HERE = os.path.dirname(os.path.abspath(__file__))


class Stage:
    """Time and memory of one stage (a context manager)."""

    rows: list = []

    def __init__(self, name: str, note: str = ""):
        self.name, self.note = name, note

    def __enter__(self):
        self.before = reset_peak()
        self.t0 = time.perf_counter()
        self.cpu0 = sum(os.times()[:2])
        return self

    def __exit__(self, *exc):
        self.time = time.perf_counter() - self.t0
        self.cpu = sum(os.times()[:2]) - self.cpu0  # user + system, all threads: the work, whatever the load
        s = memory_status()
        self.peak = s["VmHWM"]
        Stage.rows.append(self)
        print(f"  {self.name}: {self.time:.2f} s (CPU {self.cpu:.2f} s), peak RSS {self.peak / 2**20:,.0f} MiB "
              f"(Δ {(self.peak - self.before) / 2**20:,.0f} MiB) {self.note}", file=sys.stderr, flush=True)
        return False


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--N", type=int, default=2048)
    ap.add_argument("--problem", choices=["brusselator", "stencil", "stencil3d"], default="brusselator")
    ap.add_argument("--L", type=int, default=334, help="stencil3d: L³ unknowns")
    ap.add_argument("--detect-blocks", type=int, default=6,
                    help="stencil3d: detected blocks in all (fewer, larger blocks: faster, more memory)")
    ap.add_argument("--rows-per-block", type=int, default=1 << 20,
                    help="stencil3d: rows per block for the coloring and the decompression (shards are cut)")
    ap.add_argument("--dir", default=None, help="stencil3d: shard directory (default /tmp/shs-scale-L<L>-P<P>)")
    ap.add_argument("--keep", action="store_true", help="stencil3d: keep the shard directory")
    ap.add_argument("--detection", choices=["blocked", "reference"], default="blocked",
                    help="stencil3d: 'reference' skips detection and streams the stencil's known pattern "
                         "(coloring.stencil27_blocks, NumPy) — said so in the output")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--effort", type=float, default=1.0, help="coloring effort (see stablehlo_sparsity.coloring)")
    ap.add_argument("--float32", action="store_true", help="evaluate in float32 (default float64)")
    args = ap.parse_args(argv)
    if args.problem == "stencil3d":
        return stencil3d_run(args)

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




def _cut(blocks, rows: int):
    """``(r0, block)`` pairs cut into blocks of at most ``rows`` rows (the shards of a few large detected blocks
    become the smaller blocks the coloring's window and the decompression's buffers are sized by)."""
    for r0, block in blocks:
        for a in range(0, block.shape[0], rows):
            yield r0 + a, block[a:a + rows]


class _Files:
    """What the processes of one run exchange: files in one directory, and barriers made of files."""

    def __init__(self, root: str, pid: int, count: int, token: str):
        self.root, self.pid, self.count = root, pid, count
        self.token = "".join(ch if ch.isalnum() else "_" for ch in token)  # one launch's barriers
        os.makedirs(root, exist_ok=True)

    def path(self, name: str) -> str:
        return os.path.join(self.root, name)

    def barrier(self, name: str, timeout: float = 4 * 3600) -> None:
        open(self.path(f".{self.token}-{name}-{self.pid}"), "w").close()
        t0 = time.monotonic()
        while not all(os.path.exists(self.path(f".{self.token}-{name}-{q}")) for q in range(self.count)):
            if time.monotonic() - t0 > timeout:
                raise SystemExit(f"process {self.pid}: timed out waiting for the others at '{name}'")
            time.sleep(0.2)


def stencil3d_run(args) -> int:
    import json
    import shutil

    from stablehlo_sparsity.derivatives.distributed import COORDINATOR, NUM_PROCESSES, PROCESS_ID

    pid, count = int(os.environ.get(PROCESS_ID, 0)), int(os.environ.get(NUM_PROCESSES, 1))
    import jax

    if not args.float32:
        jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp
    import numpy as np

    sys.path.insert(0, HERE)
    from detect import machine

    from stablehlo_sparsity import Coloring, blocked_jacobian
    from stablehlo_sparsity.coloring import color_columns_streamed, stencil27_blocks
    from stablehlo_sparsity.examples import stencil27

    try:
        from stablehlo_sparsity.derivatives.shard_io import read_pattern_shards
        from stablehlo_sparsity.analysis.streaming import write_pattern_shards
    except ImportError:  # the streamed detection (issue 23) is not on this branch
        read_pattern_shards = write_pattern_shards = None
    if args.detection == "reference":
        write_pattern_shards = None
    L = args.L
    n = m = L ** 3
    dtype = jnp.float32 if args.float32 else jnp.float64
    files = _Files(args.dir or f"/tmp/shs-scale-L{L}-P{count}", pid, count,
                   os.environ.get(COORDINATOR, f"single-{os.getpid()}"))
    say = (lambda *a: print(f"[process {pid}/{count}]", *a, file=sys.stderr, flush=True)) if count > 1 else \
        (lambda *a: print(*a, file=sys.stderr, flush=True))
    f = lambda v: stencil27(v, L)  # noqa: E731
    x = jnp.asarray(np.random.default_rng(0).uniform(0.5, 1.5, n), dtype)
    lo, hi = pid * -(-m // count), min(m, (pid + 1) * -(-m // count))
    detect_rows = -(-(hi - lo) // max(1, -(-args.detect_blocks // count)))  # this process's share of the blocks
    color_columns_streamed(stencil27_blocks(3, 9), (27, 27))  # compile the coloring kernels before the stages

    # ---- detection
    if write_pattern_shards is not None:
        if pid == 0 and os.path.isdir(files.root):
            for name in os.listdir(files.root):
                if name.startswith("rows-") or (name.startswith(".") and files.token not in name):
                    os.remove(files.path(name))
        files.barrier("clean")
        with Stage("detection (blocked)") as st:
            written = write_pattern_shards(files.root, f, x, rows_per_block=detect_rows, process=(pid, count))
        st.note = f"rows [{lo:,}, {hi:,}) in {len(written)} shards of ≤ {detect_rows:,} rows"
        source = lambda: _cut(read_pattern_shards(files.root), args.rows_per_block)  # noqa: E731
        detection = "streaming.write_pattern_shards"
    else:
        why = ("skipped (--detection reference)" if args.detection == "reference" else
               "MISSING — stablehlo_sparsity.analysis.streaming (blocked detection) is not on this branch")
        say(f"detection: {why}; the pattern comes from coloring.stencil27_blocks (NumPy, the stencil's known "
            "pattern) instead")
        source = stencil27_blocks(L, args.rows_per_block)
        detection = f"{why.split(' —')[0].lower()}: not run, the NumPy reference pattern instead"
    files.barrier("detected")

    # ---- coloring
    if pid == 0:
        with Stage("coloring (streamed, process 0)") as st:
            coloring = color_columns_streamed(source, (m, n), progress=True)
        st.note = f"{coloring.num_colors} colors (lower bound {coloring.lower_bound}, {coloring.order})"
        np.save(files.path("colors.npy.partial.npy"), coloring.colors)
        os.replace(files.path("colors.npy.partial.npy"), files.path("colors.npy"))
    files.barrier("colored")
    colors = np.load(files.path("colors.npy"))
    K = int(colors.max()) + 1
    coloring = Coloring(colors, K, "column", (m, n), "streamed natural")

    # ---- evaluation through the library: this process's rows [lo, hi) of J, from the row blocks
    if write_pattern_shards is not None:  # only the shards holding this process's rows are loaded
        source = lambda: _cut(read_pattern_shards(files.root, rows=(lo, hi)), args.rows_per_block)  # noqa: E731
    jac = blocked_jacobian(f, x, blocks=source, coloring=coloring, process=(pid, count))
    assert jac.rows == (lo, hi)
    with Stage("evaluation: products (first call)") as st:
        B = jac.products(x)
        B.block_until_ready()
    st.note = f"{K} JVPs, each cut to this process's rows: {K} × {hi - lo:,} values"

    v = np.random.default_rng(1).standard_normal(n)
    y = np.zeros(hi - lo)
    nnz = 0
    with Stage("evaluation: decompression + J·v (blocked)") as st:
        for r0, block in jac.blocks(x, products=B):
            y[r0 - lo:r0 - lo + block.shape[0]] = block @ v
            nnz += block.nnz
    st.note = f"{nnz:,} nonzeros of rows [{lo:,}, {hi:,}), block by block (BlockedJacobian.blocks)"
    del B
    np.save(files.path(f"jv-{pid}.npy"), y)
    with open(files.path(f"nnz-{pid}.json"), "w") as fh:
        json.dump(nnz, fh)
    with open(files.path(f"stages-{pid}.json"), "w") as fh:
        json.dump([[r.name, r.time, r.cpu, r.peak, r.peak - r.before, r.note] for r in Stage.rows], fh)
    files.barrier("evaluated")
    if pid != 0:
        return 0

    # ---- check and report (process 0)
    total = np.concatenate([np.load(files.path(f"jv-{q}.npy")) for q in range(count)])
    nnz = int(sum(json.load(open(files.path(f"nnz-{q}.json"))) for q in range(count)))
    jv = np.asarray(jax.jit(lambda x, v: jax.jvp(f, (x,), (v,))[1])(x, jnp.asarray(v, dtype)), np.float64)
    err = float(np.max(np.abs(total - jv)) / max(1.0, float(np.max(np.abs(jv)))))
    tol = 1e-4 if args.float32 else 1e-9
    print(f"Scale benchmark — {time.strftime('%Y-%m-%d')} — {machine()}\n")
    print(f"3-D 27-point stencil + cubic term, L = {L}: {n:,} unknowns, {nnz:,} nonzeros, {K} colors, "
          f"{'float32' if args.float32 else 'float64'}, {count} process{'es' * (count > 1)}; detection: "
          f"{detection}; J·v from the values agrees with jax.jvp to {err:.1e} (relative)\n")
    print("| process | stage | time (s) | CPU (s) | peak RSS (MiB) | Δ during the stage (MiB) | |")
    print("|---:|---|---:|---:|---:|---:|---|")
    for q in range(count):
        with open(files.path(f"stages-{q}.json")) as fh:
            for name, t, cpu, peak, delta, note in json.load(fh):
                print(f"| {q} | {name} | {t:.1f} | {cpu:.1f} | {peak / 2**20:,.0f} | {delta / 2**20:,.0f} | {note} |")
    print(f"\n(time: wall clock; CPU: user + system of the process, all threads — on a shared machine the wall "
          f"clock also holds the waits for a core; load average at the end {os.getloadavg()[0]:.1f})")
    if not args.keep and args.dir is None:
        shutil.rmtree(files.root, ignore_errors=True)
    return 0 if err < tol else 1


if __name__ == "__main__":
    sys.exit(main())
