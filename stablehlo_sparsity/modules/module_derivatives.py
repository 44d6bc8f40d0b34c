"""Sparse derivatives of StableHLO modules: the JAX-callable machinery applied to the imported function.

    >>> import numpy as np
    >>> from stablehlo_sparsity import sparse_jacobian_module
    >>> text = '''
    ... func.func @main(%x: tensor<4xf32>) -> tensor<3xf32> {
    ...   %a = stablehlo.slice %x [1:4] : (tensor<4xf32>) -> tensor<3xf32>
    ...   %b = stablehlo.slice %x [0:3] : (tensor<4xf32>) -> tensor<3xf32>
    ...   %c = stablehlo.multiply %a, %b : tensor<3xf32>
    ...   func.return %c : tensor<3xf32>
    ... }'''
    >>> jac = sparse_jacobian_module(text, output="dense")
    >>> jac.pattern.nnz, jac.num_colors
    (6, 2)
    >>> np.asarray(jac(np.arange(4.0, dtype=np.float32))).tolist()[0]
    [1.0, 0.0, 0.0, 0.0]

* :func:`sparse_jacobian_module` — the pattern is the analysis of the module itself (:func:`analyze_module`,
  the same as the driver's ``--emit=pattern``); the compressed program is that of
  :class:`~stablehlo_sparsity.SparseJacobian` over :func:`~stablehlo_sparsity.modules.importer.import_module`'s
  function, so it has the same options, output formats, ``.as_text()`` and ``.export()``.
* :func:`sparse_hessian_module` — :class:`~stablehlo_sparsity.SparseHessian` of the imported scalar function
  (pattern through its gradient program, star coloring).
* :func:`check_jacobian_module` — the oracle for a module from any producer: the detected pattern and the
  compressed values against dense AD of the imported function at random points (a nonzero outside the
  pattern is a detection failure, reported as ``missing``).

``wrt``: the differentiated entry arguments — ``None`` means argument 0 (as ``jax.jacfwd``'s default
``argnums=0``), an int or a list of indices selects others, ``"all"`` every argument.  Columns are the
flattened selected arguments in ``wrt`` order; rows the flattened results in order.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence, cast

import numpy as np


from ..analysis.program import analyze_entry, resolve_options
from ..derivatives.checks import CheckReport, check_hessian, check_jacobian
from ..coloring import Coloring
from ..coloring.kinds import ColoringKind
from ..errors import InputError
from ..derivatives.hessian import SparseHessian
from ..analysis.interpreter import AnalysisOptions
from ..ir.keywords import parse_indices, refuse_unknown_keywords
from ..derivatives.prepared.modes import ColoringOptions
from ..derivatives.jacobian import SparseJacobian
from ..derivatives.prepared.inputs import check_differentiable
from ..derivatives.prepared.modes import JacobianMode

__all__ = ["sparse_jacobian_module", "sparse_hessian_module", "check_jacobian_module", "check_hessian_module",
           "ModuleSparseJacobian", "ModuleSparseHessian", "normalize_wrt"]


def normalize_wrt(wrt, nargs: int, owner: str = "the entry function") -> tuple[int, ...]:
    """``None`` → ``(0,)``; ``"all"`` → every argument; an int, ``"0,2"`` or a sequence of ints (negative from
    the end); repeats dropped, an empty selection refused
    (:func:`stablehlo_sparsity.ir.keywords.parse_indices`)."""
    return parse_indices(wrt, nargs, name="wrt", owner=owner, unique=True, allow_text=True, allow_empty=False)


if TYPE_CHECKING:
    from .importer import ImportedFunction


def _imported(module_or_text, entry: str) -> ImportedFunction:
    # (imported here: the importer's tables take a noticeable part of `import stablehlo_sparsity`, and
    # a user of JAX functions never needs them)
    from .importer import ImportedFunction, import_module

    if isinstance(module_or_text, ImportedFunction):
        return module_or_text
    return import_module(module_or_text, entry)


def _has_while(module) -> bool:
    from jaxlib.mlir import ir

    found = [False]

    def visit(op):
        if op.operation.name == "stablehlo.while":
            found[0] = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found[0]


class _KeepUnused:
    """Lowering keeps every entry argument (``jax.jit`` would prune unused ones): the compressed program has
    the entry's exact signature, which the injection pass relies on."""

    function: ImportedFunction | None
    module: Any
    entry: str
    wrt: tuple[int, ...]
    argnums: tuple[int, ...]

    def _lower_jit(self, fn):
        import jax

        return jax.jit(fn, keep_unused=True)

    def _extra_meta(self) -> dict:
        return {"entry": self.entry}

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)  # type: ignore[misc]
        # a restored module derivative evaluates its saved program; the module itself is not kept
        self.function = self.module = None
        self.entry = state["meta"].get("entry", "main")
        self.wrt = self.argnums


