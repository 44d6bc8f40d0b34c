"""Notebook display: a ``SparsityPattern`` shows a picture in Jupyter (a PNG made without a plotting library) and
a ``CheckReport`` a coloured verdict and its fields."""

from __future__ import annotations

import base64
import re
import struct
import zlib

import jax.numpy as jnp
import numpy as np

import stablehlo_sparsity as ss
from stablehlo_sparsity.examples import brusselator


def _decode_png(data: bytes) -> np.ndarray:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind = data[pos + 4:pos + 8]
        body = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF
        chunks[kind] = chunks.get(kind, b"") + body
        pos += 12 + length
    w, h, depth, color = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (depth, color) == (8, 0)
    raw = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, w + 1)
    assert (raw[:, 0] == 0).all()
    return raw[:, 1:]


def test_a_small_pattern_is_drawn_entry_by_entry():
    p = ss.jacobian_sparsity(lambda x: x[1:] * x[:-1], jnp.ones(5))  # 4×5 bidiagonal
    img = _decode_png(p.to_png())
    scale = img.shape[0] // 4
    assert img.shape == (4 * scale, 5 * scale) and scale >= 8
    dark = img[::scale, ::scale] == 0
    assert np.array_equal(dark, p.todense())


def test_a_large_pattern_is_binned_and_the_html_embeds_it():
    p = ss.jacobian_sparsity(lambda v: brusselator(v, 32), jnp.ones(2 * 32 * 32))  # 2048 × 2048
    html = p._repr_html_()
    assert "SparsityPattern(2048×2048, nnz=12288" in html
    data = base64.b64decode(re.search(r'base64,([A-Za-z0-9+/=]+)"', html).group(1))
    img = _decode_png(data)
    assert img.shape == (256, 256)
    grid, rb, cb = p.binned(256, 256)
    assert (rb, cb) == (8, 8) and np.array_equal(img == 0, grid)
    assert np.diag(grid).all()  # the stencil's diagonal is there


def test_an_empty_pattern_still_displays():
    p = ss.SparsityPattern(np.zeros((0, 3), bool))
    assert "0×3" in p._repr_html_()


def test_check_reports_display_their_verdict():
    f = lambda x: jnp.sin(x[1:]) * x[:-1]  # noqa: E731
    x = jnp.linspace(0.1, 1.0, 6)
    good = ss.check_jacobian(f, x)
    html = good._repr_html_()
    assert "check OK" in html and "#1a7f37" in html and "worst error / tolerance" in html
    wrong = np.zeros((5, 6))
    bad = ss.check_jacobian(f, x, jacobian=wrong, raise_on_error=False)
    assert not bad.ok and "MISMATCH" in bad._repr_html_() and "#cf222e" in bad._repr_html_()
