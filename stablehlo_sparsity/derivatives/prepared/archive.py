"""The container of a saved prepared derivative: an ``.npz`` whose every member is covered by a SHA-256 digest.

A saved derivative is a zip of ``.npy`` members (NumPy's format; no pickle), stored uncompressed, written the
same way everywhere — fixed timestamps, permissions and host system, the members in one order, the manifest's
keys sorted — so the same object saves to the same bytes on any machine and a digest of the whole file can be
pinned (the program itself holds no source location: :func:`.saving.shareable`):

* ``meta.npy`` — the manifest, UTF-8 JSON as ``uint8``: the format version (:data:`FORMAT`), the library,
  JAX and jaxlib versions that wrote it, the object's metadata (shape, mode, coloring, the program's signature
  …) and ``members``: for every other member its ``sha256`` (of the member's ``.npy`` bytes, header included),
  ``dtype`` and ``shape``;
* ``meta_sha256.npy`` — the manifest's own SHA-256 (64 hex characters as ``uint8``);
* the arrays (``indptr``, ``indices``, ``colors``, ``rows``, ``cols``) and ``program`` (the serialized
  :mod:`jax.export` program as ``uint8``).

:func:`read_archive` reads the whole file, checks an optional expected digest of it, parses the zip directory
(refusing duplicate, compressed, encrypted or unlisted members), checks the manifest's digest, then each member's
digest, and parses each ``.npy`` header strictly (dtype and shape as the manifest says, exactly as many bytes
as they need) before a NumPy array is made — a zero-copy view of the file's bytes.  Every refusal is an
:class:`~stablehlo_sparsity.errors.InputError` naming the member.  :func:`read_members` is the same strict
reader without digests (SciPy's ``save_npz`` shards, format-1 artifacts).
"""

from __future__ import annotations

import ast
import binascii
import hashlib
import io
import json
import os
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import InputError

__all__ = ["FORMAT", "LEGACY_FORMATS", "write_archive", "read_archive", "read_members", "parse_npy",
           "file_sha256"]

#: The format this version writes and reads.
FORMAT = "stablehlo_sparsity.prepared/2"
#: Formats of earlier versions: refused by :func:`read_archive` (no digests), converted by
#: :func:`stablehlo_sparsity.derivatives.saved.upgrade` on request.
LEGACY_FORMATS = ("stablehlo_sparsity.prepared/1",)

_MANIFEST = "meta.npy"
_MANIFEST_DIGEST = "meta_sha256.npy"
_DATE = (1980, 1, 1, 0, 0, 0)
_HEX = re.compile(r"[0-9a-f]{64}")
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's structFileHeader (30 bytes)
_MAX_HEADER = 65536


def npy_bytes(a: np.ndarray) -> bytes:
    """``a`` in the ``.npy`` format (no pickle)."""
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.require(a, requirements="C"), allow_pickle=False)
    return buf.getvalue()


def _sha256(data) -> str:
    return hashlib.sha256(data).hexdigest()


