"""Trusted artifacts (issue 31): what the library reads back from a file is checked before it is used.

Hand-crafted hostile files whose digests are *valid* (recomputed after the edit, as an attacker or a careless
tool would): each is refused with an ``InputError`` naming the problem — an out-of-range column, a
non-monotone ``indptr``, unsorted indices, an invalid coloring, decompression indices that disagree with the
pattern, a program whose signature disagrees with the manifest or with its own ``@main``, a foreign
``custom_call`` (in the program, or in its VJP: refused when reverse mode reaches it), a host callback, a
header announcing a huge array.  The same structural checks guard the pattern shards
(``read_pattern_shards``, NPZ and MatrixMarket) and the ``sparsity.derivative`` record of an injected module
(``read_injected``).  The random-corruption side (flipped, zeroed, truncated, extended members, in a fresh
process) is ``test_artifact_mutations.py``.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import tracemalloc
import warnings
import zipfile

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp

import stablehlo_sparsity as ss
from stablehlo_sparsity import InputError
from stablehlo_sparsity.derivatives.prepared.archive import npy_bytes, read_archive, write_archive
from stablehlo_sparsity.derivatives.prepared.validation import ALLOWED_CUSTOM_CALLS, program_signature
from stablehlo_sparsity.derivatives.saved import file_sha256, load, upgrade
from stablehlo_sparsity.derivatives.shard_io import read_pattern_shards
from stablehlo_sparsity.analysis.streaming import write_blocks


def issue_f(x):
    """The issue's function: a bidiagonal Jacobian (two column colors)."""
    return jnp.sin(x[1:]) * x[:-1] + x[1:] ** 2


X = jnp.linspace(0.1, 1.0, 12)


def arrowhead(x):
    return x * x[0] + jnp.concatenate([jnp.sum(x)[None], jnp.zeros(x.shape[0] - 1)])


@functools.lru_cache(maxsize=None)
def _saved(tmp_factory_root: str, which: str) -> str:
    path = f"{tmp_factory_root}/{which}.npz"
    if which == "issue":
        ss.sparse_jacobian(issue_f, X, output="dense").save(path)
    elif which == "arrow":
        jac = ss.sparse_jacobian(arrowhead, jnp.linspace(0.1, 1.0, 8), output="dense")
        assert jac.mode == "bidirectional"
        jac.save(path)
    elif which == "hessian":
        ss.sparse_hessian(lambda v: jnp.sum(jnp.sin(v[1:] * v[:-1])), X, output="dense").save(path)
    return path


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("artifacts"))


def _members(path):
    """``(manifest without its member list, arrays)`` of a (valid) saved file."""
    st = read_archive(path)
    meta = {k: v for k, v in st["meta"].items() if k != "members"}
    arrays = {k: np.array(v) for k, v in st.items() if k not in ("meta", "program")}
    arrays["program"] = np.frombuffer(st["program"], np.uint8)
    return meta, arrays


def _crafted(src, dst, edit_meta=None, **arrays):
    """``src`` with some members replaced and the manifest edited — every digest recomputed (valid)."""
    meta, members = _members(src)
    if edit_meta is not None:
        edit_meta(meta)
    members.update({k: (np.frombuffer(v, np.uint8) if isinstance(v, bytes) else v) for k, v in arrays.items()})
    write_archive(dst, meta, members)
    return dst


def _refused(path, match, **kw):
    with pytest.raises(InputError, match=match) as info:
        load(path, **kw)
    assert str(path) in str(info.value)  # the message names the file
    return info.value


