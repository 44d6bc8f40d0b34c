"""LAPACK custom calls through the importer: replayed for values (bit for bit against XLA's execution of the
module, and against the ``expected_outputs`` JAX ships with its export back-compat modules), differentiated
with JAX's linear-algebra derivatives (``gesdd`` → ``svd``, ``gtsv`` → ``tridiagonal_solve``, QR's ``geqrf`` +
``orgqr`` through a JAX transcription of LAPACK's Householder steps), and refused with a reason naming the
target where JAX has no derivative (Schur, Hessenberg, tridiagonal reduction) or the module reads LAPACK's
scratch.  The custom-call table (:mod:`stablehlo_sparsity.ir.custom_calls`) is the one both the analysis and the
importer read.

The derivative against central finite differences of XLA's execution of the original module, in a fresh
process, is ``tests/modules/test_injection_corpus.py`` (its sample includes the ``gesdd``, ``gtsv`` and ``gees``
back-compat modules).
"""

from __future__ import annotations

import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from injection_corpus import backcompat_cases
from stablehlo_sparsity.ir.custom_calls import FAMILIES, all_targets, family_of
from stablehlo_sparsity.modules.importer.core import ImportError_
from stablehlo_sparsity.modules.importer.replay import REPLAY_JVPS
from stablehlo_sparsity.analysis.rules.custom_call import ANALYSIS_RULES, CUSTOM_CALL_TARGETS


LONG = os.environ.get("SHS_LONG", "") not in ("", "0")


@pytest.fixture(scope="module")
def cases():
    return {name: (blob, inputs) for name, blob, inputs in backcompat_cases() if name.startswith("cpu_")}


def _expected(name):
    """``expected_outputs`` of a back-compat case name ``module.attr[key]``."""
    import importlib

    from injection_corpus import BACKCOMPAT_PACKAGE

    mod_name, rest = name.split(".", 1)
    attr, key = rest[:-1].split("[")
    data = getattr(importlib.import_module(f"{BACKCOMPAT_PACKAGE}.{mod_name}"), attr)
    return data[key]["expected_outputs"] if key in data else data["expected_outputs"]


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


# ---------------------------------------------------------------------------------------------- the table
def test_every_target_the_analysis_knows_is_replayable_or_refused_with_a_reason():
    import stablehlo_sparsity.modules.importer  # noqa: F401  (registers the importer's JVPs)

    assert list(CUSTOM_CALL_TARGETS) == all_targets()
    for target in CUSTOM_CALL_TARGETS:
        fam = family_of(target)
        assert fam is not None and fam.analysis in ANALYSIS_RULES, target
        handled = fam.sharding_marker or fam.zero_derivative or (fam.jvp is not None and fam.jvp in REPLAY_JVPS)
        assert handled or (fam.refused and len(fam.refused) > 20), target
        assert not (fam.jvp and fam.refused), target
        assert bool(fam.jvp) == bool(fam.jax_function), target
    assert len({t for f in FAMILIES for t in f.targets}) == sum(len(f.targets) for f in FAMILIES)


def test_the_lapack_routines_of_the_issue_are_differentiated_or_refused_by_name():
    for routine in ("geqrf", "orgqr", "gesdd", "gtsv"):
        fam = family_of(f"lapack_d{routine}_ffi")
        assert fam is not None and fam.jvp == routine
    assert family_of("lapack_zungqr_ffi").jvp == "orgqr"
    for routine, what in (("gees", "Schur"), ("gehrd", "Hessenberg"), ("sytrd", "tridiagonal reduction")):
        assert what in family_of(f"lapack_s{routine}_ffi").refused


# ---------------------------------------------------------------------------------------------- values
#: outputs determined up to rounding (eigen- and Schur vectors are determined up to a phase only, and the
#: shipped ``expected_outputs`` were computed by another LAPACK build: those are checked against XLA only)
UNIQUE = ("cpu_cholesky", "cpu_lu", "cpu_qr", "cpu_svd", "cpu_hessenberg", "cpu_tridiagonal", "cpu_triangular")


