"""The request at the derivative face (issue 50): the shared keywords defined once (``KEYWORDS``), read once into a
frozen :class:`DerivativeRequest` (``argnums`` parsed once), Hessian methods and modes as distinct enums, and the API
reference's keyword table generated from the definitions."""

from __future__ import annotations

import dataclasses
import inspect
import pathlib

import jax.numpy as jnp
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.ir import keywords as keywords_module
from stablehlo_sparsity.ir.keywords import ENTRY_POINTS, LIBRARY_KEYWORDS
from stablehlo_sparsity.analysis.options import AnalysisOptions
from stablehlo_sparsity.analysis.second_order.method import HessianMethod, choose_method, ProgramFeatures
from stablehlo_sparsity.derivatives import request as rq
from stablehlo_sparsity.derivatives.prepared.modes import ColoringOptions, HessianMode, JacobianMode
from stablehlo_sparsity.errors import InputError

ROOT = pathlib.Path(__file__).resolve().parents[2]
X = jnp.arange(1.0, 6.0)


def loss(x):
    return jnp.sum((x[1:] - x[:-1] ** 2) ** 2)


def residual(x):
    return x[1:] * x[:-1]


#: The public face functions and the keyword set their signatures share with KEYWORDS.
FACE_FUNCTIONS = {
    "sparse_jacobian": ss.sparse_jacobian,
    "value_and_sparse_jacobian": ss.value_and_sparse_jacobian,
    "jacobian_coloring": ss.jacobian_coloring,
    "sparse_hessian": ss.sparse_hessian,
    "value_and_sparse_hessian": ss.value_and_sparse_hessian,
    "hessian_sparsity": ss.hessian_sparsity,
    "hessian_coloring": ss.hessian_coloring,
    "jacobian_sparsity": ss.jacobian_sparsity,
    "check_jacobian": ss.check_jacobian,
    "check_hessian": ss.check_hessian,
}
#: Keywords of the checks that are theirs, not the shared ones (``None``: the prepared object's; ``method``: how
#: the check compares).
CHECK_OWN = {"argnums", "has_aux", "method"}


# ------------------------------------------------------------------------------------------------ building
def test_a_request_holds_the_call_parsed():
    req = rq.derivative_request("sparse_jacobian", residual, (X,), {}, {"argnums": [0], "mode": "reverse"})
    assert req.entry == "sparse_jacobian" and req.kind is rq.DerivativeKind.JACOBIAN
    assert req.returns is rq.Returns.DERIVATIVE and not req.with_value
    assert req.argnums == (0,) and not req.argnums_int and req.fn is residual and req.args == (X,)
    assert req.mode is JacobianMode.REVERSE and req.method is HessianMethod.AUTO
    assert isinstance(req.options, AnalysisOptions) and req.options.on_unknown == "error"
    assert req.coloring_options == ColoringOptions() and req.output == "bcoo" and req.coloring is None
    assert (req.strategy, req.chunk_size, req.devices, req.constant_seeds) == ("auto", None, None, None)


def test_defaults_follow_the_kind_of_derivative():
    jac = rq.derivative_request("value_and_sparse_jacobian", residual, (X,), {}, {})
    hes = rq.derivative_request("sparse_hessian", loss, (X,), {}, {})
    assert jac.mode is JacobianMode.AUTO and jac.with_value and jac.argnums_int
    assert hes.mode is HessianMode.DIRECT_RECOVERY and hes.kind is rq.DerivativeKind.HESSIAN


def test_on_unknown_is_merged_into_the_options_and_f_keywords_are_bound():
    opts = AnalysisOptions(max_loop_iterations=7)
    req = rq.derivative_request("hessian_sparsity", lambda x, scale: scale * loss(x), (X,), {"scale": 2.0},
                                {"options": opts, "on_unknown": "conservative"})
    assert req.options.on_unknown == "conservative" and req.options.max_loop_iterations == 7
    assert float(req.bound_fn()(X)) == pytest.approx(2.0 * float(loss(X)))


def test_a_request_with_static_leaves_keeps_them_out_of_the_traced_arguments():
    def f(x, cfg):
        return cfg["act"](x)

    req = rq.derivative_request("sparse_jacobian", f, (X, {"act": jnp.tanh}), {}, {})
    assert req.call.statics is not None and req.args[1] == {"act": None}
    assert req.fn is not f


