"""docs/review.md documents every kind of change diff can report, with its severity."""

from __future__ import annotations

import re
from pathlib import Path

from mirrorspec.project.diff import BREAKING, CAUTION, RULES, SAFE

REVIEW = Path(__file__).resolve().parents[3] / "docs" / "review.md"


def _section(text: str, title: str) -> str:
    match = re.search(rf"^### {title}\n(.*?)(?=^### |^## |\Z)", text, re.S | re.M)
    assert match, f"docs/review.md has no '### {title}' section"
    return match.group(1)


def test_every_change_kind_is_documented_under_its_severity():
    text = REVIEW.read_text(encoding="utf-8")
    sections = {BREAKING: _section(text, "Breaking"), CAUTION: _section(text, "Caution"),
                SAFE: _section(text, "Safe")}
    for kind, rule in RULES.items():
        assert f"`{kind}`" in sections[rule.severity], f"{kind} not under {rule.severity}"