def test_replayed_back_compat_modules_reproduce_xla_and_the_expected_outputs(cases):
    from stablehlo_sparsity.modules.importer.xla import run_module
    from stablehlo_sparsity.ir.parsing import as_module

    checked = 0
    routines: dict[str, list[str]] = {}
    for name in sorted(cases):
        routines.setdefault(name.split("[")[0], []).append(name)
    # one element type per routine, cycling through them (every one with SHS_LONG=1)
    names = sorted(cases) if LONG else [ns[k % len(ns)] for k, (_, ns) in enumerate(sorted(routines.items()))]
    for name in names:
        blob, inputs = cases[name]
        f = ss.import_module(blob)
        with jax.enable_x64(True):
            got = [np.asarray(o) for o in _tuple(jax.jit(f)(*inputs))]
        module = as_module(blob)
        with module.context:
            text = module.operation.get_asm(enable_debug_info=False)
        for g, r in zip(got, run_module(text, inputs), strict=True):
            np.testing.assert_array_equal(g, r, err_msg=name)
        if name.startswith(UNIQUE):
            for g, e in zip(got, _expected(name), strict=True):
                tol = 1e-5 if np.asarray(e).dtype in (np.float32, np.complex64) else 1e-12
                np.testing.assert_allclose(g, e, rtol=tol, atol=tol * 10, err_msg=name)
        checked += 1
    assert checked >= 11


# ---------------------------------------------------------------------------------------------- derivatives
def _lowered(fn, x):
    text = jax.jit(fn).lower(x).as_text()
    return text, sorted(set(re.findall(r"@(lapack_\w+)", text)))


QR_SVD = [
    ("qr complete 4x3 f64", lambda x: jnp.linalg.qr(x, mode="complete"), (4, 3), np.float64, ("geqrf", "orgqr")),
    ("svd reduced 4x3 f64", lambda x: jnp.linalg.svd(x, full_matrices=False), (4, 3), np.float64, ("gesdd",)),
]
QR_SVD_LONG = [
    ("qr batched 3x5 f32", lambda x: jnp.linalg.qr(x), (2, 3, 5), np.float32, ("geqrf", "orgqr")),
    ("qr reduced 5x3 f32", lambda x: jnp.linalg.qr(x), (5, 3), np.float32, ("geqrf", "orgqr")),
    ("qr r 3x5 f64", lambda x: jnp.linalg.qr(x, mode="r"), (3, 5), np.float64, ("geqrf",)),
    ("svd reduced batched f32", lambda x: jnp.linalg.svd(x, full_matrices=False), (2, 3, 4), np.float32,
     ("gesdd",)),
    ("svd values 3x5 f64", lambda x: jnp.linalg.svd(x, compute_uv=False), (3, 5), np.float64, ("gesdd",)),
    ("svd full square f64", lambda x: jnp.linalg.svd(x), (3, 3), np.float64, ("gesdd",)),
    ("svd qr algorithm f64", lambda x: jax.lax.linalg.svd(x, full_matrices=False,
                                                          algorithm=jax.lax.linalg.SvdAlgorithm.QR),
     (5, 3), np.float64, ("gesvd",)),
]


@pytest.mark.parametrize("name,fn,shape,dtype,routines", QR_SVD + (QR_SVD_LONG if LONG else []),
                         ids=[c[0] for c in QR_SVD + (QR_SVD_LONG if LONG else [])])
def test_jax_lowered_qr_and_svd_import_with_jax_derivatives(name, fn, shape, dtype, routines):
    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    with jax.enable_x64(True):
        text, targets = _lowered(fn, x)
        assert all(any(r in t for t in targets) for r in routines), targets
        f = ss.import_module(text)
        for got, ref in zip(_tuple(jax.jit(f)(x)), _tuple(jax.jit(fn)(x)), strict=True):
            np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
        tol = 1e-12 if dtype == np.float64 else 2e-5
        for got, ref in zip(_tuple(jax.jit(jax.jacfwd(f))(x)), _tuple(jax.jacfwd(fn)(x)), strict=True):
            np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=tol, atol=tol)


