"""Detection in row blocks (:mod:`stablehlo_sparsity.analysis.streaming`): every block is exactly the whole pattern's rows,
a block's analysis holds only its own rows' share of the pattern, and blocks from several processes or from
disk assemble to the whole-program pattern."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import pytest
from hypothesis import HealthCheck, given, settings

import strategies as S
from stablehlo_sparsity import InputError, jacobian_sparsity, lower_and_analyze
from stablehlo_sparsity.examples import brusselator, stencil27
from stablehlo_sparsity.analysis.streaming import (BlockedDetection, assemble_blocks, jacobian_sparsity_blocks,
                                                   module_sparsity_blocks, prepare_blocks, process_rows, write_blocks,
                                                   write_pattern_shards)
from stablehlo_sparsity.derivatives.shard_io import read_pattern_shards
from test_soundness_suite import CASES

LONG = os.environ.get("SHS_LONG", "") not in ("", "0")



def _blocks_equal_whole(f, *args, rows_per_block, argnums=0, has_aux=False, **kwargs):
    whole = jacobian_sparsity(f, *args, argnums=argnums, has_aux=has_aux, **kwargs).to_scipy()
    blocks = list(jacobian_sparsity_blocks(f, *args, rows_per_block=rows_per_block, argnums=argnums,
                                           has_aux=has_aux, **kwargs))
    assert [r0 for r0, _ in blocks] == list(range(0, whole.shape[0], rows_per_block))
    got = assemble_blocks(blocks, whole.shape[1]).to_scipy()
    assert got.shape == whole.shape
    assert (got != whole).nnz == 0, f"{(got != whole).nnz} entries differ"
    return whole


# ---------------------------------------------------------------------------------------------- exactness
@pytest.mark.parametrize("name", list(CASES))
def test_blocks_are_the_rows_of_the_whole_pattern_soundness_suite(name):
    case = CASES[name]
    f = case.f
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = jacobian_sparsity(f, *case.args, argnums=case.argnums, has_aux=case.has_aux, **case.kwargs).shape[0]
        for rows in sorted({max(1, m // 5), max(1, m // 2)} | ({1} if m <= 12 else set())):
            _blocks_equal_whole(f, *case.args, rows_per_block=rows, argnums=case.argnums, has_aux=case.has_aux,
                                **case.kwargs)


@pytest.mark.parametrize("L", [4, 7])
def test_blocks_of_the_27_point_stencil(L):
    whole = _blocks_equal_whole(lambda x: stencil27(x, L), jnp.ones(L ** 3), rows_per_block=L * L + 3)
    assert whole.nnz == sum(min(3, i + 2, L - i + 1) for i in range(L)) ** 3


def test_blocks_of_the_brusselator():
    _blocks_equal_whole(functools.partial(brusselator, N=9), jnp.ones(2 * 81), rows_per_block=40)


def test_blocks_through_loops_and_calls():
    def stepped(x):  # a loop carrying a stencil, then a rolled (func.call) stencil outside it
        y = jax.lax.fori_loop(0, 3, lambda i, v: v + 0.1 * (jnp.roll(v, 1) - v), x)
        return jnp.roll(y, -2) * y + jnp.cumsum(x)[::-1]

    _blocks_equal_whole(stepped, jnp.ones(12), rows_per_block=5)


_FUZZ = settings(max_examples=200 if LONG else 25, deadline=None, derandomize=True, database=None,
                 suppress_health_check=list(HealthCheck))


@_FUZZ
@given(S.programs(S.enabled_generators()))
def test_blocks_of_random_programs(prog):
    f, args = prog.function(), prog.example_args()
    argnums = tuple(range(len(args)))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            an = lower_and_analyze(f, *args, argnums=argnums)
    except Exception:
        return  # programs the whole analysis refuses are another test's business
    if an.derivatives != "primal":
        return  # custom derivative rules: the blocks refuse them (test below)
    m = an.shape[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for rows in sorted({1, max(1, m // 3)}):
            got = assemble_blocks(jacobian_sparsity_blocks(f, *args, rows_per_block=rows, argnums=argnums),
                                  an.shape[1]).to_scipy()
            assert (got != an.pattern.to_scipy()).nnz == 0, prog.source()


def test_blocks_with_large_known_values():
    """Uniform known values above COMPACT_CONSTANT_ELEMENTS are held as broadcast views; a known zero still
    drops its factor, and a non-uniform one is kept whole."""
    def f(x):
        zero, two = jnp.zeros(5000), jnp.full(5000, 2.0)
        mixed = jnp.zeros(5000).at[::3].set(1.0)
        return x * zero + jnp.roll(x, 1) * two + x[::-1] * mixed

    whole = _blocks_equal_whole(f, jnp.ones(5000), rows_per_block=1700)
    assert whole.nnz == 5000 + 1667 - 1  # row 0 reads x[4999] twice


def test_a_module_in_blocks():
    text = jax.jit(lambda x: stencil27(x, 3)).lower(jnp.ones(27)).as_text()
    whole = jacobian_sparsity(lambda x: stencil27(x, 3), jnp.ones(27)).to_scipy()
    got = assemble_blocks(module_sparsity_blocks(text, rows_per_block=10), 27).to_scipy()
    assert (got != whole).nnz == 0


# ---------------------------------------------------------------------------------------------- memory
def test_a_block_never_holds_more_than_its_share_of_the_pattern():
    """The largest index set any op holds during a block's analysis is about the block's own rows (plus the
    halo of its neighbours' rows), not the whole pattern: with masking off this sees the whole pattern."""
    L = 12
    f = lambda x: stencil27(x, L)  # noqa: E731
    x = jnp.ones(L ** 3)
    whole = jacobian_sparsity(f, x)
    prepared = prepare_blocks(f, x)
    largest = [0]

    def observe(op, results):
        largest[0] = max([largest[0]] + [av.deps.nnz for av in results])

    r0, r1 = 5 * L * L, 7 * L * L  # two planes in the middle of the cube
    block = prepared.block(r0, r1, observer=observe)
    assert block.nnz == whole.to_scipy()[r0:r1].nnz
    assert largest[0] <= 3 * block.nnz  # the block's planes and their two neighbour planes at most
    assert largest[0] < whole.nnz / 4


def test_release_dead_values_keeps_the_pattern():
    from stablehlo_sparsity.analysis.engine import DecodedBlock
    from stablehlo_sparsity.analysis.interpreter import Interpreter, last_uses
    from stablehlo_sparsity.ir.helpers import functions

    text = jax.jit(lambda x: jnp.roll(x, 1) * x + jnp.sin(x)).lower(jnp.ones(5)).as_text()
    bd = BlockedDetection(text)
    block = list(functions(bd.module)["main"].regions[0].blocks)[0]
    dead = last_uses(DecodedBlock(block))
    assert sum(len(v) for v in dead.values()) == len(list(block.operations)) - 1  # all but the returned one
    with bd.module.context:
        interp = Interpreter(bd.module, 5, release_dead=True)
        from stablehlo_sparsity.lattice import Deps
        from stablehlo_sparsity.analysis.values import AbstractValue, tensor_type

        arg = list(block.arguments)[0]
        (out,) = interp.call("main", [AbstractValue(tensor_type(arg.type), Deps.identity(5, 5, 0))])
    assert out.deps == Deps.from_csr(jacobian_sparsity(lambda x: jnp.roll(x, 1) * x + jnp.sin(x),
                                                       jnp.ones(5)).to_scipy())


# ---------------------------------------------------------------------------------------------- processes, disk
def test_process_rows_are_contiguous_and_cover_every_row():
    spans = [process_rows(10, (i, 3)) for i in range(3)]
    assert spans == [(0, 4), (4, 8), (8, 10)]
    assert process_rows(10, None) == (0, 10)
    assert process_rows(10, "jax") == (0, 10)  # one JAX process
    with pytest.raises(InputError):
        process_rows(10, (3, 3))


def _shift_product(x):
    return jnp.roll(x, 2) * x + jnp.sin(x[::-1])


def test_two_processes_write_shards_that_assemble_to_the_whole_pattern(tmp_path):
    """Process 1 of 2 runs in a fresh interpreter while this one is process 0; the shards they write side by
    side read back as the whole pattern."""
    script = textwrap.dedent(f"""
        import jax.numpy as jnp
        from stablehlo_sparsity.analysis.streaming import write_pattern_shards

        def _shift_product(x):
            return jnp.roll(x, 2) * x + jnp.sin(x[::-1])

        write_pattern_shards({str(tmp_path)!r}, _shift_product, jnp.ones(50), rows_per_block=10, process=(1, 2))
    """)
    other = subprocess.Popen([sys.executable, "-c", script], stderr=subprocess.PIPE, text=True)
    write_pattern_shards(tmp_path, _shift_product, jnp.ones(50), rows_per_block=10, process=(0, 2))
    _, err = other.communicate(timeout=300)
    assert other.returncode == 0, err
    names = sorted(p.name for p in tmp_path.glob("rows-*.npz"))
    assert len(names) == 6  # rows [0, 25) and [25, 50), in blocks of 10
    got = assemble_blocks(read_pattern_shards(tmp_path), 50).to_scipy()
    whole = jacobian_sparsity(_shift_product, jnp.ones(50)).to_scipy()
    assert (got != whole).nnz == 0


def test_shards_with_a_gap_are_refused(tmp_path):
    blocks = list(jacobian_sparsity_blocks(lambda x: jnp.roll(x, 1) * x, jnp.ones(9), rows_per_block=3))
    write_blocks(tmp_path, [blocks[0], blocks[2]], (9, 9))
    with pytest.raises(InputError, match="gap"):
        list(read_pattern_shards(tmp_path))
    write_blocks(tmp_path, [blocks[1]])
    assert len(list(read_pattern_shards(tmp_path))) == 3


def test_matrix_market_shards(tmp_path):
    paths = write_pattern_shards(tmp_path, _shift_product, jnp.ones(20), rows_per_block=8, format="mtx")
    assert [p.suffix for p in paths] == [".mtx"] * 3
    got = assemble_blocks(read_pattern_shards(tmp_path), 20).to_scipy()
    assert (got != jacobian_sparsity(_shift_product, jnp.ones(20)).to_scipy()).nnz == 0
    with pytest.raises(InputError, match="format"):
        write_pattern_shards(tmp_path, _shift_product, jnp.ones(20), format="csv")


def test_bad_requests_are_input_errors():
    prepared = prepare_blocks(lambda x: x * 2, jnp.ones(4))
    with pytest.raises(InputError, match="outside"):
        prepared.block(2, 9)
    with pytest.raises(InputError, match="rows_per_block"):
        list(prepared.blocks(0))

    @jax.custom_jvp
    def g(x):
        return x

    g.defjvp(lambda p, t: (p[0], jnp.sum(t[0]) * p[0]))
    with pytest.raises(InputError, match="custom derivative"):
        list(jacobian_sparsity_blocks(g, jnp.ones(3)))


# ---------------------------------------------------------------------------------------------- the demand pass
def test_every_demand_shortcut_reads_what_the_seeded_rule_reads():
    """The demand pass's table (DEMAND_SHORTCUTS) names a shortcut for every elementwise op, §reshape, §slice,
    §reverse, §transpose and func.call; on a program with each of them, under random demands of their results,
    every shortcut demands exactly the operand elements the op's own rule on identity-seeded operands reads."""
    import numpy as np

    from stablehlo_sparsity.analysis.rules.elementwise import ELEMENTWISE
    from stablehlo_sparsity.analysis.streaming import DEMAND_SHORTCUTS, VIEW_TWINS, _body

    assert set(DEMAND_SHORTCUTS) == set(ELEMENTWISE) | set(VIEW_TWINS) | {"stablehlo.reshape", "func.call"}
    assert all(callable(DEMAND_SHORTCUTS[name]) for name in DEMAND_SHORTCUTS)

    def f(x):
        m = x.reshape(4, 6)
        a, b = m[1:, ::2], m[:3, 1::2][::-1]
        c = (jnp.sin(a) * b.T + jnp.tanh(a) - 2.0 * a.T).reshape(9)
        return c[::-1] * jnp.maximum(x[:9], x[15:]) + jnp.exp(x[3:12])

    bd = BlockedDetection(jax.jit(f).lower(jnp.ones(24)).as_text())
    rng = np.random.default_rng(0)
    checked = set()
    with bd.module.context:
        for op in _body(bd.funcs[bd.entry]).operations:
            name = op.operation.name
            if name not in DEMAND_SHORTCUTS or name == "func.call":
                continue
            infos = [bd._info(r) for r in op.results]
            for _ in range(3):
                masks = [rng.random(av.size) < 0.4 for av in infos]
                live = [i for i, av in enumerate(infos) if av.const is None and av.dtype.kind == "f"]
                if not live:
                    continue
                fast = bd._operand_demand(op, masks, None)
                slow = bd._seeded_demand(op, masks, live, infos)
                assert [v for v, _ in fast] == [v for v, _ in slow], name
                assert all(np.array_equal(m, s) for (_, m), (_, s) in zip(fast, slow)), name
                checked.add(name)
    assert {"stablehlo.reshape", "stablehlo.slice", "stablehlo.reverse", "stablehlo.transpose", "stablehlo.sine",
            "stablehlo.multiply", "stablehlo.add", "stablehlo.maximum"} <= checked, checked
