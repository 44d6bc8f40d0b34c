"""The C kernels (``csrc/``) built as a plain shared library inside the package,
``stablehlo_sparsity/_kernels<EXT_SUFFIX>``, loaded with ctypes by ``stablehlo_sparsity/kernels/native.py`` (no
Python C-API).  Everything else is in pyproject.toml; the extension is declared here because pyproject.toml's
``[tool.setuptools.ext-modules]`` needs setuptools >= 74.1 and is still flagged experimental (a warning at every
build) in the setuptools build isolation installs (84.2)."""

import sys

from setuptools import Extension, setup

setup(ext_modules=[Extension(
    "stablehlo_sparsity._kernels",
    sources=["csrc/kernels.c"],
    depends=["csrc/graph_kernels.h"],  # (in the sdist: setuptools adds an extension's depends to it)
    # portable code only: no -march=native, the wheel runs on any machine of its platform tag
    extra_compile_args=[] if sys.platform == "win32" else ["-O3", "-std=c99"],
)])
