"""Sparse-matrix kernels (``analysis/rules/sparse_kernels.py``): ``cpu_csr_sparse_dense_ffi`` (a ``BCSR`` product on
CPU) and the cuSPARSE / hipSPARSE SpMV, SpMM and to-dense calls — against ``jax.jacfwd`` on CPU, with respect to the
dense operand and to the stored values ``data``.

The GPU kernels' lowerings need jaxlib's CUDA / ROCm plugin only for their ``opaque`` descriptor (its builders ask
cuSPARSE for a workspace size, which needs a GPU).  :func:`cusparse_lowering` stands in for the plugin's two
``_sparse`` modules with builders that pack jaxlib's descriptor structs (``jaxlib/gpu/sparse_kernels.h``) and turns
on ``jax_bcoo_cusparse_lowering``: everything else of the exported call — target, operand order, result types,
layouts — is JAX's own lowering.
"""

from __future__ import annotations

import contextlib
import struct
import subprocess
import sys
import textwrap
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import sparse

from stablehlo_sparsity import SparsityWarning, analyze_module, jacobian_sparsity
from stablehlo_sparsity.ir.custom_calls import all_targets
from stablehlo_sparsity.analysis.rules.sparse_kernels import csr_entries, gpu_sparse_descriptor
from test_linalg import check, num_pattern

RNG = np.random.default_rng(3)

#: (row, column) of 9 stored values of a 5 × 6 matrix — rows sorted, columns sorted within a row (cuSPARSE's
#: requirement), one empty row (3), one duplicate-free column never used (5)
INDICES = np.array([[0, 0], [0, 3], [1, 1], [1, 2], [2, 0], [2, 4], [4, 1], [4, 3], [4, 4]], np.int32)
SHAPE = (5, 6)


def bcoo(data):
    return sparse.BCOO((data, jnp.asarray(INDICES)), shape=SHAPE, indices_sorted=True, unique_indices=True)


def bcsr(data):
    m = sparse.BCSR.from_bcoo(bcoo(jnp.zeros(len(INDICES))))
    return sparse.BCSR((data, m.indices.astype(jnp.int32), m.indptr.astype(jnp.int32)), shape=SHAPE)


DATA = jnp.asarray(RNG.standard_normal(len(INDICES)))
X = jnp.asarray(RNG.standard_normal(SHAPE[1]))
XM = jnp.asarray(RNG.standard_normal((SHAPE[1], 3)))
XT = jnp.asarray(RNG.standard_normal(SHAPE[0]))


# ============================================================ stand-ins for the GPU plugins' descriptor builders
_DATA_TYPES = {"float32": 0, "float64": 1, "complex64": 4, "complex128": 5}  # cudaDataType
_INDEX_TYPES = {"int32": 2, "int64": 3}  # cusparseIndexType_t


