"""Hostile ``.mlir`` inputs (``tests/support/hostile/``): a clear error, never a crash, hang, traceback or wrong answer.

For every file of the corpus the expectation is written down here (the corpus and this table must match):

* through the API (``analyze_module(parse_module(path, is_path=True))``): the named ``SparsityError``
  subclass whose message contains the given text — or a successful analysis for the inputs that are legal
  (zero-size tensors, a huge argument that is not differentiated);
* through the driver (``stablehlo-sparsity-opt FILE --emit=pattern``, in-process): exit code 1 and one
  ``FILE:LINE:COL: error: …`` diagnostic containing the text, no traceback, no "internal error" — or exit 0.

Huge shapes are refused *before* allocating: the refusal is checked to allocate almost nothing
(``tracemalloc`` tracks NumPy's buffers).
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import tracemalloc
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity import (AnalysisOptions, DynamicShapeError, InputError, PatternTooLargeError,
                                UnsupportedOpError, UnsupportedTypeError)
from stablehlo_sparsity.tools import driver
import paths

HOSTILE = paths.HOSTILE


@dataclass(frozen=True)
class Case:
    file: str
    error: type | None  # None: the input is legal and must analyze
    text: str = ""  # in the API message and the driver diagnostic
    api: bool = True  # also through the API (the driver is always exercised)
    driver_args: tuple = ()
    api_kwargs: dict = field(default_factory=dict, hash=False)
    driver_text: str | None = None  # when the driver's wording differs
    shape: tuple | None = None  # expected pattern shape of a legal input
    nnz: int | None = None
    driver_xfail: str | None = None  # a reported, still-open driver problem


CASES = [
    # malformed text
    Case("truncated.mlir", InputError, "expected SSA operand"),
    Case("truncated_in_type.mlir", InputError, "expected non-function type"),
    Case("empty.mlir", InputError, "no entry function", driver_text="has no func.func"),
    Case("only_comment.mlir", InputError, "no entry function", driver_text="has no func.func"),
    Case("binary_garbage.mlir", InputError, "could not parse", driver_text="not valid UTF-8"),
    # valid UTF-8 is checked by the driver; MLIR's lexer skips the bytes of a comment, so the API analyzes it
    Case("non_utf8_comment.mlir", None, api=True, driver_text="not valid UTF-8 (byte 0xe9)", shape=(4, 4), nnz=4),
    # the verifier
    Case("wrong_operand_types.mlir", InputError, "requires the same shape"),
    Case("wrong_return_type.mlir", InputError, "doesn't match function result type"),
    Case("call_to_missing.mlir", InputError, "does not reference a valid function"),
    Case("unknown_dialect.mlir", InputError, "unregistered dialect"),
    Case("unknown_stablehlo_op.mlir", InputError, "unregistered operation 'stablehlo.not_a_real_op'"),
    Case("quantized_type.mlir", InputError, "unregistered dialect"),
    Case("conv_huge_dimension_index.mlir", InputError, "Expected spatial dimensions"),
    Case("attribute_shape_overflow.mlir", InputError, "SmallVector unable to grow"),
    # ops and types the analysis does not handle
    Case("op_without_rule.mlir", UnsupportedOpError, "no sparsity rule for op 'stablehlo.einsum'"),
    Case("unknown_custom_call.mlir", UnsupportedOpError, "unknown custom_call target 'my_secret_kernel'"),
    Case("dynamic_shape_argument.mlir", DynamicShapeError, "dynamic shape 'tensor<?x4xf32>'"),
    Case("dynamic_shape_inside.mlir", DynamicShapeError, "dynamic shape 'tensor<?xf32>'"),
    Case("unranked.mlir", UnsupportedTypeError, "tensor<*xf32>"),
    Case("f8_element_type.mlir", UnsupportedTypeError, "unsupported element type 'f8E4M3FN'"),
    Case("f8_inside.mlir", UnsupportedTypeError, "unsupported element type 'f8E5M2'"),
    Case("i4_element_type.mlir", UnsupportedTypeError, "unsupported element type 'i4'"),
    Case("tuple_type.mlir", UnsupportedTypeError, "tuple<"),
    Case("token_type.mlir", UnsupportedOpError, "no sparsity rule for op 'stablehlo.after_all'"),
    Case("scalar_not_tensor.mlir", UnsupportedTypeError, "unsupported type 'f32'"),
    Case("memref_type.mlir", UnsupportedTypeError, "memref<4xf32>"),
    # program structure
    Case("recursive_self.mlir", InputError, "recursive call to '@main'"),
    Case("recursive_mutual.mlir", InputError, "recursive call to '@ping'"),
    Case("no_entry.mlir", InputError, "no entry function '@main'", driver_text="cannot choose an entry function"),
    Case("entry_without_body.mlir", InputError, "'@main' has no body"),
    Case("call_to_declaration.mlir", InputError, "'@external' has no body"),
    Case("multiple_blocks.mlir", InputError, "regions with 2 blocks"),
    Case("deep_regions.mlir", InputError, "nested too deeply for the analysis"),
    # sizes: zero-size works; patterns that cannot fit are refused before allocating
    Case("zero_size.mlir", None, api_kwargs={"wrt": "all"}, driver_args=("--wrt=all",), shape=(3, 3), nnz=3),
    Case("zero_size_structural.mlir", None, shape=(4, 4), nnz=4),
    Case("huge_reduce.mlir", PatternTooLargeError, "above the limit max_pattern_nnz="),  # (memory-derived default)
    Case("huge_broadcast.mlir", PatternTooLargeError, "'stablehlo.broadcast_in_dim' has a value of 40,000,000,000"),
    Case("huge_intermediate.mlir", PatternTooLargeError, "14,400,000,000 elements"),
    Case("huge_constant_input.mlir", PatternTooLargeError, "10,000,000,000 elements"),
    Case("huge_output.mlir", PatternTooLargeError, "the outputs of @main have 10,000,000,004"),
    Case("overflowing_shape.mlir", PatternTooLargeError, "18,446,744,073,709,551,616 elements"),
    Case("huge_not_differentiated.mlir", PatternTooLargeError, "the differentiated inputs have 10,000,000,003",
         api_kwargs={"wrt": "all"}, driver_args=("--wrt=all",)),
    Case("huge_not_differentiated.mlir", None, api_kwargs={"wrt": [0]}, driver_args=("--wrt=0",), shape=(3, 3), nnz=3),
    # loops that never end when run must still end when analyzed
    Case("infinite_constant_loop.mlir", None, shape=(4, 4), nnz=4),
]

#: Inputs known to make the analysis run far too long; tested (bounded) in test_regressions.py.
KNOWN_SLOW = {"long_known_loop.mlir"}


def _id(c: Case) -> str:
    return c.file + ("[" + ",".join(c.driver_args) + "]" if c.driver_args else "")


def run_driver(argv) -> tuple[int, str, str]:
    """The driver in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = driver.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_corpus_and_table_match():
    on_disk = {p.name for p in HOSTILE.glob("*.mlir")}
    listed = {c.file for c in CASES} | KNOWN_SLOW
    assert on_disk == listed, f"unlisted: {sorted(on_disk - listed)}; missing: {sorted(listed - on_disk)}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_api(case: Case):
    if not case.api:
        pytest.skip("driver-only case")
    path = str(HOSTILE / case.file)
    if case.error is None:
        a = ss.analyze_module(ss.parse_module(path, is_path=True), **case.api_kwargs)
        assert a.pattern.shape == case.shape and a.pattern.nnz == case.nnz
        return
    with pytest.raises(case.error) as info:
        ss.analyze_module(ss.parse_module(path, is_path=True), **case.api_kwargs)
    assert case.text in str(info.value)


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_driver(case: Case, request):
    if case.driver_xfail:
        request.applymarker(pytest.mark.xfail(strict=True, reason=case.driver_xfail))
    path = str(HOSTILE / case.file)
    code, out, err = run_driver([path, "--emit=pattern", *case.driver_args])
    assert "Traceback" not in err and "internal error" not in err, err
    expect_error = case.error is not None or case.driver_text is not None
    if not expect_error:
        assert code == 0, err
        m, n, nnz = (int(x) for x in out.splitlines()[2].split())
        assert (m, n) == case.shape and nnz == case.nnz
        return
    assert code == 1, (code, err)
    text = case.driver_text if case.driver_text is not None else case.text
    assert text in err, err
    first = err.splitlines()[0]
    assert first.startswith(path + ":") and ": error: " in first, first  # FILE:LINE:COL: error: …


