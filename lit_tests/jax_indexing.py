# RUN: %PYTHON %s | filecheck %s
"""Integer indexing in JAX emits an index-normalization chain (compare/add/select on constants) before a
gather; the constant lattice resolves it, so the pattern is an exact permutation."""

import jax
import jax.numpy as jnp
import numpy as np

from stablehlo_sparsity.passes import annotate, run_pipeline

perm = np.array([3, 0, 2, 1, -1])


def f(x):
    return x[(jnp.asarray(perm) * 7 + 3) % 5] * jnp.sin(x[jnp.asarray(perm)])


x = jnp.ones(5, jnp.float32)
module = jax.jit(f).lower(x).compiler_ir("stablehlo")
annotate(module)
print(module)
# (perm * 7 + 3) % 5 = [4, 3, 2, 0, 1]; perm with -1 normalized = [3, 0, 2, 1, 4].
# CHECK-LABEL: func.func public @main
# CHECK-SAME: -> (tensor<5xf32> {jax.result_info = "result", sparsity.deps = "{3,4} {0,3} {2} {0,1} {1,4}"
# CHECK: "stablehlo.gather"
# CHECK-SAME: sparsity.deps = "{4} {3} {2} {0} {1}"
# CHECK: "stablehlo.gather"
# CHECK-SAME: sparsity.deps = "{3} {0} {2} {1} {4}"

# Materialized folding removes the normalization chain from the IR altogether.
module = jax.jit(f).lower(x).compiler_ir("stablehlo")
run_pipeline(module, "sparsity-fold-constants{materialize=true},canonicalize")
print(module)
# CHECK-LABEL: func.func public @main
# CHECK-NOT: stablehlo.remainder
# CHECK-NOT: stablehlo.select
# CHECK: stablehlo.constant dense<{{\[\[}}4], [3], [2], [0], [1]]> : tensor<5x1xi32>