class _DescriptorBuilders:
    """``build_*_descriptor`` of jaxlib's ``_sparse`` GPU module: ``(workspace bytes, packed struct)``."""

    def __init__(self, prefix: str):
        self.ops = (0, 1) if prefix == "cu" else (111, 112)  # gpusparseOperation_t NON_TRANSPOSE / TRANSPOSE

    @staticmethod
    def _mat(dtype, index_dtype, rows, cols, nnz, batch_count=1, batch_stride=0):
        return struct.pack("<7i", _DATA_TYPES[np.dtype(dtype).name], _INDEX_TYPES[np.dtype(index_dtype).name],
                           rows, cols, nnz, batch_count, batch_stride)

    def _vec(self, dtype, size):
        return struct.pack("<2i", _DATA_TYPES[np.dtype(dtype).name], size)

    def _dense(self, dtype, rows, cols, batch_count=1, batch_stride=0):
        return struct.pack("<5i", _DATA_TYPES[np.dtype(dtype).name], rows, cols, batch_count, batch_stride)

    def build_csr_matvec_descriptor(self, data_dtype, x_dtype, compute_dtype, index_dtype, rows, cols, nnz,
                                    transpose):
        return 16, (self._mat(data_dtype, index_dtype, rows, cols, nnz)
                    + self._vec(x_dtype, rows if transpose else cols)
                    + self._vec(compute_dtype, cols if transpose else rows)
                    + struct.pack("<i", self.ops[transpose]))

    build_coo_matvec_descriptor = build_csr_matvec_descriptor

    def build_csr_matmat_descriptor(self, data_dtype, b_dtype, compute_dtype, index_dtype, rows, cols, bccols, nnz,
                                    transpose):
        return 16, (self._mat(data_dtype, index_dtype, rows, cols, nnz)
                    + self._dense(b_dtype, rows if transpose else cols, bccols)
                    + self._dense(compute_dtype, cols if transpose else rows, bccols)
                    + struct.pack("<i", self.ops[transpose]))

    def build_coo_matmat_descriptor(self, data_dtype, b_dtype, compute_dtype, index_dtype, rows, cols, bccols, nnz,
                                    transpose, batch_count, lhs_batch_stride, rhs_batch_stride):
        return 16, (self._mat(data_dtype, index_dtype, rows, cols, nnz, batch_count, lhs_batch_stride)
                    + self._dense(b_dtype, rows if transpose else cols, bccols, batch_count, rhs_batch_stride)
                    + self._dense(compute_dtype, cols if transpose else rows, bccols, batch_count,
                                  (cols if transpose else rows) * bccols)
                    + struct.pack("<i", self.ops[transpose]))

    def _conversion(self, data_dtype, index_dtype, rows, cols, nnz):
        return 16, self._mat(data_dtype, index_dtype, rows, cols, nnz)

    build_csr_todense_descriptor = build_coo_todense_descriptor = _conversion
    build_csr_fromdense_descriptor = build_coo_fromdense_descriptor = _conversion


@contextlib.contextmanager
def cusparse_lowering():
    """Within the block, JAX lowers sparse products for ``cuda`` / ``rocm`` to cuSPARSE / hipSPARSE calls (see the
    module docstring)."""
    from jax._src import config
    from jax._src.lib import gpu_sparse

    saved = gpu_sparse._cusparse, gpu_sparse._hipsparse, config.bcoo_cusparse_lowering.value
    gpu_sparse._cusparse, gpu_sparse._hipsparse = _DescriptorBuilders("cu"), _DescriptorBuilders("hip")
    jax.config.update("jax_bcoo_cusparse_lowering", True)
    try:
        yield
    finally:
        gpu_sparse._cusparse, gpu_sparse._hipsparse, flag = saved
        jax.config.update("jax_bcoo_cusparse_lowering", flag)


#: every target the table knows, plus the unstable ones: ``jax.export`` refuses targets it does not guarantee
DISABLED_CHECKS = [jax.export.DisabledSafetyCheck.custom_call(t) for t in all_targets()]


def export_text(f, *args, platform: str) -> str:
    """The module of ``f`` exported for ``platform`` (``cpu``, ``cuda``, ``rocm``, ``tpu``)."""
    structs = [jax.ShapeDtypeStruct(a.shape, a.dtype) for a in args]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # JAX's efficiency warnings for the fallbacks
        exp = jax.export.export(jax.jit(f), platforms=(platform,), disabled_checks=DISABLED_CHECKS)(*structs)
    return exp.mlir_module()


def module_pattern(text: str, argnums) -> np.ndarray:
    return analyze_module(text, wrt=list(argnums)).pattern.todense()


# ============================================================ cpu_csr_sparse_dense_ffi (BCSR on CPU)
PRODUCTS = {
    "matvec": (lambda d, x: bcsr(d) @ x, X),
    "matmat": (lambda d, x: bcsr(d) @ x, XM),
    "matvec_sin": (lambda d, x: jnp.sin(bcsr(d) @ x) + x[:5] ** 2, X),
}