class ModuleSparseJacobian(_KeepUnused, SparseJacobian):
    """A :class:`~stablehlo_sparsity.SparseJacobian` of a module's entry function.

    Extra attributes: ``function`` (the :class:`~stablehlo_sparsity.modules.importer.ImportedFunction`), ``module``,
    ``entry``, ``wrt``.  Call it with one array per entry argument.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> text = jax.jit(lambda x, y: x[1:] * y).lower(jnp.ones(4), jnp.ones(3)).as_text()
        >>> jac = ss.sparse_jacobian_module(text, wrt="all")       # a ModuleSparseJacobian
        >>> jac.entry, jac.wrt, jac.shape, jac.function.arg_types[1].shape
        ('main', (0, 1), (3, 7), (3,))
    """

    def __init__(self, module_or_text, entry: str = "main", wrt=None, *, mode: str = "auto", output: str = "bcoo",
                 with_value: bool = False, coloring: Coloring | None = None,
                 coloring_options: ColoringOptions | None = None, on_unknown: str = "error",
                 constant_seeds: bool | None = None, options: AnalysisOptions | None = None):
        f = _imported(module_or_text, entry)
        self.function, self.module, self.entry = f, f.module, f.entry
        self.wrt = parse_indices(wrt, len(f.arg_types), name="wrt", owner=f"@{f.entry}", unique=True,
                                 allow_text=True, allow_empty=False)
        example = f.example_args()
        check_differentiable([example[i] for i in self.wrt], "sparse_jacobian_module")
        self.bind(f, example, self.wrt, has_aux=False, output=output, with_value=with_value,
                  constant_seeds=constant_seeds)
        # the module's own global pattern, as analyze_module (and the driver's --emit=pattern) finds it
        analysis = analyze_entry(f.module, f.entry, list(self.wrt), None, resolve_options(options, on_unknown))
        if _has_while(f.module):
            # JAX transposes no lax.while_loop (a StableHLO while replays as one): forward mode only
            if (mode == JacobianMode.REVERSE
                    or (coloring is not None and coloring.kind in (ColoringKind.ROW, ColoringKind.BIDIRECTIONAL))):
                raise InputError(f"@{f.entry} contains a stablehlo.while loop, which JAX cannot differentiate in "
                                 "reverse mode; use mode='forward'")
            mode = JacobianMode.FORWARD
        # (a bidirectional coloring once ran as VJPs only: wrong values — the mode comes from the coloring)
        self.prepare(analysis, mode, coloring, coloring_options)

    def __repr__(self) -> str:
        return "Module" + super().__repr__().replace("SparseJacobian(", f"SparseJacobian(@{self.entry}, ", 1)


