"""The ``sparsity.*`` attributes the analysis writes into a module (``sparsity-annotate``) and removes again
(``sparsity-strip``): their names, the text of an index-set attribute (:func:`format_sets`, :func:`parse_sets`,
:func:`format_summary`), the entry function they describe (:func:`resolve_entry`), and the edits of a function's
argument and result attribute lists.  Plain IR work: the analysis that fills them is
:func:`stablehlo_sparsity.analysis.program.annotate_module`; the passes (``passes/annotate.py``, ``passes/strip.py``)
wrap both for a ``PassManager``.  ``docs/reference/annotated-ir.md`` describes the format.
"""

from __future__ import annotations

import re
from typing import Iterable

import numpy as np
import scipy.sparse as sp

from ..errors import InputError, format_location
from .helpers import is_public, sym_name

__all__ = ["ATTR_DEPS", "ATTR_OFFSET", "ATTR_PATTERN", "ATTR_KEEP", "OWN_ATTRS", "PREFIX", "MAX_ELEMENTS", "MAX_NNZ",
           "format_sets", "parse_sets", "summarize", "format_summary", "format_deps", "functions_of",
           "resolve_entry", "set_func_attr_list", "strip"]

ATTR_DEPS = "sparsity.deps"
ATTR_OFFSET = "sparsity.offset"
ATTR_PATTERN = "sparsity.pattern"
ATTR_KEEP = "sparsity.keep"  # lists of empty dictionaries that existed before annotation (strip keeps them)
#: The attributes the annotation owns (re-annotating replaces exactly these; ``sparsity.const`` belongs to the
#: constant folder and is left alone).
OWN_ATTRS = (ATTR_DEPS, ATTR_OFFSET, ATTR_PATTERN, ATTR_KEEP)
#: Every attribute of this package's passes starts with it (``sparsity-strip`` removes them all).
PREFIX = "sparsity."
#: Values with more elements, or more dependencies, get a summary instead of their sets (the pass's
#: ``max-elements`` / ``max-nnz`` defaults).
MAX_ELEMENTS = 64
MAX_NNZ = 1024
_FUNC_LISTS = ("arg_attrs", "res_attrs")


# --------------------------------------------------------------------------- the attribute format
def _runs(cols: np.ndarray) -> str:
    """``[0, 1, 2, 3, 7, 9, 10]`` → ``"0..3,7,9,10"`` (runs of three or more become ``a..b``)."""
    if len(cols) == 0:
        return ""
    breaks = np.flatnonzero(np.diff(cols) != 1) + 1
    starts = np.concatenate([[0], breaks])
    ends = np.concatenate([breaks, [len(cols)]])
    parts = []
    for s, e in zip(starts.tolist(), ends.tolist()):  # one iteration per run, at most max-nnz in total
        a, b = int(cols[s]), int(cols[e - 1])
        if e - s >= 3:
            parts.append(f"{a}..{b}")
        else:
            parts.extend(str(int(c)) for c in cols[s:e])
    return ",".join(parts)


def format_sets(m: sp.csr_array) -> str:
    """The exact form of a (rows × n) boolean CSR matrix: ``"{0,1} {1..3} {}*2"``.

    Only called for values below the ``max-elements``/``max-nnz`` thresholds, so the loop over rows is
    bounded by a small constant.

    Examples:
        >>> import numpy as np, scipy.sparse as sp
        >>> from stablehlo_sparsity.ir.annotations import format_sets
        >>> format_sets(sp.csr_array(np.array([[1, 1, 0, 0], [0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]], bool)))
        '{0,1} {1..3} {}*2'
    """
    indptr, indices = m.indptr, m.indices
    sets = ["{" + _runs(indices[indptr[i]:indptr[i + 1]]) + "}" for i in range(m.shape[0])]
    out: list[str] = []
    i = 0
    while i < len(sets):
        j = i
        while j + 1 < len(sets) and sets[j + 1] == sets[i]:
            j += 1
        out.append(sets[i] if j == i else f"{sets[i]}*{j - i + 1}")
        i = j + 1
    return " ".join(out)


_SET = re.compile(r"\{([0-9.,]*)\}(?:\*(\d+))?")