@pytest.mark.parametrize("case", [c for c in CASES if c.error is not None and c.error is not InputError], ids=_id)
def test_driver_annotate_pass(case: Case, request):
    """The same inputs through the annotate pass (the analysis inside an MLIR pass) fail the same way."""
    if case.driver_xfail:
        request.applymarker(pytest.mark.xfail(strict=True, reason=case.driver_xfail))
    path = str(HOSTILE / case.file)
    code, out, err = run_driver([path, "--sparsity-annotate", *case.driver_args])
    assert "Traceback" not in err and "internal error" not in err, err
    assert code == 1 and case.text in err, err


@pytest.mark.parametrize("name", ["huge_broadcast.mlir", "huge_reduce.mlir", "huge_output.mlir",
                                  "huge_constant_input.mlir"])
def test_huge_is_refused_before_allocating(name):
    module = ss.parse_module(str(HOSTILE / name), is_path=True)
    tracemalloc.start()
    try:
        with pytest.raises(PatternTooLargeError) as info:
            ss.analyze_module(module)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB before refusing"
    msg = str(info.value)
    assert "max_pattern_nnz" in msg and "AnalysisOptions(max_pattern_nnz=" in msg  # the limit and how to raise it


def test_huge_value_without_dependencies_costs_nothing():
    """A 10^10-element argument that is not differentiated flows through a reduce without any allocation."""
    module = ss.parse_module(str(HOSTILE / "huge_not_differentiated.mlir"), is_path=True)
    tracemalloc.start()
    try:
        a = ss.analyze_module(module, wrt=[0])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20
    assert np.array_equal(a.pattern.todense(), np.eye(3, dtype=bool))


