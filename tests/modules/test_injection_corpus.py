"""The differential corpus of injected derivatives (``tests/support/injection_corpus.py``): ``--sparsity-jacobian`` on
each module, ``@main_jacobian`` compiled by XLA directly in a fresh process, its values against central
finite differences of XLA's execution of the original module at two points, and no platform-specific
custom call the input lacked.

* the hand-written modules of ``tests/support/injection_inputs/`` (issue 24's four cases, issue 25's bf16 ones) and a
  stride sample of JAX's shipped back-compat modules (CPU and platform-neutral ones) run in one worker;
* openxla/stablehlo's testdata (2,331 modules, not in this repository) runs with ``SHS_LONG=1`` and
  ``SHS_STABLEHLO_TESTDATA=/path/to/stablehlo/testdata``.
"""

from __future__ import annotations

import glob
import os

import pytest

from injection_corpus import backcompat_cases, run_workers, summarize
import paths

INPUTS = sorted(glob.glob(os.path.join(paths.INJECTION_INPUTS, "*.mlir")))
LONG = os.environ.get("SHS_LONG", "") not in ("", "0")
TESTDATA = os.environ.get("SHS_STABLEHLO_TESTDATA", "")

#: statuses that are bugs: a dead worker, a custom call the input lacked, a wrong value, an exception
BAD = ("crash", "timeout", "foreign", "mismatch", "error")

#: the injected function of a window reduction stays a few window ops whatever the window size
#: (reduce_window_min_wide: 15,658 ops before, a 401-tap chain)
MAX_INJECTED_OPS = {"reduce_window_min_wide": 100, "reduce_window_product_wide": 200}


#: always in the sample: the issue's two LAPACK cases (JAX's exported Cholesky and triangular solve), and issue
#: 21's SVD and tridiagonal solve (differentiated with JAX's derivatives)
ALWAYS = ["cpu_cholesky_lapack_potrf.data_2024_05_31[f64]", "cpu_triangular_solve_blas_trsm.data_2025_10_20[f32]",
          "cpu_svd_lapack_gesdd.data_2024_08_13[f32]", "cpu_tridiagonal_solve_lapack_gtsv.data_2025_01_09[f64]"]
#: refused with a reason naming the target: JAX defines no derivative for the Schur decomposition
REFUSED = {"cpu_schur_lapack_gees.data_2024_11_29[f64]": "'lapack_dgees_ffi' has no derivative rule: JAX defines "
                                                         "no derivative"}


def _sample() -> list[str]:
    names = [n for n, _, _ in backcompat_cases()]
    stride = 1 if LONG else max(1, len(names) // 5)
    return list(dict.fromkeys(ALWAYS + list(REFUSED) + names[::stride]))


@pytest.fixture(scope="module")
def results():
    out = run_workers(INPUTS + _sample(), per_process=100)
    return {r["name"]: r for r in out}


def test_hand_written_modules_are_portable_exact_and_compact(results):
    names = [os.path.basename(p)[:-5] for p in INPUTS]
    assert len(names) >= 8
    for name in names:
        r = results[name]
        assert r["status"] == "ok", r
        if name in MAX_INJECTED_OPS:
            assert r["injected_ops"] <= MAX_INJECTED_OPS[name], r


def test_backcompat_sample_has_no_crash_foreign_call_or_wrong_value(results):
    sample = _sample()
    assert len(sample) >= 5
    got = [results[n] for n in sample]
    bad = [r for r in got if r["status"] in BAD]
    assert not bad, summarize(got)
    assert all(results[n]["status"] == "ok" for n in ALWAYS), summarize(got)
    for name, reason in REFUSED.items():
        assert results[name]["status"] == "refused" and reason in results[name]["detail"], results[name]


@pytest.mark.skipif(not LONG or not TESTDATA,
                    reason="the openxla/stablehlo testdata corpus runs with SHS_LONG=1 and "
                           "SHS_STABLEHLO_TESTDATA=/path/to/stablehlo/testdata (it is not in this repository)")
def test_openxla_testdata_corpus():
    paths = sorted(glob.glob(os.path.join(TESTDATA, "*.mlir")))
    assert paths, f"no .mlir files in {TESTDATA}"
    out = run_workers(paths)
    bad = [r for r in out if r["status"] in BAD]
    assert not bad, summarize(out)
