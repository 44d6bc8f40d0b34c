"""A saved derivative that changed after saving is refused — never a wrong Jacobian, never a crash (issue 31).

Saved artifacts — the issue's Jacobian, a forward-only ``while_loop`` program, a module derivative (a
``stablehlo.while`` module, forward-only), a Hessian and a bidirectional Jacobian — are changed the way a
truncated download, a bad disk or a careless edit would change them: one member of the archive flipped (a few
bits), zeroed (16 bytes), truncated or extended (the zip rewritten around it, so its CRC is valid), or the file's
own bytes flipped, zeroed, truncated or extended.  One fresh process (which never saw the functions) loads and
calls every mutant: each outcome must be the right Jacobian or an ``InputError`` naming the file.  A crash of the
child names the mutant it was reading.

The normal suite runs a fixed-seed sample: every (member, change) pair once, spread over the artifacts, plus
file-level changes (a few dozen mutants); ``SHS_LONG=1`` runs every artifact × member × change with several
seeds and many more file-level changes.  Hand-crafted hostile files (valid digests) are
``test_trusted_artifacts.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import zipfile

import jax
import jax.numpy as jnp
import numpy as np

import stablehlo_sparsity as ss
from shared_modules import WHILE_MODULE

LONG = os.environ.get("SHS_LONG") == "1"
SEED = 31
MEMBERS = ("meta.npy", "meta_sha256.npy", "program.npy", "indptr.npy", "indices.npy", "colors.npy", "rows.npy",
           "cols.npy")
CHANGES = ("flip", "zero", "truncate", "extend")



def newton_cos(x):
    """A while_loop whose trip count depends on x: saved forward-only."""
    c = lambda s: (s[1] < 50) & (jnp.max(jnp.abs(s[0] - .5 * jnp.cos(s[0]) - x)) > 1e-6)  # noqa: E731
    y, _ = jax.lax.while_loop(c, lambda s: (.5 * jnp.cos(s[0]) + x, s[1] + 1), (x, 0))
    return y[1:] * y[:-1]


def _artifacts(folder):
    """``{name: (path, point, expected dense derivative)}``, saved in ``folder``."""
    x12 = jnp.linspace(0.1, 1.0, 12)
    made = {
        "issue": (ss.sparse_jacobian(lambda x: jnp.sin(x[1:]) * x[:-1] + x[1:] ** 2, x12, output="dense"), x12),
        "newton": (ss.sparse_jacobian(newton_cos, jnp.linspace(0, 1, 20), output="dense"), jnp.linspace(0, 1, 20)),
        "module_while": (ss.sparse_jacobian_module(WHILE_MODULE, output="dense"),
                         np.linspace(0.1, 0.9, 4).astype(np.float32)),
        "hessian": (ss.sparse_hessian(lambda v: jnp.sum(jnp.sin(v[1:] * v[:-1])) + jnp.sum(v ** 4), x12,
                                      output="dense"), x12),
        "arrow": (ss.sparse_jacobian(lambda x: x * x[0] + jnp.concatenate([jnp.sum(x)[None], jnp.zeros(7)]),
                                     jnp.linspace(0.1, 1.0, 8), output="dense"), jnp.linspace(0.2, 0.9, 8)),
    }
    assert made["arrow"][0].mode == "bidirectional"
    out = {}
    for name, (obj, x) in made.items():
        path = os.path.join(folder, f"{name}.npz")
        obj.save(path)
        out[name] = (path, np.asarray(x), np.asarray(obj(x)))
    return out


def _mutate(data: bytes, change: str, rng: np.random.Generator) -> bytes:
    b = bytearray(data)
    if change == "flip":
        for _ in range(int(rng.integers(1, 4))):
            if b:
                k = int(rng.integers(len(b)))
                b[k] ^= 1 << int(rng.integers(8))
    elif change == "zero":
        k = int(rng.integers(max(len(b) - 16, 0) + 1))
        b[k:k + 16] = bytes(len(b[k:k + 16]))
    elif change == "truncate":
        b = b[:int(rng.integers(len(b)))] if b else b
    else:
        b += rng.integers(0, 256, int(rng.integers(1, 65)), dtype=np.uint8).tobytes()
    return bytes(b)


def _with_member(src: str, dst: str, member: str, change: str, rng) -> None:
    """``src`` with one member changed, the zip rewritten around it (valid CRCs: only the digests can tell)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, _mutate(data, change, rng) if info.filename == member else data)


