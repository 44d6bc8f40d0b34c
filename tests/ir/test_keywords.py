"""One keyword contract (issue 20): every public entry point crossed with every library keyword.

A library keyword is either taken by the entry point (it is a parameter of its signature, listed in
``stablehlo_sparsity.ir.keywords.ENTRY_POINTS``) or refused with an ``InputError`` before any work — never
forwarded to the user's function.  The parsers of ``argnums`` / ``wrt`` are one rule.
"""

from __future__ import annotations

import inspect

import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity import InputError
from stablehlo_sparsity.interop.ipopt import sparse_constraint_jacobian, sparse_lagrangian_hessian
from stablehlo_sparsity.ir.keywords import ENTRY_POINTS, LIBRARY_KEYWORDS, parse_indices, parse_wrt_text
from stablehlo_sparsity.interop.lineax import sparse_jacobian_operator
from stablehlo_sparsity.interop.scipy import ivp_jacobian, jac_sparsity, least_squares_jacobian

X = jnp.linspace(0.2, 1.4, 5)
TEXT = """func.func @main(%x: tensor<4xf32>) -> tensor<f32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %m = stablehlo.multiply %x, %x : tensor<4xf32>
  %s = stablehlo.reduce(%m init: %z) applies stablehlo.add across dimensions = [0] : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  func.return %s : tensor<f32>
}"""


def boom(*args, **kwargs):
    raise AssertionError(f"the user's function was called with {sorted(kwargs)}")


#: entry point → (the function, how to call it with extra keywords)
CALLS = {
    "lower_and_analyze": (ss.lower_and_analyze, lambda fn, kw: fn(boom, X, **kw)),
    "jacobian_sparsity": (ss.jacobian_sparsity, lambda fn, kw: fn(boom, X, **kw)),
    "hessian_sparsity": (ss.hessian_sparsity, lambda fn, kw: fn(boom, X, **kw)),
    "jacobian_coloring": (ss.jacobian_coloring, lambda fn, kw: fn(boom, X, **kw)),
    "hessian_coloring": (ss.hessian_coloring, lambda fn, kw: fn(boom, X, **kw)),
    "sparse_jacobian": (ss.sparse_jacobian, lambda fn, kw: fn(boom, X, **kw)),
    "value_and_sparse_jacobian": (ss.value_and_sparse_jacobian, lambda fn, kw: fn(boom, X, **kw)),
    "sparse_hessian": (ss.sparse_hessian, lambda fn, kw: fn(boom, X, **kw)),
    "value_and_sparse_hessian": (ss.value_and_sparse_hessian, lambda fn, kw: fn(boom, X, **kw)),
    "check_jacobian": (ss.check_jacobian, lambda fn, kw: fn(boom, X, **kw)),
    "check_hessian": (ss.check_hessian, lambda fn, kw: fn(boom, X, **kw)),
    "analyze_module": (ss.analyze_module, lambda fn, kw: fn(TEXT, **kw)),
    "sparse_jacobian_module": (ss.sparse_jacobian_module, lambda fn, kw: fn(TEXT, **kw)),
    "sparse_hessian_module": (ss.sparse_hessian_module, lambda fn, kw: fn(TEXT, **kw)),
    "check_jacobian_module": (ss.check_jacobian_module, lambda fn, kw: fn(TEXT, **kw)),
    "check_hessian_module": (ss.check_hessian_module, lambda fn, kw: fn(TEXT, **kw)),
    "least_squares_jacobian": (least_squares_jacobian, lambda fn, kw: fn(boom, np.ones(3, np.float32), **kw)),
    "ivp_jacobian": (ivp_jacobian, lambda fn, kw: fn(boom, 0.0, np.ones(3, np.float32), **kw)),
    "jac_sparsity": (jac_sparsity, lambda fn, kw: fn(boom, X, **kw)),
    "sparse_constraint_jacobian": (sparse_constraint_jacobian, lambda fn, kw: fn(boom, X, **kw)),
    "sparse_lagrangian_hessian": (sparse_lagrangian_hessian, lambda fn, kw: fn(boom, None, X, **kw)),
    "sparse_jacobian_operator": (sparse_jacobian_operator, lambda fn, kw: fn(boom, X, None, **kw)),
}

def _takes(fn, name: str, keyword: str) -> bool:
    params = inspect.signature(fn).parameters
    if keyword in params and params[keyword].kind in (inspect.Parameter.KEYWORD_ONLY,
                                                      inspect.Parameter.POSITIONAL_OR_KEYWORD):
        return True
    # interop helpers forward what they take to sparse_jacobian / sparse_hessian
    forwards = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()) and name in (
        "least_squares_jacobian", "ivp_jacobian", "sparse_constraint_jacobian", "sparse_lagrangian_hessian",
        "sparse_jacobian_operator")
    return forwards and keyword in ENTRY_POINTS["sparse_jacobian"]


def test_every_entry_point_is_crossed():
    assert set(CALLS) == set(ENTRY_POINTS)