def parse_sets(text: str, n: int | None = None) -> sp.csr_array:
    """Inverse of :func:`format_sets`: the (rows × n) boolean CSR matrix of an exact ``sparsity.deps``
    string.  ``n`` defaults to one more than the largest column mentioned.  Raises ``ValueError`` on a
    summary or malformed text.

    Raises:
        ValueError: a summary string, or text that is not a list of sets.

    Examples:
        >>> from stablehlo_sparsity.ir.annotations import parse_sets
        >>> parse_sets("{0,1} {1..3} {}*2").toarray().astype(int).tolist()
        [[1, 1, 0, 0], [0, 1, 1, 1], [0, 0, 0, 0], [0, 0, 0, 0]]
    """
    text = text.strip()
    rows: list[list[int]] = []
    for tok in text.split():
        m = _SET.fullmatch(tok)
        if m is None:
            raise ValueError(f"not an exact sparsity.deps set: {tok!r} (a summary has no sets)")
        cols: list[int] = []
        for item in filter(None, m.group(1).split(",")):
            if ".." in item:
                a, b = item.split("..")
                cols.extend(range(int(a), int(b) + 1))
            else:
                cols.append(int(item))
        rows.extend([cols] * int(m.group(2) or 1))
    width = n if n is not None else (max((max(r) for r in rows if r), default=-1) + 1)
    indptr = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=indptr[1:])
    indices = np.array([c for r in rows for c in r], dtype=np.int64)
    return sp.csr_array((np.ones(len(indices), bool), indices, indptr), shape=(len(rows), width))


def _distinct_rows(m: sp.csr_array) -> int:
    """Number of distinct rows, vectorized: each row is hashed to 64 bits (the sum of a 64-bit mix of its
    columns, plus its length times an odd constant), and the hashes are counted with one 1-D sort.  Exact
    unless two different rows collide in 64 bits (probability about k²/2⁶⁵ for k rows)."""
    k = m.shape[0]
    if k == 0:
        return 0
    lengths = np.diff(m.indptr).astype(np.uint64)
    keys = np.zeros(k, np.uint64)
    with np.errstate(over="ignore"):
        if m.nnz:
            x = (m.indices.astype(np.uint64) + np.uint64(0x9E3779B97F4A7C15)) * np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(31)
            x *= np.uint64(0x94D049BB133111EB)
            x ^= x >> np.uint64(29)
            nonempty = lengths > 0
            keys[nonempty] = np.add.reduceat(x, m.indptr[:-1][nonempty].astype(np.int64))
        keys += lengths * np.uint64(0x9FB21C651E98DF25)
    keys.sort()
    return int(1 + np.count_nonzero(keys[1:] != keys[:-1]))


def summarize(m: sp.csr_array) -> dict:
    """Summary numbers of a pattern: elements, nnz, min/max dependencies per element, distinct rows.

    Examples:
        >>> from stablehlo_sparsity.ir.annotations import parse_sets, summarize
        >>> summarize(parse_sets("{0,1} {1..3} {}*2"))
        {'elements': 4, 'nnz': 5, 'min': 0, 'max': 3, 'distinct': 3}
    """
    counts = np.diff(m.indptr)
    return {
        "elements": int(m.shape[0]),
        "nnz": int(m.nnz),
        "min": int(counts.min()) if len(counts) else 0,
        "max": int(counts.max()) if len(counts) else 0,
        "distinct": _distinct_rows(m),
    }


def _span(a: int, b: int) -> str:
    return str(a) if a == b else f"{a}..{b}"


def format_summary(m: sp.csr_array, shape: tuple[int, ...] | None = None) -> str:
    """``"elements=4096 nnz=12288 deps=0..3 distinct=17"`` (``shape=MxN`` instead of ``elements`` for a
    whole pattern)."""
    s = summarize(m)
    head = f"shape={'x'.join(str(d) for d in shape)}" if shape is not None else f"elements={s['elements']}"
    return f"{head} nnz={s['nnz']} deps={_span(s['min'], s['max'])} distinct={s['distinct']}"


def format_deps(m: sp.csr_array, max_elements: int, max_nnz: int) -> str:
    """Exact sets when small enough, else the summary."""
    if m.shape[0] > max_elements or m.nnz > max_nnz:
        return format_summary(m)
    return format_sets(m)


# --------------------------------------------------------------------------- entry functions
def functions_of(module) -> list:
    """The ``func.func`` ops at the top of ``module`` (an op view), in order."""
    return [op for op in module.body.operations if op.operation.name == "func.func"]


