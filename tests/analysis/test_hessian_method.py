"""``hessian_sparsity(method="auto")``: the method a cost model of the traced program picks, recorded on the
result (issue 34); whichever it picks, the pattern is the same and sound."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.analysis.second_order import method as cost


def written_out(x):
    total = 0.0
    for i in range(x.shape[0] - 1):
        total = total + (x[i] * x[i + 1] - 1.0) ** 2 + jnp.sin(x[i])
    return total


def vectorized(x):
    return jnp.sum(jnp.cos(x - jnp.roll(x, 1)) * x)


def test_features_count_equations_elements_and_nonlinear_elements():
    feats = cost.program_features(jax.jit(lambda x: jnp.sum(jnp.sin(x) * 2.0 + x)).trace(jnp.ones(5)).jaxpr)
    # sin (5, nonlinear), mul (5, nonlinear: a product), add (5), reduce_sum (1)
    assert feats.eqns == 4 and feats.elements == 16 and feats.nonlinear_elements == 10


def test_more_equations_favour_direct_and_more_elements_favour_the_gradient():
    base = cost.ProgramFeatures(10, 10_000, 5_000)
    assert cost.score(cost.ProgramFeatures(10_000, 10_000, 5_000)) > cost.score(base)
    assert cost.score(cost.ProgramFeatures(10, 1_000_000, 500_000)) < cost.score(base)  # same nonlinear share


@pytest.mark.parametrize("features, method", [
    (cost.ProgramFeatures(1_386, 1_386, 495), "direct"),            # written out, scalar by scalar
    (cost.ProgramFeatures(11, 991, 396), "direct"),                 # a small vectorized objective
    (cost.ProgramFeatures(17, 1_399_985, 599_992), "direct"),       # many local terms at n = 10⁵
    (cost.ProgramFeatures(4, 300_001, 300_000), "via-gradient"),    # sum(sin(x)·x²) at n = 10⁵
    (cost.ProgramFeatures(8, 600_001, 200_000), "via-gradient"),    # a periodic chain at n = 10⁵
])
def test_the_fitted_model_picks_the_measured_winner(features, method):
    # benchmarks/data/hessian_method_*.json: the faster method of each, in a fresh process and in a long one
    assert cost.choose_method(features) == method


@pytest.mark.parametrize("f, n", [(written_out, 12), (vectorized, 30)])
def test_auto_records_its_choice_and_both_methods_agree(f, n):
    x = jnp.linspace(0.1, 1.0, n)
    auto = ss.hessian_sparsity(f, x)
    direct = ss.hessian_sparsity(f, x, method="direct")
    via = ss.hessian_sparsity(f, x, method="via-gradient")
    assert auto.method == cost.choose_method(cost.program_features(jax.jit(f).trace(x).jaxpr))
    assert direct.method == "direct" and via.method == "via-gradient"
    assert auto == direct == via
    numeric = np.asarray(jax.hessian(f)(x)) != 0
    assert not (numeric & ~auto.todense()).any()


def test_auto_takes_the_gradient_where_the_model_predicts_it_faster(monkeypatch):
    monkeypatch.setattr(cost, "WEIGHTS", (-50.0, 0.0, 0.0, 0.0))  # every program scores below 0: via-gradient
    x = jnp.linspace(0.1, 1.0, 9)
    p = ss.hessian_sparsity(written_out, x)
    assert p.method == "via-gradient" and p == ss.hessian_sparsity(written_out, x, method="direct")
    assert ss.hessian_sparsity(written_out, x, method="direct").method == "direct"  # an explicit method stands


def test_custom_rules_still_take_the_gradient():
    @jax.custom_jvp
    def g(x):
        return jnp.sum(x ** 3)

    g.defjvp(lambda p, t: (g(p[0]), jnp.sum(3 * p[0] ** 2 * t[0])))
    assert ss.hessian_sparsity(g, jnp.ones(4)).method == "via-gradient"


def test_jacobian_patterns_have_no_method():
    assert ss.jacobian_sparsity(lambda x: x[1:] * x[:-1], jnp.ones(4)).method is None


def test_the_shipped_weights_pick_within_1_25_of_the_faster_method_on_their_data():
    """On the rows they were fitted on (both regimes); the latest check of the same problems, on later code, is
    what the docs say it is (:func:`test_the_latest_check_of_the_fitted_problems_is_what_the_docs_state`)."""
    import json
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
    rows = [r for name in ("hessian_method_fresh.json", "hessian_method_shared.json")
            for r in json.loads((data / name).read_text())]
    assert len(rows) >= 150
    for r in rows:
        pick = cost.choose_method(cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"]))
        assert r[pick] <= 1.25 * min(r["direct"], r["via-gradient"]), (r["label"], r["process"], pick)


def test_a_refit_passes_its_weights_without_touching_the_shipped_ones():
    features = cost.ProgramFeatures(100, 1_000, 500)
    shipped = cost.score(features)
    assert cost.score(features, (-50.0, 0.0, 0.0, 0.0)) == -50.0
    assert cost.choose_method(features, (-50.0, 0.0, 0.0, 0.0)) == "via-gradient"
    assert cost.choose_method(features, (50.0, 0.0, 0.0, 0.0)) == "direct"
    assert cost.score(features) == shipped


# ---------------------------------------------------------------------------------------------- why (issue 48)
def test_the_pattern_says_why_its_method_ran(monkeypatch):
    x = jnp.linspace(0.1, 1.0, 9)
    auto = ss.hessian_sparsity(written_out, x)
    feats = cost.program_features(jax.jit(written_out).trace(x).jaxpr)
    assert auto.method == "direct" and auto.method_reason == cost.explain(feats)
    assert f"score {cost.score(feats):.2f} >= 0" in auto.method_reason and f"{feats.eqns:,} equations" in auto.method_reason
    assert ss.hessian_sparsity(written_out, x, method="direct").method_reason == "method='direct' was asked for"
    assert ss.hessian_sparsity(written_out, x, method="via-gradient").method_reason == \
        "method='via-gradient' was asked for"
    assert "local=True" in ss.hessian_sparsity(written_out, x, local=True).method_reason
    monkeypatch.setattr(cost, "WEIGHTS", (-50.0, 0.0, 0.0, 0.0))  # every program scores below 0: via-gradient
    via = ss.hessian_sparsity(written_out, x)
    assert via.method == "via-gradient" and "predicts via-gradient faster (score -50.00 < 0" in via.method_reason


def test_a_custom_rule_is_the_reason_for_the_gradient_path():
    @jax.custom_jvp
    def g(x):
        return jnp.sum(x ** 3)

    g.defjvp(lambda p, t: (g(p[0]), jnp.sum(3 * p[0] ** 2 * t[0])))
    p = ss.hessian_sparsity(g, jnp.ones(4))
    assert p.method == "via-gradient" and "custom derivative rule" in p.method_reason
    assert "use method=" not in p.method_reason  # (the error's advice is what auto followed)


def test_the_nonzero_budget_is_the_reason_for_the_gradient_path():
    f = lambda x: jnp.sum((x[1:] - x[:-1] ** 2) ** 2)  # noqa: E731
    p = ss.hessian_sparsity(f, jnp.ones(20), options=ss.AnalysisOptions(max_pattern_nnz=60))
    assert p.method == "via-gradient" and p.method_reason.endswith("interactions exceed max_pattern_nnz=60")
    assert p == ss.hessian_sparsity(f, jnp.ones(20))


def test_a_pickled_pattern_keeps_its_reason_and_an_old_one_has_none():
    import pickle

    p = ss.hessian_sparsity(vectorized, jnp.linspace(0.1, 1.0, 6))
    assert pickle.loads(pickle.dumps(p)).method_reason == p.method_reason is not None
    old = ss.SparsityPattern(p.to_scipy(), method="direct")
    object.__delattr__(old, "_method_reason")  # (a pattern pickled before the field existed)
    assert old.method_reason is None and ss.jacobian_sparsity(jnp.sin, jnp.ones(3)).method_reason is None


# ---------------------------------------------------------------------------------------------- held out (issue 48)
def _held_out():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "hessian_held_out.py"
    spec = importlib.util.spec_from_file_location("benchmarks_hessian_held_out", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HELD_OUT = _held_out()


def test_the_held_out_set_is_twenty_families_or_more_none_of_them_fitted():
    import json
    from pathlib import Path

    data = Path(__file__).resolve().parents[2] / "benchmarks" / "data"
    fitted = {r["label"].split(" ")[0] for name in ("hessian_method_fresh.json", "hessian_method_shared.json")
              for r in json.loads((data / name).read_text())}
    names = [name for name, *_ in HELD_OUT.FAMILIES]
    assert len(set(names)) == len(names) >= 20 and not set(names) & fitted
    assert {style for _, style, *_ in HELD_OUT.FAMILIES} == {"vec", "written", "blocks"}


@pytest.mark.parametrize("name", [name for name, *_ in HELD_OUT.FAMILIES])
def test_each_held_out_objective_holds_jax_hessians_nonzeros_and_auto_records_the_model_s_pick(name):
    f, n = HELD_OUT.small(name)
    x = jnp.asarray(HELD_OUT.point(n))
    auto = ss.hessian_sparsity(f, x)
    numeric = np.asarray(jax.jit(jax.hessian(f))(x))
    assert np.isfinite(numeric).all()
    assert not ((numeric != 0) & ~auto.todense()).any(), name
    feats = cost.program_features(jax.jit(f).trace(x).jaxpr)
    assert auto.method == cost.choose_method(feats) and auto.method_reason == cost.explain(feats)
    other = "via-gradient" if auto.method == "direct" else "direct"
    assert ss.hessian_sparsity(f, x, method=other) == auto, name  # both methods find the same pattern


def test_the_held_out_result_the_docs_state_is_the_data_s():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    rows = json.loads((root / "benchmarks" / "data" / "hessian_method_held_out.json").read_text())
    ratios = [r[r["auto_method"]] / min(r["direct"], r["via-gradient"]) for r in rows]
    assert all(r["auto_method"] == cost.choose_method(cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"]))
               for r in rows)  # (the shipped weights made these choices)
    stated = f"within 1.25× on {sum(v <= 1.25 for v in ratios)} of {len(rows)}; worst {max(ratios):.2f}×"
    assert stated in (root / "docs" / "benchmarks" / "index.md").read_text(), stated


def test_the_latest_check_of_the_fitted_problems_is_what_the_docs_state():
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    rows = json.loads((root / "benchmarks" / "data" / "hessian_method_median.json").read_text())
    ratios = [r[r["auto_method"]] / min(r["direct"], r["via-gradient"]) for r in rows]
    assert all(r["auto_method"] == cost.choose_method(cost.ProgramFeatures(r["eqns"], r["elements"], r["nonlinear"]))
               for r in rows)
    within = sum(v <= 1.25 for v in ratios)
    stated = ("picked / best 1.00" if within == len(rows) and max(ratios) < 1.005 else
              f"within 1.25× of the faster method on {within} of them (worst {max(ratios):.2f}×")
    assert stated in (root / "docs" / "benchmarks" / "index.md").read_text().replace("\n", " "), stated
