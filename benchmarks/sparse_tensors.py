"""The ∇SD paper's sparse-tensor kernels at its sizes: SMVM, SMMM and BATAx on matrices of Table 1's shapes.

    python benchmarks/sparse_tensors.py --quick                 # bcspwr10 and nopoly, the two smallest
    python benchmarks/sparse_tensors.py --json benchmarks/data/sparse_tensors.json      # all seven matrices
    python benchmarks/sparse_tensors.py --matrices cant --kernels smvm --wrt data --formats bcoo

The ∇SD paper (Shaikhha et al., *∇SD: Differentiable Programming for Sparse Tensors*) differentiates sparse
kernels with respect to the dense operand and to the stored values of the sparse one, on seven matrices of the
SuiteSparse collection (5.3K² to 121K²).  The collection cannot be downloaded here, so each matrix is synthetic,
with the collection's dimension and stored-value count (``MATRICES``, from the matrices' pages at
https://sparse.tamu.edu) and a seeded structure: random positions for the irregular ones (bcspwr10, nopoly,
cop20k_A) and a random band for the finite-element ones (pdb1HYS, rma10, cant, consph: each row keeps its count of
stored values, the diagonal among them, at random inside a band twice that wide).

Kernels (``A`` sparse ``n × n`` holding the stored values ``data`` at constant indices, as JAX's ``BCOO`` or
``BCSR``; the derivative is taken with respect to one argument, the other held fixed):

==========  ======================  =====================================================================
kernel      function                closed-form Jacobians (the oracle every value is compared with)
==========  ======================  =====================================================================
SMVM        ``y = A x``             w.r.t. ``x``: ``A``; w.r.t. ``data``: ``J[row_k, k] = x[col_k]``
SMMM        ``C = A X``             ``X`` dense ``n × K`` (``--smmm-cols``, 8): w.r.t. ``X``: ``A ⊗ I_K``;
                                    w.r.t. ``data``: ``J[(row_k, c), k] = X[col_k, c]``
BATAx       ``y = Bᵀ (A x)``        ``B`` a second synthetic matrix of the same kind (constant): w.r.t. ``x``:
                                    ``Bᵀ A``; w.r.t. ``data``: column ``k`` is ``B[row_k, :]ᵀ x[col_k]``
==========  ======================  =====================================================================

Each case (matrix × kernel × argument × format) runs in a fresh process (``--child``), float64, and reports:
detection (``jacobian_sparsity``, lowering included), preparation (``sparse_jacobian``: detection, coloring,
evaluation plan), colors and mode, the first call (tracing and XLA compilation) and the warm evaluation (best of
``--repeat``), the pattern and the values against the closed form (the largest difference relative to the largest
entry), the peak resident memory of those steps above the process's memory before them (``VmHWM``), and dense
``jax.jacfwd`` / ``jax.jacrev`` (jitted, best of 2 warm calls) where the dense Jacobian and the batched kernel (one product per input
for ``jacfwd``, per output for ``jacrev``, each holding the kernel's intermediates) have at most
``--dense-max-entries`` float64 entries each.  A case whose Jacobian has more than ``--max-jacobian-nnz`` nonzeros is not run
(the table says how much memory it would take), and one that runs longer than ``--timeout`` is stopped (the
table names the step it was in).  A ``BCSR`` product the analysis refuses is recorded as ``refused: <reason>``.

Indices above 10 million entries exceed the analysis' default folding limit (``AnalysisOptions.max_fold_elements``),
which would make the gathers' indices unknown and the pattern dense: every case passes a limit above its
indices' size.  When the evaluation strategy ``"auto"`` batches all products with ``vmap`` although the batched
kernel would hold more than ``--batch-bytes`` of intermediates, the case is prepared again with the same coloring
and ``strategy="loop"`` (chunks of at most 256 MiB), and the table marks it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

from device_check import best_of  # (the best of repeated calls: one helper for the benchmark scripts)

HERE = os.path.dirname(os.path.abspath(__file__))


@dataclass(frozen=True)
class Matrix:
    """A matrix of the ∇SD paper's Table 1: its SuiteSparse group and name, dimension, stored values and kind."""

    name: str
    group: str
    n: int
    nnz: int
    kind: str  # "random" (irregular) or "banded" (finite elements)