def resolve_entry(module, entry: str | None = None) -> str:
    """The entry function's name: ``entry`` if given (it must exist), else ``main``, else the only public
    function.  Raises :class:`InputError` (at the module's location) otherwise.

    Raises:
        InputError: ``entry`` is not a function of the module, the module has no function, or it has no ``main``
            and not exactly one public function.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.ir.annotations import resolve_entry
        >>> module = ss.parse_module("func.func @f(%x: tensor<f32>) -> tensor<f32> { return %x : tensor<f32> }")
        >>> resolve_entry(module)                      # no @main: the only public function
        'f'
        >>> resolve_entry(module, "main")
        Traceback (most recent call last):
        ...
        stablehlo_sparsity.errors.InputError: ...no entry function '@main' in the module (functions: @f)
    """
    module = getattr(module, "opview", module)
    funcs = functions_of(module)
    names = [sym_name(f) for f in funcs]
    listing = ", ".join("@" + n for n in names) or "none"
    loc = format_location(module.operation.location)
    if entry is not None:
        if entry not in names:
            raise InputError(f"no entry function '@{entry}' in the module (functions: {listing})", loc)
        return entry
    if "main" in names:
        return "main"
    public = [sym_name(f) for f in funcs if is_public(f)]
    if len(public) == 1:
        return public[0]
    if not funcs:
        raise InputError("the module has no func.func to analyze", loc)
    raise InputError(f"cannot choose an entry function among {len(public)} public functions ({listing}); "
                     "name one with entry=NAME (--entry=NAME)", loc)


# --------------------------------------------------------------------------- editing the attributes
def set_func_attr_list(fn, attr_name: str, count: int, updates: dict[int, dict]) -> bool:
    """Merge ``updates[i]`` (name → Attribute) into entry ``i`` of ``arg_attrs``/``res_attrs``.  Returns
    True if the list existed with only empty dictionaries (``sparsity-strip`` must then keep it)."""
    from jaxlib.mlir import ir

    old = list(ir.ArrayAttr(fn.attributes[attr_name])) if attr_name in fn.attributes else []
    was_empty = attr_name in fn.attributes and all(len(ir.DictAttr(d)) == 0 for d in old)
    dicts = []
    for i in range(count):
        entries = {}
        if i < len(old):
            d = ir.DictAttr(old[i])
            entries = {d[j].name: d[j].attr for j in range(len(d))}
        entries.update(updates.get(i, {}))
        dicts.append(ir.DictAttr.get(entries))
    if any(len(d) for d in dicts) or attr_name in fn.attributes:
        fn.attributes[attr_name] = ir.ArrayAttr.get(dicts)
    return was_empty and any(len(d) for d in dicts)


def _drop(name: str, names: Iterable[str] | None) -> bool:
    return name.startswith(PREFIX) and (names is None or name in names)


def _strip_func_list(op, list_name: str, names, keep: bool) -> int:
    from jaxlib.mlir import ir

    if list_name not in op.attributes:
        return 0
    removed = 0
    dicts = []
    for a in ir.ArrayAttr(op.attributes[list_name]):
        d = ir.DictAttr(a)
        kept = {}
        for j in range(len(d)):
            na = d[j]
            if _drop(na.name, names):
                removed += 1
            else:
                kept[na.name] = na.attr
        dicts.append(ir.DictAttr.get(kept))
    if removed:
        if all(len(d) == 0 for d in dicts) and not keep:
            del op.attributes[list_name]
        else:
            op.attributes[list_name] = ir.ArrayAttr.get(dicts)
    return removed


def strip(module, names: Iterable[str] | None = None) -> int:
    """Remove the ``sparsity.*`` attributes (only those in ``names`` if given) from every op nested in
    ``module`` (an ``ir.Module``, an operation or an op view), in place.  Returns how many were removed.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> from stablehlo_sparsity.passes import annotate, strip
        >>> module = ss.parse_module('''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.reverse %x, dims = [0] : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }''')
        >>> before = str(module)
        >>> _ = annotate(module)
        >>> strip(module), str(module) == before
        (5, True)
    """
    from jaxlib.mlir import ir

    names = None if names is None else frozenset(names)
    root = module.operation
    count = 0

    def visit(op):
        nonlocal count
        op = op.operation
        keep = ()
        if op.name == "func.func" and ATTR_KEEP in op.attributes:
            keep = [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[ATTR_KEEP])]
        doomed = [name for name in op.attributes.keys() if _drop(name, names)]
        for name in doomed:
            del op.attributes[name]
        count += len(doomed)
        if op.name == "func.func":
            for list_name in _FUNC_LISTS:
                count += _strip_func_list(op, list_name, names, list_name in keep)
        return ir.WalkResult.ADVANCE

    with root.context:
        root.walk(visit)
    return count
