"""Artifacts safe to share (issue 47): a saved or pickled prepared derivative holds no local path, and the same
derivative saved from any folder has the same bytes and SHA-256.

JAX writes each op's source location (the user's script, this library's install folder) into the programs it
exports, the program's VJP included; ``saving.shareable`` strips them before serialization.  The main test writes
one script into two folders with distinctive names, runs it in two fresh processes, compares the files byte for byte
and searches them — raw, member by member, and the programs printed back as text — for the folders, the library's
install folder, the user's home and the temporary folder; the second process also reads what the first saved and
checks values and reverse-mode AD against dense JAX.  The others check the stripping, the message of a
forward-only program and the container in this process.
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import subprocess
import sys
import tempfile
import textwrap
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import stablehlo_sparsity as ss
from stablehlo_sparsity.derivatives.prepared import archive
from stablehlo_sparsity.derivatives.prepared.saving import _without_paths, shareable

MODULE = """func.func @main(%x: tensor<5xf64>) -> tensor<4xf64> {
  %a = stablehlo.slice %x [1:5] : (tensor<5xf64>) -> tensor<4xf64>
  %b = stablehlo.slice %x [0:4] : (tensor<5xf64>) -> tensor<4xf64>
  %s = stablehlo.sine %a : tensor<4xf64>
  %c = stablehlo.multiply %s, %b : tensor<4xf64>
  func.return %c : tensor<4xf64>
}
"""

#: Run from its own folder: prepares, saves and pickles a sparse Jacobian, a sparse Hessian and the Jacobian of the
#: folder's module file (whose locations name the folder); with another folder as argument, it then loads what was
#: saved there and checks values and reverse-mode AD through the restored objects against dense JAX.
SCRIPT = textwrap.dedent('''
    import os, pickle, sys
    import jax, jax.numpy as jnp, numpy as np
    jax.config.update("jax_enable_x64", True)
    import stablehlo_sparsity as ss

    def residual(x):
        return jnp.sin(x[1:]) * x[:-1] + x[1:] ** 2

    def energy(x):
        return jnp.sum(jnp.cos(x[1:] * x[:-1])) + jnp.sum(x ** 4)

    here = os.path.dirname(os.path.abspath(__file__))
    x = jnp.linspace(0.1, 1.0, 5)
    made = {"jac": ss.sparse_jacobian(residual, x, output="dense"),
            "hes": ss.sparse_hessian(energy, x, output="dense"),
            "module": ss.sparse_jacobian_module(os.path.join(here, "model.mlir"), output="dense")}
    for name, obj in made.items():
        obj.save(os.path.join(here, name + ".npz"))
        with open(os.path.join(here, name + ".pkl"), "wb") as fh:
            pickle.dump(obj, fh)

    if len(sys.argv) > 1:
        other = sys.argv[1]
        rng = np.random.default_rng(0)
        p, w4, w5 = rng.uniform(0.2, 1.0, 5), rng.normal(size=(4, 5)), rng.normal(size=(5, 5))
        module_f = lambda v: jnp.sin(v[1:]) * v[:-1]

        def value_and_reverse(fn, w):  # fn(p), and reverse-mode AD through fn: one compiled program
            return jax.jit(lambda v: (fn(v), jax.grad(lambda u: jnp.vdot(w, fn(u)))(v)))(p)

        for name, dense, w in (("jac", jax.jacfwd(residual), w4), ("hes", jax.hessian(energy), w5),
                               ("module", jax.jacfwd(module_f), w4)):
            want = value_and_reverse(dense, w)
            for how in ("npz", "pkl"):
                path = os.path.join(other, f"{name}.{how}")
                if how == "npz":
                    obj = ss.load(path)
                else:
                    with open(path, "rb") as fh:
                        obj = pickle.load(fh)
                got = value_and_reverse(obj, w)  # the reverse pass runs the restored VJP
                np.testing.assert_allclose(np.asarray(got[0]), np.asarray(want[0]), rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(np.asarray(got[1]), np.asarray(want[1]), rtol=1e-10, atol=1e-12)
                print("checked", name, how)
''')

SAVED = [f"{name}.{how}" for name in ("jac", "hes", "module") for how in ("npz", "pkl")]


def _run(folder, other=None):
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    cmd = [sys.executable, str(folder / "make.py")] + ([str(other)] if other is not None else [])
    res = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stdout


def _local_strings(tmp_path) -> set[str]:
    """What a shared file must not contain: the folders, the library's install folder, the Python installation,
    the user's home and the temporary folders."""
    found = {"alice_project_x", "bob_lab_y", str(tmp_path), os.path.dirname(os.path.abspath(ss.__file__)),
             sys.prefix, "/tmp", tempfile.gettempdir()}
    home = os.path.expanduser("~")
    if len(home.strip("/")) > 1:
        found.add(home)
    return found


