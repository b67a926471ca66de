"""docs/architecture.md names every module of the package in its Layout section, so a newcomer
finds each home from the doc and the tree (a new module must be added there)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _layout_section() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("## Layout")
    return text[start:text.index("\n## ", start + 1)]


def test_every_module_is_named_in_the_layout_section():
    layout = _layout_section()
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*(?:\.py)?", layout))
    missing = []
    for path in sorted((ROOT / "mirrorspec").rglob("*.py")):
        if path.name == "__init__.py":
            continue
        if path.name not in words and path.stem not in words:
            missing.append(str(path.relative_to(ROOT)))
    assert not missing, f"not named in docs/architecture.md's Layout: {missing}"


def test_every_package_says_what_lives_there():
    for init in sorted((ROOT / "mirrorspec").rglob("__init__.py")):
        text = init.read_text(encoding="utf-8").lstrip()
        assert text.startswith('"""'), f"{init.relative_to(ROOT)} has no docstring"


def test_the_top_floor_holds_only_the_entry_points():
    loose = sorted(p.name for p in (ROOT / "mirrorspec").glob("*.py"))
    assert loose == ["__init__.py", "__main__.py", "api.py", "cli.py"], (
        f"every other module lives in a room (docs/architecture.md, Layout): {loose}")
