"""``benchmarks/device_check.py``, the one-command device check (issue 49): its quick run passes on this machine in
a fresh process — CI's run of it, on CPU, with the sharded problem on two virtual devices in its own subprocess —
its JSON says what ran where and how it compared, and a failing problem fails the command with one line."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "device_check.py"
PROBLEMS = ["brusselator", "laplacian3d", "hessian", "bcoo_smvm", "sharded"]


def _load_script():
    """The script as a module (registered before it runs: its dataclasses look their module up)."""
    spec = importlib.util.spec_from_file_location("benchmarks_device_check", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_quick_run_passes_on_cpu_and_its_json_says_what_ran_where(tmp_path):
    # one run for every assertion: under pytest-xdist a module fixture would run once per worker
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="2")
    out = tmp_path / "device_check.json"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--json", str(out)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(out.read_text())
    assert report["passed"] is True and report["failures"] == []
    assert report["backend"] == "cpu" and report["device_count"] == 1 and report["quick"] is True
    assert {"python", "jax", "jaxlib", "stablehlo_sparsity", "numpy", "scipy"} <= set(report["versions"])
    assert [p["name"] for p in report["problems"]] == PROBLEMS
    for p in report["problems"]:
        assert p["status"] == "passed", p
        assert p["check"]["ok"] and p["dense"]["missed_nonzeros"] == 0 and p["dense"]["max_rel_diff"] <= 1e-4, p
        t = p["timings_s"]
        assert all(t[k] > 0 for k in ("detection", "preparation", "first_call", "evaluation", "primal", "dense")), t
        assert p["nnz"] > 0 and p["colors"] >= 1 and p["ratios"]["dense_over_evaluation"] > 0
    by_name = {p["name"]: p for p in report["problems"]}
    assert by_name["hessian"]["kind"] == "hessian" and by_name["hessian"]["dense_reference"] == "jax.hessian"
    assert by_name["bcoo_smvm"]["closed_form_max_rel_diff"] <= 1e-6
    sharded = by_name["sharded"]
    assert sharded["devices_used"] == 2 and sharded["subprocess"]["devices"] == ["cpu:0", "cpu:1"]
    assert sharded["one_device_max_rel_diff"] <= 1e-4
    assert "| brusselator |" in proc.stdout and "device_check: FAIL" not in proc.stderr


def test_a_failing_problem_fails_the_command_with_one_line_per_failure(tmp_path, monkeypatch, capsys):
    dc = _load_script()

    def broken(*args, **kwargs):
        raise RuntimeError("simulated device fault\nsecond line that must not be printed")

    monkeypatch.setattr(dc, "run_problem", broken)
    out = tmp_path / "report.json"
    assert dc.main(["--only", "bcoo_smvm", "--json", str(out)]) == 1
    report = json.loads(out.read_text())
    assert report["passed"] is False
    assert report["failures"] == ["bcoo_smvm: RuntimeError: simulated device fault"]
    err = capsys.readouterr().err
    assert "device_check: FAIL bcoo_smvm: RuntimeError: simulated device fault\n" in err and "second line" not in err


def test_each_disagreement_is_a_failure_with_its_reason():
    dc = _load_script()
    good = {"kind": "jacobian", "check": {"ok": True, "message": ""}, "dense_reference": "jax.jacfwd",
            "dense": {"max_rel_diff": 1e-7, "missed_nonzeros": 0}}
    assert dc.failure(good, 1e-4) is None
    assert "check_jacobian failed: off" in dc.failure({**good, "check": {"ok": False, "message": "off"}}, 1e-4)
    assert "3 nonzeros outside" in dc.failure({**good, "dense": {"max_rel_diff": 0.0, "missed_nonzeros": 3}}, 1e-4)
    assert "differ from jax.jacfwd" in dc.failure({**good, "dense": {"max_rel_diff": 1e-3, "missed_nonzeros": 0}},
                                                  1e-4)
    assert "the closed form" in dc.failure({**good, "closed_form_max_rel_diff": 0.5}, 1e-4)
    assert "one-device values" in dc.failure({**good, "one_device_max_rel_diff": 0.5}, 1e-4)
