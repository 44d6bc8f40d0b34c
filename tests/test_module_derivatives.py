"""Derivatives of StableHLO modules and the injection passes, tested from the outside in.

Differential tests: the module (from the soundness suite, hand-written in the spec's style, the lit corpus)
goes through ``sparsity-jacobian`` / ``sparsity-hessian``; the injected function is compiled by XLA
directly (``importer.xla``) and compared with dense ``jax.jacfwd`` (``jax.hessian``) of the imported
function at random points: equal wherever the pattern says, and dense AD has no nonzero outside it.
"""

from __future__ import annotations

import functools
import io
import os
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import oracle
import stablehlo_sparsity as ss
from stablehlo_sparsity.api import parse_module
from stablehlo_sparsity.importer import import_module
from stablehlo_sparsity.importer.xla import run_module
from stablehlo_sparsity.passes.jacobian import inject_hessian, inject_jacobian, read_pattern
from stablehlo_sparsity.passes.pipeline import run_pipeline

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")
ROUNDOFF = 1e-12  # relative: entries of dense AD below this are exact cancellations' residue (strategies.py)


def _function(module, name):
    from jaxlib.mlir import ir

    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            return op
    raise KeyError(name)


def _float_wrt(f):
    return [i for i, t in enumerate(f.arg_types) if np.dtype(t.dtype).kind == "f"]


def _dense_jacobian(f, args, wrt):
    """(m, n) dense Jacobian of the imported function (rows: flattened results; columns: flattened wrt args)."""
    def g(*sel):
        full = list(args)
        for i, v in zip(wrt, sel):
            full[i] = v
        out = f(*full)
        outs = out if isinstance(out, tuple) else (out,)
        return jnp.concatenate([jnp.ravel(o).astype(jnp.float64) for o in outs]) if outs else jnp.zeros(0)

    J = jax.jit(jax.jacfwd(g, argnums=tuple(range(len(wrt)))))(*[args[i] for i in wrt])
    m = int(sum(t.size for t in f.result_types))
    return np.concatenate([np.asarray(b).reshape(m, -1) for b in J], axis=1)


def check_injected(module, entry="main", wrt="all", points=2 if LONG else 1, kind="jacobian", what=""):
    """Inject, compile the new function with XLA, compare with dense AD of the import; returns the pattern."""
    f = import_module(module, entry)
    if wrt == "all":
        wrt = _float_wrt(f)
    if not wrt:
        return None
    text = module.operation.get_asm(enable_debug_info=True)
    m = parse_module(text)
    wrt_opt = ",".join(map(str, wrt))
    opts = f"entry={entry} wrt={wrt_opt}"
    run_pipeline(m, f"builtin.module(sparsity-{kind}{{{opts}}})")
    name = f"{entry}_{kind}"
    info = read_pattern(_function(m, name))
    assert info["wrt"] == list(wrt) and info["entry"] == entry
    indptr, indices = info["indptr"], info["indices"]
    shape = info["shape"]
    pattern = np.zeros(shape, bool)
    rows = np.repeat(np.arange(shape[0]), np.diff(indptr))
    pattern[rows, indices] = True
    for k in range(points):
        args = f.random_args(k)
        if "stablehlo.cholesky" in oracle.module_ops(module):
            args = tuple(oracle._positive_definite(a) for a in args)
        (vals,) = run_module(m, list(args), entry=name)
        assert vals.shape == (info["nnz"],)
        if kind == "jacobian":
            dense = _dense_jacobian(f, args, wrt)
        else:
            dense = np.asarray(jax.hessian(lambda *s: jnp.reshape(f(*[s[wrt.index(i)] if i in wrt else a for i, a in
                                                                        enumerate(args)]), ()),
                                           argnums=tuple(range(len(wrt))))(*[args[i] for i in wrt]))
            dense = np.block([[np.asarray(dense[i][j]).reshape(
                int(np.prod(np.shape(args[wrt[i]]))), int(np.prod(np.shape(args[wrt[j]])))) for j in range(len(wrt))]
                for i in range(len(wrt))])
        assert dense.shape == tuple(shape), (dense.shape, shape)
        finite = np.isfinite(dense)
        if not finite.all():
            continue
        cut = ROUNDOFF * max(1.0, float(np.abs(dense).max(initial=0.0)))
        outside = np.argwhere((np.abs(dense) > cut) & ~pattern)
        assert outside.size == 0, f"{what}: dense AD has nonzeros outside the pattern at {outside[:5].tolist()}"
        want = dense[rows, indices]
        dt = np.dtype(f.result_types[0].dtype) if f.result_types else np.float64
        eps = float(np.finfo(dt if dt.kind == "f" else np.float64).eps)
        scale = np.maximum(np.abs(want), np.abs(dense).max(initial=1.0))
        err = np.abs(vals.astype(np.float64) - want)
        assert np.all(err <= 16 * np.sqrt(eps) * scale), f"{what}: injected values differ from dense AD by {err.max()}"
    return pattern


# ---------------------------------------------------------------------- the soundness suite's modules
def _cases():
    import test_soundness_suite as T

    return T.CASES


@pytest.mark.parametrize("name", sorted(_cases()))
def test_injected_jacobian_equals_dense_ad_on_the_soundness_suite(name):
    case = _cases()[name]
    f = functools.partial(case.f, **case.kwargs) if case.kwargs else case.f
    m = jax.jit(f, keep_unused=True).lower(*case.args).compiler_ir("stablehlo")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check_injected(m, what=name)