@pytest.mark.parametrize("keyword", sorted(LIBRARY_KEYWORDS))
@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_keyword_is_taken_or_refused(name, keyword):
    fn, call = CALLS[name]
    if keyword in ENTRY_POINTS[name]:
        assert _takes(fn, name, keyword), f"{name} should take {keyword}="
        return
    assert not _takes(fn, name, keyword) or name in ("sparse_constraint_jacobian", "sparse_lagrangian_hessian",
                                                     "sparse_jacobian_operator", "least_squares_jacobian",
                                                     "ivp_jacobian")
    with pytest.raises(InputError, match=f"{name} has no {keyword}= option"):
        call(fn, {keyword: object()})


def test_signatures_take_no_library_keyword_outside_the_contract():
    for name, (fn, _) in CALLS.items():
        for p in inspect.signature(fn).parameters.values():
            if p.name in LIBRARY_KEYWORDS and p.kind is not inspect.Parameter.POSITIONAL_ONLY:
                assert p.name in ENTRY_POINTS[name] or p.name in ("args",), (name, p.name)


def test_snippets_of_the_issue():
    loss = lambda x: jnp.sum(x[1:] ** 2 * x[:-1])  # noqa: E731
    # derivatives= is the detection's and works for the Hessian's pattern too
    assert ss.hessian_sparsity(loss, X, derivatives="auto") == ss.hessian_sparsity(loss, X)
    # mode= of check_hessian is the recovery of the Hessian it prepares
    assert ss.check_hessian(loss, X, mode="substitution").ok
    with pytest.raises(InputError, match="hessian_sparsity has no mode= option.*functools.partial"):
        ss.hessian_sparsity(loss, X, mode="substitution")
    with pytest.raises(InputError, match="jacobian_sparsity has no mode= option"):
        ss.jacobian_sparsity(lambda x: x * 2, X, mode="forward")
    # f's own keywords still reach f; a library name reaches it through functools.partial
    assert ss.jacobian_sparsity(lambda x, scale: x * scale, X, scale=2.0).nnz == 5
    import functools

    g = functools.partial(lambda x, mode: x * (2.0 if mode == "a" else x), mode="b")
    assert ss.jacobian_sparsity(g, X).nnz == 5


def test_module_functions_refuse_unknown_keywords():
    with pytest.raises(InputError, match="sparse_jacobian_module has no colour= option; it takes"):
        ss.sparse_jacobian_module(TEXT, colour=1)


@pytest.mark.parametrize("value, nargs, want", [
    (None, 3, (0,)), (None, 0, ()), (1, 3, (1,)), (-1, 3, (2,)), ([2, 0], 3, (2, 0)), (np.int64(1), 2, (1,)),
])
def test_parse_indices(value, nargs, want):
    assert parse_indices(value, nargs) == want


def test_parse_wrt_one_rule():
    assert parse_indices("all", 3, name="wrt", allow_text=True) == (0, 1, 2)
    assert parse_indices(" ALL ", 2, name="wrt", allow_text=True) == (0, 1)
    assert parse_indices("2,0", 3, name="wrt", allow_text=True) == (2, 0)
    assert parse_indices([1, 1], 3, unique=True) == (1,)
    assert parse_wrt_text("0, 2") == [0, 2]
    for bad in (True, 3, [0, 5], "x", 1.0):
        with pytest.raises(InputError):
            parse_indices(bad, 3, name="wrt", allow_text=False)
    with pytest.raises(InputError, match="selects no argument"):
        parse_indices([], 3, name="wrt", allow_empty=False)
    # the API and the module functions agree on the same wrt
    assert ss.analyze_module(TEXT, wrt=-1).pattern.shape == (1, 4)
    assert ss.sparse_jacobian_module(TEXT, wrt="0").wrt == (0,)
    with pytest.raises(InputError, match="argument index 3 out of range: @main has 1 arguments"):
        ss.analyze_module(TEXT, wrt=3)
    with pytest.raises(InputError, match="argument index 3 out of range: @main has 1 arguments"):
        ss.sparse_jacobian_module(TEXT, wrt=3)


def test_pass_options_and_driver_share_the_wrt_rule(tmp_path):
    import subprocess
    import sys

    from stablehlo_sparsity.passes import run_pipeline

    text = """func.func @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
  %c = stablehlo.multiply %a, %b : tensor<2xf32>
  func.return %c : tensor<2xf32>
}"""
    for option in ("wrt=all", "wrt=0,-1"):
        module = ss.parse_module(text)
        run_pipeline(module, f"builtin.module(sparsity-annotate{{{option}}})")
        assert str(module).count("sparsity.offset") >= 3, option  # both arguments and the result
    path = tmp_path / "m.mlir"
    path.write_text(text)
    out = subprocess.run([sys.executable, "-m", "stablehlo_sparsity.tools.driver", "--emit=json", "--wrt=ALL", str(path)],
                         capture_output=True, text=True)
    assert out.returncode == 0 and '"shape": [2, 4]' in out.stdout.replace("\n", " "), out.stderr[-500:]
