"""The constant lattice over a whole module, as seen by the interpreter (for the fold-constants pass).

Per SSA value the lattice is ``unseen ⊑ c ⊑ varies`` (``c`` a known array that every backend computes bit for
bit, see :func:`trusted_constant`; the same constant means the same bits, :func:`~..values.same_constant`)::

    unseen ∨ c  = c
    c ∨ c       = c
    c ∨ c'      = varies      (c ≠ c')
    c ∨ unknown = varies

Every function is interpreted with unknown arguments (and callees are also seen from their call sites);
each op's results are joined over every time the interpreter evaluates the op (loop iterations, call
contexts).  A value that ends as ``c`` is that constant in every execution, so it may be annotated or
materialized.  A function whose interpretation fails (an unsupported type, an op without a rule that
cannot even be treated conservatively) is poisoned: none of its values fold.
"""

from __future__ import annotations

import warnings

import numpy as np

from ..dtypes import is_float
from ..errors import SparsityWarning
from .interpreter import AnalysisOptions, Interpreter
from ..ir.helpers import nested_ops
from ..lattice import Deps
from .values import AbstractValue, same_constant, tensor_type

__all__ = ["VARIES", "ConstantLattice", "observe_constants"]


class _Varies:
    def __repr__(self) -> str:
        return "VARIES"


#: The top of the constant lattice: the value is not the same constant in every execution.
VARIES = _Varies()


class _ModuleView:
    """What the interpreter needs of a module (``.body``, ``.context``), for a bare ``builtin.module`` op."""

    def __init__(self, module_op):
        self.operation = module_op
        self.body = module_op.regions[0].blocks[0]
        self.context = module_op.context


def trusted_constant(av) -> np.ndarray | None:
    """The value's constant if the program may be rewritten to use it: every backend computes exactly these
    bits (folding/exactness.py) — so not a rounded float, and not a NaN (backends disagree on payloads)."""
    if not av.is_exact:
        return None
    c = np.asarray(av.const)
    if is_float(c.dtype):
        if np.isnan(c.astype(np.complex128 if c.dtype.kind == "c" else np.float64)).any():
            return None
    return c


class ConstantLattice:
    """Joins the constant observations of every op result (keyed by ``ir.Value``)."""

    def __init__(self):
        self.state: dict = {}

    def observe(self, op, results) -> None:
        for r, av in zip(op.results, results):
            self.join(r, trusted_constant(av))

    def join(self, value, const) -> None:
        old = self.state.get(value)
        if old is VARIES:
            return
        if const is None:
            self.state[value] = VARIES
        elif old is None:
            self.state[value] = const
        elif not same_constant(old, const):
            self.state[value] = VARIES

    def poison(self, op) -> None:
        """Every value defined inside ``op`` (a function) varies."""

        for o in [op, *nested_ops(op)]:
            for r in o.results:
                self.state[r] = VARIES

    def value(self, v):
        """The constant of ``v`` (a NumPy array) or ``None`` if it is not one constant."""
        s = self.state.get(v)
        return None if s is None or s is VARIES else s


def observe_constants(module, max_elements: int = 10_000_000) -> ConstantLattice:
    """Run the interpreter's constant lattice over every ``func.func`` of ``module`` (arguments unknown).

    ``module`` is an ``ir.Module`` or a ``builtin.module`` operation.  Folding is bounded by
    ``max_elements`` per op.  Ops without an index-set rule are treated conservatively (their results stay
    unknown); functions the interpreter cannot run fold nothing.
    """
    from jaxlib.mlir import ir

    module_op = module.operation if isinstance(module, ir.Module) else module
    if hasattr(module_op, "operation"):
        module_op = module_op.operation
    view = _ModuleView(module_op)
    lattice = ConstantLattice()
    opts = AnalysisOptions(on_unknown="conservative", max_fold_elements=int(max_elements))
    with module_op.context, warnings.catch_warnings():
        warnings.simplefilter("ignore", SparsityWarning)
        interp = Interpreter(view, 0, opts, observer=lattice.observe)
        for name, fn in interp.functions.items():
            try:
                block = fn.regions[0].blocks[0]
                args = []
                for a in block.arguments:
                    t = tensor_type(a.type)
                    args.append(AbstractValue(t, Deps.empty(t.size, 0)))
                interp.call(name, args)
            except Exception:  # noqa: BLE001 — a fold pass must not fail on what the analysis cannot run
                lattice.poison(fn)
                interp.recover()
    return lattice
