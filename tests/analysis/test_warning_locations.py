"""Warnings and errors point at the user's line (issue 47): the message names the nearest source line outside JAX
and this library — for an op JAX lowered inside its own library code, the user's call that reached it — and Python
attributes the warning to the user's frame (``warning.filename`` is the caller's file, filters by module apply)."""

import os
import sys
import warnings

import jax
import jax.numpy as jnp
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.errors import SparsityWarning, user_file_location, warn

HERE = os.path.abspath(__file__)


def _line_of(fn, text: str) -> int:
    """The line of ``fn``'s source holding ``text``."""
    import inspect

    lines, first = inspect.getsourcelines(fn)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _solve(x):
    a = jnp.eye(8) * 3 + jnp.diag(x[1:], 1)
    return jnp.linalg.solve(a, x)


def _dynamic_index(x):
    i = jnp.argmax(x)
    return x[i] * x


def _interp(x):
    xp = jnp.linspace(0.0, 1.0, 6)
    return jnp.interp(x, xp, jnp.sin(xp) * x[0])


def _record(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ss.jacobian_sparsity(fn, *args)  # the call the warnings are attributed to
    return [w for w in caught if issubclass(w.category, SparsityWarning)]


CALL_LINE = _line_of(_record, "ss.jacobian_sparsity(fn, *args)")


@pytest.mark.parametrize("fn, text, x", [
    (_solve, "jnp.linalg.solve(a, x)", jnp.linspace(0.1, 1.0, 8)),   # scatter/gather inside JAX's private functions
    (_dynamic_index, "x[i] * x", jnp.linspace(0.1, 1.0, 5)),           # a dynamic index in the user's own line
    (_interp, "jnp.interp(", jnp.linspace(0.1, 0.9, 4)),                # searchsorted + gather inside jnp.interp
], ids=["solve", "dynamic-index", "interp"])
def test_warning_names_the_users_line_and_is_attributed_to_the_users_frame(fn, text, x):
    caught = _record(fn, x)
    assert caught, "the analysis was expected to warn"
    line = _line_of(fn, text)
    for w in caught:
        assert str(w.message).startswith(f"{HERE}:{line}:"), str(w.message)
        assert (w.filename, w.lineno) == (HERE, CALL_LINE), (w.filename, w.lineno)


def test_warning_filters_by_module_and_error_apply_to_the_users_module():
    x = jnp.linspace(0.1, 1.0, 8)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.filterwarnings("ignore", category=SparsityWarning, module=__name__)
        ss.jacobian_sparsity(_solve, x)
    assert not [w for w in caught if issubclass(w.category, SparsityWarning)]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SparsityWarning)
        with pytest.raises(SparsityWarning, match="scatter"):
            ss.jacobian_sparsity(_solve, x)


def test_warn_skips_every_frame_of_the_library_and_of_jax():
    """A frame whose code lives in the library's folder or JAX's is not the user's: the helper climbs past both."""
    library = os.path.dirname(os.path.abspath(ss.__file__))
    jax_folder = os.path.dirname(os.path.abspath(jax.__file__))
    scope: dict = {"warn": warn}
    exec(compile("def in_library(inner):\n    inner()\n", os.path.join(library, "_fake_frame.py"), "exec"), scope)
    exec(compile("def in_jax():\n    warn('from deep inside')\n", os.path.join(jax_folder, "_fake_frame.py"), "exec"),
         scope)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        scope["in_library"](scope["in_jax"])
    (w,) = caught
    assert (w.filename, w.lineno, w.category) == (HERE, line, SparsityWarning)


def test_user_file_location_skips_library_frames_of_a_call_site_chain():
    jax_file = os.path.join(os.path.dirname(os.path.abspath(jax.__file__)), "_src", "numpy", "lax_numpy.py")
    loc = f'loc(callsite("{jax_file}":10:2 at callsite("/home/me/model.py":5:7 at "/home/me/run.py":1:1)))'
    assert user_file_location(loc) == "/home/me/model.py:5:7"
    assert user_file_location('loc("scatter:"("scatter"))') is None
    assert user_file_location(f'loc("{jax_file}":3:4)') is None


# ------------------------------------------------------------------ modules: the enclosing op, the call site
EINSUM = ('"stablehlo.einsum"(%a, %b) {einsum_config = "ab,bc->ac"} : (tensor<4x3xf32>, tensor<3x2xf32>) -> '
          'tensor<4x2xf32> loc("einsum")')
CALLED = f"""
func.func private @inner(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) -> tensor<4x2xf32> {{
  %0 = {EINSUM}
  return %0 : tensor<4x2xf32>
}}
func.func @main(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>) -> tensor<4x2xf32> {{
  %0 = func.call @inner(%a, %b) : (tensor<4x3xf32>, tensor<3x2xf32>) -> tensor<4x2xf32> loc("model.py":7:3)
  return %0 : tensor<4x2xf32>
}}
"""
IN_A_BRANCH = f"""
func.func @main(%a: tensor<4x3xf32>, %b: tensor<3x2xf32>, %i: tensor<i32>) -> tensor<4x2xf32> {{
  %0 = "stablehlo.case"(%i) ({{
    %1 = {EINSUM}
    stablehlo.return %1 : tensor<4x2xf32>
  }}, {{
    %2 = stablehlo.constant dense<0.0> : tensor<4x2xf32> loc("zeros")
    stablehlo.return %2 : tensor<4x2xf32>
  }}) : (tensor<i32>) -> tensor<4x2xf32> loc("model.py":9:1)
  return %0 : tensor<4x2xf32>
}}
"""
NOWHERE = CALLED.replace('loc("model.py":7:3)', 'loc("jit(inner)")')


@pytest.mark.parametrize("text, where", [(CALLED, "model.py:7:3"), (IN_A_BRANCH, "model.py:9:1"),
                                         (NOWHERE, '"einsum"')], ids=["call-site", "enclosing-op", "none"])
def test_an_op_with_a_name_location_is_located_at_its_call_site_or_enclosing_op(text, where):
    with pytest.raises(ss.UnsupportedOpError) as e:
        ss.analyze_module(text)
    assert e.value.location == where
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        analysis = ss.analyze_module(text, on_unknown="conservative")
    (w,) = caught
    assert str(w.message).startswith(f"{where}: stablehlo.einsum:") and w.filename == HERE
    assert analysis.warnings == [str(w.message)]
    assert analysis.pattern.nnz > 0


def test_a_pass_warns_at_the_users_call_of_the_pipeline():
    """The passes live in a folder of their own in a source checkout: their frames are the library's too."""
    from stablehlo_sparsity.passes import run_pipeline

    module = ss.parse_module(CALLED)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        run_pipeline(module, "sparsity-annotate{on-unknown=conservative}")
    (w,) = caught
    assert (w.filename, w.lineno) == (HERE, line) and str(w.message).startswith("model.py:7:3: stablehlo.einsum:")
