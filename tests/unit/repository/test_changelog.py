"""CHANGELOG.md keeps to Keep a Changelog: `## [Unreleased]` on top, then one entry per version
newest first, the newest being the version pyproject.toml names, and only the standard sections
under each (a "Measured" or "Notes" section is not one of them)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
VERSION = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - \d{4}-\d{2}-\d{2}$")


def problems(text: str, version: str) -> list[str]:
    """What in `text` (a CHANGELOG) breaks the format, as short sentences."""
    found = []
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    if not headings or headings[0] != "## [Unreleased]":
        found.append("the first entry is not `## [Unreleased]`")
    versions = []
    for heading in headings[1:]:
        match = VERSION.match(heading)
        if match is None:
            found.append(f"not a version heading: {heading!r}")
        else:
            versions.append(tuple(int(part) for part in match.group(1).split(".")))
    if versions != sorted(set(versions), reverse=True):
        found.append("versions are not unique and newest first")
    if versions and versions[0] != tuple(int(part) for part in version.split(".")):
        found.append(f"the newest version is not pyproject.toml's {version}")
    for section in re.findall(r"^### (.+)$", text, flags=re.MULTILINE):
        if section not in SECTIONS:
            found.append(f"not a Keep a Changelog section: {section!r}")
    for entry in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        names = re.findall(r"^### (.+)$", entry, flags=re.MULTILINE)
        if len(names) != len(set(names)):
            found.append(f"a section twice under ## {entry.splitlines()[0]}")
    return found


def test_the_changelog_keeps_the_format():
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert problems((REPO / "CHANGELOG.md").read_text(encoding="utf-8"), version) == []


def test_a_changelog_out_of_format_is_found():
    text = ("# Changelog\n\n## [Unreleased]\n\n### Added\n- x\n\n### Security\n- y\n\n"
            "### Security\n- z\n\n## [0.10.0] - 2026-11-24\n\n### Measured\n- t\n\n"
            "## [0.12.0] - 2026-11-27\n\n### Fixed\n- u\n")
    assert problems(text, "0.12.0") == [
        "versions are not unique and newest first",
        "the newest version is not pyproject.toml's 0.12.0",
        "not a Keep a Changelog section: 'Measured'",
        "a section twice under ## [Unreleased]"]
