"""Unknown keywords close to a library keyword are typos (issue 47): refused before tracing with an ``InputError``
that says "did you mean" — by an entry point that forwards keywords to ``f`` only when ``f``'s signature cannot
take the keyword, so a keyword ``f`` really has still reaches ``f``."""

from __future__ import annotations

import functools

import jax.numpy as jnp
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity import InputError
from stablehlo_sparsity.ir.keywords import (accepts_keyword, closest_keyword, edit_distance,
                                                   refuse_library_keywords)

X = jnp.linspace(0.2, 1.4, 5)
TEXT = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %m = stablehlo.multiply %x, %x : tensor<4xf32>
  func.return %m : tensor<4xf32>
}"""
TYPOS = [("argnum", "argnums"), ("hasaux", "has_aux"), ("has_axu", "has_aux"), ("mdoe", "mode"),
         ("outputs", "output")]


def residual(x):
    return x[1:] * x[:-1]


def _message(entry_point: str, typo: str, meant: str) -> str:
    return (f"{entry_point} has no {typo}= option: did you mean {meant}=? (to pass {typo}= to f, bind it first: "
            f"functools.partial(f, {typo}=...))")


@pytest.mark.parametrize("typo, meant", TYPOS)
def test_a_typo_that_f_cannot_take_is_refused_with_the_closest_keyword(typo, meant):
    with pytest.raises(InputError) as e:
        refuse_library_keywords("sparse_jacobian", {typo: 1}, residual)
    assert e.value.message == _message("sparse_jacobian", typo, meant)


def test_a_keyword_f_can_take_is_left_for_f():
    def takes_argnum(x, argnum=0):
        return x * x[argnum]

    def takes_any(x, **kwargs):
        return x

    def positional_only(x, argnum, /):
        return x

    refuse_library_keywords("sparse_jacobian", {"argnum": 1}, takes_argnum)
    refuse_library_keywords("sparse_jacobian", {"argnum": 1}, takes_any)
    refuse_library_keywords("sparse_jacobian", {"argnum": 1}, functools.partial(takes_argnum, argnum=2))
    refuse_library_keywords("sparse_jacobian", {"argnum": 1}, max)  # no readable signature: f decides
    refuse_library_keywords("sparse_jacobian", {"argnum": 1})  # no f given: as before, forwarded
    refuse_library_keywords("sparse_jacobian", {"scale": 1}, residual)  # close to nothing: f's own error
    with pytest.raises(InputError, match="did you mean argnums="):
        refuse_library_keywords("sparse_jacobian", {"argnum": 1}, positional_only)
    assert [accepts_keyword(f, "argnum") for f in (takes_argnum, takes_any, residual, positional_only, max)] \
        == [True, True, False, False, None]


def test_a_keyword_f_takes_reaches_f():
    def f(x, argnum=0):
        return x * x[argnum]

    pattern = ss.jacobian_sparsity(f, X, argnum=3)  # x * x[3]: column 3 is full
    assert pattern.todense()[:, 3].all() and pattern.nnz == 9


@pytest.mark.parametrize("entry_point, typo, meant", [
    ("sparse_jacobian", "argnum", "argnums"), ("jacobian_sparsity", "hasaux", "has_aux"),
    ("sparse_hessian", "mdoe", "mode"), ("check_jacobian", "mdoe", "mode"),
    ("value_and_sparse_jacobian", "outputs", "output"), ("hessian_sparsity", "has_axu", "has_aux"),
])
def test_entry_points_that_forward_keywords_refuse_a_typo_before_tracing(entry_point, typo, meant):
    def f(x):
        return jnp.sum(x[1:] * x[:-1]) if "hessian" in entry_point else x[1:] * x[:-1]

    try:
        getattr(ss, entry_point)(f, X, **{typo: 1})
    except InputError as e:
        assert e.message == _message(entry_point, typo, meant)
    else:
        raise AssertionError(f"{entry_point} forwarded {typo}= to f")


@pytest.mark.parametrize("call, message", [
    (lambda: ss.analyze_module(TEXT, wtr=[0]), "analyze_module has no wtr= option: did you mean wrt=?"),
    (lambda: ss.sparse_jacobian_module(TEXT, mdoe="forward"), "sparse_jacobian_module has no mdoe= option: did you "
                                                                "mean mode=?"),
    (lambda: ss.check_jacobian_module(TEXT, entr="main"), "check_jacobian_module has no entr= option: did you mean "
                                                            "entry=?"),
    (lambda: ss.sparse_jacobian_module(TEXT, colour=1), "sparse_jacobian_module has no colour= option; it takes"),
])
def test_module_functions_suggest_the_closest_keyword(call, message):
    with pytest.raises(InputError) as e:
        call()
    assert e.value.message.startswith(message)


def test_closest_keyword_and_edit_distance():
    assert [edit_distance(a, b) for a, b in [("mdoe", "mode"), ("wtr", "wrt"), ("argnum", "argnums"),
                                             ("kitten", "sitting"), ("", "abc")]] == [1, 1, 1, 3, 3]
    assert [closest_keyword(k, "sparse_jacobian") for k in ("Argnums", "optoins", "seeds", "x", "scale", "alpha",
                                                             "params")] \
        == ["argnums", "options", "seed", None, None, None, None]
    assert closest_keyword("tol", "check_jacobian") == "atol" and closest_keyword("tol", "sparse_jacobian") is None
