"""docs/architecture.md names every module of the package in its Layout section, so a newcomer
finds each home from the doc and the tree (a new module must be added there)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


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


# Rooms whose docstring still describes them in prose instead of a map (owned elsewhere).
_BULLET_HEAD = re.compile(r"^- `([a-z_][a-z0-9_]*)/?`")
_NAMED = re.compile(r"`([a-z_][a-z0-9_]*)/?`")


def _rooms() -> list[Path]:
    return sorted(p.parent for p in (ROOT / "mirrorspec").rglob("__init__.py")
                  if p.parent != ROOT / "mirrorspec")


def _room_map(room: Path) -> list[str]:
    """The bullets of a room's docstring ('- `name`: …'), continuation lines joined."""
    doc = ast.get_docstring(ast.parse((room / "__init__.py").read_text(encoding="utf-8"))) or ""
    bullets: list[str] = []
    for line in doc.splitlines():
        if line.startswith("- "):
            bullets.append(line)
        elif bullets and line.startswith("  ") and line.strip():
            bullets[-1] += " " + line.strip()
    return [b for b in bullets if _BULLET_HEAD.match(b)]


def _modules(room: Path) -> set[str]:
    return ({p.stem for p in room.glob("*.py") if p.name != "__init__.py"}
            | {p.parent.name for p in room.glob("*/__init__.py")})


def test_every_room_map_names_its_modules_and_only_those():
    """Each room's `__init__` docstring maps its modules (`- \\`name\\`: what lives there`): every
    module and sub-room is named, and every bullet names one that exists."""
    problems = []
    for room in _rooms():
        where = room.relative_to(ROOT / "mirrorspec").as_posix()
        bullets = _room_map(room)
        if not bullets:
            problems.append(f"{where}: no map in its docstring")
            continue
        modules = _modules(room)
        heads = {_BULLET_HEAD.match(b).group(1) for b in bullets}
        named = {name for b in bullets for name in _NAMED.findall(b)}
        if heads - modules:
            problems.append(f"{where}: names modules that don't exist: {sorted(heads - modules)}")
        if modules - named:
            problems.append(f"{where}: doesn't name {sorted(modules - named)}")
    assert not problems, "\n".join(problems)
