"""Every relative link in README.md reaches a file, and every anchor a heading there, as GitHub
renders them (the docs pages' own links are checked by the site build, `mkdocs build --strict`,
which tests/browser/test_docs_product_site.py runs)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading (github-slugger): the rendered text in lower
    case, without punctuation or symbols, spaces turned into hyphens (never collapsed)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link reads as its text
    text = text.replace("`", "").replace("*", "")
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading anchor of `page` (GitHub numbers repeats: `x`, `x-1`, `x-2`)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            base = github_anchor(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(page: Path, root: Path = REPO) -> list[str]:
    """`page`'s relative links whose file or anchor does not exist, as `line: target (why)`."""
    problems = []
    fenced = False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced:
            continue
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:
                continue
            path_part, _, anchor = target.partition("#")
            destination = (page.parent / path_part).resolve() if path_part else page
            if not destination.exists():
                problems.append(f"{number}: {target} (no such file)")
            elif anchor and destination.suffix == ".md" and anchor not in anchors(destination):
                problems.append(f"{number}: {target} (no heading with that anchor in "
                                f"{destination.relative_to(root)})")
    return problems


def test_every_relative_link_and_anchor_in_the_readme_resolves():
    assert broken_links(REPO / "README.md") == []


@pytest.mark.parametrize("heading, anchor", [
    ("Setting up, and checking a setup: `mirrorspec debug`",
     "setting-up-and-checking-a-setup-mirrorspec-debug"),
    ("1. Local (one machine)", "1-local-one-machine"),
    ("`serve` uploads", "serve-uploads"),
    ("With no edit at all: `serve` as the HTTPS proxy",
     "with-no-edit-at-all-serve-as-the-https-proxy"),
    ("Fabric's mirroring REST API (`/v1`)", "fabrics-mirroring-rest-api-v1"),
    ("A — B", "a--b"),  # GitHub keeps both hyphens around a removed dash
])
def test_anchors_are_github_s(heading, anchor):
    assert github_anchor(heading) == anchor


def test_a_broken_anchor_or_file_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "deploy.md").write_text("# Deploying\n\n## Setting up: `debug`\n")
    readme = tmp_path / "README.md"
    readme.write_text("[ok](docs/deploy.md#setting-up-debug) [old](docs/deploy.md#checking)\n"
                      "[gone](docs/nope.md) [web](https://example.com/#x)\n"
                      "```\n[in code](docs/nope.md)\n```\n")
    assert broken_links(readme, tmp_path) == [
        "1: docs/deploy.md#checking (no heading with that anchor in docs/deploy.md)",
        "2: docs/nope.md (no such file)"]