class ModuleSparseHessian(_KeepUnused, SparseHessian):
    """A :class:`~stablehlo_sparsity.SparseHessian` of a module's scalar entry function (``function``,
    ``module``, ``entry``, ``wrt`` as :class:`ModuleSparseJacobian`).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> text = jax.jit(lambda x: jnp.sum(x ** 3)).lower(jnp.ones(3)).as_text()
        >>> H = ss.sparse_hessian_module(text)                     # a ModuleSparseHessian
        >>> H.entry, H.wrt, H.num_colors, H.values(jnp.arange(3.0)).tolist()
        ('main', (0,), 1, [0.0, 6.0, 12.0])
    """

    def __init__(self, module_or_text, entry: str = "main", wrt=None, *, output: str = "bcoo",
                 with_value: bool = False, coloring: Coloring | None = None,
                 coloring_options: ColoringOptions | None = None, on_unknown: str = "error",
                 constant_seeds: bool | None = None, mode: str = "direct", options: AnalysisOptions | None = None):
        f = _imported(module_or_text, entry)
        if len(f.result_types) != 1 or f.result_types[0].size != 1:
            shapes = [t.shape for t in f.result_types]
            raise InputError(f"a Hessian needs a scalar function; @{f.entry} returns {shapes}")
        self.function, self.module, self.entry = f, f.module, f.entry
        self.wrt = normalize_wrt(wrt, len(f.arg_types), f"@{f.entry}")
        if _has_while(f.module):
            raise InputError(f"@{f.entry} contains a stablehlo.while loop: its Hessian-vector products need reverse "
                             "mode, and JAX cannot differentiate a while loop in reverse mode")
        super().__init__(f, f.example_args(), argnums=self.wrt, output=output, with_value=with_value,
                         coloring=coloring, coloring_options=coloring_options, on_unknown=on_unknown,
                         constant_seeds=constant_seeds, mode=mode, options=options)


def sparse_jacobian_module(module, entry: str = "main", wrt=None, *, mode: str = "auto", output: str = "bcoo",
                           order: str = "best", recolor: str = "auto", seed: int = 0,
                           coloring: Coloring | None = None, on_unknown: str = "error",
                           constant_seeds: bool | None = None,
                           options: AnalysisOptions | None = None, **unknown) -> ModuleSparseJacobian:
    """Prepare the sparse Jacobian of a StableHLO module's ``entry`` (an ``ir.Module``, text, bytecode, a
    portable artifact, a ``jax.export.Exported`` or its serialized bytes): detection on the module, coloring, and
    the compressed program over the imported function.  Options as :func:`~stablehlo_sparsity.sparse_jacobian`.
    An ``Exported``'s entry takes the Exported's own inputs, which ``wrt`` counts
    (:func:`~stablehlo_sparsity.ir.parsing.exported_module`).

    Raises:
        InputError: the module cannot be read or parsed, it has no function ``entry``, a ``wrt`` index is out of
            range, a differentiated argument is not real floating point, an unknown ``mode``, ``output`` or
            keyword, a ``coloring`` of another kind or shape, or reverse mode for an entry with a
            ``stablehlo.while`` loop.
        UnsupportedOpError: the module holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the module holds an element type the analysis cannot represent (e.g. f8, i4).
        DynamicShapeError: a tensor of the entry function has a dynamic (``?``) dimension.
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
            (Also raised by the importer, as its subclass ``ImportError_``, for an op it cannot replay.)
        ValueError: an unknown ``order`` or ``recolor`` (``InvalidColoringError`` for a given ``coloring`` that
            cannot recover the pattern).

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> text = jax.jit(lambda x: x[1:] * x[:-1]).lower(jnp.ones(4)).as_text()   # any producer's module
        >>> jac = ss.sparse_jacobian_module(text, output="dense")
        >>> jac.num_colors, jac(jnp.arange(4.0)).tolist()
        (2, [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 1.0, 0.0], [0.0, 0.0, 3.0, 2.0]])
    """
    refuse_unknown_keywords("sparse_jacobian_module", unknown)
    return ModuleSparseJacobian(module, entry, wrt, mode=mode, output=output, coloring=coloring,
                                coloring_options=ColoringOptions(order, recolor, seed), on_unknown=on_unknown,
                                constant_seeds=constant_seeds, options=options)