def _program_texts(program: bytes) -> list[str]:
    """The serialized program and its VJP printed back as StableHLO text, locations included."""
    from jax import export as jexport

    exp = jexport.deserialize(bytearray(program))
    return [exp.mlir_module()] + ([exp.vjp().mlir_module()] if exp.has_vjp() else [])


def _assert_no_location(text: str, what: str) -> None:
    locations = set(re.findall(r"loc\(([^)]*)\)", text))
    assert locations and all(loc == "unknown" or re.fullmatch(r"#loc\d*", loc) for loc in locations), \
        (what, sorted(locations)[:5])


def _parts(path) -> list[tuple[str, bytes | str]]:
    """The file's raw bytes, each member read through the zip (decompressed if it were compressed), and its
    programs as text."""
    raw = path.read_bytes()
    parts: list[tuple[str, bytes | str]] = [(path.name, raw)]
    if path.suffix == ".npz":
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            parts += [(f"{path.name}:{info.filename}", zf.read(info)) for info in zf.infolist()]
        program = archive.read_archive(path)["program"]
    else:
        program = pickle.loads(raw).program_bytes()
    parts += [(f"{path.name}:program text {i}", text) for i, text in enumerate(_program_texts(program))]
    return parts


def test_the_same_derivative_saved_from_two_folders_is_the_same_file_and_names_no_local_path(tmp_path):
    alice, bob = tmp_path / "alice_project_x", tmp_path / "bob_lab_y"
    for folder in (alice, bob):
        folder.mkdir()
        (folder / "make.py").write_text(SCRIPT)
        (folder / "model.mlir").write_text(MODULE)
    _run(alice)
    checked = _run(bob, alice)  # a fresh process loads what another folder saved
    assert checked.count("checked") == len(SAVED), checked
    for name in SAVED:
        assert (alice / name).read_bytes() == (bob / name).read_bytes(), f"{name} differs between the folders"
        assert archive.file_sha256(alice / name) == archive.file_sha256(bob / name)
    needles = _local_strings(tmp_path)
    for name in SAVED:
        for what, data in _parts(alice / name):
            for needle in needles:
                hit = needle.encode() in data if isinstance(data, bytes) else needle in data
                assert not hit, f"{what} contains {needle!r}"
            if isinstance(data, str):
                _assert_no_location(data, what)


def _small_export():
    from jax import export as jexport

    def f(x):
        return jnp.sin(x[1:]) * x[:-1]

    return f, jexport.export(jax.jit(f))(jax.ShapeDtypeStruct((5,), jnp.float64))


