"""scripts/mkdocs_hooks.py: the site reads `\\|` in a table cell as GitHub does."""

from __future__ import annotations


from mkdocs_hooks import unescape_table_pipes


def test_the_hook_drops_the_escape_in_table_code_only():
    page = ("<p><code>a\\|b</code></p><table><tr><td><code>--format [text\\|json]</code> "
            "x\\|y</td></tr></table><pre><code>grep 'a\\|b'</code></pre>")
    assert unescape_table_pipes(page) == (
        "<p><code>a\\|b</code></p><table><tr><td><code>--format [text|json]</code> "
        "x\\|y</td></tr></table><pre><code>grep 'a\\|b'</code></pre>")
