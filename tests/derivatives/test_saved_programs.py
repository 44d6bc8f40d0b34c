"""Save and pickle for every program that evaluates (issue 20): prepared Jacobians of the soundness suite's
functions — loops included — and of a module with a ``stablehlo.while``, written with ``.save`` and
``pickle`` here and read back in one new process (no ``f`` there), where they must give the same values.

A program JAX cannot differentiate in reverse mode (a ``while_loop`` with a dynamic trip count) is saved
forward-only: it evaluates, and reverse-mode AD through the restored object raises a clear ``InputError``.
The normal suite takes a sample of the soundness cases (every loop among them); ``SHS_LONG=1`` takes all.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.analysis.rules import DEPS_RULES
from test_soundness_suite import CASES
from shared_modules import WHILE_MODULE

LONG = os.environ.get("SHS_LONG") == "1"
SAMPLE = ("fori_euler", "scan_recurrence", "has_aux", "nested_dict_out")


def newton_cos(x):
    """The issue's fixed-point solve: a while_loop whose trip count depends on x (no reverse mode)."""
    c = lambda s: (s[1] < 50) & (jnp.max(jnp.abs(s[0] - .5 * jnp.cos(s[0]) - x)) > 1e-6)  # noqa: E731
    y, _ = jax.lax.while_loop(c, lambda s: (.5 * jnp.cos(s[0]) + x, s[1] + 1), (x, 0))
    return y[1:] * y[:-1]


def arrowhead(x):
    return x * x[0] + jnp.concatenate([jnp.sum(x)[None], jnp.zeros(x.shape[0] - 1)])




def _point(args, seed):
    rng = np.random.default_rng(seed)
    return jax.tree_util.tree_map(lambda a: jnp.asarray(rng.uniform(0.2, 1.0, np.shape(a)), jnp.result_type(a)),
                                  args)


@functools.lru_cache(maxsize=1)
def _prepared():
    """(name, prepared object, point) for every program round-tripped."""
    names = [n for n in CASES if LONG or n in SAMPLE]
    out = []
    for name in names:
        case = CASES[name]
        missing = [op for op in case.needs if op not in DEPS_RULES]
        assert not missing, f"{name} needs ops without a rule: {', '.join(missing)}"
        jac = ss.sparse_jacobian(case.f, *case.args, argnums=case.argnums, has_aux=case.has_aux, output="dense",
                                 **case.kwargs)
        out.append((name, jac, _point(case.args, 1)))
    x = jnp.linspace(0, 1, 20)
    out.append(("newton_cos", ss.sparse_jacobian(newton_cos, x, output="dense"), (x,)))
    # a dense row and a dense column: a bidirectional coloring, restored as one
    arrow = ss.sparse_jacobian(arrowhead, jnp.linspace(0.1, 1.0, 8), output="dense")
    assert arrow.mode == "bidirectional"
    out.append(("arrowhead", arrow, (jnp.linspace(0.2, 0.9, 8),)))
    out.append(("while_module", ss.sparse_jacobian_module(WHILE_MODULE, output="dense"),
                (np.linspace(0.1, 0.9, 4).astype(np.float32),)))
    return out


CHILD = textwrap.dedent("""
    import json, pickle, sys, warnings
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    import stablehlo_sparsity as ss
    from stablehlo_sparsity import InputError
    from stablehlo_sparsity.derivatives.saved import ForwardOnlyWarning

    folder = sys.argv[1]
    todo = json.load(open(folder + "/todo.json"))
    report = {}
    for name in todo:
        data = np.load(folder + f"/{name}.point.npz")
        args = [data[f"a{i}"] for i in range(len(data.files) - 1)]
        want = data["want"]
        row = {}
        for how in ("save", "pickle"):
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                if how == "save":
                    obj = ss.load(folder + f"/{name}.npz")
                else:
                    obj = pickle.load(open(folder + f"/{name}.pkl", "rb"))
            said = any(issubclass(w.category, ForwardOnlyWarning) for w in caught)
            out = obj(*args)
            J = out[0] if obj.has_aux else out
            err = float(np.max(np.abs(np.asarray(J) - want))) if want.size else 0.0
            reverse = "n/a"
            if obj.forward_only:
                try:
                    jax.grad(lambda *a: jax.numpy.sum(obj(*a)[0] if obj.has_aux else obj(*a)))(*args)
                    reverse = "no error"
                except InputError as e:
                    reverse = "forward-only" if "forward-only" in str(e) else str(e)
            row[how] = {"err": err, "forward_only": bool(obj.forward_only), "warned": said, "reverse": reverse,
                        "repr": repr(obj)}
        report[name] = row
    print(json.dumps(report))
""")


