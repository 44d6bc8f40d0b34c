# RUN: %PYTHON %s | filecheck %s
"""Trace a JAX stencil, annotate its StableHLO with sparsity-annotate, print it."""

import jax
import jax.numpy as jnp

from stablehlo_sparsity.passes import annotate


def show(f, *args, **kw):
    module = jax.jit(f).lower(*args).compiler_ir("stablehlo")
    annotate(module, **kw)
    print(module)


# A periodic second difference: jnp.roll lowers to slice + concatenate in a private function that is
# called twice with different lattices, so its ops show the union over both calls.
# CHECK-LABEL: func.func public @main
# CHECK-SAME: sparsity.pattern = "shape=4x4 nnz=12 deps=3 distinct=4"
# CHECK: call @_roll_static(%arg0) {sparsity.deps = "{3} {0} {1} {2}"}
# CHECK: call @_roll_static_0(%arg0) {sparsity.deps = "{1} {2} {3} {0}"}
# CHECK: stablehlo.add {{.*}} {sparsity.deps = "{0,1,3} {0..2} {1..3} {0,2,3}"}
show(lambda x: jnp.roll(x, 1) - 2 * x + jnp.roll(x, -1), jnp.ones(4, jnp.float32))

# A 2-D five-point Laplacian on the interior of a 4x4 grid: 5 dependencies per output point.
# CHECK-LABEL: func.func public @main
# CHECK-SAME: sparsity.pattern = "shape=4x16 nnz=20 deps=5 distinct=4"
show(lambda u: u[1:-1, :-2] + u[1:-1, 2:] + u[:-2, 1:-1] + u[2:, 1:-1] - 4 * u[1:-1, 1:-1],
     jnp.ones((4, 4), jnp.float32))
