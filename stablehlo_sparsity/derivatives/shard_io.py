"""Reading pattern shards back (:func:`read_pattern_shards`; written by
:func:`stablehlo_sparsity.analysis.streaming.write_pattern_shards`), checked before SciPy
sees them.

A shard is a block of rows of a pattern, written by :func:`~stablehlo_sparsity.analysis.streaming.write_blocks` as
SciPy's
``save_npz`` (CSR) or as a MatrixMarket coordinate file, beside an optional ``shape.json``.  A shard is data
from a file: its index arrays are checked in NumPy (:mod:`.prepared.validation`) before a SciPy constructor or a
compiled kernel reads them, and every problem is an :class:`~stablehlo_sparsity.errors.InputError` naming the
file — never an out-of-bounds write, a crash or a silently different pattern.

* NPZ: the members are parsed strictly (no pickle, exact sizes; :func:`.prepared.archive.read_members`), the
  format must be ``csr``, ``csc`` or ``coo``, and the arrays must form a well-formed pattern of the shape the
  shard's name and ``shape.json`` give (:func:`.prepared.validation.check_csr`);
* MatrixMarket: the size line is checked against the shard's name and against the file's size (an entry count
  the file cannot hold is refused before anything is allocated), then SciPy's reader (which checks bounds)
  reads it, and its coordinates are checked again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Iterator

import numpy as np
import scipy.sparse as sp

from ..analysis.streaming import MANIFEST
from ..errors import InputError
from .prepared.archive import read_members
from .prepared.validation import check_coordinates, check_csr

__all__ = ["read_pattern_shards", "read_shape_manifest", "read_npz_shard", "read_mtx_shard"]


def read_shape_manifest(path: Path) -> tuple[int, int]:
    """``(rows, columns)`` of a shard directory's ``shape.json``."""
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        raise InputError(f"'{path}' is not a readable shape manifest ({type(e).__name__}: {str(e)[:120]})") from None
    if not isinstance(meta, dict):
        raise InputError(f"'{path}' is not a JSON object with rows and columns")
    out = []
    for key in ("rows", "columns"):
        v = meta.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 2**62:
            raise InputError(f"'{path}': {key} must be a non-negative integer, got {v!r:.60}")
        out.append(v)
    return out[0], out[1]


def _scalar_text(a: np.ndarray) -> str:
    return a.item().decode("ascii", "replace") if a.dtype.kind == "S" else str(a.item())


def read_npz_shard(path: Path, rows: int, columns: int | None) -> sp.csr_array:
    """A SciPy ``save_npz`` shard of ``rows`` rows (and ``columns`` columns when known) as a boolean CSR array."""
    source = str(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"could not read shard: {e.strerror or e}", source) from None
    z = read_members(raw, source)
    for key in ("format", "shape"):
        if key not in z:
            raise InputError(f"not a scipy.sparse save_npz file (no '{key}' member)", source)
    fmt = z["format"]
    if fmt.shape != () or fmt.dtype.kind not in "SU":
        raise InputError(f"member 'format' is not a format name ({fmt.dtype}, shape {fmt.shape})", source)
    fmt_name = _scalar_text(fmt)
    shape = z["shape"]
    if shape.shape != (2,) or shape.dtype.kind not in "iu":
        raise InputError(f"member 'shape' is not two integers ({shape.dtype}, shape {shape.shape})", source)
    m, n = int(shape[0]), int(shape[1])
    if m != rows or (columns is not None and n != columns) or n < 0 or n > 2**62:
        raise InputError(f"shard has shape ({m}, {n}), its name says {rows} rows"
                         + (f" and shape.json {columns} columns" if columns is not None else ""), source)
    what = f"shard '{path.name}'"
    if fmt_name in ("csr", "csc"):
        for key in ("indptr", "indices", "data"):
            if key not in z:
                raise InputError(f"a {fmt_name} shard has no '{key}' member", source)
        indptr, indices = z["indptr"], z["indices"]
        check_csr(indptr, indices, (m, n) if fmt_name == "csr" else (n, m), what, source)
        _check_data(z["data"], len(indices), source)
        ones = np.ones(len(indices), bool)
        if fmt_name == "csr":
            return sp.csr_array((ones, indices, indptr), shape=(m, n))
        return sp.csr_array(sp.csc_array((ones, indices, indptr), shape=(m, n)))
    if fmt_name == "coo":
        if "row" in z and "col" in z:
            r, c = z["row"], z["col"]
        elif "coords" in z and z["coords"].ndim == 2 and z["coords"].shape[0] == 2:
            r, c = z["coords"][0], z["coords"][1]
        else:
            raise InputError("a coo shard has no 'row' and 'col' members", source)
        check_coordinates(r, c, (m, n), what, source)
        if "data" not in z:
            raise InputError("a coo shard has no 'data' member", source)
        _check_data(z["data"], len(r), source)
        block = sp.csr_array((np.ones(len(r), bool), (r, c)), shape=(m, n))
        block.sum_duplicates()
        return block
    raise InputError(f"shard format {fmt_name!r:.20} is not csr, csc or coo", source)


def _check_data(data: np.ndarray, nnz: int, source: str) -> None:
    if data.ndim != 1 or len(data) != nnz:
        raise InputError(f"member 'data' has shape {data.shape}, the pattern has {nnz} entries", source)


