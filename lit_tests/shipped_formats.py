# RUN: %PYTHON %s %t
# RUN: stablehlo-sparsity-opt %t.mlirbc --sparsity-jacobian | filecheck %s
# RUN: stablehlo-sparsity-opt %t.portable --sparsity-jacobian | filecheck %s
# RUN: stablehlo-sparsity-opt %t.export --sparsity-jacobian | filecheck %s
# RUN: stablehlo-sparsity-opt %t.export --emit=pattern --wrt=0 | filecheck %s --check-prefix=PATTERN
#
# StableHLO travels as MLIR bytecode (.mlirbc), as a portable artifact (versioned VHLO bytecode) and inside
# serialized jax.export artifacts: the driver reads all three, and the derivative passes run on them.

# CHECK: func.func public @main_jacobian(%arg0: tensor<5xf32>) -> (tensor<8xf32>
# CHECK-SAME: column_indices = dense<[0, 1, 1, 2, 2, 3, 3, 4]> : tensor<8xi64>
# PATTERN: 4 5 8

import io
import sys

import jax
import jax.numpy as jnp
from jax import export
from jaxlib.mlir._mlir_libs import _stablehlo

from stablehlo_sparsity.analysis.api import parse_module

base = sys.argv[1]
f = lambda x: jnp.sin(x[1:] * x[:-1])  # noqa: E731
spec = jax.ShapeDtypeStruct((5,), jnp.float32)
text = jax.jit(f).lower(spec).as_text()
buf = io.BytesIO()
parse_module(text).operation.write_bytecode(buf)
open(base + ".mlirbc", "wb").write(buf.getvalue())
open(base + ".portable", "wb").write(_stablehlo.serialize_portable_artifact_str(text, _stablehlo.get_current_version()))
open(base + ".export", "wb").write(bytes(export.export(jax.jit(f), platforms=("cpu",))(spec).serialize()))
