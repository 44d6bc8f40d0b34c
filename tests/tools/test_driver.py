"""``stablehlo-sparsity-opt``: the installed console script through ``subprocess`` (exit codes, stderr
format, no traceback) and ``driver.main`` in-process for the rest (faster)."""

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.io

from stablehlo_sparsity import analyze_module
from stablehlo_sparsity.tools.driver import main

_BIN = Path(sys.executable).parent / "stablehlo-sparsity-opt"
DRIVER = [str(_BIN)] if _BIN.exists() else ([shutil.which("stablehlo-sparsity-opt")] if shutil.which(
    "stablehlo-sparsity-opt") else [sys.executable, "-m", "stablehlo_sparsity.tools.driver"])

STENCIL = """\
func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = stablehlo.add %a, %b : tensor<4xf32>
  %1 = stablehlo.slice %0 [1:4] : (tensor<4xf32>) -> tensor<3xf32>
  %c = stablehlo.constant dense<0.0> : tensor<1xf32>
  %2 = stablehlo.concatenate %1, %c, dim = 0 : (tensor<3xf32>, tensor<1xf32>) -> tensor<4xf32>
  %3 = stablehlo.multiply %2, %a : tensor<4xf32>
  return %3 : tensor<4xf32>
}
"""

SPLIT = """\
// RUN: stablehlo-sparsity-opt %s --split-input-file
func.func @ok(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.negate %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @broken(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.bogus %a : tensor<2xf32>
  return %0 : tensor<2xf32>
}

// -----

func.func @dynamic(%a: tensor<?xf32>) -> tensor<?xf32> {
  return %a : tensor<?xf32>
}

// -----

func.func @also_ok(%a: tensor<2xf32>) -> tensor<2xf32> {
  %0 = stablehlo.reverse %a, dims = [0] : tensor<2xf32>
  return %0 : tensor<2xf32>
}
"""


def run(*args, stdin: bytes | None = None):
    return subprocess.run(DRIVER + list(args), input=stdin, capture_output=True, timeout=120)


def run_main(capsys, *args, stdin: str | bytes | None = None, monkeypatch=None):
    if stdin is not None:
        data = stdin.encode() if isinstance(stdin, str) else stdin
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def stencil(tmp_path):
    p = tmp_path / "stencil.mlir"
    p.write_text(STENCIL)
    return p


# --------------------------------------------------------------------------- the real console script
def test_console_script_annotates_and_exits_zero(stencil):
    r = run(str(stencil), "--sparsity-annotate", "--wrt=all")
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    assert 'stablehlo.add %arg0, %arg1 {sparsity.deps = "{0,4} {1,5} {2,6} {3,7}"}' in out
    assert 'sparsity.pattern = "shape=4x8 nnz=10 deps=1..3 distinct=4"' in out
    assert r.stderr == b""


def test_console_script_errors_have_locations_exit_one_and_no_traceback(tmp_path):
    p = tmp_path / "split.mlir"
    p.write_text(SPLIT)
    r = run(str(p), "--split-input-file", "--sparsity-annotate")
    assert r.returncode == 1
    err = r.stderr.decode()
    assert "Traceback" not in err
    assert err.splitlines() == [
        f"{p}:10:8: error: custom op 'stablehlo.bogus' is unknown",
        f"{p}:16:1: error: dynamic shape 'tensor<?xf32>' is not supported; sparsity patterns need static shapes",
    ]
    out = r.stdout.decode()
    # the good chunks are still processed, separated like mlir-opt's output
    assert out.count("// -----") == 1
    assert '@ok(' in out and '@also_ok(' in out
    assert 'stablehlo.reverse %arg0, dims = [0] {sparsity.deps = "{1} {0}"}' in out


def test_console_script_reads_stdin_and_reports_stdin_locations():
    r = run("-", "--sparsity-annotate", stdin=b"func.func @f(%a: tensor<2xf32>) {\n  %0 = stablehlo.nope %a\n}\n")
    assert r.returncode == 1
    assert r.stderr.decode().strip() == "<stdin>:2:8: error: custom op 'stablehlo.nope' is unknown"


