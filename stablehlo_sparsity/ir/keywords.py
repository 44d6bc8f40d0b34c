"""The library's keywords: one list, one rule for every public entry point.

An entry point that takes a user's function ``f`` forwards its other keyword arguments to ``f`` (bound
statically, or traced when they are arrays).  A name in :data:`LIBRARY_KEYWORDS` never goes that way: where
the entry point takes it (:data:`ENTRY_POINTS`), it is the library's; where it does not, it is refused with
an :class:`~stablehlo_sparsity.errors.InputError` that says where the keyword belongs — a misplaced
``mode=`` reaching ``f`` as "unexpected keyword argument", or worse being bound silently, is the mistake
this rules out.  To pass ``f`` a keyword of one of these names, bind it first with ``functools.partial``.

The differentiated arguments are parsed here too, by one rule for the Python API (``argnums=`` of a JAX
function, ``wrt=`` of a module's entry function), the driver (``--wrt=0,2|all``) and the passes' ``wrt``
option: :func:`parse_indices`.

A keyword that is no library keyword but close to one the entry point takes (``argnum=`` for ``argnums=``,
``mdoe=`` for ``mode=``) is a typo: refused with a "did you mean" (:func:`closest_keyword`) — by an entry point
that forwards keywords to ``f`` only when ``f`` cannot take it (:func:`accepts_keyword`), so a keyword ``f``
really has still reaches ``f``.

This module imports neither JAX nor MLIR: every layer, the analysis included, may use it.
"""

from __future__ import annotations

import inspect
from typing import Callable, Iterable, Mapping

from ..errors import InputError

__all__ = ["LIBRARY_KEYWORDS", "ENTRY_POINTS", "refuse_library_keywords", "refuse_unknown_keywords",
           "entry_points_of", "closest_keyword", "edit_distance", "accepts_keyword", "parse_indices", "parse_wrt_text"]

#: Every keyword the library reads, with what it is for (the error messages quote it).
LIBRARY_KEYWORDS: dict[str, str] = {
    # which function, which arguments
    "argnums": "the differentiated positional arguments",
    "has_aux": "f returns (output, auxiliary data)",
    "entry": "the entry function of a module",
    "wrt": "the differentiated arguments of a module's entry function",
    "num_outputs": "how many leading results of a module are rows",
    # the detection
    "on_unknown": "what the analysis does at an op without a rule",
    "options": "the AnalysisOptions of the detection",
    "observer": "a callback that watches the analysis",
    "derivatives": "which program the analysis reads (primal, jvp, vjp or auto)",
    "annotate": "an annotated copy of the analyzed module",
    "local": "the pattern at one point instead of everywhere",
    "local_point": "the point of a module's local pattern",
    "method": "how a pattern or a check is computed",
    # coloring and evaluation of a prepared derivative
    "mode": "which products a prepared derivative evaluates (or how a Hessian is recovered)",
    "output": "the container a prepared derivative returns",
    "order": "the vertex order of the coloring",
    "recolor": "the recoloring effort of the coloring",
    "seed": "the random seed of the coloring or of a check's probes",
    "coloring": "a coloring to use instead of computing one",
    "constant_seeds": "literal seed matrices or seeds built in the program",
    "strategy": "how the products are laid out (vmap, unrolled, loop)",
    "chunk_size": "colors per loop iteration",
    "devices": "the devices the products are spread over",
    # checks
    "args": "the point a module check compares at (the extra arguments of a lineax operator)",
    "points": "how many points a check compares at",
    "probes": "random products of a probe check",
    "rtol": "the relative tolerance of a check",
    "atol": "the absolute tolerance of a check",
    "dense_limit": "the largest matrix a check compares densely",
    "raise_on_error": "raise on a mismatch instead of returning the report",
    "jacobian": "a prepared Jacobian to check",
    "hessian": "a prepared Hessian to check",
    # interop helpers
    "format": "the SciPy sparse format of an interop helper",
    "tags": "the lineax operator tags",
}

_DETECT = ("argnums", "has_aux", "on_unknown", "options")
_COLOR = ("order", "recolor", "seed")
_PREPARE = _DETECT + ("mode", "output", "coloring", "constant_seeds", "strategy", "chunk_size", "devices") + _COLOR
_CHECK = ("method", "probes", "rtol", "atol", "seed", "dense_limit", "raise_on_error", "points")
_MODULE_PREPARE = ("entry", "wrt", "output", "on_unknown", "coloring", "constant_seeds", "options") + _COLOR
#: Keywords a helper forwards to :func:`~stablehlo_sparsity.sparse_jacobian` (it fixes ``argnums`` and ``output``).
_FORWARDED = tuple(k for k in _PREPARE if k not in ("argnums", "output", "has_aux"))

