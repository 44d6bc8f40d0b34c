"""Hypothesis strategies that build random, shape-correct JAX programs from the supported op families.

A program is a small DAG over one to three float64 input arrays, written as straight-line Python source::

    def f(x0, x1):
        v2 = jnp.roll(x0, -1, axis=1)
        v3 = jnp.where(v2 > x1, jnp.sin(v2), x1 * np.array([[0.0, 2.0, 0.0]]))
        return (v3,)

Each line comes from a *generator*: a small function that picks operands from the values defined so far
and draws the parameters of one construct (an elementwise op, a slice, an einsum, a scatter, a scan …) so
that the line is shape-correct by construction; the shape of the new value is then read with
``jax.eval_shape``.  Because the program is source text, a failing example prints as a program that can be
pasted into a regression test (``Program.source``).

Generators declare the StableHLO ops their family needs (``needs``).  A generator is only used when every
op it needs has a rule in ``stablehlo_sparsity.analysis.rules.DEPS_RULES`` — decided when the strategy is built, so
the random-program test grows by itself as rule families land.  A generator that emits an op without a
rule (a ``needs`` declaration that is incomplete) fails the test as a strategy bug, not a rule bug;
:func:`emitted_ops` lists a module's ops for such checks.

Values are kept finite on purpose (``log(1.5 + sin v)``, ``sqrt(1 + v*v)``, denominators away from 0):
non-finite values make numerical Jacobians meaningless, and :func:`check_program` skips points where the
Jacobian is not finite instead of counting NaN as a nonzero.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st
from jax import lax

__all__ = [
    "Program",
    "Var",
    "GENERATORS",
    "BASE_OPS",
    "programs",
    "enabled_generators",
    "check_program",
    "emitted_ops",
    "numeric_jacobians",
    "NoGroundTruth",
]

#: Ops any construct may emit on the side (index normalization, constants, casts, private calls …).
#: The random programs need their rules before anything runs; they are in the core since the first commit.
BASE_OPS = frozenset(
    "stablehlo." + n
    for n in (
        "constant add subtract multiply divide negate abs sine cosine tanh exponential exponential_minus_one "
        "log log_plus_one sqrt rsqrt cbrt tan logistic power maximum minimum atan2 remainder floor ceil "
        "round_nearest_even round_nearest_afz sign compare select clamp convert and or xor not is_finite "
        "broadcast_in_dim reshape transpose slice concatenate pad reverse iota"
    ).split()
) | {"func.call"}

# ---------------------------------------------------------------------- functions with custom derivative rules
# Their StableHLO is the primal only; the API notices the custom rule in the jaxpr and analyzes the JVP (or
# VJP) program instead (``derivatives="auto"``).  Each one's derivative has dependencies its primal lacks.
@jax.custom_jvp
def ste_round(x):
    """Straight-through estimator: the primal rounds (zero derivative), the JVP passes the tangent."""
    return jnp.round(x)


ste_round.defjvp(lambda p, t: (jnp.round(p[0]), t[0]))


@jax.custom_jvp
def mixing(x):
    """An elementwise primal whose declared JVP mixes elements (a cumulative sum of the tangent)."""
    return 2.0 * x


mixing.defjvp(lambda p, t: (2.0 * p[0], jnp.cumsum(t[0].reshape(-1)).reshape(t[0].shape)))


@jax.custom_vjp
def reversed_vjp(x):
    """``sin`` whose VJP reverses the cotangent (only reverse mode is defined)."""
    return jnp.sin(x)


reversed_vjp.defvjp(lambda x: (jnp.sin(x), x),
                    lambda x, g: (jnp.cos(x) * jnp.flip(g.reshape(-1)).reshape(g.shape),))


_ENV = {"jax": jax, "jnp": jnp, "lax": lax, "np": np, "ste_round": ste_round, "mixing": mixing,
        "reversed_vjp": reversed_vjp}

MAX_NODE_SIZE = 128  # elements per intermediate value: keeps Jacobians tiny and examples fast
MAX_INPUT_SIZE = 36


# ====================================================================== program representation
@dataclass(frozen=True)
class Var:
    name: str
    shape: tuple[int, ...]
    kind: str  # "f" (float64, differentiable) or "i" (int32, an index)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass
class Program:
    """A straight-line JAX program: inputs (float64 arrays), lines ``name = expr``, returned names."""

    inputs: list[tuple[int, ...]]
    lines: list[tuple[str, str, str]] = field(default_factory=list)  # (name, expr, generator)
    outputs: list[str] = field(default_factory=list)

    @property
    def arg_names(self) -> list[str]:
        return [f"x{i}" for i in range(len(self.inputs))]

    @property
    def generators(self) -> list[str]:
        return [g for _, _, g in self.lines]

    def source(self, name: str = "f") -> str:
        body = [f"    {n} = {e}" for n, e, _ in self.lines]
        body.append(f"    return ({', '.join(self.outputs)},)")
        return f"def {name}({', '.join(self.arg_names)}):\n" + "\n".join(body) + "\n"

    def function(self) -> Callable:
        env = dict(_ENV)
        exec(compile(self.source(), "<random program>", "exec"), env)
        return env["f"]

    def example_args(self) -> list[jnp.ndarray]:
        return [jnp.zeros(s, jnp.float64) for s in self.inputs]

    def __repr__(self) -> str:  # hypothesis prints this for a falsifying example
        shapes = ", ".join(f"x{i}: {s}" for i, s in enumerate(self.inputs))
        return f"Program(inputs: {shapes})\n{self.source()}"


# ====================================================================== the pool of defined values
class Pool:
    """Values defined so far; generators draw operands from it."""

    def __init__(self, draw, vars_: list[Var]):
        self.draw = draw
        self.vars = list(vars_)

    def floats(self, pred=None) -> list[Var]:
        return [v for v in self.vars if v.kind == "f" and (pred is None or pred(v))]

    def ints(self, pred=None) -> list[Var]:
        return [v for v in self.vars if v.kind == "i" and (pred is None or pred(v))]

    def pick(self, pred=None, kind="f", recent=True) -> Var | None:
        """A value satisfying ``pred``; biased toward recent values so programs compose deeply."""
        cands = self.floats(pred) if kind == "f" else self.ints(pred)
        if not cands:
            return None
        if recent and len(cands) > 1 and self.draw(st.booleans()):
            return cands[-1]
        return self.draw(st.sampled_from(cands))

    # ------------------------------------------------------------------ literals
    # Literal arrays come from a drawn seed (two draws, not one per element): big literals would otherwise
    # exhaust Hypothesis' per-example data budget and turn examples invalid.
    def _rng(self) -> np.random.Generator:
        return np.random.default_rng(self.draw(st.integers(0, 2**16)))

    def const(self, shape, zeros=True, values=(1.0, -0.5, 2.0, 3.0)) -> str:
        """A float64 constant of ``shape``; with ``zeros`` some entries are exact zeros (value-aware rules)."""
        size = int(np.prod(shape, dtype=np.int64))
        p_zero = self.draw(st.sampled_from([0.5, 0.0, 0.2, 0.8])) if zeros else 0.0
        rng = self._rng()
        data = np.where(rng.random(size) < p_zero, 0.0, rng.choice(values, size))
        return f"np.array({[float(x) for x in data]!r}).reshape({tuple(shape)!r})"

    def computed_const(self, shape) -> str:
        """A float64 constant the *program* computes (from ``iota``): rounding-level residues where the fold
        says zero (linspace midpoints, ``i·0.1 − k·0.1``, ``(i/3)·3 − i``, ``cos(π/2·i)``, cancelling sums) and
        exact values (integer masks, quarters) — the trust rules must keep the first and may use the second."""
        n = int(np.prod(shape, dtype=np.int64))
        k = self.draw(st.integers(0, max(n - 1, 0)))
        forms = [
            f"jnp.linspace(-0.5, 0.5, {n})",
            f"jnp.linspace(-0.5, 0.5, 501)[{250 - k}:{250 - k + n}]",  # XLA computes 5e-18 at index 250
            f"(jnp.arange({n}) * 0.1 - {k * 0.1!r})",
            f"(jnp.arange({n}) / 3.0 * 3.0 - jnp.arange({n}))",
            f"jnp.cos(jnp.pi / 2 * (jnp.arange({n}) % 3))",
            f"(jnp.sum(jnp.linspace(-1.0, 1.0, 7)) + jnp.zeros({n}))",
            f"((jnp.arange({n}) % 2) * 1.0)",
            f"(jnp.arange({n}) * 0.25 - jnp.floor(jnp.arange({n}) * 0.25))",
        ]
        return f"{self.draw(st.sampled_from(forms))}.reshape({tuple(shape)!r})"

    def const_bool(self, shape) -> str:
        size = int(np.prod(shape, dtype=np.int64))
        data = self._rng().random(size) < 0.5
        return f"np.array({[bool(x) for x in data]!r}).reshape({tuple(shape)!r})"

    def const_int(self, shape, lo, hi) -> str:
        size = int(np.prod(shape, dtype=np.int64))
        data = self._rng().integers(lo, hi + 1, size)
        return f"np.array({[int(x) for x in data]!r}, dtype=np.int32).reshape({tuple(shape)!r})"

    def int_scalar(self, lo_hint: int = 0) -> str:
        """An int32 scalar expression: a literal, or an input-dependent value (a *dynamic* index)."""
        choice = self.draw(st.sampled_from(["literal", "int", "float"]))
        if choice == "int":
            v = self.pick(lambda v: v.size > 0, kind="i")
            if v is not None:
                return f"{v.name}.reshape(-1)[0]" if v.rank else v.name
        if choice in ("int", "float"):
            v = self.pick(lambda v: v.size > 0)
            if v is not None:
                el = f"{v.name}.reshape(-1)[{self.draw(st.integers(0, v.size - 1))}]" if v.rank else v.name
                return f"jnp.floor(jnp.abs({el}) * 2.0).astype(jnp.int32)"
        return f"jnp.int32({self.draw(st.integers(lo_hint, 4))})"

    def scalar(self) -> str:
        """A float scalar: a literal or an element of a value."""
        v = self.pick(lambda v: v.size > 0)
        if v is not None and self.draw(st.booleans()):
            return f"{v.name}.reshape(-1)[{self.draw(st.integers(0, v.size - 1))}]" if v.rank else v.name
        return repr(self.draw(st.sampled_from([0.0, 0.5, -1.0, 2.0])))

    def same_shape(self, shape, exclude=None) -> str:
        """An expression of exactly ``shape``: an existing value of that shape, a constant, or a broadcast scalar."""
        cands = self.floats(lambda v: v.shape == tuple(shape) and v.name != exclude)
        choice = self.draw(st.sampled_from(["var", "const", "scalar"]))
        if choice == "var" and cands:
            return self.draw(st.sampled_from(cands)).name
        if choice == "const" or not tuple(shape):
            return self.const(shape)
        return f"jnp.broadcast_to({self.scalar()}, {tuple(shape)!r})"

    def reshaped(self, size: int, shape) -> str | None:
        """An expression of ``shape`` taken from the first ``size`` elements of some value (or a constant)."""
        v = self.pick(lambda v: v.size >= size and size > 0)
        if v is None or self.draw(st.integers(0, 3)) == 0:
            return self.const(shape)
        flat = v.name if v.rank == 1 else f"{v.name}.reshape(-1)"
        if v.size > size:
            flat += f"[:{size}]"
        return f"{flat}.reshape({tuple(shape)!r})"


# ====================================================================== generator registry
@dataclass(frozen=True)
class Generator:
    name: str
    family: str
    needs: frozenset
    fn: Callable  # fn(pool) -> expr | None  (returns None when not applicable to the pool)
    weight: int = 1


GENERATORS: list[Generator] = []


def gen(name: str, family: str, needs=(), weight: int = 1):
    def register(fn):
        GENERATORS.append(Generator(name, family, frozenset(needs), fn, weight))
        return fn

    return register


def enabled_generators(rules=None, families=None) -> list[Generator]:
    """Generators whose needed ops all have rules (and in ``families`` when given)."""
    if rules is None:
        from stablehlo_sparsity.analysis.rules import DEPS_RULES as rules
    have = set(rules)
    out = []
    for g in GENERATORS:
        if families is not None and g.family not in families:
            continue
        if (g.needs | BASE_OPS) <= have:
            out.append(g)
    return out


def _axis(p: Pool, v: Var) -> int:
    return p.draw(st.integers(0, v.rank - 1))


def _broadcast_partner(p: Pool, a: Var) -> str:
    """A second operand whose shape broadcasts with ``a``'s (same shape, size-1 dims, a suffix, a scalar)."""
    def compatible(v: Var) -> bool:
        if v.kind != "f":
            return False
        try:
            s = np.broadcast_shapes(v.shape, a.shape)
        except ValueError:
            return False
        return int(np.prod(s, dtype=np.int64)) <= MAX_NODE_SIZE

    choice = p.draw(st.sampled_from(["var", "var", "const", "scalar"]))
    if choice == "var":
        v = p.pick(compatible)
        if v is not None:
            return v.name
    if choice == "const" and a.rank:
        # a constant with some dimensions collapsed to 1 (broadcast inside the binary op)
        shape = tuple(d if p.draw(st.booleans()) else 1 for d in a.shape)
        return p.const(shape)
    return p.scalar()


