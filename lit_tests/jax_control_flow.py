# RUN: %PYTHON %s | filecheck %s
"""fori_loop and cond from JAX: the while runs its known trip count; cond is a case on a converted
predicate (union over branches)."""

import jax
import jax.numpy as jnp
from jax import lax

from stablehlo_sparsity.passes import annotate


def show(f, *args, **kw):
    module = jax.jit(f).lower(*args).compiler_ir("stablehlo")
    annotate(module, **kw)
    print(module)


# Three steps of y <- y + roll(y): element i reaches i-3..i.
# CHECK-LABEL: func.func public @main
# CHECK-SAME: sparsity.deps = "{0,3..5} {0,1,4,5} {0..2,5} {0..3} {1..4} {2..5}"
# CHECK: stablehlo.while
show(lambda x: lax.fori_loop(0, 3, lambda i, y: y + jnp.roll(y, 1), x), jnp.ones(6, jnp.float32))

# lax.cond with an input-dependent predicate: the union of both branches.
# CHECK-LABEL: func.func public @main
# CHECK-SAME: %arg0: tensor<f32> {sparsity.offset = 0 : i64}, %arg1: tensor<3xf32> {sparsity.offset = 1 : i64}
# CHECK-SAME: sparsity.deps = "{1,3} {2} {1,3}"
# CHECK: "stablehlo.case"
show(lambda p, x: lax.cond(p > 0, jnp.sin, lambda y: y[::-1], x), jnp.float32(1), jnp.ones(3, jnp.float32),
     wrt=[0, 1])
