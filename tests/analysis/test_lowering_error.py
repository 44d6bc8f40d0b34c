"""JAX's refusal to lower a function is a typed error (:class:`LoweringError`, an :class:`InputError`): the
analysis decides on the type, never on the wording of a message."""

from __future__ import annotations

import jax.numpy as jnp
import pytest

from stablehlo_sparsity import InputError, jacobian_sparsity
from stablehlo_sparsity.errors import LoweringError


def test_shape_errors_raise_lowering_error():
    with pytest.raises(LoweringError, match="could not lower") as info:
        jacobian_sparsity(lambda x, y: x @ y, jnp.ones((2, 3)), jnp.ones((2, 3)))
    assert isinstance(info.value, InputError)


def test_other_input_errors_are_not_lowering_errors():
    with pytest.raises(InputError) as info:
        jacobian_sparsity(lambda x: x * 2, jnp.ones(2), argnums=3)
    assert not isinstance(info.value, LoweringError)