def _unflat_args(point):
    return [np.asarray(a) for a in point]


def test_saved_and_pickled_programs_evaluate_in_a_new_process(tmp_path):
    todo, expect_forward_only = [], set()
    for name, jac, point in _prepared():
        if any(not isinstance(a, (np.ndarray, jax.Array)) for a in point):
            continue  # pytree arguments: the child would need the structure; covered by the next test
        out = jac(*point)
        want = np.asarray(out[0] if jac.has_aux else out)
        jac.save(str(tmp_path / f"{name}.npz"))
        with open(tmp_path / f"{name}.pkl", "wb") as fh:
            pickle.dump(jac, fh)
        np.savez(tmp_path / f"{name}.point.npz", want=want, **{f"a{i}": a for i, a in enumerate(_unflat_args(point))})
        todo.append(name)
        if name in ("newton_cos", "while_module"):
            expect_forward_only.add(name)
    (tmp_path / "todo.json").write_text(json.dumps(todo))
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    res = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path)], capture_output=True, text=True, env=env,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert set(report) == set(todo)
    assert {"newton_cos", "while_module", "fori_euler", "scan_recurrence"} <= set(report)
    for name, row in report.items():
        for how, r in row.items():
            assert r["err"] <= 1e-5, (name, how, r)
            fwd = name in expect_forward_only
            assert r["forward_only"] == fwd and r["warned"] == fwd, (name, how, r)
            assert r["reverse"] == ("forward-only" if fwd else "n/a"), (name, how, r)
            assert ("forward-only" in r["repr"]) == fwd, (name, how, r)


def test_pytree_programs_round_trip_by_pickle():
    for name, jac, point in _prepared():
        if all(isinstance(a, (np.ndarray, jax.Array)) for a in point):
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            back = pickle.loads(pickle.dumps(jac))
        got, want = back(*point), jac(*point)
        for g, w in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want)):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-9, err_msg=name)


def test_string_aux_pickles_but_does_not_save(tmp_path):
    def f(x):
        return x[1:] * x[:-1], {"name": "residual", "norm": jnp.sum(x ** 2)}

    jac = ss.sparse_jacobian(f, jnp.ones(4), has_aux=True, output="dense")
    back = pickle.loads(pickle.dumps(jac))
    J, aux = back(jnp.arange(4.0))
    assert aux["name"] == "residual" and float(aux["norm"]) == 14.0
    with pytest.raises(ss.InputError, match="not arrays.*pickle keeps them"):
        jac.save(str(tmp_path / "aux.npz"))


def test_python_callbacks_cannot_be_saved_and_say_so(tmp_path):
    @jax.custom_jvp
    def host_sin(v):
        return jax.pure_callback(np.sin, jax.ShapeDtypeStruct(v.shape, v.dtype), v, vmap_method="sequential")

    @host_sin.defjvp
    def _(primals, tangents):
        return host_sin(primals[0]), jnp.cos(primals[0]) * tangents[0]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ss.SparsityWarning)
        jac = ss.sparse_jacobian(lambda v: host_sin(v) * v, jnp.linspace(0.1, 1.0, 5), on_unknown="conservative")
    assert jac(jnp.ones(5)).shape == (5, 5)  # it evaluates here ...
    with pytest.raises(ss.InputError, match="calls back into Python"):  # ... but has nothing to ship
        jac.save(str(tmp_path / "cb.npz"))
    with pytest.raises(ss.InputError, match="calls back into Python"):
        pickle.dumps(jac)
