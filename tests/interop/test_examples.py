"""Every recipe in ``examples/`` runs at a small size and gives the right answer (optional dependencies are
skipped cleanly: lineax/optimistix/diffrax, matplotlib, cyipopt)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import paths

EXAMPLES = paths.REPO / "examples"


def load(name):
    spec = importlib.util.spec_from_file_location(f"examples_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_example_has_a_test():
    tested = {"scipy_least_squares", "scipy_solve_ivp", "ipopt_nlp", "optimistix_newton", "diffrax_stiff",
              "prepared_objects"}
    assert {p.stem for p in EXAMPLES.glob("*.py")} == tested


def test_scipy_least_squares():
    r = load("scipy_least_squares").main(60, dense=True)
    assert set(r) == {"jac=", "jac_sparsity=", "dense"}
    for name in r:
        np.testing.assert_allclose(r[name]["cost"], r["dense"]["cost"], rtol=1e-6)
        np.testing.assert_allclose(r[name]["x"], r["dense"]["x"], atol=1e-6)
    assert r["jac="]["colors"] == 3


def test_scipy_solve_ivp_bdf_radau_and_linear_operator():
    r = load("scipy_solve_ivp").main(40, t_end=2.0)
    assert all(v.get("success", True) for v in r.values())
    np.testing.assert_allclose(r["BDF jac="]["y"], r["Radau jac="]["y"], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(r["BDF jac="]["y"], r["BDF jac_sparsity="]["y"], rtol=1e-6, atol=1e-8)
    assert r["implicit Euler, gmres"]["info"] == 0 and r["implicit Euler, gmres"]["residual"] < 1e-9


def test_ipopt_layout_without_cyipopt():
    lay = load("ipopt_nlp").layout(9)
    assert lay["jacobian_nnz"] == 3 * 7 and lay["hessian_lower_nnz"] < lay["hessian_lower_dense"]


def test_ipopt_solve():
    pytest.importorskip("cyipopt")
    r = load("ipopt_nlp").main(40)
    assert r["status"] == 0 and r["constraint_violation"] < 1e-7


def test_optimistix_newton_sparse_equals_dense():
    pytest.importorskip("optimistix")
    r = load("optimistix_newton").main(8, dense=True)
    assert r["sparse"]["residual"] < 1e-8 and r["sparse"]["steps"] == r["dense"]["steps"]
    np.testing.assert_allclose(r["sparse"]["u"], r["dense"]["u"], atol=1e-10)


def test_diffrax_kvaerno5_sparse_equals_dense():
    pytest.importorskip("diffrax")
    r = load("diffrax_stiff").main(4, dense=True)
    assert r["sparse"]["steps"] == r["dense"]["steps"]
    np.testing.assert_allclose(r["sparse"]["y"], r["dense"]["y"], rtol=1e-9, atol=1e-12)
    assert r["sparse"]["mass_error"] < 1e-9


def test_prepared_objects(tmp_path):
    r = load("prepared_objects").main(12, directory=str(tmp_path))
    np.testing.assert_allclose(r["loaded"], r["reference"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r["restored"], r["reference"], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(r["direction"], r["reference"] @ np.ones(12), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(r["blocks"]["residual"].todense()),
                               np.asarray(r["dense_blocks"]["residual"]), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(r["blocks"]["total"].todense()),
                               np.asarray(r["dense_blocks"]["total"]), rtol=1e-12)
    assert "●" in r["picture"]
