"""The supported JAX range (``stablehlo_sparsity._compat``): one clear error at import for a jax / jaxlib pair
that disagree or lie outside the range, before JAX itself is imported."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from stablehlo_sparsity import _compat
from stablehlo_sparsity._compat import JaxVersionError, check_jax_versions, parse_version


def test_parse_version():
    assert parse_version("0.12.0.1") == (0, 12, 0, 1)
    assert parse_version("0.11.2") == (0, 11, 2)
    assert parse_version("0.13.0.dev20261101") == (0, 13, 0)
    assert parse_version("0.12.0rc1") == (0, 12, 0)


@pytest.mark.parametrize("jax,jaxlib", [("0.10.2", "0.10.2"), ("0.11.0", "0.11.0"), ("0.11.2", "0.11.2"),
                                        ("0.12.0", "0.12.0"), ("0.12.0.1", "0.12.0.1"), ("0.12.0.1", "0.12.0"),
                                        ("0.12.7", "0.12.7")])
def test_supported_pairs(jax, jaxlib):
    assert check_jax_versions(jax, jaxlib) == parse_version(jax)


@pytest.mark.parametrize("jax,jaxlib,why", [
    ("0.10.1", "0.10.1", "jax 0.10.1 is outside the supported range"),
    ("0.13.0", "0.13.0", "jax 0.13.0 is outside the supported range"),
    ("0.12.0", "0.11.2", "jax and jaxlib are different releases"),
    ("0.10.2", "0.12.0.1", "different releases"),
    ("0.4.38", "0.4.38", "outside the supported range"),
])
def test_unsupported_pairs_name_both_versions_and_the_range(jax, jaxlib, why):
    with pytest.raises(JaxVersionError) as e:
        check_jax_versions(jax, jaxlib)
    msg = str(e.value)
    assert why in msg and f"jax {jax}" in msg and f"jaxlib {jaxlib}" in msg and ">= 0.10.2 and < 0.13" in msg
    assert isinstance(e.value, ImportError)


def test_missing_jaxlib_is_named():
    with pytest.raises(JaxVersionError, match="needs jaxlib installed"):
        check_jax_versions("0.12.0", None)


def test_the_installed_pair_is_supported():
    import jax
    import jaxlib

    assert _compat.JAX_VERSION == parse_version(jax.__version__)
    assert _compat.JAX_VERSION[:3] == parse_version(jaxlib.__version__)[:3]


def test_import_refuses_a_mismatched_installation_before_importing_jax():
    """In a fresh process whose metadata says jax 0.12.0 / jaxlib 0.10.2: ``import stablehlo_sparsity`` raises the
    one error, and ``jax`` has not been imported by then."""
    script = textwrap.dedent("""
        import importlib.metadata as md, sys
        real = md.version
        md.version = lambda name: {"jax": "0.12.0", "jaxlib": "0.10.2"}.get(name) or real(name)
        try:
            import stablehlo_sparsity
        except ImportError as e:
            print(type(e).__name__, "|", e, "|", "jax" in sys.modules)
        else:
            print("imported")
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    name, msg, jax_imported = out.stdout.strip().split(" | ")
    assert name == "JaxVersionError" and "jax 0.12.0 and jaxlib 0.10.2" in msg and jax_imported == "False"


def test_cholesky_jvp_flag_matches_the_installed_jvp():
    """The Cholesky rule's version flag says what the installed JVP does (tangent read in one or both triangles)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    a = jnp.asarray(np.eye(3) * 3.0 + 0.1)
    upper_only = jnp.zeros((3, 3)).at[0, 2].set(1.0)  # a tangent in the strict upper triangle
    chol = lambda m: jax.lax.linalg.cholesky(m, symmetrize_input=False)  # the primitive alone
    _, dl = jax.jvp(chol, (a,), (upper_only,))
    reads_upper = bool(np.abs(np.asarray(dl)).max() > 0)
    assert reads_upper == _compat.CHOLESKY_JVP_SYMMETRIZES_BOTH_TRIANGLES