def file_sha256(path) -> str:
    """The SHA-256 of a file (what ``load(path, sha256=...)`` compares).

    Raises:
        OSError: the file cannot be opened (e.g. ``FileNotFoundError``).

    Examples:
        >>> import os, tempfile
        >>> from stablehlo_sparsity.derivatives.saved import file_sha256
        >>> path = os.path.join(tempfile.mkdtemp(), "data.bin")
        >>> with open(path, "wb") as fh:
        ...     _ = fh.write(b"abc")
        >>> file_sha256(path)
        'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'
    """
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_archive(path, meta: dict, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` and the manifest ``meta`` (to which ``members`` is added) to ``path``: a temporary file
    beside it, then renamed (a reader never sees half an artifact)."""
    members = {f"{k}.npy": npy_bytes(arrays[k]) for k in sorted(arrays)}
    meta = dict(meta, members={name: {"sha256": _sha256(data), "dtype": arrays[name[:-4]].dtype.str,
                                      "shape": list(arrays[name[:-4]].shape)}
                               for name, data in members.items()})
    try:
        text = json.dumps(meta, allow_nan=False, sort_keys=True).encode()
    except (TypeError, ValueError) as e:
        raise InputError(f"cannot save: the metadata is not JSON ({e}); pickle keeps any Python object") from None
    manifest = npy_bytes(np.frombuffer(text, np.uint8))
    digest = npy_bytes(np.frombuffer(_sha256(manifest).encode(), np.uint8))
    target = Path(os.fspath(path))
    tmp = target.with_name(f".partial-{os.getpid()}-{target.name}")
    try:
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_STORED) as zf:
            for name, data in ((_MANIFEST, manifest), (_MANIFEST_DIGEST, digest), *members.items()):
                info = zipfile.ZipInfo(name, _DATE)
                info.compress_type = zipfile.ZIP_STORED
                info.external_attr = 0o644 << 16
                info.create_system = 3  # (Unix; zipfile writes 0 on Windows: the bytes would differ)
                zf.writestr(info, data)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()


# ---------------------------------------------------------------------------------------------------- reading
def _zip_entries(raw: bytes, source: str) -> dict[str, zipfile.ZipInfo]:
    try:
        zf = zipfile.ZipFile(io.BytesIO(raw))
        infos = zf.infolist()
    except Exception as e:  # BadZipFile, a truncated directory, an impossible size …
        raise InputError(f"could not read it: not a readable .npz archive ({type(e).__name__}: {str(e)[:200]})",
                         source) from None
    entries: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        if info.filename in entries:
            raise InputError(f"member '{info.filename}' appears twice in the archive", source)
        if info.flag_bits & 0x1:
            raise InputError(f"member '{info.filename}' is encrypted", source)
        entries[info.filename] = info
    return entries


def _member_bytes(raw: bytes, info: zipfile.ZipInfo, source: str, stored_only: bool) -> memoryview:
    """The bytes of one member: a view of ``raw`` for a stored member (no copy; its digest or the zip's CRC
    checks it), else decompressed (CRC checked)."""
    name = info.filename
    if info.compress_type != zipfile.ZIP_STORED:
        if stored_only:
            raise InputError(f"member '{name}' is compressed; a saved derivative stores its members uncompressed",
                             source)
        try:
            with zipfile.ZipFile(io.BytesIO(raw)) as zf:
                return memoryview(zf.read(info))
        except Exception as e:
            raise InputError(f"member '{name}' does not decompress ({type(e).__name__}: {str(e)[:200]})",
                             source) from None
    start = info.header_offset
    if start < 0 or start + _LOCAL_HEADER.size > len(raw):
        raise InputError(f"member '{name}': its local header lies outside the file", source)
    fields = _LOCAL_HEADER.unpack_from(raw, start)
    if fields[0] != b"PK\x03\x04":
        raise InputError(f"member '{name}': no local header at offset {start}", source)
    name_len, extra_len = fields[10], fields[11]
    local_name = raw[start + 30:start + 30 + name_len]
    if local_name != name.encode("utf-8") and local_name != name.encode("cp437", "replace"):
        raise InputError(f"member '{name}': its local header names {local_name[:60]!r}", source)
    begin = start + 30 + name_len + extra_len
    size = info.compress_size
    if info.file_size != size or begin + size > len(raw):
        raise InputError(f"member '{name}' is truncated: {size} bytes declared, the file ends "
                         f"{max(len(raw) - begin, 0)} bytes after its start", source)
    view = memoryview(raw)[begin:begin + size]
    if not stored_only and binascii.crc32(view) != info.CRC:
        raise InputError(f"member '{name}' fails its CRC check (the file changed after it was written)", source)
    return view


#: The header NumPy writes for a plain array, e.g. ``{'descr': '<i4', 'fortran_order': False, 'shape': (12,), }``
#: (read without ``ast``; any other header goes through ``ast.literal_eval``).
_PLAIN_HEADER = re.compile(r"\{'descr': '([<>|=][a-zA-Z]\d{1,2})', 'fortran_order': (False|True), "
                           r"'shape': \(((?:\d{1,19}, )*\d{0,19}|\d{1,19},)\), \} *\n?")


def _plain_header(text: str) -> dict | None:
    m = _PLAIN_HEADER.fullmatch(text)
    if m is None:
        return None
    shape = tuple(int(d) for d in m.group(3).replace(",", " ").split())
    return {"descr": m.group(1), "fortran_order": m.group(2) == "True", "shape": shape}


def parse_npy(data: memoryview, name: str, source: str, *, dtype: np.dtype | None = None,
              shape: tuple[int, ...] | None = None) -> np.ndarray:
    """One ``.npy`` member as a read-only NumPy view of ``data``: the header parsed strictly (no pickle, no
    object dtype, C order; ``dtype`` / ``shape`` when given must match), and exactly as many bytes of data as
    the header's shape needs — checked before anything is allocated."""
    if len(data) < 10 or bytes(data[:6]) != b"\x93NUMPY":
        raise InputError(f"member '{name}' is not a .npy array (no NumPy magic)", source)
    major = data[6]
    if major == 1:
        hlen, start = int.from_bytes(data[8:10], "little"), 10
    elif major in (2, 3) and len(data) >= 12:
        hlen, start = int.from_bytes(data[8:12], "little"), 12
    else:
        raise InputError(f"member '{name}': unknown .npy version {major}", source)
    if hlen > _MAX_HEADER or start + hlen > len(data):
        raise InputError(f"member '{name}': its .npy header ({hlen} bytes) does not fit in the member", source)
    try:
        text = bytes(data[start:start + hlen]).decode("latin1" if major < 3 else "utf-8")
        header = _plain_header(text) or ast.literal_eval(text)
        if not isinstance(header, dict) or set(header) != {"descr", "fortran_order", "shape"}:
            raise ValueError("not a .npy header dictionary")
        got_dtype = np.lib.format.descr_to_dtype(header["descr"])
        got_shape = header["shape"]
        if not isinstance(got_shape, tuple) or any(isinstance(d, bool) or not isinstance(d, int) or d < 0
                                                   for d in got_shape):
            raise ValueError(f"bad shape {got_shape!r:.60}")
        if header["fortran_order"] not in (False, True):
            raise ValueError("bad fortran_order")
    except Exception as e:
        raise InputError(f"member '{name}': unreadable .npy header ({type(e).__name__}: {str(e)[:120]})",
                         source) from None
    if got_dtype.hasobject or got_dtype.kind not in "biufcSU" or got_dtype.fields is not None \
            or got_dtype.subdtype is not None:
        raise InputError(f"member '{name}' has dtype {got_dtype}, not a plain numeric or text array", source)
    if header["fortran_order"] and len(got_shape) > 1:
        raise InputError(f"member '{name}' is in Fortran order; this library writes C order", source)
    if dtype is not None and got_dtype != dtype:
        raise InputError(f"member '{name}' has dtype {got_dtype}, the manifest says {dtype}", source)
    if shape is not None and got_shape != shape:
        raise InputError(f"member '{name}' has shape {got_shape}, the manifest says {shape}", source)
    count = 1
    for d in got_shape:
        count *= d
    need = count * got_dtype.itemsize
    have = len(data) - start - hlen
    if have != need:
        raise InputError(f"member '{name}' holds {have} bytes of data, its shape {got_shape} and dtype {got_dtype} "
                         f"need {need} ({'truncated' if have < need else 'bytes appended'})", source)
    return np.frombuffer(data, got_dtype, count, start + hlen).reshape(got_shape)


def read_members(raw: bytes, source: str, *, stored_only: bool = False) -> dict[str, np.ndarray]:
    """Every member of an ``.npz`` (``name`` without ``.npy``) through :func:`parse_npy`, without digests."""
    out = {}
    for name, info in _zip_entries(raw, source).items():
        if not name.endswith(".npy"):
            raise InputError(f"member '{name}' is not a .npy array", source)
        out[name[:-4]] = parse_npy(_member_bytes(raw, info, source, stored_only), name, source)
    return out


def _read_file(path, source: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError as e:
        raise InputError(f"could not read a saved sparse Jacobian/Hessian: {e.strerror or e}", source) from None


def _manifest(raw: bytes, entries: dict, source: str, digest: str | None) -> dict:
    info = entries.get(_MANIFEST)
    if info is None:
        raise InputError("not a saved sparse Jacobian/Hessian (no meta.npy manifest)", source)
    data = _member_bytes(raw, info, source, stored_only=digest is not None)
    if digest is not None and _sha256(data) != digest:
        raise InputError("member 'meta.npy' (the manifest) does not match its SHA-256 in meta_sha256.npy: the file "
                         "changed after it was saved", source)
    arr = parse_npy(data, _MANIFEST, source)
    if arr.dtype != np.uint8 or arr.ndim != 1:
        raise InputError(f"member 'meta.npy' has dtype {arr.dtype} and shape {arr.shape}, not UTF-8 bytes", source)
    try:
        meta = json.loads(arr.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise InputError(f"member 'meta.npy' is not a JSON manifest ({type(e).__name__}: {str(e)[:120]})",
                         source) from None
    if not isinstance(meta, dict):
        raise InputError(f"member 'meta.npy' is not a JSON object ({type(meta).__name__})", source)
    return meta


def read_archive(path, sha256: str | None = None, *, legacy: bool = False,
                 members: frozenset[str] | None = None) -> dict:
    """The members of a saved derivative at ``path`` as ``{"meta": manifest, name: array}`` (``program`` as
    bytes), every digest checked (see the module docstring); ``sha256``: the expected digest of the whole file.
    ``legacy=True`` also reads a format-1 file (no digests: only the zip's CRCs) for
    :func:`stablehlo_sparsity.derivatives.saved.upgrade`; ``members``: the names (without ``.npy``) the manifest must
    list,
    no more and no fewer."""
    source = os.fspath(path) if isinstance(path, (str, os.PathLike)) else repr(path)
    source = str(source)
    raw = _read_file(path, source)
    if sha256 is not None:
        want = sha256.strip().lower() if isinstance(sha256, str) else None
        if want is None or not _HEX.fullmatch(want):
            raise InputError(f"sha256 must be 64 hexadecimal digits, got {sha256!r:.80}")
        got = _sha256(raw)
        if got != want:
            raise InputError(f"the file's SHA-256 is {got}, expected {want}: not the pinned artifact", source)
    entries = _zip_entries(raw, source)
    if _MANIFEST_DIGEST not in entries:
        meta = _manifest(raw, entries, source, None)
        fmt = meta.get("format")
        if fmt in LEGACY_FORMATS and legacy:
            out: dict[str, Any] = {k: v for k, v in read_members(raw, source).items() if k != "meta"}
            out["meta"] = meta
            out["program"] = out["program"].tobytes() if "program" in out else None
            return out
        if fmt in LEGACY_FORMATS:
            raise InputError(f"saved with format {fmt!r}, which has no digests; this version reads {FORMAT!r} and "
                             "refuses files it cannot check. Save the object again, or convert a file you trust "
                             "with stablehlo_sparsity.derivatives.saved.upgrade(old_path, new_path)", source)
        raise InputError(f"not a saved sparse Jacobian/Hessian of a known format (format {fmt!r:.80}, no "
                         "meta_sha256.npy)", source)
    digest_arr = parse_npy(_member_bytes(raw, entries[_MANIFEST_DIGEST], source, True), _MANIFEST_DIGEST, source,
                           dtype=np.dtype(np.uint8), shape=(64,))
    digest = digest_arr.tobytes().decode("latin1")
    if not _HEX.fullmatch(digest):
        raise InputError("member 'meta_sha256.npy' is not a SHA-256 hex digest", source)
    meta = _manifest(raw, entries, source, digest)
    fmt = meta.get("format")
    if fmt != FORMAT:
        newer = isinstance(fmt, str) and fmt.startswith("stablehlo_sparsity.prepared/")
        raise InputError(f"saved with format {fmt!r:.80}; this version reads {FORMAT!r}"
                         + (" (upgrade stablehlo_sparsity to read it)" if newer and fmt not in LEGACY_FORMATS else ""),
                         source)
    listed = meta.get("members")
    if not isinstance(listed, dict):
        raise InputError("the manifest lists no members", source)
    for name in entries:
        if name not in listed and name not in (_MANIFEST, _MANIFEST_DIGEST):
            raise InputError(f"member '{name}' is not listed in the manifest", source)
    if members is not None:
        names = {n[:-4] if isinstance(n, str) and n.endswith(".npy") else n for n in listed}
        if names != members:
            extra, missing = sorted(map(str, names - members)), sorted(members - names)
            raise InputError("the manifest lists " + "; ".join(
                ([f"unexpected members {', '.join(extra)}"] if extra else [])
                + ([f"no {', '.join(missing)}"] if missing else [])), source)
    out = {"meta": meta}
    for name, want in listed.items():
        if not isinstance(name, str) or not name.endswith(".npy") or name in (_MANIFEST, _MANIFEST_DIGEST):
            raise InputError(f"the manifest lists a member {name!r:.80}", source)
        info = entries.get(name)
        if info is None:
            raise InputError(f"member '{name}' listed in the manifest is missing", source)
        if not isinstance(want, dict) or not isinstance(want.get("sha256"), str) \
                or not isinstance(want.get("shape"), list) or not isinstance(want.get("dtype"), str):
            raise InputError(f"the manifest's entry for member '{name}' is not {{sha256, dtype, shape}}", source)
        data = _member_bytes(raw, info, source, True)
        if _sha256(data) != want["sha256"]:
            raise InputError(f"member '{name}' does not match its SHA-256 in the manifest: the file changed after it "
                             "was saved", source)
        try:
            dtype = np.dtype(want["dtype"])
            shape = tuple(int(d) for d in want["shape"])
        except (TypeError, ValueError) as e:
            raise InputError(f"the manifest's dtype/shape of member '{name}' are invalid ({e})", source) from None
        out[name[:-4]] = parse_npy(data, name, source, dtype=dtype, shape=shape)
    program = out.get("program")
    if program is None or program.dtype != np.uint8 or program.ndim != 1:
        raise InputError("member 'program.npy' is missing or is not bytes", source)
    out["program"] = program.tobytes()
    return out
