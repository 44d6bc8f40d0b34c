"""The Python-defined passes' base: a pass is a small frozen dataclass whose fields are its options.

Declaring a pass::

    @dataclass(frozen=True)
    class StripPass(SparsityPass):
        \"\"\"Remove every sparsity.* attribute.\"\"\"

        argument: ClassVar[str] = "sparsity-strip"

        def run(self, module_op) -> None:
            strip(module_op)

A field ``max_elements: int = option(64, "values with more elements get a summary")`` is the pass option
``max-elements`` (in ``--pass-pipeline='builtin.module(sparsity-annotate{max-elements=8})'`` and as the
driver flag ``--sparsity-annotate=max-elements=8``); its kind (bool, int, str, integer list, choice) comes
from the declaration.  An instance is the MLIR pass itself: ``pm.add(AnnotatePass(max_elements=8),
name=..., argument=...)`` — errors a pass raises become MLIR error diagnostics at their location and fail
the pipeline.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

from stablehlo_sparsity.errors import InputError, SparsityError

__all__ = ["SparsityPass", "Option", "option", "mlir_message"]


def option(default: Any, help: str, *, kind: str | None = None, choices: tuple[str, ...] = ()) -> Any:
    """A pass option: a dataclass field with its help text (``kind`` defaults from the default's type)."""
    if kind is None:
        kind = "choice" if choices else "bool" if isinstance(default, bool) else \
            "int" if isinstance(default, int) else "str"
    return field(default=default, metadata={"help": help, "kind": kind, "choices": tuple(choices)})


@dataclass(frozen=True)
class Option:
    """One option as the pipeline syntax names it (``max-elements``) and the dataclass field it fills."""

    name: str
    field: str
    kind: str  # "int" | "bool" | "str" | "ints" | "choice"
    default: Any
    help: str
    choices: tuple[str, ...] = ()


_LOC = re.compile(r"^(.*):(\d+):(\d+)$")


def _location_of(err: SparsityError, op):
    """The ``ir.Location`` an error names (``file:line:col``), else the op's."""
    from jaxlib.mlir import ir

    m = _LOC.match(err.location or "")
    if m:
        return ir.Location.file(m.group(1), int(m.group(2)), int(m.group(3)), context=op.context)
    return op.location


def mlir_message(err: SparsityError) -> str:
    """The error's message, with the Python keyword hint spelled as the pass/driver option."""
    return err.message.replace("pass on_unknown='conservative'",
                               "use on-unknown=conservative (--on-unknown=conservative)")


@dataclass(frozen=True)
class SparsityPass:
    """Base of the ``sparsity-*`` passes (see the module docstring).

    Examples:
        >>> from stablehlo_sparsity.passes import PASSES
        >>> sorted(PASSES)
        ['sparsity-annotate', 'sparsity-fold-constants', 'sparsity-hessian', 'sparsity-jacobian', 'sparsity-strip']
        >>> PASSES["sparsity-jacobian"].parse_options("mode=reverse entry=f")
        {'mode': 'reverse', 'entry': 'f'}
    """

    argument: ClassVar[str] = ""

    def run(self, module_op) -> None:  # pragma: no cover - every pass defines it
        raise NotImplementedError

    # ------------------------------------------------------------------ as an MLIR pass
    def __call__(self, op, pass_) -> None:
        """The ``PassManager`` entry: input errors become diagnostics at their location plus a pass failure
        (``PassManager.run`` then raises ``ir.MLIRError``); other exceptions propagate."""
        try:
            self.run(op)
        except SparsityError as e:
            _location_of(e, op).emit_error(mlir_message(e))
            pass_.signal_pass_failure()

    def add_to(self, pm) -> None:
        pm.add(self, name=self.argument, argument=self.argument, description=self.description())

    # ------------------------------------------------------------------ options
    @classmethod
    def description(cls) -> str:
        doc = (cls.__doc__ or "").strip()
        return " ".join(doc.split("\n\n")[0].split())

    @classmethod
    def options(cls) -> tuple[Option, ...]:
        return tuple(Option(f.name.replace("_", "-"), f.name, f.metadata.get("kind", "str"), f.default,
                            f.metadata.get("help", ""), f.metadata.get("choices", ()))
                     for f in dataclasses.fields(cls))

    @classmethod
    def option(cls, name: str) -> Option:
        for o in cls.options():
            if o.name == name:
                return o
        valid = ", ".join(o.name for o in cls.options()) or "none"
        raise InputError(f"unknown option '{name}' for pass '{cls.argument}' (options: {valid})")

    @classmethod
    def parse_options(cls, text: str) -> dict:
        """``"max-elements=8 entry=f"`` → ``{"max-elements": 8, "entry": "f"}`` (MLIR's pass option syntax:
        space-separated ``key=value``; a bare boolean option means true).

        Raises:
            InputError: an unknown option, or a value of the wrong kind or outside the option's choices.
        """
        out = {}
        for item in text.split():
            key, eq, raw = item.partition("=")
            opt = cls.option(key)
            out[opt.name] = _convert_value(cls.argument, opt, raw if eq else None)
        return out

    @classmethod
    def from_options(cls, options: dict | str | None = None) -> "SparsityPass":
        """An instance from pass options by their pipeline names (a dict, or the ``key=value`` text)."""
        if isinstance(options, str):
            options = cls.parse_options(options)
        return cls(**{cls.option(k).field: v for k, v in dict(options or {}).items()})


def _convert_value(argument: str, opt: Option, raw: str | None):
    where = f"option '{opt.name}' of pass '{argument}'"
    if opt.kind == "bool":
        if raw is None or raw.lower() in ("true", "1", "on", "yes"):
            return True
        if raw.lower() in ("false", "0", "off", "no"):
            return False
        raise InputError(f"{where} expects true or false, got '{raw}'")
    if raw is None:
        raise InputError(f"{where} needs a value ({opt.name}=...)")
    if opt.kind == "int":
        try:
            v = int(raw)
        except ValueError:
            raise InputError(f"{where} expects an integer, got '{raw}'") from None
        if v < 0:
            raise InputError(f"{where} must not be negative, got {v}")
        return v
    if opt.kind == "ints":  # argument indices: the one syntax of wrt (stablehlo_sparsity.ir.keywords)
        from stablehlo_sparsity.ir.keywords import parse_wrt_text

        try:
            return parse_wrt_text(raw)
        except InputError:
            raise InputError(f"{where} expects comma-separated integers or 'all', got '{raw}'") from None
    if opt.kind == "choice" and raw not in opt.choices:
        raise InputError(f"{where} must be one of {', '.join(opt.choices)}, got '{raw}'")
    return raw