def sparse_hessian_module(module, entry: str = "main", wrt=None, *, output: str = "bcoo", order: str = "best",
                          recolor: str = "auto", seed: int = 0, coloring: Coloring | None = None,
                          on_unknown: str = "error", constant_seeds: bool | None = None, mode: str = "direct",
                          options: AnalysisOptions | None = None, **unknown) -> ModuleSparseHessian:
    """Prepare the sparse Hessian of a module's scalar ``entry`` (options as
    :func:`~stablehlo_sparsity.sparse_hessian`); the values are the full symmetric matrix in the CSR order of
    its pattern.

    Raises:
        InputError: the module cannot be read or parsed, it has no function ``entry``, the entry does not return
            one scalar, it holds a ``stablehlo.while`` loop, a ``wrt`` index is out of range, a differentiated
            argument is not real floating point, an unknown ``mode``, ``output`` or keyword, or a ``coloring``
            that does not fit.
        UnsupportedOpError: the module holds an op without a sparsity rule (unless ``on_unknown="conservative"``).
        UnsupportedTypeError: the module holds an element type the analysis cannot represent (e.g. f8, i4).
        DynamicShapeError: a tensor of the entry function has a dynamic (``?``) dimension.
        PatternTooLargeError: an intermediate pattern would exceed ``AnalysisOptions.max_pattern_nnz``.
        ValueError: an unknown ``order`` or ``recolor``.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> text = jax.jit(lambda x: jnp.sum(x[1:] * x[:-1])).lower(jnp.ones(4)).as_text()
        >>> H = ss.sparse_hessian_module(text, output="dense")
        >>> H(jnp.ones(4)).tolist()
        [[0.0, 1.0, 0.0, 0.0], [1.0, 0.0, 1.0, 0.0], [0.0, 1.0, 0.0, 1.0], [0.0, 0.0, 1.0, 0.0]]
    """
    refuse_unknown_keywords("sparse_hessian_module", unknown)
    return ModuleSparseHessian(module, entry, wrt, output=output, coloring=coloring,
                               coloring_options=ColoringOptions(order, recolor, seed), on_unknown=on_unknown,
                               constant_seeds=constant_seeds, mode=mode, options=options)


def _points(f: ImportedFunction, args, points: int, seed: int):
    """``[(point, points= for check_*)]``: at ``args`` and ``points - 1`` random points near them; at the
    given points (a list of argument tuples); else at ``points`` random points of the declared types."""
    if not isinstance(points, (int, np.integer)) or isinstance(points, bool):  # explicit argument tuples
        if args is not None:
            raise InputError("pass either args= or a list of points=, not both")
        pts = [tuple(p) for p in cast(Sequence, points)]
        if not pts:
            raise InputError("points=[] gives no point to check at: pass at least one argument tuple")
        return [(pts[0], pts)]
    if args is not None:
        return [(tuple(args), points)]
    return [(f.random_args(seed + k), 1) for k in range(points)]


def check_jacobian_module(module, entry: str = "main", wrt=None, *, args: Sequence | None = None, points: int = 3,
                          mode: str = "auto", method: str = "auto", probes: int = 4, rtol: float | None = None,
                          atol: float | None = None, seed: int = 0, dense_limit: int = 1_000_000,
                          raise_on_error: bool = True, jacobian: ModuleSparseJacobian | None = None,
                          **unknown) -> CheckReport:
    """The oracle for a module from any producer: the detected pattern and the compressed Jacobian against
    dense AD (``jax.jacfwd``-style JVPs) of the imported function at ``points`` random points of the declared
    types (or at ``args`` and ``points - 1`` random points near them, or at ``points`` given as a list of
    argument tuples).  Returns the worst
    :class:`~stablehlo_sparsity.CheckReport`; a nonzero of dense AD outside the pattern counts in ``missing``
    and fails (:class:`~stablehlo_sparsity.DerivativeMismatchError`), and so does a point where the function
    or its dense derivative is not finite (a Cholesky outside the positive-definite set: pass ``args=``).

    Raises:
        DerivativeMismatchError: the compressed Jacobian disagrees with dense AD, a nonzero of dense AD lies
            outside the pattern, or the function is not finite at a compared point (unless
            ``raise_on_error=False``).
        InputError: both ``args`` and a list of ``points``, an empty list of points, an unknown keyword, or the
            errors of ``sparse_jacobian_module`` when it prepares the Jacobian.
        UnsupportedOpError: (preparing the Jacobian) an op without a sparsity rule, or one the importer cannot
            replay.

    Examples:
        >>> import stablehlo_sparsity as ss
        >>> text = '''func.func @main(%x: tensor<3xf32>) -> tensor<3xf32> {
        ...   %y = stablehlo.sine %x : tensor<3xf32>
        ...   func.return %y : tensor<3xf32>
        ... }'''
        >>> report = ss.check_jacobian_module(text)
        >>> report.ok, report.points, report.shape
        (True, 3, (3, 3))
    """
    refuse_unknown_keywords("check_jacobian_module", unknown)
    f = _imported(module, entry)  # the reference: this module's function, whatever ``jacobian`` was prepared from
    sj = jacobian if jacobian is not None else ModuleSparseJacobian(f, entry, wrt, mode=mode, output="values")
    argnums = None if wrt is None else normalize_wrt(wrt, len(f.arg_types))
    return cast(CheckReport, _worst(
        [check_jacobian(f, *pt, argnums=argnums, method=method, probes=probes, rtol=rtol, atol=atol, seed=seed,
                        dense_limit=dense_limit, raise_on_error=False, jacobian=sj, points=k)
         for pt, k in _points(f, args, points, seed)],
        args is None and isinstance(points, int), seed, raise_on_error))  # (None for an empty list of points)