def test_householder_transcriptions_match_lapack():
    from jax._src.lax import linalg as lax_linalg

    from stablehlo_sparsity.modules.importer.linalg import geqrf_reference, orgqr_reference

    rng = np.random.default_rng(1)
    with jax.enable_x64(True):
        for shape, dtype in (((3, 5), np.float64), ((2, 4, 3), np.complex128)):
            a = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if dtype == np.complex128 else 0)
            a = a.astype(dtype)
            packed, taus = lax_linalg.geqrf(a)
            mine_packed, mine_taus = jax.jit(geqrf_reference)(a)
            np.testing.assert_allclose(mine_packed, packed, atol=1e-13)
            np.testing.assert_allclose(mine_taus, taus, atol=1e-13)
            k = min(shape[-2:])
            np.testing.assert_allclose(orgqr_reference(packed[..., :k], taus),
                                       lax_linalg.householder_product(packed[..., :k], taus), atol=1e-13)


@pytest.mark.parametrize("which", ["cpu_tridiagonal_solve_lapack_gtsv.data_2025_01_09[f64]"]
                         + (["cpu_svd_lapack_gesdd.data_2024_08_13[f64]"] if LONG else []))
def test_sparse_jacobian_of_back_compat_module_matches_jax(cases, which):
    blob, inputs = cases[which]
    with jax.enable_x64(True):
        f = ss.import_module(blob)
        sj = ss.sparse_jacobian_module(blob, output="dense", wrt="all")
        got = np.asarray(sj(*inputs))
        wrt = tuple(range(len(inputs)))
        blocks = _tuple(jax.jacfwd(lambda *a: _tuple(f(*a)), argnums=wrt)(*inputs))
        outs = _tuple(f(*inputs))
        rows = [np.concatenate([np.asarray(b).reshape(np.size(o), -1) for b in _tuple(blk)], axis=1)
                for o, blk in zip(outs, blocks)]
        ref = np.concatenate(rows, axis=0)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------------------------- refusals
@pytest.mark.parametrize("fn,target,what", [
    (lambda x: jax.lax.linalg.hessenberg(x), "gehrd", "Hessenberg"),
    (lambda x: jax.lax.linalg.tridiagonal(x + x.T), "sytrd", "tridiagonal reduction"),
])
def test_derivatives_jax_does_not_define_are_refused_naming_the_target(fn, target, what):
    x = np.random.default_rng(2).standard_normal((4, 4))
    with jax.enable_x64(True):
        text, _ = _lowered(fn, x)
        f = ss.import_module(text)
        for got, ref in zip(_tuple(jax.jit(f)(x)), _tuple(jax.jit(fn)(x)), strict=True):  # values replay
            np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
        with pytest.raises(ImportError_, match=rf"lapack_d{target}_ffi.*{what}"):
            jax.jacfwd(lambda a: _tuple(f(a))[0])(x)


def test_schur_back_compat_module_is_refused_naming_the_target(cases):
    blob, inputs = cases["cpu_schur_lapack_gees.data_2024_11_29[f32]"]
    f = ss.import_module(blob)
    with pytest.raises(ImportError_, match=r"lapack_sgees_ffi.*Schur decomposition \(lax.linalg.schur\)"):
        jax.jacfwd(lambda a: _tuple(f(a))[0])(*inputs)


#: JAX's CPU lowering of ``jnp.linalg.svd(a, compute_uv=False)``, returning LAPACK's scratch too: ``gesdd`` with
#: ``mode = N`` (78) overwrites its input (result 0) and leaves ``u`` / ``vt`` (results 2, 3) unset
SVD_READING_SCRATCH = """
func.func public @main(%arg0: tensor<3x3xf64>) -> (tensor<3xf64>, tensor<3x3xf64>) {
  %0:5 = stablehlo.custom_call @lapack_dgesdd_ffi(%arg0) {mhlo.backend_config = {mode = 78 : ui8},
      mhlo.frontend_attributes = {num_batch_dims = "0"}, operand_layouts = [dense<[0, 1]> : tensor<2xindex>],
      output_operand_aliases = [#stablehlo.output_operand_alias<output_tuple_indices = [0], operand_index = 0,
                                                                operand_tuple_indices = []>],
      result_layouts = [dense<[0, 1]> : tensor<2xindex>, dense<0> : tensor<1xindex>,
                        dense<[0, 1]> : tensor<2xindex>, dense<[0, 1]> : tensor<2xindex>, dense<> : tensor<0xindex>]}
      : (tensor<3x3xf64>) -> (tensor<3x3xf64>, tensor<3xf64>, tensor<3x3xf64>, tensor<3x3xf64>, tensor<i32>)
  return %0#1, %0#RESULT : tensor<3xf64>, tensor<3x3xf64>
}
"""


