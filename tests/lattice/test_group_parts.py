"""Lazy group unions (:class:`~stablehlo_sparsity.lattice.representations.group_parts.GroupPart`).

A group union of many members is kept lazy: its rows are built when a move reads them, and the full reduction and
the second-order lattice's first-order projection read its groups instead.  Every law of the lattice must hold
with it, so the property tests of ``test_lattice_properties.py`` are run again with every group union over a list
of groups lazy (the thresholds lowered to zero); then the moves that keep it lazy are checked one by one — against
the eager union, and by whether the part was built.
"""

from contextlib import contextmanager
from unittest import mock

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, strategies as st

from stablehlo_sparsity.lattice import CsrPart, Deps, Groups, IndexPart, group_union
from stablehlo_sparsity.lattice import groups as groups_module
from stablehlo_sparsity.lattice.representations import group_parts
from stablehlo_sparsity.lattice.representations.group_parts import GroupPart, combine_group_parts

import test_lattice_properties as laws


@contextmanager
def lazy_groups(members: int = 0, rows: int = 0):
    """Every group union of at least ``members`` members and ``rows`` rows is lazy."""
    with mock.patch.object(group_parts, "LAZY_GROUP_MEMBERS", members), \
            mock.patch.object(group_parts, "LAZY_GROUP_ROWS", rows):
        yield


@pytest.mark.parametrize("law", [
    laws.test_every_construction_matches_its_model_and_is_canonical,
    laws.test_union_is_commutative_associative_idempotent,
    laws.test_gather_rows_composes,
    laws.test_mask_rows_clears_exactly_the_dropped_rows,
    laws.test_group_union_is_boolean_matrix_product,
    laws.test_group_union_follows_its_table,
    laws.test_lazy_and_materialized_forms_agree,
    laws.test_reduce_all_and_broadcast_row,
    laws.test_vstack_is_row_concatenation,
], ids=lambda f: f.__name__)
def test_the_lattice_laws_hold_with_lazy_group_unions(law):
    with lazy_groups():
        law()


