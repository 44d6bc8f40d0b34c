"""Pickles made before the package took its subsystem folders keep loading.

``tests/support/pickles/before_layout_move.pkl`` was written by the flat layout (classes named
``stablehlo_sparsity.jacobian.SparseJacobian``, ``stablehlo_sparsity.pattern.SparsityPattern`` …, jax 0.10.2): a
pattern, a coloring, a prepared Jacobian and a prepared Hessian of ``sin(x[1:]) * x[:-1] + x[1:] ** 2`` at 6 points.
They load through the package's alias table (``stablehlo_sparsity._legacy_paths``), come back as the classes at
their new paths, and evaluate to ``jax.jacfwd`` / ``jax.hessian``."""

from __future__ import annotations

import pickle
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np

import paths
import stablehlo_sparsity as ss
from stablehlo_sparsity._legacy_paths import MOVED

f = lambda x: jnp.sin(x[1:]) * x[:-1] + x[1:] ** 2  # noqa: E731
g = lambda x: jnp.sum(f(x) ** 2)  # noqa: E731


def _load():
    with open(paths.PICKLES / "before_layout_move.pkl", "rb") as fh:
        return pickle.load(fh)


def test_old_pickles_load_as_the_moved_classes_and_evaluate():
    objs = _load()
    assert type(objs["jacobian"]) is ss.SparseJacobian and type(objs["hessian"]) is ss.SparseHessian
    assert type(objs["pattern"]) is ss.SparsityPattern and type(objs["coloring"]) is ss.Coloring
    x = jnp.linspace(0.2, 0.9, 6, dtype=jnp.float32)
    assert objs["pattern"] == ss.jacobian_sparsity(f, x)
    np.testing.assert_allclose(np.asarray(objs["jacobian"](x).todense()), np.asarray(jax.jacfwd(f)(x)), atol=1e-5)
    np.testing.assert_allclose(np.asarray(objs["hessian"](x).todense()), np.asarray(jax.hessian(g)(x)), atol=1e-4)


def test_new_pickles_name_the_new_paths():
    blob = pickle.dumps(_load()["jacobian"])
    assert b"stablehlo_sparsity.derivatives.jacobian" in blob
    assert b"stablehlo_sparsity.jacobian\n" not in blob and b"\x8c\x1bstablehlo_sparsity.jacobian" not in blob


def test_old_paths_resolve_to_the_same_modules_in_a_fresh_process():
    script = ("import importlib, stablehlo_sparsity._legacy_paths as L\n"
              "for old, new in L.MOVED.items():\n"
              "    assert importlib.import_module(old) is importlib.import_module(new), old\n"
              "print('ok', len(L.MOVED))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.split() == ["ok", str(len(MOVED))], out.stderr[-2000:]


def test_patterns_pickled_while_they_sat_in_analysis_load():
    """``SparsityPattern`` sat in ``analysis/pattern.py`` until the IR toolkit left ``analysis/`` (issue 50)."""
    p = ss.jacobian_sparsity(f, jnp.ones(6))
    # (protocol 2 names a class by its text, module and name each ending in a newline: no length to adjust)
    old = pickle.dumps(p, protocol=2).replace(b"stablehlo_sparsity.lattice.pattern\n",
                                              b"stablehlo_sparsity.analysis.pattern\n")
    assert b"stablehlo_sparsity.analysis.pattern" in old
    back = pickle.loads(old)
    assert type(back) is ss.SparsityPattern and back == p