def test_a_valid_artifact_round_trips_and_saves_to_the_same_bytes(root, tmp_path):
    path = _saved(root, "issue")
    obj = load(path)
    np.testing.assert_allclose(np.asarray(obj(X)), np.asarray(jax.jacfwd(issue_f)(X)), rtol=1e-12)
    obj.save(tmp_path / "again.npz")  # a restored object saves what it read
    assert file_sha256(tmp_path / "again.npz") == file_sha256(path)
    with np.load(path, allow_pickle=False) as z:  # still an .npz NumPy reads, without pickle
        assert {"meta", "meta_sha256", "program", "indptr", "indices", "colors", "rows", "cols"} == set(z.files)
    meta = read_archive(path)["meta"]
    assert meta["format"] == "stablehlo_sparsity.prepared/2" and meta["jax"] == jax.__version__
    assert meta["library"].startswith("stablehlo_sparsity ") and meta["host_callback"] is False
    assert set(meta["members"]) == {f"{k}.npy" for k in ("program", "indptr", "indices", "colors", "rows", "cols")}
    assert all(len(m["sha256"]) == 64 for m in meta["members"].values())


def test_a_program_calling_lapack_loads_and_differentiates(tmp_path):
    """The allow-list holds what a user's function legitimately lowers to: LAPACK on CPU, cuSOLVER and XLA's TPU
    expanders in the multi-platform program, and the same in its VJP (checked when reverse mode reaches it)."""
    def f(x):
        a = jnp.diag(2 + x) + jnp.diag(x[1:] * 0.1, 1) + jnp.diag(x[1:] * 0.1, -1)
        return jnp.linalg.solve(a, jnp.sin(x)) + jnp.linalg.cholesky(a @ a.T)[:, 0] + jnp.linalg.eigh(a)[0]

    x = jnp.linspace(0.1, 1.0, 6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jac = ss.sparse_jacobian(f, x, output="dense")
    jac.save(tmp_path / "lapack.npz")
    text = _exported(tmp_path / "lapack.npz").mlir_module()
    assert "lapack_dgetrf_ffi" in text and "cusolver_potrf_ffi" in text
    obj = load(tmp_path / "lapack.npz")
    np.testing.assert_allclose(np.asarray(obj(x)), np.asarray(jax.jacfwd(f)(x)), rtol=1e-10, atol=1e-12)
    g = jax.grad(lambda v: jnp.sum(obj(v)))(x)
    np.testing.assert_allclose(np.asarray(g), np.asarray(jax.grad(lambda v: jnp.sum(jax.jacfwd(f)(v)))(x)),
                               rtol=1e-8, atol=1e-10)


def test_the_pinned_digest_of_the_whole_file(root):
    path = _saved(root, "issue")
    digest = file_sha256(path)
    assert load(path, sha256=digest.upper()).shape == (11, 12)
    _refused(path, "not the pinned artifact", sha256="0" * 64)
    with pytest.raises(InputError, match="64 hexadecimal digits"):
        load(path, sha256="abc")


def test_crafted_csr_arrays_are_refused(root, tmp_path):
    src = _saved(root, "issue")
    _, a = _members(src)
    indices, indptr = a["indices"].copy(), a["indptr"].copy()
    out_of_range = indices.copy()
    out_of_range[5] = 12 + 3
    cols = a["cols"].copy()
    cols[5] = 15
    _refused(_crafted(src, tmp_path / "col.npz", indices=out_of_range, cols=cols),
             r"column index 15 \(row \d+, entry 5\) is out of range for 12 columns")
    bad_ptr = indptr.copy()
    bad_ptr[4] = bad_ptr[3] - 1
    _refused(_crafted(src, tmp_path / "ptr.npz", indptr=bad_ptr), "indptr is not monotone: row 3")
    zeroed = indptr.copy()
    zeroed[2:6] = 0  # the issue's heap corruption: a zeroed stretch of indptr.npy
    _refused(_crafted(src, tmp_path / "zero.npz", indptr=zeroed), "indptr is not monotone")
    short = indptr.copy()
    short[-1] -= 1
    _refused(_crafted(src, tmp_path / "end.npz", indptr=short), "indptr ends at 21, but there are 22 indices")
    swapped = indices.copy()
    swapped[[0, 1]] = swapped[[1, 0]]
    _refused(_crafted(src, tmp_path / "sort.npz", indices=swapped, cols=swapped),
             "column indices of row 0 are not sorted")
    _refused(_crafted(src, tmp_path / "len.npz", indptr=indptr[:-1]), "indptr has 11 entries, a 11×12 pattern needs 12")
    _refused(_crafted(src, tmp_path / "float.npz", indptr=indptr.astype(np.float64)), "indptr must hold integers")


def test_crafted_decompression_indices_are_refused(root, tmp_path):
    src = _saved(root, "issue")
    _, a = _members(src)
    rows = a["rows"].copy()
    rows[3] = (rows[3] + 1) % 11
    _refused(_crafted(src, tmp_path / "rows.npz", rows=rows), "rows does not match the pattern: entry 3")
    cols = a["cols"].copy()
    cols[7] = (cols[7] + 1) % 12
    _refused(_crafted(src, tmp_path / "cols.npz", cols=cols), "cols does not match the pattern: entry 7")
    _refused(_crafted(src, tmp_path / "short.npz", rows=a["rows"][:-1]), "rows has 21 entries")


def test_crafted_colorings_are_refused(root, tmp_path):
    src = _saved(root, "issue")
    _, a = _members(src)
    _refused(_crafted(src, tmp_path / "zero.npz", colors=np.zeros_like(a["colors"])),
             "not a valid coloring of the pattern: column coloring: row 0 holds two columns of color 0")
    big = a["colors"].copy()
    big[0] = 7
    _refused(_crafted(src, tmp_path / "range.npz", colors=big), r"color 7 of vertex 0 is outside \[0, 2\)")
    _refused(_crafted(src, tmp_path / "len.npz", colors=a["colors"][:-1]), "has 12 colors, got 11")

    def reverse(meta):
        meta["mode"] = "reverse"

    _refused(_crafted(src, tmp_path / "mode.npz", reverse), "in mode reverse has a row coloring")
    arrow = _saved(root, "arrow")
    _, b = _members(arrow)
    bad = b["colors"].copy()
    bad[8:] = np.where(bad[8:] >= 0, 1, -1)  # every row on one row color: entries no longer isolated
    _refused(_crafted(arrow, tmp_path / "bi.npz", colors=bad), "bidirectional coloring")
    hess = _saved(root, "hessian")
    _, h = _members(hess)
    _refused(_crafted(hess, tmp_path / "star.npz", colors=np.zeros_like(h["colors"])), "star coloring: entry")


def test_crafted_manifests_are_refused(root, tmp_path):
    src = _saved(root, "issue")

    def edit(**kv):
        def apply(meta):
            for k, v in kv.items():
                target = meta
                *path, last = k.split("__")
                for p in path:
                    target = target[p]
                target[last] = v
        return apply

    _refused(_crafted(src, tmp_path / "a.npz", edit(shape=[11, 13])), "coloring is of a")
    _refused(_crafted(src, tmp_path / "b.npz", edit(host_callback=True)), "host callback")
    _refused(_crafted(src, tmp_path / "c.npz", edit(forward_only="crafted")), "forward-only, the program has VJP")
    _refused(_crafted(src, tmp_path / "d.npz", edit(signature__in=[[[13], "float64"]])),
             "signature does not match the manifest: in")
    _refused(_crafted(src, tmp_path / "e.npz", edit(output="pickle")), "unknown output")
    _refused(_crafted(src, tmp_path / "f.npz", edit(argnums=[3])), "argnums")
    _refused(_crafted(src, tmp_path / "g.npz", edit(**{"class": "Popen"})), "unknown saved class")
    _refused(_crafted(src, tmp_path / "h.npz", edit(format="stablehlo_sparsity.prepared/9")),
             "format 'stablehlo_sparsity.prepared/9'.*upgrade stablehlo_sparsity")


def test_a_program_from_another_artifact_is_refused(root, tmp_path):
    """Valid digests, a real program — of another function with another number of nonzeros."""
    src = _saved(root, "issue")
    other = tmp_path / "other.npz"
    ss.sparse_jacobian(lambda x: jnp.sin(x[1:] * x[:-1] * x[0]), X, output="dense").save(other)
    _, o = _members(other)
    _refused(_crafted(src, tmp_path / "p.npz", program=o["program"]), "signature does not match the manifest")

    def same_signature(meta):
        meta["signature"] = read_archive(other)["meta"]["signature"]

    _refused(_crafted(src, tmp_path / "q.npz", same_signature, program=o["program"]), "values of shape")
    _refused(_crafted(src, tmp_path / "r.npz", program=b"not a program at all"),
             "program: not a serialized jax.export program")


def _exported(path):
    from jax import export

    return export.deserialize(bytearray(read_archive(path)["program"]))


def _with_program(src, dst, exp, vjp_order=0):
    """``src`` with the program ``exp`` (and a manifest that agrees with it: an attacker's consistent edit)."""
    data = bytes(exp.serialize(vjp_order=vjp_order))

    def agree(meta):
        meta["signature"] = program_signature(exp)
        meta["forward_only"] = None if exp.has_vjp() else "crafted"

    return _crafted(src, dst, agree, program=data)


def _foreign(values, target="foreign_kernel"):
    return values + 0 * jax.ffi.ffi_call(target, jax.ShapeDtypeStruct(values.shape, values.dtype))(values)


def _export_unchecked(fn, *args, target="foreign_kernel"):
    """``jax.export`` of ``fn`` with the custom-call safety check off, then the record of that removed (so only
    our allow-list stands between the file and XLA)."""
    from jax import export

    exp = export.export(jax.jit(fn), disabled_checks=[export.DisabledSafetyCheck.custom_call(target)])(*args)
    return dataclasses.replace(exp, disabled_safety_checks=())


def test_a_foreign_custom_call_is_refused(root, tmp_path):
    src = _saved(root, "issue")
    exp = _exported(src)
    assert "foreign_kernel" not in ALLOWED_CUSTOM_CALLS and "lapack_dgetrf_ffi" in ALLOWED_CUSTOM_CALLS

    def g(x):
        y, aux, values = exp.call(x)
        return y, aux, _foreign(values)

    crafted = _with_program(src, tmp_path / "cc.npz", _export_unchecked(g, X))
    _refused(crafted, "program contains a custom_call to @foreign_kernel.*refused")
    callback = _with_program(src, tmp_path / "cb.npz",
                             _export_unchecked(lambda x: (lambda y, a, v: (y, a, _foreign(v, "xla_ffi_python_cpu_callback")))(
                                 *exp.call(x)), X, target="xla_ffi_python_cpu_callback"))
    _refused(callback, "host callback")
    # an honest program with the checks disabled is refused for that
    from jax import export

    disabled = export.export(jax.jit(g), disabled_checks=[export.DisabledSafetyCheck.custom_call("foreign_kernel")])(X)
    _refused(_with_program(src, tmp_path / "dis.npz", disabled), "disables jax.export safety checks")


def test_a_program_whose_main_disagrees_with_its_signature_is_refused(root, tmp_path):
    """The issue's raw MLIR verifier error ("'func.call' op operand type mismatch"), refused before JAX builds the
    call."""
    src = _saved(root, "issue")
    exp = _exported(src)
    lying = dataclasses.replace(exp, in_avals=(exp.in_avals[0].update(dtype=np.dtype(np.float32)),), _get_vjp=None)
    _refused(_with_program(src, tmp_path / "main.npz", lying),
             r"@main takes \(tensor<12xf64>\), its signature says \(tensor<12xf32>\)")


_HAND_WRITTEN = """
module @crafted {{
  {extra}
  func.func public @main(%p: tensor<i64>, %x: tensor<12xf64>) -> (tensor<11xf64>, tensor<22xf64>) {{
    %y = stablehlo.slice %x [0:11] : (tensor<12xf64>) -> tensor<11xf64>
    {body}
    return %y, %v : tensor<11xf64>, tensor<22xf64>
  }}
}}
"""
_CONCAT = "%v = stablehlo.concatenate %y, %y, dim = 0 : (tensor<11xf64>, tensor<11xf64>) -> tensor<22xf64>"


@pytest.mark.parametrize("extra, body, message", [
    ("func.func private @ext(%a: tensor<12xf64>) -> tensor<22xf64>",
     "%v = func.call @ext(%x) : (tensor<12xf64>) -> tensor<22xf64>", "a function without a body"),
    ("", _CONCAT + "\n    %t = stablehlo.create_token : !stablehlo.token\n"
         "    %o = \"stablehlo.outfeed\"(%y, %t) {outfeed_config = \"\"} : (tensor<11xf64>, !stablehlo.token) -> "
         "!stablehlo.token", r"a host transfer \(stablehlo.outfeed\)"),
    ("module @inner { func.func public @main() { return } }", _CONCAT, "a nested module"),
    ("", "%v = stablehlo.custom_call @Sharding(%y) : (tensor<11xf64>) -> tensor<22xf64>", "@main returns"),
])
def test_hand_written_modules_are_inspected(root, tmp_path, extra, body, message):
    """Programs no JAX export would write, in place of the saved module (the signature kept): refused by the
    inspection of the module itself."""
    from jaxlib.mlir._mlir_libs import _stablehlo

    src = _saved(root, "issue")
    exp = _exported(src)
    text = _HAND_WRITTEN.format(extra=extra, body=body)
    if message == "@main returns":  # (a well-formed module whose @main disagrees with the avals)
        text = text.replace("-> tensor<22xf64>\n", "-> tensor<11xf64>\n").replace(
            "return %y, %v : tensor<11xf64>, tensor<22xf64>", "return %y, %v : tensor<11xf64>, tensor<11xf64>").replace(
            "-> (tensor<11xf64>, tensor<22xf64>)", "-> (tensor<11xf64>, tensor<11xf64>)")
    artifact = _stablehlo.serialize_portable_artifact_str(text, _stablehlo.get_current_version())
    crafted = dataclasses.replace(exp, mlir_module_serialized=bytes(artifact), _get_vjp=None)
    _refused(_with_program(src, tmp_path / "hand.npz", crafted), message)


def test_a_foreign_custom_call_in_the_vjp_is_refused_when_reverse_mode_reaches_it(root, tmp_path):
    src = _saved(root, "issue")
    exp = _exported(src)
    vjp = exp.vjp()
    y_ct = jax.ShapeDtypeStruct(exp.out_avals[0].shape, exp.out_avals[0].dtype)
    v_ct = jax.ShapeDtypeStruct(exp.out_avals[1].shape, exp.out_avals[1].dtype)
    bad_vjp = _export_unchecked(lambda x, cy, cv: (lambda r: (_foreign(r[0]),))(vjp.call(x, cy, cv)), X, y_ct, v_ct)
    crafted = dataclasses.replace(exp, _get_vjp=lambda _: bad_vjp)
    path = _with_program(src, tmp_path / "vjp.npz", crafted, vjp_order=1)
    obj = load(path)  # the VJP is read when reverse mode first needs it
    np.testing.assert_allclose(np.asarray(obj(X)), np.asarray(jax.jacfwd(issue_f)(X)), rtol=1e-12)
    with pytest.raises(InputError, match="VJP contains a custom_call to @foreign_kernel"):
        jax.grad(lambda x: jnp.sum(obj(x)))(X)


def _raw_archive(dst, meta, raw: dict[str, bytes]):
    """An archive from raw member bytes (``.npy`` files that NumPy would not write), digests valid."""
    import hashlib

    meta = dict(meta, members={n: {"sha256": hashlib.sha256(b).hexdigest(), "dtype": d, "shape": s}
                               for n, (b, d, s) in raw.items()})
    manifest = npy_bytes(np.frombuffer(json.dumps(meta).encode(), np.uint8))
    digest = npy_bytes(np.frombuffer(hashlib.sha256(manifest).hexdigest().encode(), np.uint8))
    with zipfile.ZipFile(dst, "w") as zf:
        zf.writestr("meta.npy", manifest)
        zf.writestr("meta_sha256.npy", digest)
        for n, (b, _, _) in raw.items():
            zf.writestr(n, b)
    return dst


def test_a_header_announcing_a_huge_array_allocates_nothing(root, tmp_path):
    src = _saved(root, "issue")
    meta, a = _members(src)
    raw = {f"{k}.npy": (npy_bytes(v), v.dtype.str, list(v.shape)) for k, v in a.items()}
    huge = npy_bytes(a["indptr"]).replace(b"'shape': (12,)", b"'shape': (1000000000000,)")
    raw["indptr.npy"] = (huge, a["indptr"].dtype.str, [10**12])
    path = _raw_archive(tmp_path / "huge.npz", meta, raw)
    tracemalloc.start()
    try:
        _refused(path, r"member 'indptr.npy' holds \d+ bytes of data, its shape \(1000000000000,\).*truncated")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)  # a pickle inside an .npy
    pickled = dict(raw, **{"indptr.npy": (buf.getvalue(), "|O", [1])})
    _refused(_raw_archive(tmp_path / "obj.npz", meta, pickled), "member 'indptr.npy' has dtype object")
    extra = dict(raw, **{"evil.npy": (npy_bytes(np.zeros(3)), "<f8", [3])})
    _refused(_raw_archive(tmp_path / "extra.npz", meta, extra), "the manifest lists unexpected members evil")
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp_path / "unlisted.npz", "w") as zout:
        for info in zin.infolist():
            zout.writestr(info, zin.read(info))
        zout.writestr("evil.npy", npy_bytes(np.zeros(3)))
    _refused(tmp_path / "unlisted.npz", "member 'evil.npy' is not listed in the manifest")
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(tmp_path / "deflated.npz", "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    _refused(tmp_path / "deflated.npz", "compressed")


def test_format_1_is_refused_and_upgraded_on_request(root, tmp_path):
    """A file of the previous format (no digests): refused with a message naming the format; ``upgrade`` converts
    a trusted one after every structural check."""
    src = _saved(root, "issue")
    meta, a = _members(src)
    old = {k: v for k, v in meta.items() if k not in ("signature", "host_callback", "library", "jax", "jaxlib")}
    old["format"] = "stablehlo_sparsity.prepared/1"
    legacy = tmp_path / "v1.npz"
    np.savez(legacy, meta=np.frombuffer(json.dumps(old).encode(), np.uint8), **a)
    _refused(legacy, r"format 'stablehlo_sparsity.prepared/1'.*upgrade\(old_path, new_path\)")
    digest = upgrade(legacy, tmp_path / "v2.npz")
    assert digest == file_sha256(tmp_path / "v2.npz") == file_sha256(src)
    np.testing.assert_allclose(np.asarray(load(tmp_path / "v2.npz", sha256=digest)(X)),
                               np.asarray(jax.jacfwd(issue_f)(X)), rtol=1e-12)
    bad = dict(a, indptr=a["indptr"][::-1].copy())
    np.savez(tmp_path / "v1bad.npz", meta=np.frombuffer(json.dumps(old).encode(), np.uint8), **bad)
    with pytest.raises(InputError, match="indptr starts at 22"):
        upgrade(tmp_path / "v1bad.npz", tmp_path / "never.npz")
    assert not (tmp_path / "never.npz").exists()
    with pytest.raises(InputError, match="nothing to upgrade"):
        upgrade(src, tmp_path / "again.npz")


def test_saving_refuses_what_load_would_refuse(tmp_path):
    """A user's function with a custom call jax.export accepts but the library does not emit (``jax2tf``'s
    ``tf.call_tf_function``, through ``jax.ffi``; detected under the conservative opt-in) prepares, but its saved
    program would be refused: saving says so."""
    target = "tf.call_tf_function"

    @jax.custom_jvp
    def kernel(v):
        return _foreign(v, target)

    @kernel.defjvp
    def _(primals, tangents):
        return kernel(primals[0]), tangents[0]

    def f(x):
        return kernel(jnp.sin(x))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        jac = ss.sparse_jacobian(f, X, on_unknown="conservative")
    with pytest.raises(InputError, match="cannot save this sparse Jacobian: program contains a custom_call to "
                                         "@tf.call_tf_function"):
        jac.save(tmp_path / "foreign.npz")
    assert not (tmp_path / "foreign.npz").exists()


def test_a_tampered_pickle_state_is_checked_too(root):
    """Pickle is not the exchange format (unpickling runs code), but a restored state is checked all the same."""
    import pickle

    obj = load(_saved(root, "issue"))
    state = pickle.loads(pickle.dumps(obj)).__getstate__()
    state["indptr"] = state["indptr"][::-1].copy()
    fresh = ss.SparseJacobian.__new__(ss.SparseJacobian)
    with pytest.raises(InputError, match="indptr starts at"):
        fresh.__setstate__(state)


# ------------------------------------------------------------------------------------------------ shards
def _shards(tmp_path, fmt="npz"):
    rng = np.random.default_rng(0)
    blocks = [(r0, sp.csr_array(rng.random((4, 9)) < 0.3)) for r0 in (0, 4, 8)]
    write_blocks(tmp_path, blocks, (12, 9), format=fmt)
    return sorted(tmp_path.glob(f"rows-*.{fmt}")), blocks


def _save_npz_raw(path, **arrays):
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_npz_shards_are_checked_before_scipy_reads_them(tmp_path):
    paths, blocks = _shards(tmp_path)
    got = list(read_pattern_shards(tmp_path))
    assert [r for r, _ in got] == [0, 4, 8] and all((g != b).nnz == 0 for (_, g), (_, b) in zip(got, blocks))
    csr = blocks[1][1]
    base = dict(indices=csr.indices, indptr=csr.indptr, format=np.array(b"csr"), shape=np.array([4, 9]),
                data=np.ones(csr.nnz, bool))
    cases = {
        "indptr is not monotone": dict(indptr=np.array([0, 3, 1, 4, csr.nnz])),
        "column index 40": dict(indices=np.where(np.arange(csr.nnz) == 0, 40, csr.indices)),
        "not sorted": dict(indices=csr.indices[::-1].copy()),
        r"shard has shape \(4, 10\)": dict(shape=np.array([4, 10])),
        "member 'data' has shape": dict(data=np.ones(csr.nnz + 1, bool)),
        "shard format 'bsr'": dict(format=np.array(b"bsr")),
        "indptr ends at": dict(indptr=np.concatenate([csr.indptr[:-1], [csr.nnz + 5]])),
    }
    for message, change in cases.items():
        _save_npz_raw(paths[1], **dict(base, **change))
        with pytest.raises(InputError, match=message) as info:
            list(read_pattern_shards(tmp_path))
        assert paths[1].name in str(info.value)
    paths[1].write_bytes(paths[1].read_bytes()[:100])
    with pytest.raises(InputError, match="not a readable .npz"):
        list(read_pattern_shards(tmp_path))
    # a shard SciPy wrote compressed, or in COO, still reads
    sp.save_npz(paths[1], csr, compressed=True)
    assert (list(read_pattern_shards(tmp_path))[1][1] != csr).nnz == 0
    sp.save_npz(paths[1], sp.coo_array(csr), compressed=False)
    assert (list(read_pattern_shards(tmp_path))[1][1] != csr).nnz == 0
    (tmp_path / "shape.json").write_text('{"rows": 12, "columns": "9"}')
    with pytest.raises(InputError, match="columns must be a non-negative integer"):
        list(read_pattern_shards(tmp_path))
    (tmp_path / "shape.json").write_text("{not json")
    with pytest.raises(InputError, match="not a readable shape manifest"):
        list(read_pattern_shards(tmp_path))


def test_matrix_market_shards_are_checked(tmp_path):
    paths, blocks = _shards(tmp_path, "mtx")
    assert all((g != b).nnz == 0 for (_, g), (_, b) in zip(read_pattern_shards(tmp_path), blocks))
    head = "%%MatrixMarket matrix coordinate pattern general\n"
    cases = {
        "Row index out of bounds|row 5": head + "4 9 2\n1 1\n5 2\n",
        "Column index out of bounds|column": head + "4 9 2\n1 1\n2 10\n",
        "more than a": head + "4 9 99999999\n1 1\n",
        r"shard has shape \(3, 9\)": head + "3 9 1\n1 1\n",
        "not integers": head + "4 nine 1\n1 1\n",
        "not a MatrixMarket file": "hello\n4 9 1\n1 1\n",
    }
    for message, text in cases.items():
        paths[2].write_text(text)
        with pytest.raises(InputError, match=message):
            list(read_pattern_shards(tmp_path))


# ------------------------------------------------------------------------------------------------ injected records
MODEL = """\
func.func @main(%x: tensor<5xf32>) -> tensor<4xf32> {
  %a = stablehlo.slice %x [1:5] : (tensor<5xf32>) -> tensor<4xf32>
  %b = stablehlo.slice %x [0:4] : (tensor<5xf32>) -> tensor<4xf32>
  %m = stablehlo.multiply %a, %b : tensor<4xf32>
  %s = stablehlo.sine %m : tensor<4xf32>
  return %s : tensor<4xf32>
}
"""


def _injected_with(**changes):
    """A module with ``@main_jacobian`` whose record has some entries replaced (``None``: removed)."""
    from jaxlib.mlir import ir

    from stablehlo_sparsity.modules.injected import RECORD_ATTRIBUTE
    from stablehlo_sparsity.ir.helpers import functions
    from stablehlo_sparsity.passes import inject_jacobian

    m = ss.parse_module(MODEL)
    inject_jacobian(m)
    with m.context:
        fn = functions(m)["main_jacobian"]
        d = ir.DictAttr(fn.attributes[RECORD_ATTRIBUTE])
        fields = {d[i].name: d[i].attr for i in range(len(d))}
        i64 = ir.IntegerType.get_signless(64)
        for k, v in changes.items():
            if v is None:
                fields.pop(k)
            elif isinstance(v, str):
                fields[k] = ir.StringAttr.get(v)
            elif isinstance(v, int):
                fields[k] = ir.IntegerAttr.get(i64, v)
            else:
                arr = np.asarray(v)
                fields[k] = ir.DenseElementsAttr.get(arr, type=ir.IntegerType.get_signless(arr.dtype.itemsize * 8))
        fn.attributes[RECORD_ATTRIBUTE] = ir.DictAttr.get(fields)
    return m


def test_injected_records_are_checked_before_use():
    info = ss.read_injected(_injected_with(), "main_jacobian")
    assert info.indices.tolist() == [0, 1, 1, 2, 2, 3, 3, 4] and info.colors.tolist() == [0, 1, 0, 1, 0]
    cases = {
        "column index 7": dict(column_indices=np.array([0, 1, 1, 2, 2, 3, 3, 7], np.int64)),
        "indptr is not monotone": dict(row_pointers=np.array([0, 2, 6, 4, 8], np.int64)),
        "not a valid coloring": dict(colors=np.zeros(5, np.int32)),
        r"color 5 of vertex 0 is outside \[0, 2\)": dict(colors=np.array([5, 1, 0, 1, 0], np.int32)),
        "nnz is 9, the pattern has 8": dict(nnz=9),
        "mode forward or reverse or bidirectional": dict(mode="star"),
        "kind 'matrix'": dict(kind="matrix"),
        "no 'colors' entry": dict(colors=None),
        "malformed 'shape' entry": dict(shape="4x5"),
    }
    for message, change in cases.items():
        with pytest.raises(InputError, match=message):
            ss.read_injected(_injected_with(**change), "main_jacobian")
    # a consistent record for a function that returns another number of values
    seven = _injected_with(column_indices=np.array([0, 1, 1, 2, 2, 3, 3], np.int64),
                           row_pointers=np.array([0, 2, 4, 6, 7], np.int64), nnz=7)
    with pytest.raises(InputError, match="nnz is 7, but @main_jacobian has a result of shape \\[8\\]"):
        ss.read_injected(seven, "main_jacobian")