def check_hessian_module(module, entry: str = "main", wrt=None, *, args: Sequence | None = None, points: int = 3,
                         method: str = "auto", probes: int = 4, rtol: float | None = None,
                         atol: float | None = None, seed: int = 0, dense_limit: int = 1_000_000,
                         raise_on_error: bool = True, hessian: ModuleSparseHessian | None = None,
                         mode: str = "direct", **unknown) -> CheckReport:
    """:func:`check_jacobian_module` for the Hessian of a scalar module.

    Raises:
        DerivativeMismatchError: the compressed Hessian disagrees with dense AD, a nonzero of dense AD lies
            outside the pattern, or the function is not finite at a compared point (unless
            ``raise_on_error=False``).
        InputError: both ``args`` and a list of ``points``, an empty list of points, an unknown keyword, or the
            errors of ``sparse_hessian_module`` when it prepares the Hessian (an entry that is not scalar …).
        UnsupportedOpError: (preparing the Hessian) an op without a sparsity rule, or one the importer cannot
            replay.

    Examples:
        >>> import jax, jax.numpy as jnp
        >>> import stablehlo_sparsity as ss
        >>> text = jax.jit(lambda x: jnp.sum(x[1:] * x[:-1] ** 2)).lower(jnp.ones(4)).as_text()
        >>> ss.check_hessian_module(text).ok
        True
    """
    refuse_unknown_keywords("check_hessian_module", unknown)
    f = _imported(module, entry)  # the reference: this module's function, whatever ``hessian`` was prepared from
    sh = hessian if hessian is not None else ModuleSparseHessian(f, entry, wrt, output="values", mode=mode)
    argnums = None if wrt is None else normalize_wrt(wrt, len(f.arg_types))
    return cast(CheckReport, _worst(
        [check_hessian(f, *pt, argnums=argnums, method=method, probes=probes, rtol=rtol, atol=atol, seed=seed,
                       dense_limit=dense_limit, raise_on_error=False, hessian=sh, points=k)
         for pt, k in _points(f, args, points, seed)],
        args is None and isinstance(points, int), seed, raise_on_error))  # (None for an empty list of points)


def _worst(reports, random: bool, seed: int, raise_on_error: bool) -> CheckReport | None:
    """The worst of the reports at several points: failures first, then not finite, then most missing, then
    largest error (the first of equals); raised as a :class:`~stablehlo_sparsity.DerivativeMismatchError` when
    it fails and ``raise_on_error``."""
    from ..derivatives.checks import DerivativeMismatchError

    if not reports:
        return None
    k = max(range(len(reports)), key=lambda i: (not reports[i].ok, not reports[i].finite, reports[i].missing,
                                               reports[i].worst))
    rep = reports[k]
    if random:  # say which random point (the check itself saw it as its args)
        rep.point, rep.points = k, len(reports)
        rep.where = f"random point {k} of the declared types (ImportedFunction.random_args({seed + k}))"
        if not rep.finite:
            rep.message = rep.message.replace("(args=/points=)", "(args=)")
    if not rep.ok and raise_on_error:
        raise DerivativeMismatchError(rep)
    return rep