def test_limit_is_configurable_and_named():
    """The refusal uses ``max_pattern_nnz``; raising it lets the same program through."""
    text = """
    func.func @main(%a: tensor<4xf32>) -> tensor<8x4xf32> {
      %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<4xf32>) -> tensor<8x4xf32>
      return %0 : tensor<8x4xf32>
    }"""
    with pytest.raises(PatternTooLargeError, match=r"has a value of 32 elements, above the limit max_pattern_nnz=16"):
        ss.analyze_module(text, options=AnalysisOptions(max_pattern_nnz=16))
    with pytest.raises(PatternTooLargeError, match=r"the differentiated inputs have 4 elements"):
        ss.analyze_module(text, options=AnalysisOptions(max_pattern_nnz=3))
    assert ss.analyze_module(text, options=AnalysisOptions(max_pattern_nnz=32)).pattern.nnz == 32


@pytest.mark.parametrize("bad", [b"\xff\xfe\x00", None, 123, 4.5, ["func.func"]], ids=repr)
def test_api_rejects_non_module_arguments(bad):
    with pytest.raises(InputError):
        ss.analyze_module(bad)


def test_api_accepts_utf8_bytes():
    text = b"func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }"
    assert ss.analyze_module(text).pattern.nnz == 2


@pytest.mark.parametrize("kwargs, text", [
    ({"entry": "nope"}, "no entry function '@nope'"),
    ({"wrt": [5]}, "argument index 5 out of range"),
    ({"wrt": [-2]}, "argument index -2 out of range"),  # negative indices count from the end (as argnums)
    ({"num_outputs": -1}, "num_outputs must be non-negative"),
])
def test_api_rejects_bad_arguments(kwargs, text):
    src = "func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> { return %a : tensor<2xf32> }"
    with pytest.raises(InputError, match=text.replace("(", r"\(")):
        ss.analyze_module(src, **kwargs)


def test_parse_missing_file():
    with pytest.raises(InputError, match="could not open"):
        ss.parse_module(str(HOSTILE / "does_not_exist.mlir"), is_path=True)