def _mutants(folder, artifacts):
    """``[(mutant file, artifact, description)]``: a fixed-seed sample, or everything under SHS_LONG=1."""
    rng = np.random.default_rng(SEED)
    names = list(artifacts)
    plan = []
    pairs = [(m, c) for m in MEMBERS for c in CHANGES]
    if LONG:
        plan += [(a, m, c) for a in names for (m, c) in pairs for _ in range(8)]
        plan += [(a, None, c) for a in names for c in CHANGES for _ in range(30)]
    else:
        plan += [(names[i % len(names)], m, c) for i, (m, c) in enumerate(pairs)]
        plan += [(names[(i + 1) % len(names)], None, c) for i, c in enumerate(CHANGES * 2)]
    out = []
    for i, (a, member, change) in enumerate(plan):
        src = artifacts[a][0]
        dst = os.path.join(folder, f"mutant{i:04d}.npz")
        if member is None:
            with open(src, "rb") as fh:
                raw = fh.read()
            with open(dst, "wb") as fh:
                fh.write(_mutate(raw, change, rng))
        else:
            _with_member(src, dst, member, change, rng)
        out.append((dst, a, f"{a}: {change} {member or 'the file'}"))
    return out


CHILD = textwrap.dedent("""
    import json, sys, warnings
    import jax
    jax.config.update("jax_enable_x64", True)
    import numpy as np
    import stablehlo_sparsity as ss

    todo = json.load(open(sys.argv[1]))
    log = open(sys.argv[2], "w", buffering=1)
    for item in todo:
        log.write(json.dumps({"start": item["path"]}) + "\\n")
        x, want = np.load(item["point"]), np.load(item["want"])
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                obj = ss.load(item["path"])
                got = np.asarray(obj(x))
            ok = got.shape == want.shape and np.allclose(got, want, rtol=1e-6, atol=1e-9)
            outcome, message = ("right" if ok else "WRONG"), ""
        except ss.InputError as e:
            outcome, message = "refused", str(e)
        except Exception as e:
            outcome, message = "other " + type(e).__name__, str(e)[:300]
        log.write(json.dumps({"path": item["path"], "outcome": outcome, "message": message}) + "\\n")
    log.write(json.dumps({"done": len(todo)}) + "\\n")
""")


def test_mutated_artifacts_load_right_or_are_refused_in_a_fresh_process(tmp_path):
    artifacts = _artifacts(str(tmp_path))
    for name, (_, x, want) in artifacts.items():
        np.save(tmp_path / f"{name}.x.npy", x)
        np.save(tmp_path / f"{name}.want.npy", want)
    mutants = _mutants(str(tmp_path), artifacts)
    todo = [{"path": p, "point": str(tmp_path / f"{a}.x.npy"), "want": str(tmp_path / f"{a}.want.npy")}
            for p, a, _ in mutants]
    (tmp_path / "todo.json").write_text(json.dumps(todo))
    log = tmp_path / "log.jsonl"
    res = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "todo.json"), str(log)], capture_output=True,
                         text=True, errors="replace", env={**os.environ, "JAX_PLATFORMS": "cpu"}, timeout=3000)
    lines = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    what = {p: d for p, _, d in mutants}
    if res.returncode != 0:
        started = [r["start"] for r in lines if "start" in r]
        last = what.get(started[-1], "before the first mutant") if started else "before the first mutant"
        raise AssertionError(f"the child died (exit {res.returncode}) reading {last}:\n{res.stderr[-3000:]}")
    results = [r for r in lines if "outcome" in r]
    assert len(results) == len(mutants) and lines[-1] == {"done": len(mutants)}
    bad = [(what[r["path"]], r["outcome"], r["message"]) for r in results if r["outcome"] not in ("right", "refused")]
    assert not bad, bad
    for r in results:
        if r["outcome"] == "refused":  # an error of ours that names the file and says something
            assert r["message"].startswith(r["path"] + ": ") and len(r["message"]) > len(r["path"]) + 10, r
    counts = {k: sum(r["outcome"] == k for r in results) for k in ("right", "refused")}
    print(f"{len(results)} mutants: {counts}")
    assert counts["refused"] >= len(results) // 2  # (most changes hit a member: the digests refuse them)
