"""mkdocs hooks (mkdocs.yml `hooks:`): the site renders the pages as GitHub does.

A `|` inside a table cell is written `\\|` so it doesn't split the cell, also inside a code span
(`--format [text\\|json]`). GitHub's Markdown (GFM) drops that backslash in every table cell,
code spans included; Python-Markdown keeps it in code, so the site showed `[text\\|json]`. This
hook drops it there too, in table cells only, as GFM does: the pages stay right on GitHub.
"""

from __future__ import annotations

import re
from typing import Any

_TABLE = re.compile(r"<table\b.*?</table>", re.DOTALL)
_CODE = re.compile(r"(<code\b[^>]*>)(.*?)(</code>)", re.DOTALL)


def unescape_table_pipes(html: str) -> str:
    """`html` with `\\|` turned into `|` inside the code of table cells."""
    def in_table(table: re.Match[str]) -> str:
        return _CODE.sub(lambda code: code.group(1) + code.group(2).replace("\\|", "|")
                         + code.group(3), table.group(0))
    return _TABLE.sub(in_table, html)


def on_page_content(html: str, **_kwargs: Any) -> str:
    """mkdocs event: a page's HTML once Markdown has rendered it."""
    return unescape_table_pipes(html)