# ---------------------------------------------------------------------- elementwise (core)
_UNARY = {
    "sin": "jnp.sin({a})",
    "cos": "jnp.cos({a})",
    "tanh": "jnp.tanh({a})",
    "neg": "-{a}",
    "abs": "jnp.abs({a})",
    "square": "{a} * {a}",
    "cube": "{a} ** 3",
    "sigmoid": "jax.nn.sigmoid({a})",
    "logistic": "lax.logistic({a})",
    "exp": "jnp.exp(jnp.sin({a}))",
    "expm1": "jnp.expm1(jnp.tanh({a}))",
    "log": "jnp.log(1.5 + jnp.sin({a}))",
    "log1p": "jnp.log1p({a} * {a})",
    "sqrt": "jnp.sqrt(1.0 + {a} * {a})",
    "rsqrt": "lax.rsqrt(1.0 + {a} * {a})",
    "cbrt": "jnp.cbrt({a})",
    "tan": "jnp.tan(jnp.tanh({a}))",
    "pow_const": "jnp.power(1.5 + jnp.sin({a}), 2.5)",
    "clip": "jnp.clip({a}, -0.5, 0.5)",
    "fmod": "jnp.fmod({a}, 0.7)",
    "remainder": "jnp.remainder({a}, 0.7)",
    "relu": "jnp.maximum({a}, 0.0)",
    "stop_gradient": "lax.stop_gradient({a}) * {a}",
    # zero-derivative ops: the result depends on nothing
    "floor": "jnp.floor({a})",
    "ceil": "jnp.ceil({a})",
    "round": "jnp.round({a})",
    "sign": "jnp.sign({a})",
    "int_roundtrip": "{a}.astype(jnp.int32).astype(jnp.float64)",
    "step": "({a} > 0.3).astype(jnp.float64)",
    "isfinite": "jnp.where(jnp.isfinite({a}), {a}, 0.0)",
}