#: The seven matrices, with the dimension and the number of stored values of their SuiteSparse pages
#: (https://sparse.tamu.edu/<group>/<name>; symmetric matrices counted with both triangles, as SpMV stores them).
MATRICES = (
    Matrix("bcspwr10", "HB", 5_300, 21_842, "random"),
    Matrix("nopoly", "Gaertner", 10_774, 70_842, "random"),
    Matrix("pdb1HYS", "Williams", 36_417, 4_344_765, "banded"),
    Matrix("rma10", "Williams", 46_835, 2_374_001, "banded"),
    Matrix("cant", "Williams", 62_451, 4_007_383, "banded"),
    Matrix("consph", "Williams", 83_334, 6_010_480, "banded"),
    Matrix("cop20k_A", "Williams", 121_192, 2_624_331, "random"),
)
KERNELS = ("smvm", "smmm", "batax")
#: The dense argument of each kernel (the other one is ``data``, the stored values of ``A``).
DENSE_ARG = {"smvm": "x", "smmm": "X", "batax": "x"}
NAMES = {"smvm": "SMVM", "smmm": "SMMM", "batax": "BATAx"}


# ------------------------------------------------------------------------------------------------ the matrices
def random_positions(n: int, nnz: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``nnz`` distinct positions of an ``n × n`` matrix, uniformly at random, in row-major order."""
    rng = np.random.default_rng(seed)
    flat = np.unique(rng.integers(0, n * n, int(nnz * 1.05) + 16, dtype=np.int64))
    while flat.size < nnz:  # (never at these densities: at most 0.05 % of the positions are taken)
        flat = np.union1d(flat, rng.integers(0, n * n, nnz, dtype=np.int64))
    flat = np.sort(rng.choice(flat, nnz, replace=False))
    return flat // n, flat % n


def banded_positions(n: int, nnz: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``nnz`` positions of an ``n × n`` matrix in a random band, row-major: row ``i`` holds ``⌊nnz/n⌋`` or
    ``⌈nnz/n⌉`` positions (the diagonal and others drawn at random from ``[i − w, i + w]``, ``w = ⌈nnz/n⌉``), as
    the rows of a finite-element matrix in a bandwidth-reducing order."""
    rng = np.random.default_rng(seed)
    base, extra = divmod(nnz, n)
    counts = np.full(n, base, np.int64)
    counts[rng.choice(n, extra, replace=False)] += 1
    w = int(counts.max())
    offsets = np.arange(-w, w + 1)
    cols = np.arange(n)[:, None] + offsets[None, :]
    score = rng.random(cols.shape)
    score[(cols < 0) | (cols >= n)] = -1.0       # outside the matrix: never taken (each row has ≥ w + 1 inside)
    score[:, w] = 2.0                            # the diagonal: always taken
    order = np.argsort(-score, axis=1)
    keep = np.arange(2 * w + 1)[None, :] < counts[:, None]
    chosen = np.sort(np.where(keep, np.take_along_axis(cols, order, axis=1), n), axis=1)
    rows = np.repeat(np.arange(n), counts)
    return rows, chosen[chosen < n]


def positions(mat: Matrix, seed: int) -> tuple[np.ndarray, np.ndarray]:
    maker = banded_positions if mat.kind == "banded" else random_positions
    return maker(mat.n, mat.nnz, seed)


# ------------------------------------------------------------------------------------------------ one case
@dataclass
class Case:
    """One kernel on one matrix: the function of ``(data, dense)``, its arguments, the argument differentiated and
    the closed-form Jacobian."""

    f: object
    args: tuple
    argnum: int
    formula: object          # scipy.sparse.csr_array
    work: int                # entries of the batched kernel's intermediates per product (for the strategy guard)
    options: object          # AnalysisOptions


def sparse_operand(fmt: str, data, rows: np.ndarray, cols: np.ndarray, n: int):
    """``A`` as JAX's ``BCOO`` or ``BCSR`` with constant indices (closed over: a traced index array would be
    unknown to the analysis, and the pattern dense)."""
    import jax.numpy as jnp
    from jax.experimental import sparse

    if fmt == "bcoo":
        idx = jnp.asarray(np.stack([rows, cols], 1).astype(np.int32))
        return lambda d: sparse.BCOO((d, idx), shape=(n, n), indices_sorted=True, unique_indices=True)
    indptr = jnp.asarray(np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n))]).astype(np.int32))
    indices = jnp.asarray(cols.astype(np.int32))
    return lambda d: sparse.BCSR((d, indices, indptr), shape=(n, n), indices_sorted=True, unique_indices=True)