@pytest.mark.parametrize("case", ["missing", "utf8", "entry", "type", "op"])
def test_console_script_input_errors(tmp_path, case):
    p = tmp_path / "in.mlir"
    extra = []
    if case == "missing":
        expected = f"{p}: error: could not open input file: No such file or directory"
    elif case == "utf8":
        p.write_bytes(b"func.func @f() {\n  return\n}\n// caf\xe9\n")
        expected = f"{p}:4:7: error: input is not valid UTF-8 (byte 0xe9)"
    elif case == "entry":
        p.write_text(STENCIL)
        extra = ["--entry=nope"]
        expected = f"{p}:1:1: error: no entry function '@nope' in the module (functions: @main)"
    elif case == "type":
        p.write_text("func.func @main(%a: tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN> {\n"
                     "  return %a : tensor<4xf8E4M3FN>\n}\n")
        expected = f"{p}:1:1: error: unsupported element type 'f8E4M3FN'"
    else:
        p.write_text("func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {\n"
                     "  %0 = \"mydialect.op\"(%a) : (tensor<4xf32>) -> tensor<4xf32>\n"
                     "  return %0 : tensor<4xf32>\n}\n")
        extra = ["--allow-unregistered-dialect"]
        expected = (f"{p}:2:8: error: no sparsity rule for op 'mydialect.op'; use on-unknown=conservative "
                    "(--on-unknown=conservative) to treat it as dense")
    r = run(str(p), "--emit=pattern", *extra)
    assert r.returncode == 1
    assert r.stdout == b""
    assert r.stderr.decode().strip() == expected


# --------------------------------------------------------------------------- in-process
def test_split_input_file_keeps_original_line_numbers(capsys, tmp_path):
    p = tmp_path / "s.mlir"
    p.write_text(SPLIT)
    # the flag takes no value unless written with "=", so it may come before the input name
    code, out, err = run_main(capsys, "-split-input-file", str(p), "--mlir-print-debuginfo")
    assert code == 1
    assert f'loc("{p}":22:1)' in out  # @also_ok starts on line 22 of the file
    assert f"{p}:10:8: error" in err


def test_emit_pattern_is_matrix_market(capsys, stencil, tmp_path):
    code, out, _ = run_main(capsys, str(stencil), "--emit=pattern")
    assert code == 0
    assert out.startswith("%%MatrixMarket matrix coordinate pattern general\n")
    mm = tmp_path / "p.mtx"
    mm.write_text(out)
    m = scipy.io.mmread(str(mm))
    expected = analyze_module(STENCIL).pattern.todense()
    assert np.array_equal(m.toarray() != 0, expected)


def test_emit_json_and_picture_and_wrt(capsys, stencil):
    code, out, _ = run_main(capsys, str(stencil), "--emit=json", "--wrt=1")
    assert code == 0
    doc = json.loads(out)
    assert doc["entry"] == "main" and doc["shape"] == [4, 4] and doc["nnz"] == 3
    assert doc["inputs"] == [{"shape": [4], "offset": 0}]
    assert doc["outputs"] == [{"shape": [4], "offset": 0}]
    assert doc["rows"] == [[1], [2], [3], []]
    code, out, _ = run_main(capsys, str(stencil), "--emit=picture", "--wrt=all")
    assert code == 0
    assert out.splitlines()[0] == "@main: 4x8 Jacobian pattern, nnz=10"
    assert out.splitlines()[1] == "●●⋅⋅⋅●⋅⋅"


def test_output_file_and_stdin(capsys, monkeypatch, tmp_path):
    out_path = tmp_path / "out.mlir"
    code, out, err = run_main(capsys, "-", "--sparsity-annotate=max-elements=2", "--wrt=all", "-o", str(out_path),
                              stdin=STENCIL, monkeypatch=monkeypatch)
    assert (code, out, err) == (0, "", "")
    text = out_path.read_text()
    assert '{sparsity.deps = "elements=4 nnz=8 deps=2 distinct=4"}' in text


def test_pass_flags_run_in_command_line_order(capsys, stencil):
    _, annotated_then_stripped, _ = run_main(capsys, str(stencil), "--sparsity-annotate", "--sparsity-strip")
    _, plain, _ = run_main(capsys, str(stencil))
    assert annotated_then_stripped == plain
    assert "sparsity." not in plain
    _, stripped_then_annotated, _ = run_main(capsys, str(stencil), "--sparsity-strip", "--sparsity-annotate")
    assert "sparsity.deps" in stripped_then_annotated


def test_pass_options_with_quotes_and_builtin_pass_flags(capsys, tmp_path):
    p = tmp_path / "cse.mlir"
    p.write_text("func.func @f(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {\n"
                 "  %0 = stablehlo.add %a, %b : tensor<2xf32>\n  %1 = stablehlo.add %a, %b : tensor<2xf32>\n"
                 "  %2 = stablehlo.multiply %0, %1 : tensor<2xf32>\n  return %2 : tensor<2xf32>\n}\n")
    code, out, err = run_main(capsys, str(p), "--cse", '--sparsity-annotate="wrt=1 max-elements=8"')
    assert code == 0, err
    assert out.count("stablehlo.add") == 1
    assert 'stablehlo.multiply %0, %0 {sparsity.deps = "{0} {1}"}' in out