@gen("unary", "elementwise", weight=4)
def _unary(p: Pool):
    a = p.pick()
    if a is None:
        return None
    return _UNARY[p.draw(st.sampled_from(sorted(_UNARY)))].format(a=a.name)


_CHLO_UNARY = {"chlo.atan": "jnp.arctan({a})", "chlo.asinh": "jnp.arcsinh({a})", "chlo.erf":
               "jax.scipy.special.erf({a})", "chlo.sinh": "jnp.sinh(jnp.tanh({a}))",
               "chlo.cosh": "jnp.cosh(jnp.tanh({a}))"}
for _op, _tmpl in _CHLO_UNARY.items():
    def _chlo(p: Pool, _tmpl=_tmpl):
        a = p.pick()
        return None if a is None else _tmpl.format(a=a.name)

    gen(f"unary_{_op}", "chlo", needs={_op})(_chlo)


_BINARY = {
    "add": "{a} + {b}",
    "sub": "{a} - {b}",
    "mul": "{a} * {b}",
    "div_safe": "{a} / (2.0 + jnp.sin({b}))",
    "div": "{a} / (0.25 + {b} * {b})",
    "max": "jnp.maximum({a}, {b})",
    "min": "jnp.minimum({a}, {b})",
    "atan2": "jnp.arctan2({a}, {b})",
    "pow": "jnp.power(1.5 + jnp.sin({a}), jnp.tanh({b}))",
    "fmod": "jnp.fmod({a}, 1.0 + {b} * {b})",
    "where_cmp": "jnp.where({a} > {b}, {a}, {b})",
    "where_mix": "jnp.where({a} < 0.2, jnp.sin({b}), {a} * {b})",
    "step_mul": "jnp.floor({a}) * {b}",
}


@gen("binary", "elementwise", weight=5)
def _binary(p: Pool):
    a = p.pick()
    if a is None:
        return None
    b = _broadcast_partner(p, a)
    op = p.draw(st.sampled_from(sorted(_BINARY)))
    if p.draw(st.booleans()):
        return _BINARY[op].format(a=a.name, b=b)
    return _BINARY[op].format(a=b, b=a.name)


@gen("mul_const", "elementwise", weight=2)
def _mul_const(p: Pool):
    """Multiply / divide by a known constant with exact zeros (the value-aware rules)."""
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    c = p.const(a.shape)
    form = p.draw(st.sampled_from(["{a} * {c}", "{c} * {a}", "{c} / (1.5 + jnp.cos({a}))", "({a} + 1.0) * {c}"]))
    return form.format(a=a.name, c=c)


@gen("computed_const", "elementwise", weight=2)
def _computed_const(p: Pool):
    """Products and predicates with constants the program computes (the trust rules of folded floats)."""
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    c = p.computed_const(a.shape)
    form = p.draw(st.sampled_from(["{a} * {c}", "{c} * jnp.sin({a})", "jnp.where({c} > 0.0, {a}, {b})",
                                   "jnp.where({c} == 0.0, {b}, {a} * 2.0)", "{a} / (2.0 + {c})"]))
    return form.format(a=a.name, c=c, b=p.same_shape(a.shape, exclude=a.name))


@gen("select_known", "elementwise")
def _select_known(p: Pool):
    """``where`` with a known (constant) predicate takes one side per element."""
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    return f"jnp.where({p.const_bool(a.shape)}, {a.name}, {p.same_shape(a.shape, exclude=a.name)})"


@gen("clamp", "elementwise")
def _clamp(p: Pool):
    """§clamp with literal scalar bounds or array bounds of the operand's shape.  (A *traced* scalar bound
    is left out: JAX's own JVP of clamp then fails, "select cases must have the same shapes".)"""
    a = p.pick()
    if a is None:
        return None
    if p.draw(st.booleans()):
        lo = p.draw(st.sampled_from([-0.5, 0.0, -2.0]))
        return f"lax.clamp({lo}, {a.name}, {lo + 1.0})"
    bound = p.same_shape(a.shape, exclude=a.name)
    return f"lax.clamp({bound} - 0.5, {a.name}, {bound} + 0.5)"


@gen("make_int", "elementwise")
def _make_int(p: Pool):
    """An int32 value computed from float data (zero derivative; used as a dynamic index later)."""
    a = p.pick()
    if a is None:
        return None
    form = p.draw(st.sampled_from(["jnp.floor(jnp.abs({a}) * 2.0).astype(jnp.int32)",
                                   "({a} > 0).astype(jnp.int32)",
                                   "jnp.round({a} * 3.0).astype(jnp.int32) % 4"]))
    return form.format(a=a.name)


@gen("int_to_float", "elementwise")
def _int_to_float(p: Pool):
    i = p.pick(kind="i")
    if i is None:
        return None
    a = p.pick(lambda v: v.shape == i.shape or i.rank == 0)
    if a is None:
        return f"{i.name}.astype(jnp.float64)"
    return f"{a.name} * ({i.name} % 3).astype(jnp.float64)"


# ---------------------------------------------------------------------- structural (core)
@gen("slice", "structural", weight=3)
def _slice(p: Pool):
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    parts = []
    for d in a.shape:
        kind = p.draw(st.sampled_from(["all", "range", "range", "step", "rev", "empty"] if d else ["all"]))
        if kind == "all":
            parts.append(":")
        elif kind == "range":
            lo = p.draw(st.integers(0, d - 1))
            hi = p.draw(st.integers(lo + 1, d))
            parts.append(f"{lo}:{hi}")
        elif kind == "step":
            lo = p.draw(st.integers(0, d - 1))
            parts.append(f"{lo}::{p.draw(st.integers(2, 3))}")
        elif kind == "rev":
            parts.append("::-1")
        else:
            parts.append("1:1")  # a zero-size slice: must work, not error
    return f"{a.name}[{', '.join(parts)}]"


