"""Patterns that would not fit: the memory-derived default limit, ``--max-pattern-nnz``, the error's stated cost,
and the driver's streaming emitters (their text, chunk by chunk, equals the pattern).

How much memory detection and the emitters take per nonzero is measured by ``benchmarks/memory.py``, not
asserted here.
"""

import json
import re
import subprocess
import sys

import numpy as np
import pytest
import scipy.io

import stablehlo_sparsity as ss
from stablehlo_sparsity.tools import driver
from stablehlo_sparsity.lattice import budget
from stablehlo_sparsity.errors import PatternTooLargeError
from stablehlo_sparsity.analysis.interpreter import AnalysisOptions

BROADCAST = """
func.func @main(%a: tensor<4xf32>) -> tensor<8x4xf32> {
  %0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
"""

# rows of every kind: one dependency, a dense row, empty rows, and rows of several lengths
MIXED = """
func.func @main(%a: tensor<12xf32>) -> (tensor<12xf32>, tensor<f32>, tensor<3xf32>, tensor<11xf32>) {
  %0 = stablehlo.multiply %a, %a : tensor<12xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %1 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [0] : (tensor<12xf32>, tensor<f32>) -> tensor<f32>
  %2 = stablehlo.constant dense<1.0> : tensor<3xf32>
  %l = stablehlo.slice %a [0:11] : (tensor<12xf32>) -> tensor<11xf32>
  %r = stablehlo.slice %a [1:12] : (tensor<12xf32>) -> tensor<11xf32>
  %3 = stablehlo.add %l, %r : tensor<11xf32>
  return %0, %1, %2, %3 : tensor<12xf32>, tensor<f32>, tensor<3xf32>, tensor<11xf32>
}
"""


# ---------------------------------------------------------------------------------------------- the default
def test_default_limit_follows_the_available_memory(monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: 16 * 2**30)
    want = int(16 * 2**30 * budget.MEMORY_FRACTION) // budget.BYTES_PER_NONZERO
    assert budget.default_max_pattern_nnz() == want
    assert AnalysisOptions().max_pattern_nnz == want
    assert AnalysisOptions(max_pattern_nnz=7).max_pattern_nnz == 7  # an explicit limit wins
    monkeypatch.setattr(budget, "available_memory", lambda: 1000)
    assert budget.default_max_pattern_nnz() == budget.MIN_DEFAULT_MAX_PATTERN_NNZ
    monkeypatch.setattr(budget, "available_memory", lambda: None)
    assert budget.default_max_pattern_nnz() == budget.FALLBACK_MAX_PATTERN_NNZ


def test_default_limit_can_be_set_for_a_block():
    with budget.default_pattern_limit(5):
        assert AnalysisOptions().max_pattern_nnz == 5
        with pytest.raises(PatternTooLargeError, match="max_pattern_nnz=5"):
            ss.analyze_module(BROADCAST)
    assert AnalysisOptions().max_pattern_nnz == budget.default_max_pattern_nnz()


def test_available_memory_is_read_from_the_system():
    avail = budget.available_memory()
    if avail is None:
        pytest.skip("no /proc/meminfo or sysconf on this system")
    assert 0 < avail < 2**50


def test_error_states_the_cost(monkeypatch):
    monkeypatch.setattr(budget, "available_memory", lambda: 8 * 2**30)
    e = budget.too_large("the outputs have", 10**10, 10**9, unit="elements")
    text = str(e)
    per = budget.BYTES_PER_NONZERO
    assert f"{per} bytes per entry" in text and f"{10**10 * per / 2**30:,.1f} GiB" in text
    assert "8.0 GiB available now" in text and "--max-pattern-nnz" in text and "max_pattern_nnz=1,000,000,000" in text
    e = budget.too_large("a value would need", 3 * 2**20, 10, unit="nonzeros")
    assert f"{per} bytes per nonzero at its peak: {3 * per} MiB" in str(e)


def test_a_cumulative_sum_above_the_limit_is_refused_before_its_windows_are_allocated():
    """``jnp.cumsum`` lowers to a ``reduce_window`` whose window is the whole axis: its table of taps is ``n²``
    entries (n = 10⁵ asked NumPy for 75 GiB, a raw ``MemoryError``); above the budget it is the library's error."""
    import jax.numpy as jnp

    options = AnalysisOptions(max_pattern_nnz=10_000)
    with pytest.raises(PatternTooLargeError, match=r"the windows of a reduce_window would need 40,000 nonzeros, "
                                                   r"above the limit max_pattern_nnz=10,000"):
        ss.jacobian_sparsity(jnp.cumsum, jnp.ones(200), options=options)
    assert ss.jacobian_sparsity(jnp.cumsum, jnp.ones(100), options=options).nnz == 5050


# ---------------------------------------------------------------------------------------------- the driver
def run_main(capsys, *args):
    code = driver.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_driver_max_pattern_nnz(tmp_path, capsys):
    path = tmp_path / "b.mlir"
    path.write_text(BROADCAST)
    code, out, err = run_main(capsys, str(path), "--emit=pattern", "--max-pattern-nnz=16")
    assert code == 1 and out == ""
    assert re.search(r"b\.mlir:\d+:\d+: error: .*above the limit max_pattern_nnz=16 ", err), err
    assert "Traceback" not in err
    code, out, err = run_main(capsys, str(path), "--emit=pattern", "--max-pattern-nnz=32")
    assert code == 0 and out.splitlines()[2] == "32 4 32"
    # the limit also reaches the passes (their options use the default the flag sets)
    code, out, err = run_main(capsys, str(path), "--sparsity-annotate", "--max-pattern-nnz=16")
    assert code == 1 and "max_pattern_nnz=16" in err
    code, out, err = run_main(capsys, str(path), "--sparsity-annotate", "--max-pattern-nnz=32")
    assert code == 0 and "sparsity." in out