@pytest.mark.parametrize("result", [0, 2])
def test_a_module_reading_lapack_scratch_has_no_derivative(result):
    x = np.random.default_rng(3).standard_normal((3, 3))
    f = ss.import_module(SVD_READING_SCRATCH.replace("RESULT", str(result)))
    with jax.enable_x64(True):
        np.testing.assert_allclose(f(x)[0], np.linalg.svd(x, compute_uv=False), rtol=1e-12)  # values replay
        with pytest.raises(ImportError_, match="lapack_dgesdd_ffi.*scratch"):
            jax.jacfwd(lambda a: f(a)[0])(x)
    g = ss.import_module(SVD_READING_SCRATCH.replace(", %0#RESULT", "").replace(", tensor<3x3xf64>)", ")")
                         .replace(": tensor<3xf64>, tensor<3x3xf64>", ": tensor<3xf64>"))
    with jax.enable_x64(True):
        np.testing.assert_allclose(jax.jacfwd(g)(x), jax.jacfwd(lambda a: jnp.linalg.svd(a, compute_uv=False))(x),
                                   rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", [(3, 5)] + ([(4, 3), (2, 3, 3)] if LONG else []))
def test_sparse_jacobian_of_jax_lowered_qr_matches_jax(shape):
    """The analysis's exact ``geqrf`` / ``orgqr`` rules against JAX's QR derivative: no nonzero outside the
    detected pattern (the compressed Jacobian would miss it), every value equal."""
    x = np.random.default_rng(4).standard_normal(shape)

    def fn(a):
        return jnp.linalg.qr(a, mode="complete")

    with jax.enable_x64(True):
        text, _ = _lowered(fn, x)
        sj = ss.sparse_jacobian_module(text, output="dense")
        got = np.asarray(sj(x))
        ref = np.concatenate([np.asarray(b).reshape(-1, x.size) for b in jax.jacfwd(fn)(x)], axis=0)
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-10)
    assert np.count_nonzero(got) < got.size  # R's structure is detected, not dense


def test_complex_qr_jvp_matches_jax():
    """``zgeqrf`` + ``zungqr``: the Householder transcription's complex conventions (``zlarfg``: real ``beta``,
    ``Hᴴ`` applied with ``conj(tau)``) give JAX's QR derivative."""
    rng = np.random.default_rng(5)

    def c(shape):
        return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)

    def fn(a):
        return jnp.linalg.qr(a)

    x, v = c((3, 5)), c((3, 5))
    with jax.enable_x64(True):
        text, targets = _lowered(fn, x)
        assert targets == ["lapack_zgeqrf_ffi", "lapack_zungqr_ffi"]
        f = ss.import_module(text)
        for got, ref in zip(jax.jvp(f, (x,), (v,))[1], jax.jvp(fn, (x,), (v,))[1], strict=True):
            np.testing.assert_allclose(np.asarray(got), np.asarray(ref), rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(not LONG, reason="XLA compiles a nested Householder loop for ~4 s: SHS_LONG=1")
def test_second_derivatives_through_replayed_qr_match_jax():
    """Hessians differentiate the replayed kernel's JVP once more (the Householder transcription included)."""
    x = np.random.default_rng(6).standard_normal((3, 2))

    def fn(a):
        return jnp.sum(jnp.sin(jnp.linalg.qr(a)[0]))

    with jax.enable_x64(True):
        f = ss.import_module(_lowered(fn, x)[0])
        np.testing.assert_allclose(jax.jit(jax.hessian(f))(x), jax.jit(jax.hessian(fn))(x), rtol=1e-10, atol=1e-12)