def build_case(mat: Matrix, kernel: str, wrt: str, fmt: str, smmm_cols: int, seed: int = 0) -> Case:
    """The kernel's function, arguments and closed-form Jacobian on the synthetic ``mat``."""
    import jax.numpy as jnp
    import scipy.sparse as sp

    import stablehlo_sparsity as ss

    n, nnz = mat.n, mat.nnz
    rows, cols = positions(mat, seed)
    rng = np.random.default_rng(seed + 100)
    data = rng.standard_normal(nnz)
    A = sp.csr_array((data, (rows, cols)), shape=(n, n))
    make_a = sparse_operand(fmt, data, rows, cols, n)
    argnum = 0 if wrt == "data" else 1

    def by_value(v):
        """∂(A v)/∂data: one nonzero per stored value k, v[col_k] in row row_k."""
        return sp.csr_array((v[cols], (rows, np.arange(nnz))), shape=(n, nnz))

    fold = max(10_000_000, 3 * nnz)
    if kernel == "smvm":
        x = rng.uniform(0.5, 1.5, n)
        f = lambda d, v: make_a(d) @ v
        dense = x
        formula = A if argnum else by_value(x)
        work = nnz
    elif kernel == "smmm":
        K = smmm_cols
        X = rng.uniform(0.5, 1.5, (n, K))
        f = lambda d, v: make_a(d) @ v
        dense = X
        if argnum:
            formula = sp.kron(A, sp.identity(K), format="csr")
        else:   # row (row_k, c) of column k: X[col_k, c]
            r = (rows[:, None] * K + np.arange(K)[None, :]).ravel()
            formula = sp.csr_array((X[cols].ravel(), (r, np.repeat(np.arange(nnz), K))), shape=(n * K, nnz))
        work = nnz * K
        fold = max(fold, 3 * nnz * K)
    else:
        x = rng.uniform(0.5, 1.5, n)
        brows, bcols = positions(mat, seed + 1)
        bdata = rng.standard_normal(nnz)
        Bt = sp.csr_array((bdata, (brows, bcols)), shape=(n, n)).T.tocsr()
        Bt.sort_indices()
        btr, btc = Bt.nonzero()
        make_bt = sparse_operand(fmt, None, btr, btc, n)
        bt_data = jnp.asarray(Bt.data)
        f = lambda d, v: make_bt(bt_data) @ (make_a(d) @ v)
        dense = x
        formula = (Bt @ A) if argnum else Bt @ by_value(x)
        work = 2 * nnz
    formula = sp.csr_array(formula)
    formula.sort_indices()
    args = (jnp.asarray(data), jnp.asarray(dense))
    return Case(f, args, argnum, formula, work, ss.AnalysisOptions(max_fold_elements=fold))


def predicted_nnz(mat: Matrix, kernel: str, wrt: str, smmm_cols: int, seed: int = 0) -> int:
    """The Jacobian's nonzeros, from the structure alone (before anything big is built)."""
    import scipy.sparse as sp

    if kernel == "smvm":
        return mat.nnz
    if kernel == "smmm":
        return mat.nnz * smmm_cols
    rows, cols = positions(mat, seed)
    brows, bcols = positions(mat, seed + 1)
    if wrt == "data":   # column k holds the stored values of B's row row_k
        return int(np.bincount(brows, minlength=mat.n)[rows].sum())
    ones = lambda r, c: sp.csr_array((np.ones(r.size, np.float32), (r, c)), shape=(mat.n, mat.n))
    return int((ones(brows, bcols).T @ ones(rows, cols)).nnz)


# ------------------------------------------------------------------------------------------------ the child
def emit(kind: str, payload) -> None:
    print(f"@@{kind} {json.dumps(payload)}", flush=True)


def block(x):
    import jax

    return jax.block_until_ready(x)


