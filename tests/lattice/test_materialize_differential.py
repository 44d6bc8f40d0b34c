"""The fold pass may rewrite a program only into one that computes the same bits.

Differential test: every module of a corpus — the lit tests, the fold tests, hostile inputs the analysis
accepts, programs built from rounding-sensitive constants, and random programs — is compiled by XLA (CPU)
as it is and after ``fold_constants(materialize=True)``, and both run on the same inputs: random values and
special ones (±0, ±inf, NaN, subnormals, huge).  The outputs must agree bit for bit, signed zeros and NaN
payloads included.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import jax
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings

import strategies as S
from helpers import calls_inside_reduction_bodies, mlir_literal, xla_module
from stablehlo_sparsity import parse_module
from stablehlo_sparsity.errors import SparsityError
from stablehlo_sparsity.passes.fold_constants import fold_constants
from stablehlo_sparsity.analysis.values import tensor_type
import paths

ROOT = paths.REPO
LONG = os.environ.get("SHS_LONG", "") not in ("", "0")

WHILE_SIGNED_ZERO = """
func.func @main(%x: tensor<f64>) -> tensor<f64> {
  %i0 = stablehlo.constant dense<0> : tensor<i64>
  %a0 = stablehlo.constant dense<1.0> : tensor<f64>
  %r:2 = stablehlo.while(%i = %i0, %acc = %a0) : tensor<i64>, tensor<f64>
    cond {
      %two = stablehlo.constant dense<2> : tensor<i64>
      %p = stablehlo.compare LT, %i, %two, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      stablehlo.return %p : tensor<i1>
    } do {
      %zero = stablehlo.constant dense<0> : tensor<i64>
      %first = stablehlo.compare EQ, %i, %zero, SIGNED : (tensor<i64>, tensor<i64>) -> tensor<i1>
      %neg = stablehlo.constant dense<-0.0> : tensor<f64>
      %pos = stablehlo.constant dense<0.0> : tensor<f64>
      %s = stablehlo.select %first, %neg, %pos : tensor<i1>, tensor<f64>
      %c1 = stablehlo.constant dense<1.0> : tensor<f64>
      %inv = stablehlo.divide %c1, %s : tensor<f64>
      %next = stablehlo.add %acc, %inv : tensor<f64>
      %one = stablehlo.constant dense<1> : tensor<i64>
      %j = stablehlo.add %i, %one : tensor<i64>
      stablehlo.return %j, %next : tensor<i64>, tensor<f64>
    }
  %y = stablehlo.add %r#1, %x : tensor<f64>
  return %y : tensor<f64>
}
"""

ROUNDING = """
func.func @main(%x: tensor<501xf64>) -> (tensor<501xf64>, tensor<501xf64>, tensor<f64>) {
  %i = stablehlo.iota dim = 0 : tensor<501xf64>
  %n = stablehlo.constant dense<500.0> : tensor<501xf64>
  %t = stablehlo.divide %i, %n : tensor<501xf64>
  %one = stablehlo.constant dense<1.0> : tensor<501xf64>
  %u = stablehlo.subtract %one, %t : tensor<501xf64>
  %start = stablehlo.constant dense<-0.5> : tensor<501xf64>
  %stop = stablehlo.constant dense<0.5> : tensor<501xf64>
  %a = stablehlo.multiply %start, %u : tensor<501xf64>
  %b = stablehlo.multiply %stop, %t : tensor<501xf64>
  %s = stablehlo.add %a, %b : tensor<501xf64>
  %y = stablehlo.multiply %x, %s : tensor<501xf64>
  %c1 = stablehlo.constant dense<1.0> : tensor<f64>
  %tiny = stablehlo.constant dense<8.673617379884035e-19> : tensor<f64>
  %m1 = stablehlo.constant dense<-1.0> : tensor<f64>
  %p = stablehlo.add %c1, %tiny : tensor<f64>
  %q = stablehlo.add %p, %m1 : tensor<f64>
  %neg0 = stablehlo.constant dense<-0.0> : tensor<501xf64>
  %zero = stablehlo.constant dense<0.0> : tensor<501xf64>
  %mz = stablehlo.maximum %neg0, %zero : tensor<501xf64>
  %w = stablehlo.divide %x, %mz : tensor<501xf64>
  return %y, %w, %q : tensor<501xf64>, tensor<501xf64>, tensor<f64>
}
"""


def _chunks(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8", errors="replace")
    return [c for c in re.split(r"^// -----\s*$", text, flags=re.M) if "func.func" in c]


def _entries(text: str, seed: int = 0) -> list[tuple[str, str]]:
    """Variants of a module for the oracle (XLA compiles the function named ``main``): for every function
    with a body, a ``@main`` calling it with runtime arguments, and one calling it with constant arguments
    (random and special values) — then the whole computation folds, and XLA's own evaluation of the original
    is the reference for every folded bit."""
    from jaxlib.mlir import ir

    try:
        module = parse_module(text)
        fns = [op for op in module.body.operations if op.operation.name == "func.func" and op.regions[0].blocks]
        names = [ir.StringAttr(op.attributes["sym_name"]).value for op in fns]
        types = [ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value) for op in fns]
        in_types = [[tensor_type(t) for t in ft.inputs] for ft in types]
    except Exception:  # noqa: BLE001 — left to _check_module, which skips it
        return [("", text)]
    has_main = "main" in names
    body_text = str(module).rstrip()
    assert body_text.endswith("}")
    body_text = body_text[:-1]
    renamed = re.sub(r"@main\b", "@main_original", body_text) if has_main else body_text
    out = [("", text)] if has_main else []
    rng = np.random.default_rng(seed)
    for name, ftype, tts in zip(names, types, in_types):
        if sum(t.size for t in tts) > 100_000:
            continue
        ins, outs = [str(t) for t in ftype.inputs], [str(t) for t in ftype.results]
        target = "main_original" if name == "main" else name
        call = (f"func.call @{target}({', '.join(f'%a{i}' for i in range(len(ins)))}) : ({', '.join(ins)}) -> "
                f"({', '.join(outs)})")
        if len(outs) > 1:
            body = f"    %r:{len(outs)} = {call}\n    return {', '.join(f'%r#{i}' for i in range(len(outs)))} : {', '.join(outs)}"
        elif outs:
            body = f"    %r = {call}\n    return %r : {outs[0]}"
        else:
            body = f"    {call}\n    return"
        if not has_main:
            params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(ins))
            wrapper = f"  func.func @main({params}) -> ({', '.join(outs)}) {{\n{body}\n  }}\n"
            out.append((f"@{name}", body_text + wrapper + "}\n"))
        for kind in ("special", "dyadic"):  # dyadic: small multiples of 1/4, so much arithmetic stays exact
            consts = "".join(f"    %a{i} = stablehlo.constant {mlir_literal(x)}\n"
                             for i, x in enumerate(_inputs(tts, rng, special=kind == "special",
                                                           dyadic=kind == "dyadic")))
            const_main = f"  func.func @main() -> ({', '.join(outs)}) {{\n{consts}{body}\n  }}\n"
            out.append((f"@{name} on {kind} constants", renamed + const_main + "}\n"))
    return out


#: Hostile modules whose compiled program runs too long to be an oracle (10^9 iterations of a loop).
_TOO_LONG_TO_RUN = {"long_known_loop.mlir"}


def _corpus() -> list[tuple[str, str]]:
    sources = [("while_signed_zero", WHILE_SIGNED_ZERO), ("rounding", ROUNDING)]
    for path in sorted((ROOT / "lit_tests").glob("*.mlir")):
        sources += [(f"lit/{path.name}#{k}", chunk) for k, chunk in enumerate(_chunks(path))]
    for path in sorted(paths.HOSTILE.glob("*.mlir")):
        if path.stat().st_size < 20_000 and path.name not in _TOO_LONG_TO_RUN:
            sources.append((f"hostile/{path.name}", path.read_text(encoding="utf-8", errors="replace")))
    import test_folding

    for name in dir(test_folding):
        value = getattr(test_folding, name)
        if isinstance(value, str) and "func.func @main" in value:
            sources.append((f"test_folding.{name}", value))
    sources.append(("test_folding.normalization", test_folding._normalization_text()))
    return [(f"{name}{entry}", text) for name, src in sources for entry, text in _entries(src)]


_SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -1e-310, 1e300, -1.0, 0.5])


def _inputs(types, rng, special: bool, dyadic: bool = False):
    out = []
    for t in types:
        if t.dtype.kind in "fc" or t.dtype.name == "bfloat16":
            base = rng.integers(-8, 9, t.shape) / 4.0 if dyadic else rng.standard_normal(t.shape) * 3
            if special and t.size:
                base = np.resize(_SPECIAL, t.shape) if rng.random() < 0.5 else np.where(
                    rng.random(t.shape) < 0.5, np.resize(_SPECIAL, t.shape), base)
            with np.errstate(all="ignore"):
                out.append(np.asarray(base).astype(t.dtype))
        elif t.dtype == np.bool_:
            out.append(rng.random(t.shape) < 0.5)
        else:
            out.append(rng.integers(-3, 8, t.shape).astype(t.dtype))
    return out


def _main_types(module):
    from jaxlib.mlir import ir

    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == "main":
            return [tensor_type(a.type) for a in op.regions[0].blocks[0].arguments]
    return None


def _check_module(name: str, text: str, seeds=(0, 1, 2)) -> str:
    """``"ok"``, or why the module was skipped (not a failure: the oracle does not apply)."""
    try:
        module = parse_module(text)
        types = _main_types(module)
    except (SparsityError, ValueError, Exception) as e:  # noqa: BLE001 — hostile files: not for this test
        return f"skip: {type(e).__name__}"
    if types is None:
        return "skip: no @main"
    original = str(module)
    try:
        folded = fold_constants(module, materialize=True)
    except Exception as e:  # noqa: BLE001
        return f"skip: fold failed ({type(e).__name__})"
    rewritten = str(module)
    if folded == 0:
        return "skip: nothing folded"
    for seed in seeds:
        rng = np.random.default_rng(seed)
        args = _inputs(types, rng, special=seed > 0)
        try:
            want = xla_module(original, args)
        except Exception:  # noqa: BLE001 — XLA cannot compile the original (custom calls …): no oracle
            return "skip: XLA rejects the original"
        got = xla_module(rewritten, args)
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            assert g.dtype == w.dtype and g.shape == w.shape, (name, g.dtype, w.dtype)
            assert np.ascontiguousarray(g).tobytes() == np.ascontiguousarray(w).tobytes(), (
                f"{name}: materialized folding changed a result (seed {seed})\nbefore: {w!r}\nafter:  {g!r}\n"
                f"inputs: {args!r}\n{rewritten}")
    return "ok"


def test_while_loop_signed_zero_is_not_materialized():
    """The bug the issue reports: -0.0 in the first iteration, +0.0 in the second; ``1/x`` tells them apart."""
    assert _check_module("while_signed_zero", WHILE_SIGNED_ZERO, seeds=(0, 1)) in ("ok", "skip: nothing folded")
    m = parse_module(WHILE_SIGNED_ZERO)
    fold_constants(m, materialize=True)
    assert "stablehlo.select" in str(m)  # -0.0 and +0.0 are two constants: the select is not one


def test_rounded_values_are_not_materialized():
    """Rounded values stay computed, and so do exact ones that feed rounding ops: as a literal, the iota
    would let XLA fold ``iota / 500`` with its evaluator (a division) where the runtime multiplies by
    ``1/500`` — other bits."""
    assert _check_module("rounding", ROUNDING) in ("ok", "skip: nothing folded")
    m = parse_module(ROUNDING)
    fold_constants(m, materialize=True)
    text = str(m)
    assert "stablehlo.iota" in text and "stablehlo.divide %" in text and "stablehlo.maximum" in text


def test_corpus_materializes_bit_for_bit():
    results = {name: _check_module(name, text) for name, text in _corpus()}
    ok = [n for n, r in results.items() if r == "ok"]
    assert len(ok) >= 150, {r: sum(v == r for v in results.values()) for r in set(results.values())}


@settings(max_examples=200 if LONG else 25, deadline=None, derandomize=not LONG, database=None,
          suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(S.programs(S.enabled_generators()))
def test_random_programs_materialize_bit_for_bit(prog):
    f = prog.function()
    args = prog.example_args()
    try:
        lowered = jax.jit(f).lower(*args)
    except Exception:  # noqa: BLE001
        return
    if calls_inside_reduction_bodies(lowered.compiler_ir("stablehlo")):
        return  # XLA segfaults compiling these (tests/support/xla_crashes/)
    _check_module("random program", lowered.as_text(), seeds=(0, 1))