@pytest.mark.parametrize("name", list(PRODUCTS))
def test_bcsr_product_on_cpu_is_exact(name):
    """Against ``jax.jacfwd``: with respect to ``data``, to the dense operand, and both at once."""
    f, x = PRODUCTS[name]
    assert "cpu_csr_sparse_dense_ffi" in jax.jit(f).lower(DATA, x).as_text()
    for argnums in (0, 1, (0, 1)):
        det = jacobian_sparsity(f, DATA, x, argnums=argnums).todense()
        check(det, num_pattern(f, DATA, x, argnums=argnums))


def test_bcsr_product_structure():
    """``y[i]`` reads the stored values of row ``i`` and ``x`` at their columns; the empty row 3 nothing."""
    f = lambda d, x: bcsr(d) @ x  # noqa: E731
    wrt_data = jacobian_sparsity(f, DATA, X, argnums=0).todense()
    assert wrt_data.tolist() == (INDICES[:, 0][None, :] == np.arange(5)[:, None]).tolist()
    wrt_x = jacobian_sparsity(f, DATA, X, argnums=1).todense()
    assert wrt_x.tolist() == (bcoo(jnp.ones(9)).todense() != 0).tolist()


def test_known_zero_values_drop_their_columns():
    """A stored value that is a known exact zero reads nothing of ``x`` (as §dot_general with a known operand)."""
    data = np.arange(1.0, 10.0)
    data[4] = 0.0  # entry (2, 0)
    wrt_x = jacobian_sparsity(lambda x: bcsr(jnp.asarray(data)) @ x, X).todense()
    assert not wrt_x[2, 0] and wrt_x[2, 4] and wrt_x.sum() == 8


def test_traced_indices_are_conservative_and_warn():
    """Indices passed as arguments are unknown: any stored value in any row, any column of ``x``."""
    m = bcsr(DATA)

    def f(d, x, indices, indptr):
        return sparse.BCSR((d, indices, indptr), shape=SHAPE) @ x

    args = (DATA, X, m.indices, m.indptr)
    assert "cpu_csr_sparse_dense_ffi" in jax.jit(f).lower(*args).as_text()
    with pytest.warns(SparsityWarning, match="not known constants"):
        det = jacobian_sparsity(f, *args, argnums=(0, 1)).todense()
    assert det.all()
    check(det, num_pattern(f, *args, argnums=(0, 1)), exact=False)


def test_one_unknown_index_array_keeps_what_the_other_says():
    """Unknown row pointer, known columns: any value in any row, but only the columns some value uses (column 5:
    none).  Known row pointer, unknown columns: a row reads its own values and any of ``x``; the empty row 3
    nothing."""
    m = bcsr(DATA)
    used = np.zeros(6, bool)
    used[INDICES[:, 1]] = True
    rows_of = np.zeros((5, 9), bool)
    rows_of[INDICES[:, 0], np.arange(9)] = True

    def f_ptr(d, x, indptr):
        return sparse.BCSR((d, m.indices, indptr), shape=SHAPE) @ x

    def f_idx(d, x, indices):
        return sparse.BCSR((d, indices, m.indptr), shape=SHAPE) @ x

    with pytest.warns(SparsityWarning):
        ptr = jacobian_sparsity(f_ptr, DATA, X, m.indptr, argnums=(0, 1)).todense()
        idx = jacobian_sparsity(f_idx, DATA, X, m.indices, argnums=(0, 1)).todense()
    assert ptr[:, :9].all() and (ptr[:, 9:] == used).all()
    assert (idx[:, :9] == rows_of).all() and (idx[:, 9:] == rows_of.any(axis=1)[:, None]).all()


def test_csr_entries_reads_the_row_pointer():
    value, row = csr_entries(np.array([1, 1, 3, 4]), 5)  # value 0 before indptr[0], value 4 after indptr[-1]
    assert value.tolist() == [1, 2, 3] and row.tolist() == [1, 1, 2]
    for bad in ([0, 3, 2], [0, 6], [-1, 2]):  # decreasing, beyond nnz, negative: any row
        assert csr_entries(np.array(bad), 5)[1] is None