#: The library keywords each public entry point takes; any other library keyword is refused.
ENTRY_POINTS: dict[str, frozenset[str]] = {name: frozenset(kws) for name, kws in {
    "lower_and_analyze": _DETECT + ("observer", "derivatives", "annotate", "local"),
    "jacobian_sparsity": _DETECT + ("derivatives", "local"),
    "hessian_sparsity": _DETECT + ("derivatives", "local", "method"),
    "jacobian_coloring": _DETECT + ("mode",) + _COLOR,
    "hessian_coloring": _DETECT + ("mode",) + _COLOR,
    "sparse_jacobian": _PREPARE,
    "value_and_sparse_jacobian": _PREPARE,
    "sparse_hessian": _PREPARE,
    "value_and_sparse_hessian": _PREPARE,
    "check_jacobian": _DETECT + ("mode", "jacobian") + _CHECK,
    "check_hessian": _DETECT + ("mode", "hessian") + _CHECK,
    "analyze_module": ("entry", "wrt", "num_outputs", "on_unknown", "options", "observer", "local_point"),
    "sparse_jacobian_module": _MODULE_PREPARE + ("mode",),
    "sparse_hessian_module": _MODULE_PREPARE + ("mode",),
    "check_jacobian_module": ("entry", "wrt", "args", "mode", "jacobian") + _CHECK,
    "check_hessian_module": ("entry", "wrt", "args", "mode", "hessian") + _CHECK,
    "least_squares_jacobian": _FORWARDED + ("format",),
    "ivp_jacobian": _FORWARDED + ("format",),
    "jac_sparsity": ("argnums", "options", "on_unknown", "derivatives", "format"),
    "sparse_constraint_jacobian": _FORWARDED,
    "sparse_lagrangian_hessian": _FORWARDED,
    "sparse_jacobian_operator": _FORWARDED + ("tags", "args"),
}.items()}


def entry_points_of(keyword: str) -> list[str]:
    """The entry points that take ``keyword`` (for error messages and the contract's test)."""
    return sorted(name for name, kws in ENTRY_POINTS.items() if keyword in kws)


def _where(keyword: str) -> str:
    places = entry_points_of(keyword)
    shown = ", ".join(places[:4]) + (" …" if len(places) > 4 else "")
    return f"{LIBRARY_KEYWORDS[keyword]}; taken by {shown}" if places else LIBRARY_KEYWORDS[keyword]


def closest_keyword(keyword: str, entry_point: str) -> str | None:
    """The keyword ``entry_point`` takes that ``keyword`` is most likely a typo of, or ``None``: the nearest by
    :func:`edit_distance` (ties: the first in alphabetical order), within one edit for a name of up to four
    letters (``wtr`` → ``wrt``, ``mdoe`` → ``mode``) and two for a longer one (``argnum`` → ``argnums``,
    ``has_axu`` → ``has_aux``); case is ignored."""
    name = keyword.lower()
    limit = 1 if len(name) <= 4 else 2
    best = min(((edit_distance(name, k), k) for k in ENTRY_POINTS.get(entry_point, ())), default=None)
    return best[1] if best is not None and best[0] <= limit else None


