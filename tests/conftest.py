"""The test suite mirrors the package: ``tests/<subsystem>/`` (op families under ``tests/analysis/rules/``), with
the shared helpers, strategies, oracles and corpora in ``tests/support/``.  Test modules import the support modules
(``helpers``, ``oracle``, ``strategies``, ``injection_corpus``) and, now and then, one another by name: every folder
of the suite is on ``sys.path``."""

import os
import sys

import jax

TESTS = os.path.dirname(os.path.abspath(__file__))
for _dirpath, _dirs, _files in sorted(os.walk(TESTS)):
    _dirs[:] = [d for d in _dirs if d not in ("__pycache__", "hostile", "injection_inputs", "xla_crashes")]
    if _dirpath not in sys.path:
        sys.path.insert(0, _dirpath)

# Soundness checks compare against float64 Jacobians.
jax.config.update("jax_enable_x64", True)
