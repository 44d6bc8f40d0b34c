"""StableHLO in, StableHLO out: the injected compressed Jacobian of a module vs the dense Jacobian of its
import, at n ≈ 1e4, in one process.

    python benchmarks/module_jacobian.py            # n ≈ 1e4
    python benchmarks/module_jacobian.py --quick    # n ≈ 1e3

For each module (one hand-written in StableHLO text, one shipped as a serialized ``jax.export`` artifact):

* "pass" — ``sparsity-jacobian`` on the module: import, detection, coloring, lowering of the compressed
  program and splicing (first run, wall clock);
* "compile" — XLA compiling ``@main_jacobian`` from the module text directly (as any consumer would);
* "injected" — its warm evaluation (best of ``--rounds`` calls), "× primal" dividing by the module's own
  ``@main`` compiled and run the same way;
* "dense" — ``jax.jit(jax.jacfwd(f))`` of the imported function (first call incl. compilation, warm), and
  dense / injected;
* "ops" — the op count of ``@main_jacobian`` (with its helper functions) against the original ``@main``.

A second table lists the op counts for window and scan-like modules, where a derivative program could grow
with the window size (a 401-wide window minimum once became 15,662 ops): the injected function's op count
should not grow with the window.

Warm calls of the injected and primal programs are interleaved round by round (the machine is shared);
the dense Jacobian (800 MB at n = 1e4, it would evict the caches in between) is timed on its own, best of 3.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from detect import machine  # noqa: E402
from evaluate import race  # noqa: E402

jax.config.update("jax_enable_x64", True)

import stablehlo_sparsity as ss  # noqa: E402
from stablehlo_sparsity.analysis.api import parse_module  # noqa: E402
from stablehlo_sparsity.examples import brusselator  # noqa: E402
from stablehlo_sparsity.modules.importer.xla import compile_module  # noqa: E402
from stablehlo_sparsity.passes.pipeline import run_pipeline  # noqa: E402


def hand_written_laplacian(n: int) -> str:
    """A 1-D Laplacian with a cubic term written directly in StableHLO (no JAX): slices and pads."""
    return f"""func.func @main(%x: tensor<{n}xf64>) -> tensor<{n}xf64> {{
  %zero = stablehlo.constant dense<0.0> : tensor<f64>
  %two = stablehlo.constant dense<2.0> : tensor<{n}xf64>
  %l = stablehlo.slice %x [0:{n - 1}] : (tensor<{n}xf64>) -> tensor<{n - 1}xf64>
  %r = stablehlo.slice %x [1:{n}] : (tensor<{n}xf64>) -> tensor<{n - 1}xf64>
  %left = stablehlo.pad %l, %zero, low = [1], high = [0], interior = [0] : (tensor<{n - 1}xf64>, tensor<f64>) -> tensor<{n}xf64>
  %right = stablehlo.pad %r, %zero, low = [0], high = [1], interior = [0] : (tensor<{n - 1}xf64>, tensor<f64>) -> tensor<{n}xf64>
  %c = stablehlo.multiply %two, %x : tensor<{n}xf64>
  %s = stablehlo.add %left, %right : tensor<{n}xf64>
  %d = stablehlo.subtract %s, %c : tensor<{n}xf64>
  %x2 = stablehlo.multiply %x, %x : tensor<{n}xf64>
  %x3 = stablehlo.multiply %x2, %x : tensor<{n}xf64>
  %y = stablehlo.add %d, %x3 : tensor<{n}xf64>
  func.return %y : tensor<{n}xf64>
}}"""


def exported_brusselator(N: int) -> bytes:
    from jax import export

    spec = jax.ShapeDtypeStruct((2 * N * N,), jnp.float64)
    return bytes(export.export(jax.jit(lambda x: brusselator(x, N)), platforms=("cpu",))(spec).serialize())


def count_ops(module, name: str) -> int:
    """Ops of function ``@name`` and, for an injected function, of its helper functions."""
    from stablehlo_sparsity.ir.helpers import functions, nested_ops
    from stablehlo_sparsity.passes.jacobian import read_pattern

    funcs = functions(module)

    def ops(fn) -> int:
        return len(nested_ops(fn))

    fn = funcs[name]
    helpers = read_pattern(fn)["helpers"] if "sparsity.derivative" in fn.attributes else []
    return ops(fn) + sum(ops(funcs[h]) for h in helpers)


def window_module(kind: str, n: int, w: int, init: str = "1.0", stride: int = 1) -> str:
    """``@main(x: n) -> windows``: a ``w``-wide §reduce_window (``minimum``, ``maximum``, ``add`` or ``multiply``
    body) with init value ``init``."""
    out = (n - w) // stride + 1
    return f"""func.func @main(%x: tensor<{n}xf32>) -> tensor<{out}xf32> {{
  %init = stablehlo.constant dense<{init}> : tensor<f32>
  %0 = "stablehlo.reduce_window"(%x, %init) <{{window_dimensions = array<i64: {w}>, window_strides = array<i64: {stride}>}}> ({{
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.{kind} %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }}) : (tensor<{n}xf32>, tensor<f32>) -> tensor<{out}xf32>
  func.return %0 : tensor<{out}xf32>
}}"""


def op_counts() -> list[str]:
    """The op-count table: window and scan-like modules, the injected Jacobian against the original."""
    from jax import lax

    x = jax.ShapeDtypeStruct((1600,), jnp.float32)
    # cumulative ops have dense triangular Jacobians (one color per input): 200 elements, not 1,600
    c = jax.ShapeDtypeStruct((200,), jnp.float32)
    cases = {
        "reduce_window min, 401 wide, init 1 (testdata reduce_window_min_float32_1_1600)":
            window_module("minimum", 1600, 401, stride=160),
        "reduce_window max, 401 wide, init -1": window_module("maximum", 1600, 401, init="-1.0", stride=160),
        "reduce_window add, 401 wide, init 1": window_module("add", 1600, 401, stride=160),
        "reduce_window multiply, 401 wide (generic body)": window_module("multiply", 1600, 401, stride=160),
        "reduce_window multiply, 25 wide (generic body)": window_module("multiply", 1600, 25, stride=160),
        "jnp.cumsum, n = 200 (reduce_window add)": jax.jit(jnp.cumsum).lower(c).as_text(),
        "lax.cummax, n = 200 (reduce_window max)": jax.jit(lambda v: lax.cummax(v, axis=0)).lower(c).as_text(),
        "lax.cumlogsumexp, n = 200 (generic body)": jax.jit(lambda v: lax.cumlogsumexp(v, axis=0)).lower(c)
            .as_text(),
        "max pooling 3x3 (reduce_window max)": jax.jit(lambda v: lax.reduce_window(
            v.reshape(40, 40), -jnp.inf, lax.max, (3, 3), (1, 1), "SAME")).lower(x).as_text(),
        "lax.scan cumulative product, n = 200": jax.jit(
            lambda v: lax.scan(lambda c, e: (c * e, c * e), jnp.float32(1.0), v)[1]).lower(c).as_text(),
    }
    rows = []
    for name, text in cases.items():
        module = parse_module(text)
        t0 = time.perf_counter()
        run_pipeline(module, "builtin.module(sparsity-jacobian)")
        t_pass = time.perf_counter() - t0
        t0 = time.perf_counter()
        compile_module(module, "main_jacobian")
        t_compile = time.perf_counter() - t0
        rows.append(f"| {name} | {count_ops(module, 'main')} | {count_ops(module, 'main_jacobian'):,} | "
                    f"{t_pass:.2f} | {t_compile:.2f} |")
    return rows


def run(name, source, rounds):
    t0 = time.perf_counter()
    module = ss.analysis.api.as_module(source)
    module = parse_module(module.operation.get_asm())
    run_pipeline(module, "builtin.module(sparsity-jacobian)")
    t_pass = time.perf_counter() - t0
    from stablehlo_sparsity.passes.jacobian import read_pattern

    fn = next(op for op in module.body.operations if str(op.attributes["sym_name"]) == '"main_jacobian"')
    info = read_pattern(fn)
    t0 = time.perf_counter()
    exe_jac = compile_module(module, "main_jacobian")
    t_compile = time.perf_counter() - t0
    exe_primal = compile_module(module, "main")
    f = ss.import_module(module)
    x = f.random_args(0)
    dev = jax.devices("cpu")[0]
    bufs = [jax.device_put(a, dev) for a in x]

    def call(exe):
        outs = exe.execute(bufs)
        for o in outs:
            o.block_until_ready()
        return outs

    dense = jax.jit(jax.jacfwd(f))
    t0 = time.perf_counter()
    J = dense(*x).block_until_ready()
    t_dense_first = time.perf_counter() - t0
    vals = np.asarray(call(exe_jac)[0])
    rows = np.repeat(np.arange(info["shape"][0]), np.diff(info["indptr"]))
    err = float(np.max(np.abs(np.asarray(J)[rows, info["indices"]] - vals)))
    # The dense Jacobian (800 MB at n = 1e4) would evict the caches between interleaved calls: it is timed on
    # its own (best of 3), the injected and primal programs interleaved with each other.
    best = race({"injected": lambda: call(exe_jac), "primal": lambda: call(exe_primal)}, rounds)
    best.update(race({"dense": lambda: dense(*x).block_until_ready()}, 3))
    n = info["shape"][1]
    ops = f"{count_ops(module, 'main_jacobian'):,} / {count_ops(module, 'main'):,}"
    return (f"| {name} | {n:,} | {info['nnz']:,} | {info['num_colors']} ({info['mode']}) | {t_pass:.2f} | "
            f"{t_compile:.2f} | {best['injected'] * 1e3:.3f} | {best['injected'] / best['primal']:.1f} | "
            f"{t_dense_first:.2f} | {best['dense'] * 1e3:.1f} | {best['dense'] / best['injected']:,.0f}× | {err:.1e} | "
            f"{ops} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--ops-only", action="store_true", help="only the op-count table")
    a = ap.parse_args()
    n, N = (1_000, 22) if a.quick else (10_000, 71)
    print(f"machine: {machine()}\n")
    print("| window / scan module (n = 1,600 unless said, f32) | ops | injected ops | pass (s) | compile (s) |")
    print("|---|---:|---:|---:|---:|")
    for row in op_counts():
        print(row, flush=True)
    if a.ops_only:
        return
    print()
    print("| module | n | nnz | colors | pass (s) | compile (s) | injected warm (ms) | × primal | "
          "dense first (s) | dense warm (ms) | dense / injected | max |Δ| | ops (injected / original) |")
    print("|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(run(f"1-D Laplacian + cubic, hand-written StableHLO, n={n:,}", hand_written_laplacian(n), a.rounds),
          flush=True)
    print(run(f"Brusselator 2-D, N={N}, jax.export artifact", exported_brusselator(N), a.rounds), flush=True)


if __name__ == "__main__":
    main()