# ============================================================ cuSPARSE / hipSPARSE (exported for cuda / rocm)
def legacy_csr(d):
    m = bcsr(d)
    return sparse.CSR((d, m.indices, m.indptr), shape=SHAPE)


def legacy_coo(d):
    return sparse.COO((d, jnp.asarray(INDICES[:, 0]), jnp.asarray(INDICES[:, 1])), shape=SHAPE, rows_sorted=True)


#: name: (f, args, the target's kernel, the same function for ``jax.jacfwd`` — the legacy ``CSR`` / ``COO`` classes
#: have no batching rules — or ``None`` for ``f`` itself); derivatives with respect to ``data`` and the dense operand
GPU_PROGRAMS = {
    "bcsr_matvec": (lambda d, x: bcsr(d) @ x, (DATA, X), "csr_matvec", None),
    "bcsr_matmat": (lambda d, x: bcsr(d) @ x, (DATA, XM), "csr_matmat", None),
    "bcsr_matmat_rhs_transposed": (lambda d, x: bcsr(d) @ x.T, (DATA, XM.T), "csr_matmat", None),
    "bcoo_matvec": (lambda d, x: bcoo(d) @ x, (DATA, X), "coo_matvec", None),
    "bcoo_matmat": (lambda d, x: bcoo(d) @ x, (DATA, XM), "coo_matmat", None),
    "bcoo_vecmat": (lambda d, x: x @ bcoo(d), (DATA, XT), "coo_matvec", None),  # op(A) = Aᵀ
    "csr_matvec": (lambda d, x: legacy_csr(d) @ x, (DATA, X), "csr_matvec", lambda d, x: bcoo(d) @ x),
    "csr_matmat": (lambda d, x: legacy_csr(d) @ x, (DATA, XM), "csr_matmat", lambda d, x: bcoo(d) @ x),
    "coo_matvec": (lambda d, x: legacy_coo(d) @ x, (DATA, X), "coo_matvec", lambda d, x: bcoo(d) @ x),
    "coo_transposed_matvec": (lambda d, x: legacy_coo(d).T @ x, (DATA, XT), "coo_matvec",
                              lambda d, x: bcoo(d).T @ x),
    "csr_todense": (lambda d: jnp.sin(legacy_csr(d).todense()), (DATA,), "csr_todense",
                    lambda d: jnp.sin(bcoo(d).todense())),
    "coo_todense": (lambda d: legacy_coo(d).todense() ** 2, (DATA,), "coo_todense", lambda d: bcoo(d).todense() ** 2),
}


@pytest.mark.parametrize("name", list(GPU_PROGRAMS))
def test_gpu_sparse_kernels_are_exact(name):
    """Each program exported for ``cuda`` and ``rocm`` calls the kernel; its pattern is exact against CPU
    ``jax.jacfwd`` (with respect to ``data`` and the dense operand at once)."""
    f, args, kernel, same = GPU_PROGRAMS[name]
    argnums = tuple(range(len(args)))
    num = num_pattern(same or f, *args, argnums=argnums)
    with cusparse_lowering():
        texts = {p: export_text(f, *args, platform=p) for p in ("cuda", "rocm")}
    for platform, text in texts.items():
        prefix = "cu" if platform == "cuda" else "hip"
        assert f"{prefix}sparse_{kernel}_ffi" in text, platform
        check(module_pattern(text, argnums), num)


def test_descriptor_decodes_cusparse_and_hipsparse_operations():
    b = _DescriptorBuilders("hip")
    _, blob = b.build_csr_matmat_descriptor(np.float32, np.float32, np.float32, np.int32, 5, 6, 3, 9, True)
    text = "{opaque = \"" + "".join(f"\\{c:02X}" for c in blob) + "\"}"
    d = gpu_sparse_descriptor(text)
    assert (d.rows, d.cols, d.nnz, d.transpose) == (5, 6, 9, True)
    _, blob = _DescriptorBuilders("cu").build_coo_todense_descriptor(np.float64, np.int32, 5, 6, 9)
    d = gpu_sparse_descriptor("{opaque = \"" + "".join(f"\\{c:02X}" for c in blob) + "\"}")
    assert (d.rows, d.cols, d.transpose) == (5, 6, None)
    assert gpu_sparse_descriptor("{}") is None and gpu_sparse_descriptor('{opaque = "\\01"}') is None


