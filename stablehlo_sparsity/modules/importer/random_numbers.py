"""Random numbers: §rng and §rng_bit_generator, re-emitted verbatim (:mod:`.replay`): the module's own
generator computes the numbers."""

from __future__ import annotations

from .core import ImportContext, Op, Values, import_rule
from .replay import REPLAY_JVPS, replay


# ---------------------------------------------------------------------- random numbers
def _rng_jvp(primals: Values, tangents: Values, attrs: dict[str, str], out: Values) -> Values:
    """§rng: ``UNIFORM`` is ``a + (b − a)·u``, ``NORMAL`` ``a + b·z`` for hidden ``u``, ``z``."""
    a, b = primals[0], primals[1]
    da, db = tangents[0], tangents[1]
    (y,) = out
    if "UNIFORM" in attrs.get("rng_distribution", ""):
        u = (y - a) / (b - a)
        return [da + (db - da) * u]
    return [da + db * (y - a) / b]


REPLAY_JVPS["rng"] = _rng_jvp


@import_rule("stablehlo.rng")
def _rng(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§rng (implementation-defined numbers): re-emitted; the derivative in ``a`` and ``b`` as for an affine map
    of hidden standard numbers."""
    return replay(ctx, op, args, jvp="rng")


@import_rule("stablehlo.rng_bit_generator")
def _rng_bit_generator(ctx: ImportContext, op: Op, args: Values) -> Values:
    """§rng_bit_generator (an implementation-defined algorithm): re-emitted verbatim, the same bits; integer-valued,
    a zero derivative."""
    return replay(ctx, op, args)