@gen("lax_slice", "structural")
def _lax_slice(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    starts, limits, strides = [], [], []
    for d in a.shape:
        s = p.draw(st.integers(0, d - 1))
        starts.append(s)
        limits.append(p.draw(st.integers(s + 1, d)))
        strides.append(p.draw(st.integers(1, 3)))
    return f"lax.slice({a.name}, {tuple(starts)}, {tuple(limits)}, {tuple(strides)})"


@gen("pad", "structural", weight=2)
def _pad(p: Pool):
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    if p.draw(st.booleans()):
        widths = tuple((p.draw(st.integers(0, 2)), p.draw(st.integers(0, 2))) for _ in a.shape)
        mode = p.draw(st.sampled_from(["constant", "constant", "edge", "reflect", "wrap"]))
        if mode == "constant":
            return f"jnp.pad({a.name}, {widths!r}, constant_values={p.draw(st.sampled_from([0.0, 1.5]))})"
        if mode in ("reflect", "wrap") and any(d < 2 for d in a.shape):
            mode = "edge"
        if any(d == 0 for d in a.shape):
            mode = "constant"
        return f"jnp.pad({a.name}, {widths!r}, mode={mode!r})"
    config = []
    for d in a.shape:
        interior = p.draw(st.integers(0, 2))
        inner = (d - 1) * (interior + 1) + 1 if d else 0
        lo = p.draw(st.integers(-min(1, inner), 2))
        hi = p.draw(st.integers(-min(1, inner + lo), 2)) if inner + lo > 0 else p.draw(st.integers(0, 2))
        config.append((lo, hi, interior))
    fill = p.scalar()
    return f"lax.pad({a.name}, jnp.asarray({fill}, jnp.float64), {tuple(config)!r})"


@gen("concat", "structural", weight=2)
def _concat(p: Pool):
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    ax = _axis(p, a)
    others = p.floats(lambda v: v.rank == a.rank and all(
        x == y for i, (x, y) in enumerate(zip(v.shape, a.shape)) if i != ax))
    parts = [a.name]
    for _ in range(p.draw(st.integers(1, 2))):
        choice = p.draw(st.sampled_from(["var", "flip", "const"]))
        if choice == "var" and others:
            parts.append(p.draw(st.sampled_from(others)).name)
        elif choice == "flip":
            parts.append(f"jnp.flip({a.name}, {ax})")
        else:
            shape = list(a.shape)
            shape[ax] = p.draw(st.integers(1, 2))
            parts.append(p.const(tuple(shape)))
    if p.draw(st.booleans()):
        parts = parts[::-1]
    return f"jnp.concatenate([{', '.join(parts)}], axis={ax})"


@gen("stack", "structural")
def _stack(p: Pool):
    a = p.pick()
    if a is None:
        return None
    b = p.same_shape(a.shape, exclude=a.name)
    return f"jnp.stack([{a.name}, {b}], axis={p.draw(st.integers(0, a.rank))})"


@gen("transpose", "structural", weight=2)
def _transpose(p: Pool):
    a = p.pick(lambda v: v.rank > 1)
    if a is None:
        return None
    perm = p.draw(st.permutations(range(a.rank)))
    return f"jnp.transpose({a.name}, {tuple(perm)!r})"


def _factorizations(n: int, max_rank: int = 3) -> list[tuple[int, ...]]:
    out = [(n,)] if n else [(0,), (0, 2), (2, 0)]
    if n:
        for r in range(2, max_rank + 1):
            for f in itertools.product(range(1, n + 1), repeat=r - 1):
                rest, ok = n, True
                for x in f:
                    if rest % x:
                        ok = False
                        break
                    rest //= x
                if ok:
                    out.append(tuple(f) + (rest,))
    return out


@gen("reshape", "structural", weight=2)
def _reshape(p: Pool):
    a = p.pick()
    if a is None:
        return None
    shape = p.draw(st.sampled_from(_factorizations(a.size) + [()] * (a.size == 1)))
    return f"{a.name}.reshape({shape!r})"


@gen("broadcast", "structural", weight=2)
def _broadcast(p: Pool):
    a = p.pick(lambda v: v.size * 2 <= MAX_NODE_SIZE)
    if a is None:
        return None
    kind = p.draw(st.sampled_from(["lead", "expand", "ones"]))
    if kind == "lead":
        return f"jnp.broadcast_to({a.name}, {(p.draw(st.integers(1, 3)),) + a.shape!r})"
    if kind == "expand" or 1 not in a.shape:
        return f"jnp.expand_dims({a.name}, {p.draw(st.integers(0, a.rank))})"
    shape = tuple(p.draw(st.integers(1, 3)) if d == 1 else d for d in a.shape)
    return f"jnp.broadcast_to({a.name}, {shape!r})"


@gen("outer", "structural")
def _outer(p: Pool):
    """``a[..., None] * b[None, ...]``: broadcast_in_dim of both operands."""
    a = p.pick(lambda v: 0 < v.rank < 3 and v.size <= 12)
    b = p.pick(lambda v: 0 < v.rank < 2 and v.size <= 10)
    if a is None or b is None:
        return None
    return f"{a.name}[..., None] * {b.name}"


@gen("roll", "structural", weight=2)
def _roll(p: Pool):
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    shift = p.draw(st.integers(-4, 4))
    if p.draw(st.integers(0, 3)) == 0:
        return f"jnp.roll({a.name}, {shift})"
    return f"jnp.roll({a.name}, {shift}, axis={_axis(p, a)})"


@gen("reverse", "structural")
def _reverse(p: Pool):
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    axes = sorted(set(p.draw(st.lists(st.integers(0, a.rank - 1), min_size=1, max_size=a.rank))))
    return f"jnp.flip({a.name}, {tuple(axes)!r})"


@gen("tile_repeat", "structural")
def _tile(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.size * 2 <= MAX_NODE_SIZE)
    if a is None:
        return None
    if p.draw(st.booleans()):
        reps = tuple(p.draw(st.integers(1, 2)) for _ in a.shape)
        return f"jnp.tile({a.name}, {reps!r})"
    return f"jnp.repeat({a.name}, 2, axis={_axis(p, a)})"


@gen("triangle", "structural")
def _triangle(p: Pool):
    """``triu``/``tril``: a select on a predicate built from iota (a known constant)."""
    a = p.pick(lambda v: v.rank >= 2)
    if a is None:
        return None
    return f"jnp.{p.draw(st.sampled_from(['triu', 'tril']))}({a.name}, {p.draw(st.integers(-1, 1))})"


# ---------------------------------------------------------------------- reductions
@gen("reduce", "reduction", needs={"stablehlo.reduce"}, weight=3)
def _reduce(p: Pool):
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    axes = sorted(set(p.draw(st.lists(st.integers(0, a.rank - 1), min_size=1, max_size=a.rank))))
    kd = p.draw(st.booleans())
    empty_ok = all(a.shape[i] > 0 for i in axes)
    fns = ["sum", "prod", "mean"] + (["max", "min"] if empty_ok else [])
    fn = p.draw(st.sampled_from(fns))
    return f"jnp.{fn}({a.name}, axis={tuple(axes)!r}, keepdims={kd})"


@gen("reduce_all", "reduction", needs={"stablehlo.reduce"})
def _reduce_all(p: Pool):
    a = p.pick(lambda v: v.size > 0)
    if a is None:
        return None
    return p.draw(st.sampled_from(["jnp.sum({a})", "jnp.linalg.norm({a})", "jax.nn.logsumexp({a})",
                                   "jnp.max({a})", "jnp.var({a})"])).format(a=a.name)


@gen("argmax", "reduction", needs={"stablehlo.reduce"})
def _argmax(p: Pool):
    """A two-operand reduce whose int result becomes an index."""
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    fn = p.draw(st.sampled_from(["argmax", "argmin"]))
    return f"jnp.{fn}({a.name}, axis={_axis(p, a)}).astype(jnp.int32)"


@gen("reduce_payload", "reduction", needs={"stablehlo.reduce"})
def _reduce_payload(p: Pool):
    """A variadic reduce carrying a float payload selected by the max of a key (max-with-argument)."""
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    # the payload must not be a constant: JAX's JVP of a variadic reduce fails on a symbolic-zero tangent
    others = p.floats(lambda v: v.shape == a.shape and v.name != a.name)
    b = p.draw(st.sampled_from(others)).name if others else f"jnp.cos({a.name})"
    ax = _axis(p, a)
    body = "lambda x, y: (jnp.maximum(x[0], y[0]), jnp.where(x[0] >= y[0], x[1], y[1]))"
    return f"lax.reduce(({a.name}, {b}), (-jnp.inf, 0.0), {body}, ({ax},))[1]"


# ---------------------------------------------------------------------- dot_general
@gen("einsum", "dot_general", needs={"stablehlo.dot_general"}, weight=3)
def _einsum(p: Pool):
    a = p.pick(lambda v: 0 < v.rank <= 3)
    if a is None:
        return None
    letters = "abcdefgh"
    la = letters[: a.rank]
    # the second operand: some of a's dims (shared labels: batch or contracted) and up to two new ones
    shared = [i for i in range(a.rank) if p.draw(st.booleans())]
    new = [p.draw(st.integers(1, 3)) for _ in range(p.draw(st.integers(0, 2)))]
    lb_labels = [la[i] for i in shared] + list(letters[a.rank: a.rank + len(new)])
    b_shape = tuple(a.shape[i] for i in shared) + tuple(new)
    order = p.draw(st.permutations(range(len(lb_labels))))
    lb = "".join(lb_labels[i] for i in order)
    b_shape = tuple(b_shape[i] for i in order)
    if int(np.prod(b_shape, dtype=np.int64)) > MAX_NODE_SIZE:
        return None
    kept = [c for c in la if c not in lb or p.draw(st.booleans())] + [c for c in lb if c not in la]
    out = "".join(p.draw(st.permutations(kept)))
    dims = dict(zip(la, a.shape)) | dict(zip(lb, b_shape))
    if int(np.prod([dims[c] for c in out], dtype=np.int64)) > MAX_NODE_SIZE:
        return None
    size = int(np.prod(b_shape, dtype=np.int64))
    bex = p.const(b_shape) if p.draw(st.integers(0, 2)) == 0 else p.reshaped(size, b_shape) if size else p.const(b_shape)
    if p.draw(st.booleans()):
        return f"jnp.einsum('{lb},{la}->{out}', {bex}, {a.name})"
    return f"jnp.einsum('{la},{lb}->{out}', {a.name}, {bex})"


@gen("matmul", "dot_general", needs={"stablehlo.dot_general"})
def _matmul(p: Pool):
    a = p.pick(lambda v: v.rank in (1, 2))
    if a is None:
        return None
    k = a.shape[-1]
    m = p.draw(st.integers(1, 3))
    shape = (k, m) if p.draw(st.booleans()) else (k,)
    size = int(np.prod(shape))
    b = p.reshaped(size, shape) if size else p.const(shape)
    if size and p.draw(st.integers(0, 3)) == 0:
        b = p.computed_const(shape)
    return f"{a.name} @ {b}"


# ---------------------------------------------------------------------- convolution
@gen("conv", "convolution", needs={"stablehlo.convolution"}, weight=2)
def _conv(p: Pool):
    a = p.pick(lambda v: v.size > 0)
    if a is None:
        return None
    nsp = p.draw(st.integers(1, 2))
    # lhs (N, C, *spatial) from a's elements
    facts = [f for f in _factorizations(a.size, nsp + 2) if len(f) == nsp + 2]
    if not facts:
        return None
    lhs_shape = p.draw(st.sampled_from(facts))
    N, C = lhs_shape[:2]
    spatial = lhs_shape[2:]
    g = p.draw(st.sampled_from([d for d in (1, 2, 3) if C % d == 0]))
    O = g * p.draw(st.integers(1, 2))
    K = tuple(p.draw(st.integers(1, 3)) for _ in spatial)
    rhs_shape = (O, C // g) + K
    rsize = int(np.prod(rhs_shape))
    if rsize > 48:
        return None
    strides = tuple(p.draw(st.integers(1, 2)) for _ in spatial)
    lhs_dil = tuple(p.draw(st.integers(1, 2)) for _ in spatial)
    rhs_dil = tuple(p.draw(st.integers(1, 2)) for _ in spatial)
    pad = tuple((p.draw(st.integers(0, 2)), p.draw(st.integers(0, 2))) for _ in spatial)
    for d, k, ld, rd, (lo, hi) in zip(spatial, K, lhs_dil, rhs_dil, pad):
        if (d - 1) * ld + 1 + lo + hi < (k - 1) * rd + 1:
            return None
    choice = p.draw(st.sampled_from(["reshaped", "const", "computed"]))
    rhs = p.reshaped(rsize, rhs_shape) if choice == "reshaped" else (
        p.const(rhs_shape) if choice == "const" else p.computed_const(rhs_shape))
    lhs = f"{a.name}.reshape({lhs_shape!r})"
    dn = ("NCH", "OIH", "NCH") if nsp == 1 else ("NCHW", "OIHW", "NCHW")
    return (f"lax.conv_general_dilated({lhs}, {rhs}, window_strides={strides}, padding={pad}, "
            f"lhs_dilation={lhs_dil}, rhs_dilation={rhs_dil}, dimension_numbers={dn}, feature_group_count={g})")


# ---------------------------------------------------------------------- gather / scatter (static and dynamic)
@gen("take_static", "gather", needs={"stablehlo.gather"}, weight=2)
def _take_static(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    ax = _axis(p, a)
    d = a.shape[ax]
    mode = p.draw(st.sampled_from(["index", "clip", "fill"]))
    ishape = p.draw(st.sampled_from([(), (1,), (2,), (3,), (2, 2)]))
    if mode == "index":
        idx = p.const_int(ishape, -d, d - 1)  # negative indices are normalized
        sl = ", ".join([":"] * ax + [idx])
        return f"{a.name}[{sl}]"
    idx = p.const_int(ishape, -d - 1, d + 2)  # out of range: clamped / filled
    extra = ", fill_value=0.5" if mode == "fill" else ""
    return f"jnp.take({a.name}, {idx}, axis={ax}, mode={mode!r}{extra})"


@gen("gather_multi", "gather", needs={"stablehlo.gather"})
def _gather_multi(p: Pool):
    """Advanced indexing on two axes at once (one gather with two index dimensions)."""
    a = p.pick(lambda v: v.rank >= 2 and v.size > 0)
    if a is None:
        return None
    k = p.draw(st.integers(1, 4))
    i0 = p.const_int((k,), 0, a.shape[0] - 1)
    i1 = p.const_int((k,), 0, a.shape[1] - 1)
    return f"{a.name}[{i0}, {i1}]"


@gen("take_along", "gather", needs={"stablehlo.gather"})
def _take_along(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    ax = _axis(p, a)
    idx = p.const_int(a.shape, 0, a.shape[ax] - 1)
    return f"jnp.take_along_axis({a.name}, {idx}, axis={ax})"


@gen("take_dynamic", "gather", needs={"stablehlo.gather"}, weight=2)
def _take_dynamic(p: Pool):
    """Indices computed from the input: the analysis must assume any element."""
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    ax = _axis(p, a)
    d = a.shape[ax]
    i = p.pick(lambda v: 0 < v.rank <= 2 and v.size <= 6, kind="i")
    if i is None:
        src = p.pick(lambda v: 0 < v.size <= 6)
        if src is None:
            return None
        iexpr = f"jnp.floor(jnp.abs({src.name}) * 2.0).astype(jnp.int32)"
    else:
        iexpr = i.name
    sl = ", ".join([":"] * ax + [f"{iexpr} % {d}"])
    return f"{a.name}[{sl}]"


def _updates_for(p: Pool, shape, exact: bool = False) -> str:
    """Scatter updates of ``shape``: a window of some value, a constant, or a (broadcast) scalar."""
    if p.draw(st.booleans()):
        return f"jnp.broadcast_to({p.scalar()}, {tuple(shape)!r})" if exact else p.scalar()
    size = int(np.prod(shape, dtype=np.int64))
    return p.reshaped(size, shape) if size else p.const(shape)


@gen("scatter_static", "scatter", needs={"stablehlo.scatter"}, weight=2)
def _scatter_static(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    d = a.shape[0]
    k = p.draw(st.integers(1, 3))
    idx = p.const_int((k,), -d, d + 1)  # duplicates and out-of-bounds (dropped) indices
    upd = _updates_for(p, (k,) + a.shape[1:])
    method = p.draw(st.sampled_from(["set", "add", "min", "max"]))  # mul: JAX has no JVP for duplicates
    return f"{a.name}.at[{idx}].{method}({upd})"


@gen("scatter_dynamic", "scatter", needs={"stablehlo.scatter"})
def _scatter_dynamic(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    d = a.shape[-1]
    i = p.int_scalar()
    upd = _updates_for(p, a.shape[:-1])
    method = p.draw(st.sampled_from(["set", "add", "mul"]))
    return f"{a.name}.at[..., {i} % {d}].{method}({upd})"


@gen("dynamic_slice", "dynamic_slice", needs={"stablehlo.dynamic_slice"}, weight=2)
def _dynamic_slice(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    starts = ", ".join(p.int_scalar() for _ in a.shape)  # out-of-range starts are clamped
    sizes = tuple(p.draw(st.integers(1, d)) for d in a.shape)
    return f"lax.dynamic_slice({a.name}, ({starts},), {sizes!r})"


@gen("dynamic_update_slice", "dynamic_slice", needs={"stablehlo.dynamic_update_slice"}, weight=2)
def _dynamic_update_slice(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    starts = ", ".join(p.int_scalar() for _ in a.shape)
    sizes = tuple(p.draw(st.integers(1, d)) for d in a.shape)
    upd = _updates_for(p, sizes, exact=True)
    return f"lax.dynamic_update_slice({a.name}, {upd}, ({starts},))"


# ---------------------------------------------------------------------- control flow
def _carry_step(p: Pool, c: str, shape, closure: str, counter: str | None) -> str:
    """A shape-preserving step of a loop carry (composed one to three times)."""
    forms = ["jnp.sin({c}) * {w}", "{c} * 0.5 + {w}", "jnp.where({c} > 0, {c}, {w})", "{c} * {c} - {w}",
             "jnp.tanh({c} + {w})"]
    if len(shape):
        forms += ["jnp.roll({c}, 1, axis=0) + {w}", "jnp.flip({c}, 0) * {w}"]
        if counter is not None and shape[0] > 0:
            forms += [f"{{c}}.at[{counter} % {shape[0]}].set({{c}}[0] * 2.0)",
                      f"{{c}} + jnp.roll({{w}}, {counter}, axis=0)"]
    expr = c
    for _ in range(p.draw(st.integers(1, 2))):
        expr = p.draw(st.sampled_from(forms)).format(c=f"({expr})" if expr != c else c, w=f"({closure})")
    return expr


#: Largest trip count of the loop generators.  The random-program CI keeps 4 (the same programs every run);
#: tests/analysis/rules/test_loops.py raises it, and then scans also run over tiled (longer) sequences.
LOOP_TRIPS = 4


@gen("fori_loop", "while", needs={"stablehlo.while"}, weight=2)
def _fori(p: Pool):
    a = p.pick()
    if a is None:
        return None
    w = p.same_shape(a.shape, exclude=a.name)
    dynamic = p.draw(st.booleans())
    trips = f"{p.int_scalar()} % {LOOP_TRIPS}" if dynamic else str(p.draw(st.integers(0, LOOP_TRIPS)))
    body = _carry_step(p, "c", a.shape, w, "i")
    return f"lax.fori_loop(0, {trips}, lambda i, c: {body}, {a.name})"


@gen("while_loop", "while", needs={"stablehlo.while"})
def _while(p: Pool):
    """A while loop whose trip count depends on float data: only the fixed point is sound."""
    a = p.pick(lambda v: v.size > 0)
    if a is None:
        return None
    w = p.same_shape(a.shape, exclude=a.name)
    body = _carry_step(p, "s[1]", a.shape, w, None)
    el = "s[1].reshape(-1)[0]" if a.rank else "s[1]"
    cond = f"(s[0] < {LOOP_TRIPS + 1}) & (jnp.abs({el}) < 3.0)"
    return f"lax.while_loop(lambda s: {cond}, lambda s: (s[0] + 1, {body}), (0, {a.name}))[1]"


@gen("scan", "while", needs={"stablehlo.while", "stablehlo.dynamic_slice", "stablehlo.dynamic_update_slice"},
     weight=2)
def _scan(p: Pool):
    xs = p.pick(lambda v: v.rank > 0 and v.shape[0] > 0)
    if xs is None:
        return None
    cshape = xs.shape[1:]
    init = p.same_shape(cshape)
    step = p.draw(st.sampled_from(["c * r + jnp.sin(c)", "jnp.tanh(c) + r", "jnp.where(r > 0, c, r * c)",
                                   "c + r * r"]))
    out = p.draw(st.sampled_from(["c", "c * r", "r"]))
    rev = p.draw(st.booleans())
    which = p.draw(st.sampled_from([0, 1]))
    seq = xs.name
    if LOOP_TRIPS > 4 and p.draw(st.booleans()):  # a longer sequence: the slices repeat
        reps = p.draw(st.integers(2, max(2, LOOP_TRIPS // xs.shape[0])))
        seq = f"jnp.tile({xs.name}, ({reps},{' 1,' * (xs.rank - 1)}))"
    return f"lax.scan(lambda c, r: ({step}, {out}), {init}, {seq}, reverse={rev})[{which}]"


@gen("cond", "case", needs={"stablehlo.case"}, weight=2)
def _cond(p: Pool):
    a = p.pick()
    if a is None:
        return None
    kind = p.draw(st.sampled_from(["data", "data", "const"]))
    if kind == "const":
        pred = repr(p.draw(st.booleans()))
    else:
        pred = f"{p.scalar()} > 0.1"
    f1 = p.draw(st.sampled_from(["jnp.sin", "lambda t: t * 2.0", "lambda t: jnp.roll(t, 1)", "jnp.tanh"]))
    f2 = p.draw(st.sampled_from(["jnp.cos", "lambda t: t * 0.0", "lambda t: -t", "lambda t: jnp.flip(t)"]))
    return f"lax.cond({pred}, {f1}, {f2}, {a.name})"


@gen("switch", "case", needs={"stablehlo.case"})
def _switch(p: Pool):
    a = p.pick()
    if a is None:
        return None
    branches = "[jnp.sin, lambda t: t * t, lambda t: jnp.zeros_like(t)]"
    return f"lax.switch({p.int_scalar()}, {branches}, {a.name})"


# ---------------------------------------------------------------------- sort, windows
@gen("sort", "sort", needs={"stablehlo.sort"}, weight=2)
def _sort(p: Pool):
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    ax = _axis(p, a)
    kind = p.draw(st.sampled_from(["sort", "payload", "argsort"]))
    if kind == "sort":
        return f"jnp.sort({a.name}, axis={ax})"
    if kind == "payload":
        b = p.same_shape(a.shape, exclude=a.name)
        return f"lax.sort(({a.name}, {b}), dimension={ax}, num_keys=1)[1]"
    return f"jnp.argsort({a.name}, axis={ax}).astype(jnp.int32)"


@gen("argsort_take", "sort", needs={"stablehlo.sort", "stablehlo.gather"})
def _argsort_take(p: Pool):
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    ax = _axis(p, a)
    return f"jnp.take_along_axis({a.name}, jnp.argsort(jnp.sin({a.name}), axis={ax}), axis={ax})"


@gen("top_k", "sort", needs={"chlo.top_k"})
def _top_k(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.shape[-1] > 0)
    if a is None:
        return None
    return f"lax.top_k({a.name}, {p.draw(st.integers(1, a.shape[-1]))})[0]"


@gen("cumulative", "reduce_window", needs={"stablehlo.reduce_window"}, weight=2)
def _cumulative(p: Pool):
    a = p.pick(lambda v: v.rank > 0)
    if a is None:
        return None
    fn = p.draw(st.sampled_from(["jnp.cumsum", "jnp.cumprod", "lax.cummax", "lax.cummin", "lax.cumlogsumexp"]))
    rev = ", reverse=True" if fn.startswith("lax") and p.draw(st.booleans()) else ""
    return f"{fn}({a.name}, axis={_axis(p, a)}{rev})"


@gen("reduce_window", "reduce_window", needs={"stablehlo.reduce_window"}, weight=2)
def _reduce_window(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.size > 0)
    if a is None:
        return None
    win = tuple(p.draw(st.integers(1, min(3, d) if d else 1)) for d in a.shape)
    strides = tuple(p.draw(st.integers(1, 2)) for _ in a.shape)
    pad = tuple((p.draw(st.integers(0, 1)), p.draw(st.integers(0, 1))) for _ in a.shape)
    wdil = tuple(p.draw(st.integers(1, 2)) for _ in a.shape)
    for d, w, dl, (lo, hi) in zip(a.shape, win, wdil, pad):
        if d + lo + hi < (w - 1) * dl + 1:
            return None
    kind = p.draw(st.sampled_from([("0.0", "lax.add"), ("-jnp.inf", "lax.max"), ("jnp.inf", "lax.min"),
                                   ("1.0", "lax.mul")]))
    return (f"lax.reduce_window({a.name}, {kind[0]}, {kind[1]}, {win}, {strides}, {pad}, "
            f"window_dilation={wdil})")


# ---------------------------------------------------------------------- custom derivative rules
@gen("custom_jvp", "custom_rules", needs={"stablehlo.reduce_window"})
def _custom_rule(p: Pool):
    a = p.pick()
    if a is None:
        return None
    return p.draw(st.sampled_from(["ste_round({a})", "mixing({a})", "reversed_vjp({a})",
                                   "ste_round({a}) * mixing({a})"])).format(a=a.name)


# ---------------------------------------------------------------------- linear algebra, FFT
def _square(p: Pool, k: int, shift: float) -> str | None:
    src = p.reshaped(k * k, (k, k))
    return f"({src} + {shift} * jnp.eye({k}))"


@gen("linalg", "linalg", needs={"stablehlo.custom_call", "stablehlo.while", "stablehlo.gather",
                                "stablehlo.scatter", "stablehlo.dynamic_slice", "stablehlo.dot_general"})
def _linalg(p: Pool):
    k = p.draw(st.integers(1, 3))
    A = _square(p, k, 4.0)
    b = p.reshaped(k, (k,))
    kind = p.draw(st.sampled_from(["solve", "inv", "det", "cholesky", "trisolve", "eigh", "qr"]))
    if kind == "solve":
        return f"jnp.linalg.solve({A}, {b})"
    if kind == "inv":
        return f"jnp.linalg.inv({A})"
    if kind == "det":
        return f"jnp.linalg.det({A})"
    if kind == "cholesky":
        return f"jnp.linalg.cholesky({A} @ {A}.T)"
    if kind == "trisolve":
        return f"jax.scipy.linalg.solve_triangular({A}, {b}, lower={p.draw(st.booleans())})"
    if kind == "eigh":
        return f"jnp.linalg.eigh({A} + {A}.T)[0]"
    return f"jnp.linalg.qr({A})[1]"


@gen("fft", "fft", needs={"stablehlo.fft"})
def _fft(p: Pool):
    a = p.pick(lambda v: v.rank > 0 and v.shape[-1] > 1)  # irfft of a length-1 axis has 0 points
    if a is None:
        return None
    return p.draw(st.sampled_from(["jnp.fft.fft({a}).real", "jnp.fft.rfft({a}).imag", "jnp.abs(jnp.fft.fft({a}) + 1.0)",
                                   "jnp.fft.irfft({a})", "jnp.fft.ifft({a}).imag"])).format(a=a.name)


# ====================================================================== the strategy
def _shape_of(expr: str, pool: list[Var]):
    env = dict(_ENV)

    def fn(*vals):
        env.update(zip([v.name for v in pool], vals))
        return eval(expr, env)

    structs = [jax.ShapeDtypeStruct(v.shape, jnp.float64 if v.kind == "f" else jnp.int32) for v in pool]
    out = jax.eval_shape(fn, *structs)
    return tuple(out.shape), out.dtype


#: How often a family appears in a program's schedule (others: once).
FAMILY_WEIGHT = {"elementwise": 3, "structural": 3}

_SHAPES = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)


@st.composite
def programs(draw, generators: list[Generator] | None = None, max_lines: int = 7, max_inputs: int = 3):
    """A random, shape-correct JAX program over the enabled generators."""
    gens = enabled_generators() if generators is None else generators
    # Hypothesis favours the first choices of a list, so a per-program *schedule* (a permutation of the
    # enabled families, the core ones repeated) decides which family writes each line: every family gets
    # its share and a seven-line program touches up to seven families.
    by_family: dict[str, list[Generator]] = {}
    for g in gens:
        by_family.setdefault(g.family, []).extend([g] * g.weight)
    multiset = [f for f in sorted(by_family) for _ in range(FAMILY_WEIGHT.get(f, 1))]
    schedule = draw(st.permutations(multiset))
    n_in = draw(st.integers(1, max_inputs))
    shapes = []
    for _ in range(n_in):
        s = draw(_SHAPES)
        if draw(st.integers(0, 19)) == 19:
            s = s + (0,)  # zero-size inputs must work
        if int(np.prod(s, dtype=np.int64)) > MAX_INPUT_SIZE:
            s = s[:1]
        shapes.append(s)
    prog = Program(shapes)
    vars_ = [Var(f"x{i}", s, "f") for i, s in enumerate(shapes)]
    pool = Pool(draw, vars_)
    n_lines = draw(st.integers(1, max_lines))
    k = len(vars_)
    pos = 0
    order: dict[str, list[Generator]] = {}
    cursor: dict[str, int] = {}
    for _ in range(n_lines):
        for _attempt in range(4):
            family = schedule[pos % len(schedule)]
            pos += 1
            if family not in order:  # and, within a family, a permutation of its generators
                order[family] = draw(st.permutations(by_family[family]))
            g = order[family][cursor.get(family, 0) % len(order[family])]
            cursor[family] = cursor.get(family, 0) + 1
            expr = g.fn(pool)
            if expr is None:
                continue
            try:
                shape, dtype = _shape_of(expr, pool.vars)
            except Exception as e:  # a generator bug: say which line it wrote
                raise RuntimeError(f"generator {g.name!r} wrote an invalid line {expr!r} "
                                   f"over {pool.vars}: {type(e).__name__}: {e}") from None
            if int(np.prod(shape, dtype=np.int64)) > MAX_NODE_SIZE:
                continue
            kind = "f" if jnp.issubdtype(dtype, jnp.floating) else "i"
            if kind == "f" and dtype != jnp.float64:
                expr = f"({expr}).astype(jnp.float64)"
            elif kind == "i" and dtype != jnp.int32:
                expr = f"({expr}).astype(jnp.int32)"
            name = f"v{k}"
            k += 1
            prog.lines.append((name, expr, g.name))
            pool.vars.append(Var(name, shape, kind))
            break
    floats = [v for v in pool.vars[len(shapes):] if v.kind == "f"] or [v for v in pool.vars if v.kind == "f"]
    outs = [floats[-1].name]
    if len(floats) > 1 and draw(st.booleans()):
        other = draw(st.sampled_from(floats[:-1])).name
        outs.append(other)
    prog.outputs = outs
    return prog


# ====================================================================== checking one program
def emitted_ops(module) -> set[str]:
    """Names of every op in a module (nested regions included), minus the module/function scaffolding."""
    from jaxlib.mlir import ir

    names: set[str] = set()

    def visit(op):
        names.add(op.operation.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return names - {"builtin.module", "func.func", "func.return", "stablehlo.return"}


#: Jacobian entries at most this fraction of the largest entry (of that point, at least 1) are floating-point
#: residue of an exact cancellation inside JAX's derivative formula, not dependencies: e.g. JAX's Cholesky JVP
#: ``L·Φ(L⁻¹ȦL⁻ᴴ)`` gives ``∂L[2,0]/∂A[1,0] ≈ 1e-17`` where the true derivative is exactly 0.  A missed
#: dependency shows up at O(1) at random points, nine orders of magnitude above this.
ROUNDOFF = 1e-12

#: Programs with constants the program computes are checked without that tolerance: a rounding residue of a
#: computed constant (``linspace(-0.5, 0.5, 501)[250]`` is 5e-18 on XLA's CPU) *is* a value of the program,
#: and a pattern that drops it is unsound.  (Not with linear algebra in the program, whose derivative
#: formulas leave the residues above.)
STRICT_GENERATORS = frozenset({"computed_const"})
LOOSE_FAMILIES = frozenset({"linalg"})


class NoGroundTruth(Exception):
    """JAX itself cannot differentiate the program (a custom_vjp function mixed with ops that have no reverse
    mode): there is no numerical Jacobian to compare with."""


def numeric_jacobians(f, shapes, points: int = 3, seed: int = 0):
    """Flattened (m × n) Jacobians of ``f`` at ``points`` standard-normal points (list of ndarrays).

    One ``jit(vmap(jacfwd(f)))`` over all points: a single XLA compilation costs ~4× less CPU than eager
    op-by-op differentiation of a fresh program.  ``vmap`` turns data-dependent ``cond`` into ``select``
    and batches ``while`` predicates, which leaves the per-point values (and derivatives) unchanged.
    """
    rng = np.random.default_rng(seed)
    argnums = tuple(range(len(shapes)))
    pts = [np.stack([rng.standard_normal(s) for _ in range(points)]) for s in shapes]
    try:
        J = jax.jit(jax.vmap(jax.jacfwd(f, argnums=argnums)))(*pts)
        jax.block_until_ready(J)  # XLA's runtime errors surface here, not at the first np.asarray
    except Exception as e:
        if "custom_vjp" in str(e):  # forward mode is not defined for a custom_vjp function: reverse mode
            try:
                J = jax.jit(jax.vmap(jax.jacrev(f, argnums=argnums)))(*pts)
                jax.block_until_ready(J)
            except Exception as e2:  # ... and reverse mode fails on a while_loop or a generic reduce_window
                raise NoGroundTruth(f"JAX differentiates f in neither mode: {type(e2).__name__}: {e2}") from None
        else:
            # JAX cannot batch some JVPs (a generic reduce_window with a multiply body; clamp with batched
            # scalar bounds fails an internal assertion), and XLA's CPU FFT rejects some batched layouts:
            # one unbatched JVP per column, where errors surface
            try:
                J = _jacobian_by_columns(f, shapes, pts)
            except Exception as e2:
                raise NoGroundTruth(f"JAX/XLA cannot compute the Jacobian: {type(e2).__name__}: {e2}") from None
            return [J[i] for i in range(points)]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    blocks = []
    for per_out in J:  # one entry per output, each a tuple over inputs: (points,) + out_shape + in_shape
        o_shape = per_out[0].shape[1: per_out[0].ndim - len(shapes[0])]
        m = int(np.prod(o_shape, dtype=np.int64))
        blocks.append(np.concatenate([np.asarray(b).reshape(points, m, k) for b, k in zip(per_out, sizes)],
                                     axis=2))
    full = np.concatenate(blocks, axis=1)
    return [full[i] for i in range(points)]


def _jacobian_by_columns(f, shapes, pts) -> np.ndarray:
    """(points, m, n) Jacobians from one unbatched ``jax.jvp`` per input column (no ``vmap`` anywhere)."""
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    offs = np.cumsum([0] + sizes)
    tangents = []
    for j in range(int(offs[-1])):
        k = int(np.searchsorted(offs, j, side="right") - 1)
        ts = [np.zeros(s) for s in shapes]
        ts[k].reshape(-1)[j - offs[k]] = 1.0
        tangents.append(tuple(jnp.asarray(t) for t in ts))
    outs = jax.eval_shape(f, *[jax.ShapeDtypeStruct(s, jnp.float64) for s in shapes])
    m = sum(int(np.prod(o.shape, dtype=np.int64)) for o in outs)

    @jax.jit
    def columns(*x):
        return [jnp.concatenate([jnp.ravel(o) for o in jax.jvp(f, x, t)[1]]) for t in tangents]

    out = []
    for i in range(pts[0].shape[0]):
        cols = columns(*[p[i] for p in pts])
        out.append(np.stack([np.asarray(c) for c in cols], axis=1) if cols else np.zeros((m, 0)))
    return np.stack(out)


@dataclass
class CheckResult:
    detected: np.ndarray
    numeric: np.ndarray  # union of nonzeros over the finite points
    finite_points: int
    missed: np.ndarray  # (k, 2) row/col pairs the detector missed
    roundoff: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), int))  # ignored: see ROUNDOFF

    @property
    def ok(self) -> bool:
        return self.missed.size == 0


def check_program(prog: Program, points: int = 3, seed: int = 0, analysis=None, jacobians=None) -> CheckResult:
    """Detected pattern vs. the union of ``jax.jacfwd`` nonzeros at random points (non-finite points skipped).

    ``jacobians`` (from :func:`numeric_jacobians`) and ``analysis`` may be computed by the caller."""
    from stablehlo_sparsity import jacobian_sparsity

    f = prog.function()
    args = prog.example_args()
    if jacobians is None:
        jacobians = numeric_jacobians(f, prog.inputs, points=points, seed=seed)
    pat = analysis.pattern if analysis is not None else jacobian_sparsity(f, *args, argnums=tuple(range(len(args))))
    det = pat.todense()
    num = np.zeros(det.shape, bool)
    roundoff = np.zeros(det.shape, bool)
    finite = 0
    families = {g.family for g in GENERATORS if g.name in prog.generators}
    strict = bool(STRICT_GENERATORS & set(prog.generators)) and not (LOOSE_FAMILIES & families)
    for J in jacobians:
        assert J.shape == det.shape, (J.shape, det.shape)
        if not np.all(np.isfinite(J)):
            continue
        finite += 1
        cut = 0.0 if strict else ROUNDOFF * max(1.0, float(np.abs(J).max(initial=0.0)))
        num |= np.abs(J) > cut
        roundoff |= (J != 0) & (np.abs(J) <= cut)
    return CheckResult(det, num, finite, np.argwhere(num & ~det), np.argwhere(roundoff & ~det & ~num))