_SQUARE_COO = """
func.func @main(%d: tensor<3xf32>, %x: tensor<3xf32>) -> tensor<3xf32> {{
  %r = stablehlo.constant dense<[0, 1, 2]> : tensor<3xi32>
  %c = stablehlo.constant dense<[1, 2, 0]> : tensor<3xi32>
  %0:2 = stablehlo.custom_call @cusparse_coo_matvec_ffi(%d, %r, %c, %x) {{mhlo.backend_config = {{{config}}}}} :
      (tensor<3xf32>, tensor<3xi32>, tensor<3xi32>, tensor<3xf32>) -> (tensor<3xf32>, tensor<16xi8>)
  return %0#0 : tensor<3xf32>
}}"""


def _opaque(transpose: bool) -> str:
    _, blob = _DescriptorBuilders("cu").build_coo_matvec_descriptor(np.float32, np.float32, np.float32, np.int32,
                                                                    3, 3, 3, transpose)
    return "opaque = \"" + "".join(f"\\{c:02X}" for c in blob) + "\""


def test_square_coo_product_follows_the_descriptor_and_joins_both_readings_without_one():
    """A square matrix: only the descriptor tells ``A`` from ``Aᵀ``; without one, both (sound)."""
    a = analyze_module(_SQUARE_COO.format(config=_opaque(False)), wrt=[1]).pattern.todense()
    assert a.tolist() == np.eye(3, dtype=bool)[[1, 2, 0]].tolist()  # y[r_k] += d_k x[c_k]
    at = analyze_module(_SQUARE_COO.format(config=_opaque(True)), wrt=[1]).pattern.todense()
    assert at.tolist() == a.T.tolist()
    with pytest.warns(SparsityWarning, match="transpose"):  # no descriptor: both readings
        both = analyze_module(_SQUARE_COO.format(config=""), wrt=[1]).pattern.todense()
    assert both.tolist() == (a | at).tolist()


def test_cusolver_sparse_solve_is_conservative_and_sound():
    """``jax.experimental.sparse.linalg.spsolve`` on CUDA: ``cusolver_csrlsvqr_ffi(data, indices, indptr, b)``;
    every element of the solution depends on every stored value and on all of ``b`` (conservative)."""
    from jax.experimental.sparse.linalg import spsolve

    m = sparse.BCSR.fromdense(jnp.asarray(np.eye(4) * 3 + np.eye(4, k=1) - np.eye(4, k=-2)))

    def f(d, b):
        return spsolve(d, m.indices, m.indptr, b)

    def same(d, b):  # the same solve, densely (spsolve has no batching rule for jax.jacfwd)
        return jnp.linalg.solve(sparse.BCSR((d, m.indices, m.indptr), shape=(4, 4)).todense(), b)

    text = export_text(f, m.data, jnp.ones(4), platform="cuda")
    assert "cusolver_csrlsvqr_ffi" in text
    det = module_pattern(text, (0, 1))
    assert det.all()
    check(det, num_pattern(same, m.data, jnp.ones(4), argnums=(0, 1)), exact=False)


_COLUMN_MAJOR_RHS = """
func.func @main(%d: tensor<3xf32>, %x: tensor<3x2xf32>) -> tensor<2x2xf32> {
  %indptr = stablehlo.constant dense<[0, 1, 3]> : tensor<3xi32>
  %indices = stablehlo.constant dense<[0, 1, 2]> : tensor<3xi32>
  %0 = stablehlo.custom_call @cpu_csr_sparse_dense_ffi(%d, %indptr, %indices, %x) {operand_layouts = [dense<0> :
      tensor<1xindex>, dense<0> : tensor<1xindex>, dense<0> : tensor<1xindex>, dense<[0, 1]> : tensor<2xindex>],
      result_layouts = [dense<[1, 0]> : tensor<2xindex>]} :
      (tensor<3xf32>, tensor<3xi32>, tensor<3xi32>, tensor<3x2xf32>) -> tensor<2x2xf32>
  return %0 : tensor<2x2xf32>
}"""