# ------------------------------------------------------------------------------------------------ frozen
def test_a_request_is_frozen():
    req = rq.derivative_request("sparse_hessian", loss, (X,), {"unused": 1}, {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.mode = HessianMode.SUBSTITUTION  # type: ignore[misc]
    with pytest.raises(TypeError):
        req.kwargs["unused"] = 2  # type: ignore[index]
    kwargs = {"unused": 1}
    req = rq.derivative_request("sparse_hessian", loss, (X,), kwargs, {})
    kwargs["unused"] = 3  # the caller's dict is copied
    assert req.kwargs["unused"] == 1


# ------------------------------------------------------------------------------------------------ argnums once
def _count_parses(monkeypatch) -> list:
    calls: list = []
    original = keywords_module.parse_indices

    def counting(value, *a, **kw):
        calls.append(value)
        return original(value, *a, **kw)

    monkeypatch.setattr(keywords_module, "parse_indices", counting)
    return calls


@pytest.mark.parametrize("name, run", [
    ("sparse_hessian", lambda: ss.sparse_hessian(loss, X, argnums=[0])),
    ("sparse_hessian substitution", lambda: ss.sparse_hessian(loss, X, argnums=0, mode="substitution")),
    ("hessian_sparsity direct", lambda: ss.hessian_sparsity(loss, X, method="direct")),
    ("hessian_sparsity via-gradient", lambda: ss.hessian_sparsity(loss, X, method="via-gradient")),
    ("hessian_sparsity local", lambda: ss.hessian_sparsity(loss, X, local=True)),
    ("hessian_coloring", lambda: ss.hessian_coloring(loss, X)),
    ("sparse_jacobian", lambda: ss.sparse_jacobian(residual, X, argnums=(0,))),
    ("jacobian_coloring", lambda: ss.jacobian_coloring(residual, X)),
    ("check_hessian", lambda: ss.check_hessian(loss, X, points=1)),
    ("check_jacobian", lambda: ss.check_jacobian(residual, X, points=1)),
])
def test_the_face_parses_argnums_once(monkeypatch, name, run):
    """The user's ``argnums`` is parsed by the request only (the analysis' own normalization of the parsed tuple,
    ``program.norm_argnums``, is below the face and not counted)."""
    calls = _count_parses(monkeypatch)
    run()
    assert len(calls) == 1, (name, calls)


# ------------------------------------------------------------------------------------------------ bad keywords
def test_a_typo_of_a_keyword_suggests_the_closest_name():
    with pytest.raises(InputError, match="sparse_hessian has no argnum= option: did you mean argnums="):
        ss.sparse_hessian(loss, X, argnum=0)
    with pytest.raises(InputError, match="sparse_jacobian has no mdoe= option: did you mean mode="):
        ss.sparse_jacobian(residual, X, mdoe="forward")
    with pytest.raises(InputError, match="did you mean has_aux="):
        rq.derivative_request("hessian_coloring", loss, (X,), {"has_axu": True}, {})


def test_a_library_keyword_the_face_does_not_take_is_refused():
    with pytest.raises(InputError, match="sparse_jacobian has no local= option.*functools.partial"):
        ss.sparse_jacobian(residual, X, local=True)
    with pytest.raises(InputError, match="hessian_sparsity has no mode= option"):
        ss.hessian_sparsity(loss, X, mode="substitution")


def test_bad_modes_and_methods_are_refused_before_anything_is_traced():
    def untraceable(x):
        raise AssertionError("traced")

    with pytest.raises(InputError, match="mode must be one of auto, forward, reverse, bidirectional"):
        ss.sparse_jacobian(untraceable, X, mode="sideways")
    with pytest.raises(InputError, match="mode must be one of direct, substitution, auto, got 'star'"):
        ss.sparse_hessian(untraceable, X, mode="star")
    with pytest.raises(InputError, match="method must be 'auto', 'direct' or 'via-gradient', got 'hvp'"):
        ss.hessian_sparsity(untraceable, X, method="hvp")
    with pytest.raises(InputError, match="local=True and derivatives= are options of method='via-gradient'"):
        ss.hessian_sparsity(untraceable, X, method="direct", local=True)
    with pytest.raises(InputError, match="options must be a stablehlo_sparsity.AnalysisOptions"):
        rq.derivative_request("sparse_hessian", loss, (X,), {}, {"options": {"max_pattern_nnz": 5}})
    with pytest.raises(InputError, match="argument index 3 out of range"):
        rq.derivative_request("sparse_hessian", loss, (X,), {}, {"argnums": 3})


# ------------------------------------------------------------------------------------------------ enums
def test_hessian_method_and_recovery_mode_share_a_string_not_a_name():
    assert HessianMethod("direct") is HessianMethod.DIRECT_ANALYSIS
    assert HessianMode("direct") is HessianMode.DIRECT_RECOVERY
    assert HessianMethod.DIRECT_ANALYSIS == "direct" == HessianMode.DIRECT_RECOVERY
    assert set(HessianMethod.__members__).isdisjoint({"DIRECT"}) and "DIRECT" not in HessianMode.__members__
    assert [m.value for m in HessianMethod] == ["auto", "direct", "via-gradient"]
    assert [m.value for m in HessianMode] == ["direct", "substitution", "auto"]
    assert choose_method(ProgramFeatures(10, 10, 0), (-1.0, 0, 0, 0)) is HessianMethod.VIA_GRADIENT


def test_strings_and_members_are_the_same_argument():
    by_string = ss.hessian_sparsity(loss, X, method="via-gradient")
    by_member = ss.hessian_sparsity(loss, X, method=HessianMethod.VIA_GRADIENT)
    assert by_string == by_member and by_member.method == "via-gradient" and type(by_member.method) is str
    direct = ss.hessian_sparsity(loss, X, method="direct")
    assert direct.method == "direct" and type(direct.method) is str
    h = ss.sparse_hessian(loss, X, mode=HessianMode.SUBSTITUTION)
    assert h.mode is HessianMode.SUBSTITUTION and h.mode == "substitution"
    assert ss.sparse_hessian(loss, X).mode is HessianMode.DIRECT_RECOVERY


# ------------------------------------------------------------------------------------------------ one definition
def test_every_shared_keyword_is_a_library_keyword_with_a_message():
    assert set(rq.KEYWORDS) <= set(LIBRARY_KEYWORDS)
    assert len(rq.KEYWORDS) == 17


def test_every_face_is_an_entry_point_whose_shared_keywords_are_defined():
    for name in rq.FACES:
        assert name in ENTRY_POINTS
        shared = ENTRY_POINTS[name] - {"jacobian", "hessian", "probes", "rtol", "atol", "dense_limit",
                                       "raise_on_error", "points"}
        assert shared <= set(rq.KEYWORDS) | {"method"}, name


@pytest.mark.parametrize("name", sorted(FACE_FUNCTIONS))
def test_signature_defaults_are_the_table_s(name):
    fn = FACE_FUNCTIONS[name]
    kind = rq.DerivativeKind.HESSIAN if "hessian" in name else rq.DerivativeKind.JACOBIAN
    params = inspect.signature(fn).parameters
    taken = [k for k in rq.KEYWORDS if k in ENTRY_POINTS[name]]
    assert taken
    for k in taken:
        if name.startswith("check_") and k in CHECK_OWN:
            continue
        assert k in params, (name, k)
        assert params[k].default == rq.KEYWORDS[k].default_for(kind), (name, k, params[k].default)


def test_the_api_reference_table_is_the_generated_one():
    page = (ROOT / rq.API_PAGE).read_text()
    table = rq.keywords_table_in(page)
    assert table is not None, f"{rq.API_PAGE} lost its generated table"
    assert table == rq.keywords_markdown(), (
        "the shared keywords' table is stale: python -c 'from stablehlo_sparsity.derivatives.request import *; "
        "write_keywords_table()'")
    for k in rq.KEYWORDS:
        assert f"| `{k}` |" in table


def test_write_keywords_table_replaces_only_the_table(tmp_path):
    page = tmp_path / rq.API_PAGE
    page.parent.mkdir(parents=True)
    page.write_text(f"before\n{rq.KEYWORDS_BEGIN}\nold\n{rq.KEYWORDS_END}\nafter\n")
    assert rq.write_keywords_table(tmp_path)
    assert page.read_text() == f"before\n{rq.keywords_markdown()}\nafter\n"
    assert not rq.write_keywords_table(tmp_path)
    page.write_text("no table")
    with pytest.raises(InputError, match="no generated keywords table"):
        rq.write_keywords_table(tmp_path)
