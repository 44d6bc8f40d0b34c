"""mkdocs hooks of the documentation site (``mkdocs.yml``: ``hooks``).

The package's docstrings cross-reference with Sphinx roles (``:func:`name```, ``:class:`~pkg.Name```), which
mkdocstrings renders as the role's literal text followed by the code span.  The hook drops the role and, as Sphinx
does, shows only the last component of a ``~``-prefixed name.
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):<code>(~?)([^<]*)</code>")


def _plain(match: re.Match) -> str:
    tilde, name = match.groups()
    return f"<code>{name.rsplit('.', 1)[-1] if tilde else name}</code>"


def on_page_content(html: str, **kwargs) -> str:
    return _ROLE.sub(_plain, html)