def test_another_layout_is_conservative_and_not_differentiated():
    """The kernel reads its buffers row-major: a column-major operand scrambles the elements, so every result
    element depends on every operand element (with a warning), and the importer refuses the derivative."""
    from stablehlo_sparsity import parse_module
    from stablehlo_sparsity.errors import SparsityError
    from stablehlo_sparsity.passes import inject_jacobian

    with pytest.warns(SparsityWarning, match="layout"):
        det = analyze_module(_COLUMN_MAJOR_RHS, wrt="all").pattern.todense()
    assert det.all()
    with pytest.raises(SparsityError, match="layout other than row-major|another layout"):
        inject_jacobian(parse_module(_COLUMN_MAJOR_RHS), wrt="all")


# ============================================================ the importer's derivative of the kernels
def test_gpu_product_jvp_matches_the_dense_product():
    """The importer's tangent of a cuSPARSE product (evaluated on CPU: the replayed call itself needs a GPU)."""
    from stablehlo_sparsity.modules.importer.custom_call import _gpu_product_jvp

    m = bcsr(DATA)
    dense = np.asarray(bcoo(DATA).todense())
    ddata, dx = RNG.standard_normal(9), RNG.standard_normal(5)
    config = "{" + _opaque(True) + "}"  # only the operation matters: A^T x for a 5 x 6 CSR matrix
    out = [jnp.zeros(6), jnp.zeros(16, jnp.int8)]
    (dy, none) = _gpu_product_jvp(csr=True)((DATA, m.indices, m.indptr, XT), (ddata, None, None, dx),
                                            {"mhlo.backend_config": config}, out)
    want = np.asarray(bcoo(jnp.asarray(ddata)).todense()).T @ np.asarray(XT) + dense.T @ dx
    assert none is None and np.allclose(dy, want)


def test_injected_derivative_of_a_bcsr_module_runs_in_a_fresh_process():
    """``sparsity-jacobian`` on a CPU module calling ``cpu_csr_sparse_dense_ffi``: the importer replays the kernel
    for the primal and differentiates its JAX reference; XLA runs the derivative, which equals ``jax.jacfwd``."""
    script = textwrap.dedent("""
        import jax, jax.numpy as jnp, numpy as np
        from jax.experimental import sparse
        jax.config.update("jax_enable_x64", True)
        import stablehlo_sparsity as ss
        from stablehlo_sparsity.passes import inject_jacobian
        idx = jnp.array([[0, 0], [0, 3], [1, 1], [2, 0], [2, 2], [3, 4]], jnp.int32)
        m = sparse.BCSR.from_bcoo(sparse.BCOO((jnp.ones(6), idx), shape=(4, 5)))
        f = lambda d, x: jnp.sin(sparse.BCSR((d, m.indices, m.indptr), shape=(4, 5)) @ x)
        d0, x0 = jnp.linspace(0.5, 1.5, 6), jnp.linspace(1.0, 2.0, 5)
        module = ss.parse_module(jax.jit(f).lower(d0, x0).as_text())
        name = inject_jacobian(module, wrt=[0, 1])
        assert "cpu_csr_sparse_dense_ffi" in str(module)
        got = ss.read_injected(module, name).to_scipy(ss.compile_module(module, name)(d0, x0)).toarray()
        want = np.hstack([np.asarray(j).reshape(4, -1) for j in jax.jacfwd(f, argnums=(0, 1))(d0, x0)])
        assert np.allclose(got, want, rtol=1e-12, atol=0), np.abs(got - want).max()
        print("ok", int((got != 0).sum()))
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.startswith("ok 12"), run.stdout + run.stderr
