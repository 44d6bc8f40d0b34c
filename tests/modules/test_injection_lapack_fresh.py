"""No input crashes the process: JAX's exported LAPACK modules, imported and run under ``jax.jit`` in a fresh
process that has run no JAX linear algebra (jaxlib fills its LAPACK kernel table lazily; a replayed
``lapack_*_ffi`` call used to run against the empty table and die with SIGSEGV).

One subprocess runs one back-compat module per LAPACK routine the importer replays (potrf, getrf, geqrf +
orgqr/ungqr, gesdd, syevd/heevd, geev, gees, gehrd, sytrd/hetrd, gtsv, trsm), the element types cycling
through s/d/c/z; ``SHS_LONG=1`` runs every element type of every routine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import paths
from injection_corpus import backcompat_cases

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")

_RUN = r"""
import json, sys
sys.path.insert(0, {tests!r})
import jax
jax.config.update("jax_enable_x64", True)
import numpy as np
import stablehlo_sparsity as ss
from injection_corpus import backcompat_cases

wanted = set(json.loads(sys.argv[1]))
for name, blob, inputs in backcompat_cases():
    if name not in wanted:
        continue
    print(json.dumps({{"start": name}}), flush=True)
    f = ss.import_module(blob)
    outs = jax.jit(f)(*inputs)
    outs = outs if isinstance(outs, tuple) else (outs,)
    print(json.dumps({{"done": name, "finite": [bool(np.all(np.isfinite(np.asarray(o)))) for o in outs]}}),
          flush=True)
"""


def _lapack_cases(every_dtype: bool) -> list[str]:
    cases = [name for name, _, _ in backcompat_cases() if name.startswith("cpu_")]
    if every_dtype:
        return cases
    routines: dict[str, list[str]] = {}
    for name in cases:
        routines.setdefault(name.split("[")[0], []).append(name)
    return [names[k % len(names)] for k, (_, names) in enumerate(sorted(routines.items()))]


def test_every_replayed_lapack_target_runs_in_a_fresh_process():
    names = _lapack_cases(every_dtype=LONG)
    assert len(names) >= 11
    script = _RUN.format(tests=str(paths.SUPPORT))
    env = dict(os.environ, JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", script, json.dumps(names)], capture_output=True, text=True,
                          timeout=600, env=env)
    lines = [json.loads(x) for x in proc.stdout.splitlines() if x.startswith("{")]
    done = [x["done"] for x in lines if "done" in x]
    started = [x["start"] for x in lines if "start" in x]
    crashed = started[len(done)] if len(started) > len(done) else None
    assert proc.returncode == 0, f"the process died (exit {proc.returncode}) on {crashed}: {proc.stderr[-800:]}"
    assert sorted(done) == sorted(names)


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_exported_cholesky_matches_its_expected_output(dtype):
    """JAX's exported ``lapack_?potrf_ffi`` module, imported, gives JAX's recorded result."""
    import jax
    import numpy as np

    import stablehlo_sparsity as ss
    from injection_corpus import BACKCOMPAT_PACKAGE
    import importlib

    data = importlib.import_module(f"{BACKCOMPAT_PACKAGE}.cpu_cholesky_lapack_potrf").data_2024_05_31[dtype]
    f = ss.import_module(data["mlir_module_serialized"])
    out = np.asarray(jax.jit(f)(*data["inputs"]))
    want = np.asarray(data["expected_outputs"][0])
    assert np.allclose(out, want, rtol=1e-4 if dtype == "f32" else 1e-10, atol=1e-4 if dtype == "f32" else 1e-10)
