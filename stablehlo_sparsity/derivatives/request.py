"""One request at the derivative face: the shared keywords defined once, read once, passed down.

The public derivative functions (:data:`FACES`: ``sparse_jacobian``, ``sparse_hessian``, their ``value_and_``
forms, ``jacobian_coloring``, ``hessian_coloring``, ``hessian_sparsity`` and the checks when they prepare a
candidate) take the same library keywords.  :data:`KEYWORDS` defines each once — name, type, default, one line
of documentation — and the API reference's "Shared keywords" table is generated from it
(:func:`keywords_markdown`; :func:`write_keywords_table` rewrites it, and ``tests/derivatives/test_request.py``
fails while it is stale).  The signatures stay written out, so that editors, type checkers and
``inspect.signature`` see every keyword; ``tests/derivatives/test_request.py`` checks that their defaults are the
table's.

A face function hands its keywords to :func:`derivative_request` once.  It refuses misplaced library keywords
(and a typo with a "did you mean", :func:`~stablehlo_sparsity.ir.keywords.refuse_library_keywords`), parses
``mode`` and ``method`` into their enums, checks the function and splits its arguments
(:func:`~stablehlo_sparsity.analysis.arguments.traced_call`: ``argnums`` parsed here and nowhere below) and
resolves the analysis options; the frozen :class:`DerivativeRequest` it returns is what the preparation, the
detection and the coloring read.

    >>> import jax.numpy as jnp
    >>> req = derivative_request("sparse_hessian", lambda x, y: jnp.sum(x * y), (jnp.ones(3), jnp.ones(3)), {},
    ...                          {"argnums": [1], "mode": "substitution"})
    >>> print(req.kind, req.argnums, req.mode, req.method, req.returns)
    Hessian (1,) substitution auto derivative
    >>> req.mode is HessianMode.SUBSTITUTION, req.method is HessianMethod.AUTO
    (True, True)
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable, Mapping

import numpy as np

from ..analysis.arguments import TracedCall, traced_call
from ..ir.keywords import ENTRY_POINTS, refuse_library_keywords
from ..analysis.options import AnalysisOptions
from ..analysis.second_order.method import HessianMethod, parse_method
from ..errors import InputError
from .prepared.modes import ColoringOptions, HessianMode, JacobianMode, parse_mode

__all__ = ["Keyword", "KEYWORDS", "DerivativeKind", "Returns", "Face", "FACES", "DerivativeRequest",
           "derivative_request", "keywords_markdown", "keywords_table_in", "write_keywords_table", "KEYWORDS_BEGIN",
           "KEYWORDS_END"]


@dataclass(frozen=True)
class Keyword:
    """One shared keyword: its ``name``, its ``type`` as the signatures write it, its ``default`` (and
    ``hessian_default`` where the Hessian's differs) and one line of ``doc``."""

    name: str
    type: str
    default: Any
    doc: str
    hessian_default: Any = ...

    def default_for(self, kind: DerivativeKind) -> Any:
        """The default of this keyword for a Jacobian or a Hessian face function."""
        return self.default if kind is DerivativeKind.JACOBIAN or self.hessian_default is ... else self.hessian_default


#: Every keyword the derivative face functions share, in the order of the reference table.
KEYWORDS: dict[str, Keyword] = {k.name: k for k in (
    # which function, which arguments
    Keyword("argnums", "int | Sequence[int]", 0,
            "the differentiated positional arguments; columns are their flattened leaves in this order"),
    Keyword("has_aux", "bool", False, "f returns (output, auxiliary data); only the output is differentiated"),
    # the detection
    Keyword("on_unknown", "str", "error",
            'at an op without a sparsity rule: "error" raises, "conservative" assumes every dependency'),
    Keyword("options", "AnalysisOptions | None", None, "folding, loop and memory limits of the detection"),
    Keyword("derivatives", "str", "auto",
            'which program the analysis reads: "primal", "jvp", "vjp", or "auto" (a derivative program where f '
            'has a custom rule)'),
    Keyword("local", "bool", False, "the pattern at the point args only, instead of for every value"),
    Keyword("method", "str", "auto",
            'how a Hessian pattern is found (HessianMethod): "direct" (the second-order analysis of the primal), '
            '"via-gradient" (the gradient program\'s Jacobian pattern), "auto" (a cost model picks)'),
    # coloring and evaluation of a prepared derivative
    Keyword("mode", "str", "auto",
            'which products a Jacobian evaluates (JacobianMode: "forward", "reverse", "bidirectional", "auto"); '
            'how a Hessian is recovered (HessianMode: "direct", "substitution", "auto")',
            hessian_default="direct"),
    Keyword("output", "str", "bcoo", 'the container returned: "bcoo", "bcsr", "dense", "scipy" or "values"'),
    Keyword("order", "str", "best", "the vertex order of the coloring"),
    Keyword("recolor", "str", "auto", "the recoloring effort of the coloring"),
    Keyword("seed", "int", 0, "the random seed of the coloring"),
    Keyword("coloring", "Coloring | None", None, "a coloring to use instead of computing one (checked)"),
    Keyword("constant_seeds", "bool | None", None,
            "literal seed matrices (faster warm calls, longer compilation) or seeds built in the program; None "
            "decides by size"),
    Keyword("strategy", "str", "auto", 'how the products are laid out: "vmap", "unrolled", "loop" or "auto"'),
    Keyword("chunk_size", "int | None", None, 'colors per loop iteration of strategy="loop"'),
    Keyword("devices", "Sequence | int | Mesh | None", None, "the devices the products are spread over"),
)}


class DerivativeKind(StrEnum):
    """Which derivative a face function is about."""

    JACOBIAN = "Jacobian"
    HESSIAN = "Hessian"


class Returns(StrEnum):
    """What a face function returns (the output kind of its request)."""

    PATTERN = "pattern"
    COLORING = "coloring"
    DERIVATIVE = "derivative"
    VALUE_AND_DERIVATIVE = "value and derivative"


@dataclass(frozen=True)
class Face:
    """A face function: its derivative, what it returns, whether repeated ``argnums`` are merged, and the name
    the messages about its function and arguments give (``None``: its own; the ``value_and_`` forms prepare the
    same object as the plain ones and say their name)."""

    kind: DerivativeKind
    returns: Returns
    unique_argnums: bool = True
    says: str | None = None


_J, _H = DerivativeKind.JACOBIAN, DerivativeKind.HESSIAN
#: The face functions that build a :class:`DerivativeRequest` (the checks build the one of the candidate they
#: prepare).
FACES: dict[str, Face] = {
    "sparse_jacobian": Face(_J, Returns.DERIVATIVE),
    "value_and_sparse_jacobian": Face(_J, Returns.VALUE_AND_DERIVATIVE, says="sparse_jacobian"),
    "jacobian_coloring": Face(_J, Returns.COLORING, unique_argnums=False),
    "check_jacobian": Face(_J, Returns.DERIVATIVE),
    "sparse_hessian": Face(_H, Returns.DERIVATIVE),
    "value_and_sparse_hessian": Face(_H, Returns.VALUE_AND_DERIVATIVE, says="sparse_hessian"),
    "hessian_sparsity": Face(_H, Returns.PATTERN),
    "hessian_coloring": Face(_H, Returns.COLORING),
    "check_hessian": Face(_H, Returns.DERIVATIVE),
}


@dataclass(frozen=True)
class DerivativeRequest:
    """A face function's call, read once (:func:`derivative_request`) and passed down unchanged.

    ``entry``: the face function (messages); ``f``: the user's function as given; ``call``: its checked call —
    ``call.fn`` of the arguments' traced parts ``call.args``, ``call.argnums`` parsed once, the ``call.statics``
    held out; ``kwargs``: ``f``'s own keywords (read-only).  The other fields are the shared keywords
    (:data:`KEYWORDS`), parsed: ``mode`` a :class:`JacobianMode` or :class:`HessianMode`, ``method`` a
    :class:`HessianMethod`, ``options`` the :class:`AnalysisOptions` with ``on_unknown`` merged in,
    ``coloring_options`` of ``order`` / ``recolor`` / ``seed``."""

    entry: str
    kind: DerivativeKind
    returns: Returns
    f: Callable
    call: TracedCall
    kwargs: Mapping[str, Any]
    has_aux: bool
    argnums_int: bool
    mode: JacobianMode | HessianMode
    method: HessianMethod
    derivatives: str
    local: bool
    options: AnalysisOptions
    output: str
    coloring: Any
    coloring_options: ColoringOptions
    constant_seeds: bool | None
    strategy: str
    chunk_size: int | None
    devices: Any

    @property
    def fn(self) -> Callable:
        """``f`` of the arguments' traced parts (static leaves put back on each call)."""
        return self.call.fn

    @property
    def args(self) -> tuple:
        """The arguments' traced parts."""
        return self.call.args

    @property
    def argnums(self) -> tuple[int, ...]:
        """The differentiated arguments, parsed once."""
        return self.call.argnums

    @property
    def with_value(self) -> bool:
        """Whether each call returns ``f``'s value with the derivative."""
        return self.returns is Returns.VALUE_AND_DERIVATIVE

    def bound_fn(self) -> Callable:
        """:attr:`fn` with ``f``'s own keywords bound (static)."""
        import functools

        return functools.partial(self.fn, **self.kwargs) if self.kwargs else self.fn


#: Each shared keyword's default, for a Jacobian and for a Hessian face function.
_DEFAULTS = {kind: {name: k.default_for(kind) for name, k in KEYWORDS.items()} for kind in DerivativeKind}


def derivative_request(entry: str, f: Callable, args, kwargs: Mapping[str, Any],
                       given: Mapping[str, Any]) -> DerivativeRequest:
    """The request of the face function ``entry`` (a key of :data:`FACES`) called with ``f``, ``args``, ``f``'s
    own ``kwargs`` and its library keywords ``given`` (a mapping holding them — the function's ``locals()`` —
    any other name in it is ignored; a shared keyword it lacks takes its default).

    Raises:
        InputError: a library keyword ``entry`` does not take in ``kwargs`` (or a close typo of one it takes), an
            unknown ``mode`` or ``method``, ``method="direct"`` with ``local=True`` or ``derivatives=``, a bad
            function or ``argnums``, an argument with nothing to differentiate, ``options`` that is not an
            :class:`AnalysisOptions`."""
    from ..analysis.program import resolve_options

    face = FACES[entry]
    refuse_library_keywords(entry, kwargs, f)
    v = dict(_DEFAULTS[face.kind])
    v.update((name, given[name]) for name in KEYWORDS.keys() & given.keys())
    mode = parse_mode(JacobianMode if face.kind is DerivativeKind.JACOBIAN else HessianMode, v["mode"])
    method = parse_method(v["method"])
    if method is HessianMethod.DIRECT_ANALYSIS and (v["local"] or v["derivatives"] != "auto"):
        raise InputError("method='direct' reads the primal program for the global pattern; local=True and "
                         "derivatives= are options of method='via-gradient'")
    argnums = v["argnums"]
    call = traced_call(face.says or entry, f, args, argnums, unique=face.unique_argnums)
    return DerivativeRequest(
        entry=entry, kind=face.kind, returns=face.returns, f=f, call=call,
        kwargs=types.MappingProxyType(dict(kwargs)), has_aux=bool(v["has_aux"]),
        argnums_int=isinstance(argnums, (int, np.integer)), mode=mode, method=method,
        derivatives=v["derivatives"], local=bool(v["local"]), options=resolve_options(v["options"], v["on_unknown"]),
        output=v["output"], coloring=v["coloring"],
        coloring_options=ColoringOptions(v["order"], v["recolor"], v["seed"]),
        constant_seeds=v["constant_seeds"], strategy=v["strategy"], chunk_size=v["chunk_size"], devices=v["devices"])


# ----------------------------------------------------------------------------------------------- the reference
#: The markers around the generated table in ``docs/reference/api.md``.
KEYWORDS_BEGIN = "<!-- shared keywords: generated from stablehlo_sparsity.derivatives.request.KEYWORDS -->"
KEYWORDS_END = "<!-- end of the shared keywords -->"


def _cell(value: Any) -> str:
    return f"`{value!r}`".replace('"', "'") if not isinstance(value, str) else f'`"{value}"`'


def keywords_markdown() -> str:
    """The API reference's table of :data:`KEYWORDS`, with the face functions that take each keyword ("all of
    them": the prepare, coloring and detection functions, ``jacobian_sparsity`` included)."""
    lines = ["| keyword | type | default | meaning | taken by |", "|---|---|---|---|---|"]
    faces = [name for name in FACES if not name.startswith("check_")] + ["jacobian_sparsity"]
    for k in KEYWORDS.values():
        default = _cell(k.default)
        if k.hessian_default is not ...:
            default = f"{default} (Jacobian), {_cell(k.hessian_default)} (Hessian)"
        takers = [name for name in faces if k.name in ENTRY_POINTS.get(name, ())]
        taken = "all of them" if takers == faces else ", ".join(f"`{name}`" for name in takers)
        kind = " or ".join(f"`{t}`" for t in k.type.split(" | "))
        lines.append(f"| `{k.name}` | {kind} | {default} | {k.doc} | {taken} |")
    return "\n".join([KEYWORDS_BEGIN, *lines, KEYWORDS_END])


API_PAGE = "docs/reference/api.md"
_ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]


def keywords_table_in(text: str) -> str | None:
    """The generated table in the text of a page (between :data:`KEYWORDS_BEGIN` and :data:`KEYWORDS_END`, both
    included), or ``None`` when the page has none."""
    begin, end = text.find(KEYWORDS_BEGIN), text.find(KEYWORDS_END)
    return text[begin:end + len(KEYWORDS_END)] if 0 <= begin < end else None


def write_keywords_table(root=None) -> bool:
    """Replace the table of ``docs/reference/api.md`` (under ``root``, the repository) by :func:`keywords_markdown`;
    whether it changed.  Run ``python -c "from stablehlo_sparsity.derivatives.request import *;
    write_keywords_table()"`` after editing :data:`KEYWORDS`."""
    import pathlib

    page = pathlib.Path(root or _ROOT) / API_PAGE
    text = page.read_text()
    old = keywords_table_in(text)
    if old is None:
        raise InputError(f"{page} has no generated keywords table ({KEYWORDS_BEGIN!r} … {KEYWORDS_END!r})")
    new = keywords_markdown()
    if new != old:
        page.write_text(text.replace(old, new))
    return new != old