def read_mtx_shard(path: Path, rows: int, columns: int | None) -> sp.csr_array:
    """A MatrixMarket shard of ``rows`` rows (``columns`` when known) as a boolean CSR array."""
    import scipy.io

    source = str(path)
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            banner = fh.readline(1024)
            line = fh.readline(1024)
            while line.startswith(b"%") or not line.strip():
                if not line:
                    break
                line = fh.readline(1024)
    except OSError as e:
        raise InputError(f"could not read shard: {e.strerror or e}", source) from None
    words = banner.lower().split()
    if len(words) < 3 or words[0] != b"%%matrixmarket" or words[1] != b"matrix":
        raise InputError("not a MatrixMarket file (no '%%MatrixMarket matrix' banner)", source)
    try:
        dims = [int(w) for w in line.split()]
    except ValueError:
        raise InputError(f"MatrixMarket size line {line[:60]!r} is not integers", source) from None
    coordinate = words[2] == b"coordinate"
    if len(dims) != (3 if coordinate else 2) or min(dims) < 0:
        raise InputError(f"MatrixMarket size line {line[:60]!r} is not 'rows columns"
                         + (" entries'" if coordinate else "'"), source)
    m, n = dims[0], dims[1]
    if m != rows or (columns is not None and n != columns):
        raise InputError(f"shard has shape ({m}, {n}), its name says {rows} rows"
                         + (f" and shape.json {columns} columns" if columns is not None else ""), source)
    entries = dims[2] if coordinate else m * n
    if entries * 2 > size:  # every entry takes at least two bytes (a digit and a separator)
        raise InputError(f"the size line announces {entries} entries, more than a {size}-byte file holds", source)
    try:
        read = scipy.io.mmread(path)
    except (ValueError, OverflowError, MemoryError, RuntimeError) as e:
        raise InputError(f"unreadable MatrixMarket shard ({type(e).__name__}: {str(e)[:200]})", source) from None
    if isinstance(read, np.ndarray):
        if read.shape != (m, n):
            raise InputError(f"shard has shape {read.shape}, its size line says ({m}, {n})", source)
        return sp.csr_array(read != 0)
    coo = sp.coo_array(read)
    if coo.shape != (m, n):
        raise InputError(f"shard has shape {coo.shape}, its size line says ({m}, {n})", source)
    r, c = coo.coords
    check_coordinates(r, c, (m, n), f"shard '{path.name}'", source)
    block = sp.csr_array((np.ones(len(r), bool), (r, c)), shape=(m, n))
    block.sum_duplicates()
    return block


def read_pattern_shards(directory, rows: tuple[int, int] | None = None) -> Iterator[tuple[int, sp.csr_array]]:
    """The shards of ``directory`` (NPZ or MatrixMarket) as ``(r0, block)`` in row order; with ``rows=(lo, hi)``
    only the shards holding some of those rows are loaded and yielded (whole).  Raises :class:`InputError` when
    the shards leave a gap, overlap, or (with ``shape.json``) do not cover every row — and when a shard is not a
    well-formed pattern of the shape its name and ``shape.json`` give (checked before SciPy reads its arrays).

    Raises:
        InputError: ``directory`` is not a directory, a file name is not a shard name, the shards leave a gap,
            overlap or do not cover the rows of ``shape.json``, or a shard is not a well-formed pattern (raised
            while the shards are iterated).

    Examples:
        >>> import tempfile
        >>> import jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> folder = tempfile.mkdtemp()
        >>> _ = ss.write_pattern_shards(folder, lambda x: x[1:] * x[:-1], jnp.ones(5), rows_per_block=2)
        >>> [(r0, block.shape) for r0, block in ss.read_pattern_shards(folder)]
        [(0, (2, 5)), (2, (2, 5))]
        >>> [r0 for r0, _ in ss.read_pattern_shards(folder, rows=(2, 4))]     # only the shards of rows 2, 3
        [2]
    """
    root = Path(directory)
    if not root.is_dir():
        raise InputError(f"no shard directory '{root}'")
    spans = []
    for path in [*root.glob("rows-*-*.npz"), *root.glob("rows-*-*.mtx")]:
        try:
            _, first, end = path.stem.split("-")
            spans.append((int(first), int(end), path))
        except ValueError:
            raise InputError(f"'{path}' is not a shard name (rows-<first>-<end>.npz or .mtx)") from None
    spans.sort()
    shape = None
    if (root / MANIFEST).exists():
        shape = read_shape_manifest(root / MANIFEST)
    columns = None if shape is None else shape[1]
    expect = 0
    for a, b, path in spans:
        if a != expect:
            raise InputError(f"shards of '{root}' {'overlap' if a < expect else 'leave a gap'} at row {min(a, expect)}")
        if rows is not None and not (a < rows[1] and b > rows[0]):
            expect = b  # not needed: checked by its name only, never loaded
            continue
        # (checked in NumPy before SciPy sees the arrays: shard_io; without shape.json, as wide as the first)
        read = read_npz_shard if path.suffix == ".npz" else read_mtx_shard
        block = read(path, b - a, columns)
        columns = block.shape[1]
        expect = b
        yield a, block
    if shape is not None and expect != shape[0]:
        raise InputError(f"the shards of '{root}' cover rows [0, {expect}) of {shape[0]}")