def edit_distance(a: str, b: str) -> int:
    """Edits (insert, delete, substitute, swap two neighbours) between ``a`` and ``b``: the optimal string
    alignment distance, for the short names of keywords."""
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        previous, before, row = before, row, [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            row[j] = min(before[j] + 1, row[j - 1] + 1, before[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                row[j] = min(row[j], previous[j - 2] + 1)
    return row[-1]


def accepts_keyword(f: Callable, keyword: str) -> bool | None:
    """Whether ``f`` can be called with ``keyword=``: a parameter of that name (not positional-only) or a
    ``**kwargs``; ``None`` when its signature cannot be read (a builtin, some extension callables)."""
    try:
        params = inspect.signature(f).parameters.values()
    except (TypeError, ValueError):
        return None
    for p in params:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            return True
        if p.name == keyword and p.kind is not inspect.Parameter.POSITIONAL_ONLY:
            return True
    return False


def refuse_library_keywords(entry_point: str, kwargs: Mapping[str, object], f: Callable | None = None) -> None:
    """Refuse, before any work, a library keyword that ``entry_point`` does not take and that would otherwise
    be forwarded to the user's function (``kwargs``: the keywords left for ``f``, or — for a helper that
    forwards them to :func:`~stablehlo_sparsity.sparse_jacobian` — the keywords it forwards).

    With ``f``, also a keyword close to one the entry point takes (:func:`closest_keyword`) that ``f``'s
    signature cannot take (:func:`accepts_keyword`): a typo, refused with a "did you mean".  A keyword ``f``
    takes — or any keyword, when ``f``'s signature cannot be read — goes to ``f`` as before."""
    taken = ENTRY_POINTS.get(entry_point, frozenset())
    for k in kwargs:
        if k in LIBRARY_KEYWORDS and k not in taken:
            raise InputError(f"{entry_point} has no {k}= option ({_where(k)}); library keywords never reach f — "
                             f"to pass {k}= to f, bind it first: functools.partial(f, {k}=...)")
        if f is not None and k not in LIBRARY_KEYWORDS:
            close = closest_keyword(k, entry_point)
            if close is not None and accepts_keyword(f, k) is False:
                raise InputError(f"{entry_point} has no {k}= option: did you mean {close}=? (to pass {k}= to f, "
                                 f"bind it first: functools.partial(f, {k}=...))")


def refuse_unknown_keywords(entry_point: str, kwargs: Mapping[str, object]) -> None:
    """Refuse any keyword of an entry point that takes no user function (a module function): a library
    keyword it does not take, or a name the library does not know — with a "did you mean" when it is close to
    one the entry point takes (:func:`closest_keyword`)."""
    taken = ENTRY_POINTS.get(entry_point, frozenset())
    for k in kwargs:
        if k in LIBRARY_KEYWORDS and k not in taken:
            raise InputError(f"{entry_point} has no {k}= option ({_where(k)})")
        close = closest_keyword(k, entry_point)
        if close is not None:
            raise InputError(f"{entry_point} has no {k}= option: did you mean {close}=?")
        takes = ", ".join(sorted(ENTRY_POINTS.get(entry_point, ())))
        raise InputError(f"{entry_point} has no {k}= option; it takes {takes}")


def parse_wrt_text(text: str) -> list[int] | str:
    """``"all"`` (any case) or comma-separated indices (``"0,2"``) → ``"all"`` or the list of ints; the syntax
    of ``wrt=`` strings, the driver's ``--wrt`` and the passes' ``wrt`` option."""
    t = text.strip()
    if t.lower() == "all":
        return "all"
    try:
        return [int(x) for x in t.split(",") if x.strip()]
    except ValueError:
        raise InputError(f"wrt must be comma-separated argument indices or 'all', got {text!r}") from None


def parse_indices(value, nargs: int, *, name: str = "argnums", owner: str = "the function",
                  default: Iterable[int] | None = (0,), unique: bool = False, allow_text: bool = False,
                  allow_empty: bool = True) -> tuple[int, ...]:
    """The selected argument indices, in the given order, negative ones counted from the end (as JAX's
    ``argnums``).

    ``value``: an int, a sequence of ints, ``None`` (``default``; ``(0,)`` as ``jax.jacfwd``, nothing for a
    function without arguments) or — with ``allow_text`` (``wrt``) — ``"all"`` / ``"0,2"``.  ``unique`` drops
    repeats (keeping the first); without it repeats stay for the caller to refuse or merge.  Booleans and
    other types are refused, and so is an index out of range (``owner`` names the function in the message)."""
    if value is None:
        value = tuple(default or ()) if nargs else ()
    elif isinstance(value, str):
        if not allow_text:
            raise InputError(f"{name} must be an int or a sequence of ints, got {value!r}")
        parsed = parse_wrt_text(value)
        value = range(nargs) if parsed == "all" else parsed
    elif _is_index(value):
        value = (value,)
    try:
        items = list(value)
    except TypeError:
        raise InputError(f"{name} must be an int or a sequence of ints, got {value!r}") from None
    out = []
    for i in items:
        if not _is_index(i) or not -nargs <= int(i) < nargs:
            raise InputError(f"argument index {i!r} out of range: {owner} has {nargs} arguments "
                             f"({name}={value!r})")
        out.append(int(i) % nargs)
    if not out and not allow_empty:
        raise InputError(f"{name} selects no argument")
    return tuple(dict.fromkeys(out)) if unique else tuple(out)


def _is_index(i) -> bool:
    import numpy as np

    return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))