def test_pass_pipeline_mixes_our_passes_with_builtin_ones(capsys, stencil):
    code, out, err = run_main(capsys, str(stencil), "--pass-pipeline=builtin.module(canonicalize,func.func(cse),"
                              "sparsity-annotate{max-elements=3},sparsity-strip,sparsity-annotate)", "--wrt=all")
    assert code == 0, err
    assert '{sparsity.deps = "{0,4} {1,5} {2,6} {3,7}"}' in out


@pytest.mark.parametrize("args, message", [
    (["--pass-pipeline=sparsity-annotate", "--cse"], "--pass-pipeline cannot be combined"),
    (["--no-such-pass"], "unknown command line option or pass '--no-such-pass'"),
    (["--sparsity-annotate=max-elemnts=3"], "unknown option 'max-elemnts' for pass 'sparsity-annotate'"),
    (["--pass-pipeline=func.func(sparsity-annotate)"], "cannot be nested in 'func.func(...)'"),
    (["--wrt=a,b"], "--wrt expects comma-separated argument indices"),
])
def test_usage_errors(capsys, stencil, args, message):
    code, out, err = run_main(capsys, str(stencil), *args)
    assert code == 1 and out == ""
    assert err.startswith("stablehlo-sparsity-opt: error: ") and message in err


def test_unknown_driver_option_and_bad_emit_exit_one(capsys, stencil):
    code, _, err = run_main(capsys, str(stencil), "--emit=svg")
    assert code == 1 and "invalid choice" in err


def test_conservative_opt_in_warns_with_location(capsys, tmp_path):
    p = tmp_path / "c.mlir"
    p.write_text("func.func @main(%a: tensor<3xf32>) -> tensor<3xf32> {\n"
                 "  %0 = \"mydialect.op\"(%a) : (tensor<3xf32>) -> tensor<3xf32>\n  return %0 : tensor<3xf32>\n}\n")
    code, out, err = run_main(capsys, str(p), "--allow-unregistered-dialect", "--on-unknown=conservative",
                              "--sparsity-annotate")
    assert code == 0
    assert err.startswith(f"{p}:2:8: warning: mydialect.op: no sparsity rule")
    assert '{sparsity.deps = "{0..2}*3"}' in out


def test_fold_constants_flag_with_materialize(capsys, tmp_path):
    p = tmp_path / "f.mlir"
    p.write_text("func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {\n"
                 "  %c = stablehlo.constant dense<[0.0, 3.0]> : tensor<2xf32>\n"
                 "  %n = stablehlo.negate %c : tensor<2xf32>\n"
                 "  %0 = stablehlo.multiply %a, %n : tensor<2xf32>\n  return %0 : tensor<2xf32>\n}\n")
    code, out, err = run_main(capsys, str(p), "--sparsity-fold-constants=materialize=true", "--sparsity-annotate")
    assert code == 0, err
    assert "stablehlo.negate" not in out
    assert '{sparsity.deps = "{} {1}"}' in out


def test_version_and_help(capsys):
    code, out, _ = run_main(capsys, "--version")
    assert code == 0 and out.startswith("stablehlo-sparsity-opt (stablehlo_sparsity ")
    code, out, _ = run_main(capsys, "--help")
    assert code == 0
    for name in ("--sparsity-fold-constants", "--sparsity-annotate", "--sparsity-strip", "--split-input-file",
                 "--pass-pipeline", "max-elements", "--emit"):
        assert name in out


def test_vectorized_output_formatters_match_python_formatting():
    import scipy.sparse as sp

    from stablehlo_sparsity.tools.driver import _format_int_pairs, _format_rows_json_inner

    def _format_rows_json(indptr, indices):
        return "[" + _format_rows_json_inner(indptr, indices) + "]"

    rng = np.random.default_rng(0)
    for _ in range(100):
        k, n = int(rng.integers(1, 8)), int(rng.integers(1, 5000))
        m = sp.csr_array(rng.random((k, n)) < rng.random() * 0.01)
        m.sort_indices()
        assert _format_rows_json(m.indptr, m.indices) == json.dumps(
            [m.indices[m.indptr[i]:m.indptr[i + 1]].tolist() for i in range(k)])
        a, b = rng.integers(0, 10 ** int(rng.integers(1, 15)), 7), rng.integers(0, 10, 7)
        assert _format_int_pairs(a, b) == "".join(f"{i} {j}\n" for i, j in zip(a.tolist(), b.tolist()))
    assert _format_rows_json(np.array([0]), np.array([], np.int64)) == "[]"
    assert _format_int_pairs([], []) == ""