def test_shareable_strips_the_program_and_its_vjp_and_keeps_what_they_compute():
    from jax import export as jexport

    f, exp = _small_export()
    assert __file__ in exp.mlir_module()  # what is stripped: JAX writes this file's path into the program
    assert __file__ in exp.vjp().mlir_module()
    data = bytes(shareable(exp).serialize(vjp_order=1))
    assert __file__.encode() not in data
    texts = _program_texts(data)
    assert len(texts) == 2
    for i, text in enumerate(texts):
        _assert_no_location(text, f"module {i}")
    restored = jexport.deserialize(bytearray(data))
    x = jnp.linspace(0.2, 0.9, 5)
    w = jnp.arange(1.0, 5.0)
    np.testing.assert_allclose(np.asarray(restored.call(x)), np.asarray(f(x)), rtol=1e-14)
    np.testing.assert_allclose(np.asarray(jax.grad(lambda v: jnp.vdot(w, restored.call(v)))(x)),
                               np.asarray(jax.grad(lambda v: jnp.vdot(w, f(v)))(x)), rtol=1e-14)


def _defined_in(path, blank_lines: int):
    """The same function, compiled as if it were read from ``path`` at another line."""
    namespace: dict = {}
    source = "\n" * blank_lines + "import jax.numpy as jnp\ndef f(x):\n    return jnp.sin(x[1:]) * x[:-1]\n"
    exec(compile(source, str(path), "exec"), namespace)
    return namespace["f"]


def test_a_saved_program_is_the_same_bytes_whatever_the_locations_jax_wrote(tmp_path):
    """Two functions that differ only in where they are defined (file and line) save to the same file."""
    x = jnp.ones(5)
    ss.sparse_jacobian(_defined_in(tmp_path / "alice_project_x.py", 0), x).save(tmp_path / "a.npz")
    ss.sparse_jacobian(_defined_in(tmp_path / "bob_lab_y.py", 3), x).save(tmp_path / "b.npz")
    raw = (tmp_path / "a.npz").read_bytes()
    assert raw == (tmp_path / "b.npz").read_bytes()
    assert b"alice_project_x" not in raw and str(tmp_path).encode() not in raw


def test_the_reason_of_a_forward_only_program_names_no_path_or_address():
    text = ("TypeError: for jit of f at /home/alice/project_x/run.py:12 (<function f at 0x7f12ab34cd50>), "
            r"C:\Users\bob\lab\s.py:3; lax.while_loop with dynamic start/stop values")
    got = _without_paths(text)
    assert got == ("TypeError: for jit of f at <path>:12 (<function f at <address>>), <path>:3; "
                   "lax.while_loop with dynamic start/stop values")


def test_the_container_is_written_the_same_way_whatever_the_order_of_its_parts(tmp_path, monkeypatch):
    arrays = {"indptr": np.array([0, 1, 2], np.int32), "indices": np.array([1, 0], np.int32),
              "program": np.frombuffer(b"program", np.uint8)}
    meta = {"format": archive.FORMAT, "class": "SparseJacobian", "shape": [2, 2]}
    archive.write_archive(tmp_path / "a.npz", meta, arrays)
    reordered = dict(reversed(list(arrays.items())))
    monkeypatch.setattr(sys, "platform", "win32")  # zipfile records the host system in each member
    archive.write_archive(tmp_path / "b.npz", dict(reversed(list(meta.items()))), reordered)
    monkeypatch.undo()
    raw = (tmp_path / "a.npz").read_bytes()
    assert raw == (tmp_path / "b.npz").read_bytes()
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        infos = zf.infolist()
        manifest = json.loads(np.lib.format.read_array(io.BytesIO(zf.read("meta.npy"))).tobytes())
    assert [i.filename for i in infos] == ["meta.npy", "meta_sha256.npy", "indices.npy", "indptr.npy", "program.npy"]
    assert {(i.date_time, i.create_system, i.external_attr >> 16) for i in infos} == {((1980, 1, 1, 0, 0, 0), 3,
                                                                                        0o644)}
    assert list(manifest) == sorted(manifest) and list(manifest["members"]) == sorted(manifest["members"])