def compare(jac, values, formula) -> dict:
    """The detected pattern and the computed values against the closed form."""
    import scipy.sparse as sp

    pat = jac.pattern
    ours = sp.csr_array((np.asarray(values), pat.indices, pat.indptr), shape=pat.shape)
    true = formula.astype(bool)
    both = (pat.to_scipy().astype(bool).multiply(true)).nnz
    scale = float(np.abs(formula.data).max()) if formula.nnz else 1.0
    diff = abs(ours - formula)
    return {"pattern_nnz": pat.nnz, "formula_nnz": formula.nnz, "extra": pat.nnz - both,
            "missing": formula.nnz - both, "max_rel_error": (float(diff.max()) / scale) if diff.nnz else 0.0}


def child(mat_name: str, kernel: str, wrt: str, fmt: str, cfg: dict) -> dict:
    """One case in this process (see the module docstring); progress lines go to stdout as ``@@stage``."""
    import jax

    jax.config.update("jax_enable_x64", True)
    import stablehlo_sparsity as ss
    from peak_memory import memory_status, reset_peak

    mat = next(m for m in MATRICES if m.name == mat_name)
    emit("stage", "build")
    case = build_case(mat, kernel, wrt, fmt, cfg["smmm_cols"])
    f, args, i = case.f, case.args, case.argnum
    m, n = case.formula.shape
    out: dict = {"rows": m, "cols": n}
    before = reset_peak()
    try:
        emit("stage", "detection")
        t0 = time.perf_counter()
        pattern = ss.jacobian_sparsity(f, *args, argnums=i, options=case.options)
        out["detection_s"] = time.perf_counter() - t0
        out["detected_nnz"] = pattern.nnz
        del pattern
        emit("stage", "preparation")
        t0 = time.perf_counter()
        jac = ss.sparse_jacobian(f, *args, argnums=i, output="values", options=case.options)
        out["preparation_s"] = time.perf_counter() - t0
    except ss.SparsityError as e:
        out["refused"] = f"{type(e).__name__}: {e.message if hasattr(e, 'message') else e}".splitlines()[0]
        return out
    out.update(colors=int(jac.num_colors), mode=str(jac.mode), strategy=jac.strategy)
    batched = jac.num_colors * case.work * 8
    if jac.strategy == "vmap" and jac.num_colors > 1 and batched > cfg["batch_bytes"]:
        chunk = max(1, (256 << 20) // (case.work * 8))
        emit("stage", "preparation (loop)")
        jac = ss.sparse_jacobian(f, *args, argnums=i, output="values", options=case.options,
                                 coloring=jac.coloring, strategy="loop", chunk_size=chunk)
        out.update(strategy=f"loop ({chunk} per chunk)", vmap_batched_bytes=batched)
    emit("stage", "first call")
    t0 = time.perf_counter()
    values = block(jac(*args))
    out["first_call_s"] = time.perf_counter() - t0
    emit("stage", "warm calls")
    out["warm_s"] = best_of(lambda: block(jac(*args)), cfg["repeat"])
    after = memory_status()
    out.update(rss_before=before, peak_rss=after["VmHWM"], peak_delta=after["VmHWM"] - before)
    emit("stage", "comparison")
    out.update(compare(jac, values, case.formula))
    jac = values = None  # (freed before the dense Jacobians)
    for name, transform, seeds in (("jacfwd", jax.jacfwd, n), ("jacrev", jax.jacrev, m)):
        if max(m * n, seeds * case.work) <= cfg["dense_max_entries"]:
            emit("stage", name)
            dense = jax.jit(transform(f, argnums=i))
            t0 = time.perf_counter()
            block(dense(*args))
            out[f"{name}_first_s"] = time.perf_counter() - t0
            out[f"{name}_s"] = best_of(lambda: block(dense(*args)), 2)
            del dense
    return out


# ------------------------------------------------------------------------------------------------ the parent
def run_case(mat: Matrix, kernel: str, wrt: str, fmt: str, args) -> dict:
    """One case in a fresh process, stopped after ``args.timeout`` seconds."""
    row = {"matrix": mat.name, "n": mat.n, "stored": mat.nnz, "kernel": kernel, "wrt": wrt, "format": fmt}
    jnnz = predicted_nnz(mat, kernel, wrt, args.smmm_cols)
    row["jacobian_nnz"] = jnnz
    if jnnz > args.max_jacobian_nnz:
        row["skipped"] = skip_reason(jnnz, args.max_jacobian_nnz)
        return row
    cfg = {"smmm_cols": args.smmm_cols, "repeat": args.repeat, "dense_max_entries": args.dense_max_entries,
           "batch_bytes": args.batch_bytes}
    cmd = [sys.executable, os.path.abspath(__file__), "--child", mat.name, kernel, wrt, fmt, json.dumps(cfg)]
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        stages = [json.loads(line[8:]) for line in stdout.splitlines() if line.startswith("@@stage ")]
        row["timeout"] = f"stopped after {args.timeout:.0f} s in {stages[-1] if stages else 'start-up'}"
        return row
    row["wall_s"] = time.perf_counter() - t0
    results = [json.loads(line[9:]) for line in stdout.splitlines() if line.startswith("@@result ")]
    if proc.returncode != 0 or not results:
        tail = [line for line in stderr.strip().splitlines() if line.strip()][-1:] or ["(no output)"]
        stages = [json.loads(line[8:]) for line in stdout.splitlines() if line.startswith("@@stage ")]
        row["failed"] = f"exit {proc.returncode} in {stages[-1] if stages else 'start-up'}: {tail[0][:200]}"
        return row
    row.update(results[-1])
    return row


#: Peak resident memory per Jacobian nonzero of a whole case (detection, coloring, plan, evaluation), the least and
#: the most this script measured on the cases of more than 10 M nonzeros (2026-12-06: 91 B for SMMM w.r.t. X on
#: pdb1HYS, 245 B for BATAx w.r.t. x on pdb1HYS): the reason a case above ``--max-jacobian-nnz`` is not run quotes them.
BYTES_PER_JACOBIAN_NONZERO = (91, 245)


def skip_reason(jnnz: int, cap: int) -> str:
    low, high = BYTES_PER_JACOBIAN_NONZERO
    return (f"{jnnz / 1e6:,.0f} M nonzeros would need {jnnz * low / 2**30:,.0f}–{jnnz * high / 2**30:,.0f} GiB "
            f"({low}–{high} B per nonzero measured), above --max-jacobian-nnz={cap:,}")


def fmt_s(v) -> str:
    return "—" if v is None else (f"{v:.3f}" if v < 10 else f"{v:.1f}")


def fmt_ms(v) -> str:
    return "—" if v is None else (f"{v * 1e3:.2f}" if v < 1 else f"{v * 1e3:,.0f}")


def exactness(r: dict) -> str:
    bits = []
    if r["missing"]:
        bits.append(f"**{r['missing']:,} missed**")
    if r["extra"]:
        bits.append(f"+{r['extra']:,} extra")
    bits.append("values exact" if r["max_rel_error"] == 0 else f"values ±{r['max_rel_error']:.0e}")
    return ("pattern exact, " if not (r["missing"] or r["extra"]) else "") + ", ".join(bits)


def matrices_table() -> list[str]:
    out = ["| matrix | SuiteSparse | n | stored values | synthetic structure |", "|---|---|---:|---:|---|"]
    for m in MATRICES:
        kind = "random band (FEM)" if m.kind == "banded" else "random positions"
        out.append(f"| {m.name} | [{m.group}/{m.name}](https://sparse.tamu.edu/{m.group}/{m.name}) | {m.n:,} | "
                   f"{m.nnz:,} | {kind} |")
    return out


def kernel_table(rows: list[dict]) -> list[str]:
    """One kernel's rows as a Markdown table."""
    out = ["| matrix | w.r.t. | format | J nnz | detection (s) | preparation (s) | colors (mode) | first call (s) | "
           "warm eval (ms) | against the closed form | Δ peak RSS (MiB) | jacfwd (ms) | jacrev (ms) | dense / ours |",
           "|---|---|---|---:|---:|---:|---|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        head = f"| {r['matrix']} | {r['wrt']} | {r['format'].upper()} | {r['jacobian_nnz']:,} |"
        reason = r.get("skipped") or r.get("timeout") or r.get("failed")
        if reason or "refused" in r:
            text = f"refused: {r['refused']}" if "refused" in r else ("not run: " if "skipped" in r else "") + reason
            out.append(head + f" {text} |" + " |" * 9)
            continue
        loop = r["strategy"].startswith("loop") and "vmap_batched_bytes" in r
        colors = f"{r['colors']} ({r['mode'][:3]}{', loop†' if loop else ''})"
        dense = [r[k] for k in ("jacfwd_s", "jacrev_s") if k in r]
        line = (head + f" {fmt_s(r['detection_s'])} | {fmt_s(r['preparation_s'])} | {colors} | "
                f"{fmt_s(r['first_call_s'])} | {fmt_ms(r['warm_s'])} | {exactness(r)} | "
                f"{r['peak_delta'] / 2**20:,.0f} | {fmt_ms(r.get('jacfwd_s'))} | {fmt_ms(r.get('jacrev_s'))} |")
        line += f" {min(dense) / r['warm_s']:,.0f}× |" if dense else " — |"
        out.append(line)
    return out


def markdown(rows: list[dict]) -> list[str]:
    """The matrices, then one table per kernel."""
    out = matrices_table()
    for kernel in KERNELS:
        mine = [r for r in rows if r["kernel"] == kernel]
        if mine:
            out += ["", f"#### {NAMES[kernel]}", ""] + kernel_table(mine)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the two smallest matrices (bcspwr10, nopoly)")
    ap.add_argument("--matrices", nargs="*", choices=[m.name for m in MATRICES])
    ap.add_argument("--kernels", nargs="*", choices=KERNELS, default=list(KERNELS))
    ap.add_argument("--wrt", nargs="*", choices=["dense", "data"], default=["dense", "data"],
                    help="the dense operand (x or X) and/or the stored values")
    ap.add_argument("--formats", nargs="*", choices=["bcoo", "bcsr"], default=["bcoo", "bcsr"])
    ap.add_argument("--smmm-cols", type=int, default=8, help="columns K of SMMM's dense X")
    ap.add_argument("--repeat", type=int, default=3, help="warm evaluations (the best is reported)")
    ap.add_argument("--dense-max-entries", type=float, default=2e8,
                    help="dense jacfwd (jacrev) only while the dense Jacobian and the batched kernel (inputs (outputs) "
                         "× the kernel's intermediate entries) each hold at most this many float64 entries")
    ap.add_argument("--max-jacobian-nnz", type=lambda v: int(float(v)), default=100_000_000,
                    help="cases above are not run (about 12 GiB at the measured bytes per nonzero: the machine is "
                         "shared)")
    ap.add_argument("--batch-bytes", type=float, default=2 * 2**30,
                    help="re-plan with strategy='loop' when 'auto' batches more intermediates than this")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per case")
    ap.add_argument("--json", help="write every row (and the machine) to this file")
    ap.add_argument("--table", metavar="JSON", help="print the tables of a finished run's JSON and exit")
    ap.add_argument("--child", nargs=5, metavar=("MATRIX", "KERNEL", "WRT", "FORMAT", "CONFIG"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    sys.path.insert(0, HERE)
    if args.table:
        with open(args.table) as fh:
            run = json.load(fh)
        print(run["header"] + "\n")
        print("\n".join(markdown(run["rows"])))
        print(f"\n(total {run['elapsed_s'] / 60:.1f} min)")
        return 0
    if args.child:
        mat, kernel, wrt, fmt, cfg = args.child
        emit("result", child(mat, kernel, wrt, fmt, json.loads(cfg)))
        return 0

    from detect import machine

    names = args.matrices or [m.name for m in MATRICES[:2 if args.quick else None]]
    mats = [m for m in MATRICES if m.name in names]
    started = time.time()
    header = (f"∇SD kernels at Table 1's sizes — {time.strftime('%Y-%m-%d')} — {machine()}; float64; "
              f"load average {os.getloadavg()[0]:.1f}")
    print(header, file=sys.stderr, flush=True)
    rows = []
    for mat in mats:
        for kernel in args.kernels:
            for wrt in args.wrt:
                for fmt in args.formats:
                    row = run_case(mat, kernel, "data" if wrt == "data" else DENSE_ARG[kernel], fmt, args)
                    rows.append(row)
                    print("  " + json.dumps(row), file=sys.stderr, flush=True)
    elapsed = time.time() - started
    print(header + "\n")
    print("\n".join(markdown(rows)))
    print(f"\n(total {elapsed / 60:.1f} min; load average at the end {os.getloadavg()[0]:.1f})")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"header": header, "argv": sys.argv[1:], "elapsed_s": elapsed, "rows": rows}, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