@pytest.mark.parametrize("argv, text", [
    (["--emit=pattern", "/nonexistent/x.mlir"], "could not open input file"),
    (["--emit=pattern", "--entry=nope", str(HOSTILE / "zero_size.mlir")], "nope"),
    (["--emit=pattern", "--wrt=9", str(HOSTILE / "zero_size.mlir")], "out of range"),
    (["--emit=pattern", "--wrt=a,b", str(HOSTILE / "zero_size.mlir")], "--wrt expects"),
    (["--no-such-pass", str(HOSTILE / "zero_size.mlir")], "no-such-pass"),
])
def test_driver_bad_command_lines(argv, text):
    code, out, err = run_driver(argv)
    assert code == 1 and text in err and "Traceback" not in err, (code, err)


def test_zero_size_jax_function():
    """Zero-size arrays through the JAX entry: an empty pattern, not an error."""
    import jax.numpy as jnp

    p = ss.jacobian_sparsity(lambda x: jnp.sin(x).sum(0) + 1.0, jnp.ones((0, 3)))
    assert p.shape == (3, 0) and p.nnz == 0


@pytest.mark.parametrize("name", ["binary_garbage.mlir", "huge_broadcast.mlir"])
def test_console_script_exit_code(name):
    """The installed ``stablehlo-sparsity-opt`` (a real process): exit 1, one diagnostic, no traceback."""
    exe = Path(sys.executable).parent / "stablehlo-sparsity-opt"
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "stablehlo_sparsity.tools.driver"]
    env = dict(os.environ, STABLEHLO_SPARSITY_TRACEBACK="")
    r = subprocess.run(cmd + [str(HOSTILE / name), "--emit=pattern"], capture_output=True, text=True,
                       timeout=120, env=env)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr and ": error: " in r.stderr


def test_fuzz_smoke():
    """A tiny bounded run of ``scripts/fuzz_driver.py`` (50 seeded mutations of the corpus and the lit tests,
    through the real driver in a worker process): no crash, traceback, internal error or hang."""
    import importlib.util

    path = paths.REPO / "scripts" / "fuzz_driver.py"
    spec = importlib.util.spec_from_file_location("fuzz_driver", path)
    fuzz_driver = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz_driver)
    seeds = {name for name, _ in fuzz_driver.load_seeds()}
    assert {p.name for p in HOSTILE.glob("*.mlir")} - fuzz_driver.SKIP_SEEDS <= seeds  # the corpus is seeded
    summary = fuzz_driver.fuzz(inputs=50, seconds=120, seed=0, timeout=60)
    assert summary["inputs"] == 50
    assert summary["findings"] == [], summary["findings"]
    assert summary["outcomes"].get("error", 0) > 0  # the mutations do reach the error paths


def _nested_cases(depth: int) -> str:
    lines = ["func.func @main(%a: tensor<4xf32>, %i: tensor<i32>) -> tensor<4xf32> {"]
    lines += [f'%r{d} = "stablehlo.case"(%i) ({{' for d in range(depth)]
    lines += ["%s = stablehlo.sine %a : tensor<4xf32>", "stablehlo.return %s : tensor<4xf32>"]
    for d in reversed(range(depth)):
        lines.append("}) : (tensor<i32>) -> tensor<4xf32>")
        if d > 0:
            lines.append(f"stablehlo.return %r{d} : tensor<4xf32>")
    return "\n".join(lines + ["return %r0 : tensor<4xf32>", "}"]) + "\n"


def test_nesting_that_would_crash_the_parser_is_refused_first():
    """3,000 nested regions overflow the C++ stack of MLIR's recursive-descent parser (a segfault, at about
    2,500 levels); ``parse_module`` refuses them after one vectorized scan of the brackets."""
    with pytest.raises(InputError, match="brackets nested 6002 deep, above the limit of 1000"):
        ss.parse_module(_nested_cases(3000))


def test_driver_survives_nesting_that_crashes_the_parser(tmp_path):
    path = tmp_path / "deep.mlir"
    path.write_text(_nested_cases(3000))
    r = subprocess.run([sys.executable, "-m", "stablehlo_sparsity.tools.driver", str(path), "--emit=pattern"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "nested" in r.stderr, (r.returncode, r.stderr[-500:])
