"""The distribution ships every subpackage: a package missing from ``pyproject.toml`` imports in an editable
install (the source tree is on the path) and fails in a regular one."""

from __future__ import annotations

import tomllib
import paths

ROOT = paths.REPO


def _declared():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    return set(cfg["packages"]), cfg["package-dir"]


def test_every_subpackage_is_declared():
    packages, package_dir = _declared()
    on_disk = set()
    for name, src in package_dir.items():
        base = ROOT / src
        for init in base.rglob("__init__.py"):
            rel = init.parent.relative_to(base)
            on_disk.add(".".join((name, *rel.parts)) if rel.parts else name)
    # a mapped directory is its own package: ``passes/`` is stablehlo_sparsity.passes, not a subpackage
    assert on_disk == packages, {"missing from pyproject": on_disk - packages, "not on disk": packages - on_disk}


def test_passes_have_no_top_level_import_name():
    packages, package_dir = _declared()
    assert package_dir["stablehlo_sparsity.passes"] == "passes"
    assert all(p.startswith("stablehlo_sparsity") for p in packages)