def _source(rng, k: int, n: int) -> Deps:
    """A value of two index parts (one with ``-1`` rows) and a CSR part through a row map."""
    a = rng.integers(0, n, k)
    b = np.where(rng.random(k) < 0.2, -1, rng.integers(0, n, k))
    base = sp.random_array((max(k // 2, 1), n), density=0.3, rng=rng, format="csr").astype(bool)
    base.sort_indices()
    rowmap = rng.integers(-1, base.shape[0], k)
    return Deps(k, n, [IndexPart(a), IndexPart(b), CsrPart(base, rowmap)])


def _scatter_groups(rng, k_out: int, k: int) -> Groups:
    """Each source row sent to a random output row (some dropped, ``-1``): a scatter-add's groups."""
    target = rng.integers(-1, k_out, k)
    keep = target >= 0
    return Groups.from_pairs(target[keep], np.flatnonzero(keep), k_out)


def _lazy_and_eager(rng, k_out=50, k=120, n=40):
    src = _source(rng, k, n)
    groups = _scatter_groups(rng, k_out, k)
    with lazy_groups():
        lazy = group_union(src, groups)
    eager = group_union(src, groups)
    return src, groups, lazy, eager


@given(st.integers(0, 2 ** 32 - 1))
def test_a_lazy_group_union_is_the_eager_one(seed):
    rng = np.random.default_rng(seed)
    _, _, lazy, eager = _lazy_and_eager(rng)
    (part,) = lazy.parts
    assert isinstance(part, GroupPart) and not part.built
    assert not any(isinstance(p, GroupPart) for p in eager.parts)
    assert lazy == eager


@given(st.integers(0, 2 ** 32 - 1))
def test_the_full_reduction_reads_the_groups_not_the_rows(seed):
    """``reduce_all`` of a lazy union is the union of the source rows its groups reach (rows no group reaches are
    left out), and the part is never built."""
    rng = np.random.default_rng(seed)
    src, groups, lazy, eager = _lazy_and_eager(rng)
    assert lazy.reduce_all() == eager.reduce_all()
    (part,) = lazy.parts
    assert not part.built
    _, members = groups.as_lists()
    assert lazy.reduce_all() == src.gather_rows(np.unique(members)).reduce_all()


def test_rows_no_group_reaches_are_left_out_of_the_reduction():
    """Each source row its own column: the reduction holds exactly the columns of the rows some group reaches —
    through one part, two parts of the source (one masked) and a group union of a group union."""
    k = 200
    src = Deps.identity(k, k, 0)
    reached = np.arange(0, k, 3)
    with lazy_groups():
        lazy = group_union(src, Groups.from_pairs(reached % 70, reached, 70))
        again = group_union(lazy, Groups.from_pairs(np.arange(0, 70, 2) // 2, np.arange(0, 70, 2), 35))
        assert lazy.reduce_all().to_csr().indices.tolist() == reached.tolist()
        masked = lazy.mask_rows(np.arange(70) < 10)
        assert masked.reduce_all().to_csr().indices.tolist() == reached[reached % 70 < 10].tolist()
        nested = again.reduce_all().to_csr().indices.tolist()
    assert nested == reached[reached % 70 % 2 == 0].tolist()
    assert not lazy.parts[0].built and not again.parts[0].built


def test_one_group_over_a_lazy_union_reads_its_groups():
    """A contraction to one element over some of the rows (``x[:k] · div[:k]`` as one group): the union of the
    reached rows' groups, the part still lazy."""
    rng = np.random.default_rng(3)
    src, _, lazy, eager = _lazy_and_eager(rng, k_out=300)
    members = np.unique(rng.integers(0, 300, 40))
    with mock.patch.object(groups_module, "ONE_GROUP_ROWS", 1):
        got = group_union(lazy, Groups.from_table(members[None, :]))
    assert got == group_union(eager, Groups.from_table(members[None, :]))
    assert not lazy.parts[0].built


@given(st.integers(0, 2 ** 32 - 1))
def test_a_mask_keeps_it_lazy_and_other_gathers_build_it_once(seed):
    rng = np.random.default_rng(seed)
    _, _, lazy, eager = _lazy_and_eager(rng)
    keep = rng.random(lazy.rows) < 0.6
    masked = lazy.mask_rows(keep)
    (part,) = masked.parts
    assert isinstance(part, GroupPart) and not part.built
    assert masked == eager.mask_rows(keep)
    idx = rng.integers(-1, lazy.rows, 70)
    gathered = lazy.gather_rows(idx)
    (whole,) = lazy.parts
    assert whole.built                            # built once, shared through a row map
    assert type(gathered.parts[0]) is CsrPart and gathered.parts[0].base is whole.base
    assert gathered == eager.gather_rows(idx)
    assert lazy.row_range(3, 20) == eager.row_range(3, 20)


@given(st.integers(0, 2 ** 32 - 1))
def test_unions_of_one_source_are_one_group_union(seed):
    """A scatter-add onto an earlier scatter of the same updates: the union holds one group part, whose groups
    are both parts' groups row by row."""
    rng = np.random.default_rng(seed)
    src = _source(rng, 120, 40)
    g1, g2 = _scatter_groups(rng, 80, 120), _scatter_groups(rng, 80, 120)
    with lazy_groups():
        a, b = group_union(src, g1), group_union(src, g2)
        keep = rng.random(80) < 0.5
        joined = Deps.union(a.mask_rows(keep), b, a.mask_rows(~keep))
    (part,) = joined.parts
    assert isinstance(part, GroupPart) and not part.built
    eager = Deps.union(group_union(src, g1), group_union(src, g2))
    assert joined == eager
    assert joined.reduce_all() == eager.reduce_all()
    other = _source(rng, 120, 40)
    with lazy_groups():
        mixed = Deps.union(a, group_union(other, g2), b)
    assert len(mixed.parts) == 2 and mixed   # (over SMALL_ROWS rows: a lazy union of parts) == Deps.union(eager, group_union(other, g2))


def test_combining_leaves_built_parts_and_other_sources_alone():
    rng = np.random.default_rng(0)
    src = _source(rng, 120, 40)
    with lazy_groups():
        a, b = group_union(src, _scatter_groups(rng, 50, 120)), group_union(src, _scatter_groups(rng, 50, 120))
    (pa,), (pb,) = a.parts, b.parts
    assert combine_group_parts([pa]) == [pa]
    assert pb.base.nnz >= 0  # built: read as a CSR from now on
    assert combine_group_parts([pa, pb]) == [pa, pb]


def test_small_unions_stay_eager_by_default():
    """Below :data:`~.group_parts.LAZY_GROUP_MEMBERS` members or :data:`~.group_parts.LAZY_GROUP_ROWS` rows the
    union is built at once (every small program's path is as it was)."""
    rng = np.random.default_rng(1)
    src = _source(rng, 120, 40)
    assert not isinstance(group_union(src, _scatter_groups(rng, 50, 120)).parts[0], GroupPart)
    with lazy_groups(members=10 ** 6):
        assert not isinstance(group_union(src, _scatter_groups(rng, 50, 120)).parts[0], GroupPart)
    with lazy_groups(rows=51):
        assert not isinstance(group_union(src, _scatter_groups(rng, 50, 120)).parts[0], GroupPart)


def test_group_rows_over_a_column_table():
    """:class:`~.group_parts.GroupRows` over a ``(k, w)`` table with ``-1`` entries and ``-1`` members: the union
    of the table rows, as over the same rows in a CSR."""
    rng = np.random.default_rng(2)
    k, n = 300, 50
    table = np.where(rng.random((k, 3)) < 0.25, -1, rng.integers(0, n, (k, 3)))
    rows = np.repeat(np.arange(k), 3)[table.ravel() >= 0]
    m = sp.csr_array((np.ones(len(rows), bool), (rows, table.ravel()[table.ravel() >= 0])), shape=(k, n))
    m.sum_duplicates()
    members = np.where(rng.random(900) < 0.1, -1, rng.integers(0, k, 900))
    indptr = np.concatenate([[0], np.sort(rng.integers(0, 900, 199)), [900]]).astype(np.int64)
    part = GroupPart(Deps.from_csr(m), indptr, members)
    via_table = part.regroup(table=table, n=n)
    via_csr = part.regroup(m)
    assert (via_table != via_csr).nnz == 0
    want = np.zeros((200, n), bool)
    dense = m.toarray()
    for i in range(200):
        for j in members[indptr[i]:indptr[i + 1]]:
            if j >= 0:
                want[i] |= dense[j]
    assert np.array_equal(via_table.toarray(), want)
    with pytest.raises(ValueError, match="one row per source row"):
        part.regroup(m[:10])
