"""The README and the documentation site (``mkdocs.yml``, ``docs/``), checked without building the site.

The site itself is built, with every page's code run, by ``mkdocs build --strict`` (CI's fifth leg); these
checks are the fast part that runs with the normal suite: the README is a landing page of at most 200 lines
whose set-up commands are the ones CI runs and whose Python runs as written; every public name is in the API
reference; every page is in the navigation and every link into ``docs/`` exists.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
MKDOCS = REPO / "mkdocs.yml"
CI = REPO / ".ci" / "run"

#: The first set-up command: install and run the demo (the second is CI's leg 1, read from ``.ci/run``).
DEMO_COMMAND = "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/stablehlo-sparsity demo"

_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.S | re.M)
#: A markdown link or image target: ``[text](target)``; the target ends at whitespace or ``)``.
_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def fences(text: str) -> list[tuple[str, str]]:
    """``(info string, body)`` of every fenced code block, in order."""
    return [(m.group(1).strip(), m.group(2)) for m in _FENCE.finditer(text)]


def without_code(text: str) -> str:
    """The text with fenced blocks and inline code removed (links inside code are not links)."""
    text = _FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def nav_pages() -> list[str]:
    """The pages of ``mkdocs.yml``'s nav, in order (read with a regex: the file has ``!!python/name`` tags that
    a plain YAML loader refuses, and the test extra has no YAML library)."""
    text = MKDOCS.read_text()
    nav = text[text.index("\nnav:"):]
    return re.findall(r"^\s*-\s+[^\n]*?:\s+(\S+\.md)\s*$", nav, re.M)


def local_links(path: Path) -> list[tuple[str, str]]:
    """``(target path, anchor)`` of every relative link of a markdown file (web links and pure anchors left out)."""
    out = []
    for target in _LINK.findall(without_code(path.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        file, _, anchor = target.partition("#")
        out.append((file, anchor))
    return out


# ------------------------------------------------------------------------------------------------ README
def test_readme_is_a_landing_page_of_at_most_200_lines():
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; the limit is 200 (move the rest into docs/)"


def test_readme_setup_commands_come_first_and_are_what_ci_runs():
    blocks = [body for info, body in fences(README.read_text()) if info.split()[:1] == ["bash"]]
    assert blocks, "README.md has no bash block"
    first_two = blocks[0].splitlines()[:2]
    assert first_two[0] == DEMO_COMMAND
    ci = CI.read_text().splitlines()
    start = next(i for i, line in enumerate(ci) if line.startswith('leg "1:'))
    leg1 = next(line for line in ci[start + 1:] if line.strip() and not line.startswith("#"))
    assert first_two[1] == leg1.strip(), "the README's test command differs from what .ci/run's leg 1 runs"


def test_readme_python_blocks_run_as_written(tmp_path):
    blocks = [body for info, body in fences(README.read_text()) if info.split()[:1] == ["python"]]
    assert blocks, "README.md has no python block"
    script = tmp_path / "readme_blocks.py"
    script.write_text("\n\n".join(blocks))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"README.md's Python blocks failed:\n{proc.stdout}\n{proc.stderr}"


def test_readme_links_every_page_of_the_site():
    linked = {(README.parent / file).resolve() for file, _ in local_links(README)}
    missing = [page for page in nav_pages() if (DOCS / page).resolve() not in linked]
    assert not missing, f"README.md links no page for: {missing}"


# ------------------------------------------------------------------------------------------------ the site
def test_every_page_is_in_the_nav_and_every_nav_entry_exists():
    nav = nav_pages()
    assert "index.md" in nav and len(nav) == len(set(nav)), nav
    pages = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(set(nav) - set(pages)) == [], "nav entries without a file"
    assert sorted(set(pages) - set(nav)) == [], "pages under docs/ missing from the nav of mkdocs.yml"


@pytest.mark.parametrize("path", [README, *sorted(DOCS.rglob("*.md"))],
                         ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_link_to_a_missing_file(path):
    broken = []
    for file, _anchor in local_links(path):
        if not file:
            continue
        target = (path.parent / file).resolve()
        if not target.exists():
            broken.append(file)
        elif path != README and not target.is_relative_to(DOCS.resolve()):
            broken.append(f"{file} (outside docs/: mkdocs --strict refuses it)")
    assert not broken, f"{path.relative_to(REPO)} links to missing files: {broken}"


def _resolve(dotted: str):
    """The object a ``::: a.b.c`` block documents: the longest importable module prefix, then attributes."""
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(dotted)


def test_every_public_name_is_in_the_api_reference():
    import stablehlo_sparsity as ss

    text = "\n".join(p.read_text() for p in sorted((DOCS / "reference").glob("*.md")))
    targets = re.findall(r"^:::\s+(stablehlo_sparsity(?:\.\w+)+)\s*$", text, re.M)
    documented = {}
    for dotted in targets:
        documented.setdefault(dotted.rsplit(".", 1)[1], []).append(dotted)
    missing, wrong = [], []
    for name in ss.__all__:
        if name == "__version__":
            if "__version__" not in text:
                missing.append(name)
            continue
        if name not in documented:
            missing.append(name)
            continue
        if not any(_resolve(dotted) is getattr(ss, name) for dotted in documented[name]):
            wrong.append(f"{name}: {documented[name]} is not stablehlo_sparsity.{name}")
    assert not missing, f"public names missing from docs/reference/*.md (as '::: stablehlo_sparsity...name'): {missing}"
    assert not wrong, wrong
