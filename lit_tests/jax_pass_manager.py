# RUN: %PYTHON %s | filecheck %s
"""Our passes in jaxlib's own PassManager, next to MLIR's canonicalize/cse, on a JAX module; then the
strip pass restores the module text exactly."""

import jax
import jax.numpy as jnp
from jaxlib.mlir import passmanager

from stablehlo_sparsity.passes import AnnotatePass, StripPass


def f(x, y):
    return jnp.tanh(x @ y) + jnp.tanh(x @ y), jnp.sum(x, axis=0)


module = jax.jit(f).lower(jnp.ones((2, 3), jnp.float32), jnp.ones(3, jnp.float32)).compiler_ir("stablehlo")
before = str(module)
with module.context:
    pm = passmanager.PassManager("builtin.module")
    pm.add("func.func(cse)")
    AnnotatePass(max_elements=4, wrt=[0, 1]).add_to(pm)
    pm.run(module.operation)
print(module)
# cse merged the two x @ y and tanh; the annotation sees one of each.
# CHECK-LABEL: func.func public @main
# CHECK-SAME: sparsity.pattern = "shape=5x9 nnz=18 deps=2..6 distinct=5"
# CHECK: stablehlo.dot_general {{.*}} {sparsity.deps = "{0..2,6..8} {3..8}"}
# CHECK-NOT: stablehlo.dot_general
# CHECK: stablehlo.tanh %0 {sparsity.deps = "{0..2,6..8} {3..8}"}
# CHECK-NOT: stablehlo.tanh

with module.context:
    pm = passmanager.PassManager("builtin.module")
    StripPass().add_to(pm)
    pm.run(module.operation)
    pm = passmanager.PassManager("builtin.module")
    pm.add("func.func(cse)")
    expected = jax.jit(f).lower(jnp.ones((2, 3), jnp.float32), jnp.ones(3, jnp.float32)).compiler_ir("stablehlo")
    pm.run(expected.operation)
print("round trip:", str(module) == str(expected), "changed by cse:", str(expected) != before)
# CHECK: round trip: True changed by cse: True