@pytest.mark.parametrize("value", ["-3", "lots", "1.5"])
def test_driver_rejects_bad_limits(tmp_path, capsys, value):
    path = tmp_path / "b.mlir"
    path.write_text(BROADCAST)
    code, out, err = run_main(capsys, str(path), "--emit=pattern", f"--max-pattern-nnz={value}")
    assert code == 1 and "--max-pattern-nnz" in err and "non-negative integer" in err


def test_driver_refuses_a_pattern_above_the_memory_with_a_diagnostic(tmp_path):
    """10¹⁰ differentiated inputs under the memory-derived default: exit 1 and one diagnostic, at once."""
    path = tmp_path / "huge.mlir"
    path.write_text("""
func.func @main(%a: tensor<100000x100000xf32>) -> tensor<100000x100000xf32> {
  %0 = stablehlo.sine %a : tensor<100000x100000xf32>
  return %0 : tensor<100000x100000xf32>
}
""")
    r = subprocess.run([sys.executable, "-m", "stablehlo_sparsity.tools.driver", str(path), "--emit=pattern"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and r.stdout == ""
    assert "error: the differentiated inputs have 10,000,000,000 elements, above the limit" in r.stderr
    assert "bytes per entry" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------------------------------------- streaming
@pytest.fixture
def mixed(tmp_path):
    path = tmp_path / "mixed.mlir"
    path.write_text(MIXED)
    return path, ss.analyze_module(MIXED).pattern


@pytest.mark.parametrize("chunk", [1, 2, 5, 1 << 16])
def test_streamed_matrix_market_is_the_pattern(mixed, tmp_path, monkeypatch, chunk):
    path, pattern = mixed
    assert pattern.shape == (27, 12) and pattern.nnz == 12 + 12 + 22
    monkeypatch.setattr(driver, "EMIT_CHUNK", chunk)
    out = tmp_path / "p.mtx"
    assert driver.main([str(path), "--emit=pattern", "-o", str(out)]) == 0
    got = scipy.io.mmread(str(out))
    assert got.shape == pattern.shape
    assert np.array_equal(got.toarray() != 0, pattern.todense())
    lines = out.read_text().splitlines()
    assert lines[2] == "27 12 46" and len(lines) == 3 + 46


@pytest.mark.parametrize("chunk", [1, 3, 1 << 16])
def test_streamed_json_is_the_pattern(mixed, capsys, monkeypatch, chunk):
    path, pattern = mixed
    monkeypatch.setattr(driver, "EMIT_CHUNK", chunk)
    code, out, err = run_main(capsys, str(path), "--emit=json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["shape"] == [27, 12] and doc["nnz"] == 46
    csr = pattern.to_scipy()
    assert doc["rows"] == [csr.indices[csr.indptr[i]:csr.indptr[i + 1]].tolist() for i in range(27)]
    assert doc["rows"][13:16] == [[], [], []] and doc["rows"][12] == list(range(12))


def test_streamed_output_is_the_same_text_for_any_chunk(mixed, monkeypatch, capsys):
    path, _ = mixed
    texts = set()
    for chunk in (1, 4, 1 << 16):
        monkeypatch.setattr(driver, "EMIT_CHUNK", chunk)
        for emit in ("pattern", "json"):
            code, out, _ = run_main(capsys, str(path), f"--emit={emit}")
            assert code == 0
            texts.add((emit, out))
    assert len(texts) == 2


def test_split_input_file_streams_each_chunk_with_separators(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(driver, "EMIT_CHUNK", 2)
    path = tmp_path / "s.mlir"
    path.write_text(MIXED + "\n// -----\n" + BROADCAST)
    code, out, err = run_main(capsys, str(path), "--emit=pattern", "--split-input-file")
    assert code == 0, err
    first, second = out.split("// -----\n")
    assert first.splitlines()[2] == "27 12 46" and second.splitlines()[2] == "32 4 32"


def test_unwritable_output_is_an_error(tmp_path, capsys):
    path = tmp_path / "b.mlir"
    path.write_text(BROADCAST)
    code, out, err = run_main(capsys, str(path), "--emit=pattern", "-o", str(tmp_path / "missing" / "out.mtx"))
    assert code == 1 and "could not write output file" in err


@pytest.mark.parametrize("chunk", [1, 7, 1 << 20])
def test_picture_bins_every_nonzero(monkeypatch, chunk):
    import scipy.sparse as sp

    from stablehlo_sparsity.lattice import pattern as pattern_module

    monkeypatch.setattr(pattern_module, "PICTURE_CHUNK", chunk)
    for seed, shape in enumerate([(300, 200), (5, 7), (64, 1), (1, 90)]):
        p = ss.SparsityPattern(sp.random_array(shape, density=0.03, format="csr", rng=seed) != 0)
        m, n = shape
        rb, cb = max(1, -(-m // 32)), max(1, -(-n // 64))
        r, c = np.nonzero(p.todense())
        grid = np.zeros((-(-m // rb), -(-n // cb)), bool)
        grid[r // rb, c // cb] = True
        lines = p.picture().splitlines()[:grid.shape[0]]
        assert lines == ["".join("●" if v else "⋅" for v in row) for row in grid]