@pytest.mark.parametrize("how", ["save", "pickle"])
def test_a_restored_stripped_derivative_evaluates_and_differentiates_in_reverse_mode(tmp_path, how):
    def f(x):
        return jnp.sin(x[1:]) * x[:-1] + x[1:] ** 2

    x = jnp.linspace(0.1, 1.0, 6)
    jac = ss.sparse_jacobian(f, x, output="dense")
    if how == "save":
        jac.save(tmp_path / "jac.npz")
        restored = ss.load(tmp_path / "jac.npz")
    else:
        restored = pickle.loads(pickle.dumps(jac))
    assert __file__.encode() not in restored.program_bytes()
    p = jnp.asarray(np.random.default_rng(1).uniform(0.2, 1.0, 6))
    w = jnp.asarray(np.random.default_rng(2).normal(size=(5, 6)))
    np.testing.assert_allclose(np.asarray(restored(p)), np.asarray(jax.jacfwd(f)(p)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(jax.grad(lambda v: jnp.vdot(w, restored(v)))(p)),
                               np.asarray(jax.grad(lambda v: jnp.vdot(w, jax.jacfwd(f)(v)))(p)), rtol=1e-10)


def test_an_injected_derivative_keeps_the_users_locations_and_adds_no_path_of_its_own(tmp_path):
    """The derivative passes splice the compressed program into the user's module: the user's ops keep the
    locations of the user's file (they are the user's), the added functions name no file of the library or of
    the user (JAX lowers them without locations; they point into the lowered text)."""
    from jaxlib.mlir import ir

    from stablehlo_sparsity.passes import inject_jacobian

    folder = tmp_path / "alice_project_x"
    folder.mkdir()
    (folder / "model.mlir").write_text(MODULE)
    module = ss.parse_module(str(folder / "model.mlir"), is_path=True)
    name = inject_jacobian(module)
    locations: dict[bool, set[str]] = {True: set(), False: set()}
    with module.context:
        for fn in module.body.operations:
            user = ir.StringAttr(fn.attributes["sym_name"]).value == "main"

            def visit(op, user=user):
                locations[user].add(str(op.location))
                return ir.WalkResult.ADVANCE

            fn.operation.walk(visit)
        text = module.operation.get_asm(enable_debug_info=True)
    assert name and all(str(folder / "model.mlir") in loc for loc in locations[True])
    assert len(locations[False]) > 5 and not any("alice_project_x" in loc for loc in locations[False])
    library = os.path.dirname(os.path.abspath(ss.__file__))
    assert library not in text and ".py" not in text and sys.prefix not in text


def test_upgrade_writes_a_file_of_an_earlier_version_without_its_paths(tmp_path, monkeypatch):
    """A format-1 file (no digests) kept the locations; ``upgrade`` writes the file ``.save`` writes today."""
    from stablehlo_sparsity.derivatives.prepared import saving
    from stablehlo_sparsity.derivatives.saved import upgrade

    def f(x):
        return jnp.sin(x[1:]) * x[:-1] + x[1:] ** 2

    x = jnp.linspace(0.1, 1.0, 6)
    with monkeypatch.context() as m:  # an earlier version: the program keeps its locations
        m.setattr(saving, "shareable", lambda exp: exp)
        ss.sparse_jacobian(f, x).save(tmp_path / "with_paths.npz")
    st = archive.read_archive(tmp_path / "with_paths.npz")
    assert __file__.encode() in st["program"]
    old = {k: v for k, v in st["meta"].items() if k not in ("signature", "host_callback", "library", "jax", "jaxlib",
                                                            "members")}
    arrays = {k: np.asarray(v) for k, v in st.items() if k not in ("meta", "program")}
    np.savez(tmp_path / "v1.npz", meta=np.frombuffer(json.dumps(dict(old, format=archive.LEGACY_FORMATS[0])).encode(),
                                                     np.uint8), program=np.frombuffer(st["program"], np.uint8), **arrays)
    digest = upgrade(tmp_path / "v1.npz", tmp_path / "v2.npz")
    ss.sparse_jacobian(f, x).save(tmp_path / "today.npz")
    assert digest == archive.file_sha256(tmp_path / "today.npz")
    assert __file__.encode() not in (tmp_path / "v2.npz").read_bytes()
