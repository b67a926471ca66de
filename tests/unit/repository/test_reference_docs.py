"""The generated reference pages can't drift from the code, and the user docs read as a reference:
no issue numbers, no chapters named after rounds of work."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
USER_DOCS = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]


def _generator():
    spec = importlib.util.spec_from_file_location("docs_reference", REPO / "scripts" / "docs_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cli_reference_is_generated_from_the_commands():
    generator = _generator()
    assert (REPO / "docs" / "cli.md").read_text() == generator.cli_markdown(), \
        "docs/cli.md is out of date: run `make docs-reference`"


def test_every_command_and_option_has_its_place_in_the_cli_reference():
    from mirrorspec.cli import cli

    text = (REPO / "docs" / "cli.md").read_text()
    for name, command in cli.commands.items():
        assert f"## `mirrorspec {name}`" in text
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--") and not getattr(param, "hidden", False):
                    assert opt in text, (name, opt)


def test_project_reference_tables_are_generated_from_the_schemas():
    generator = _generator()
    current = (REPO / "docs" / "project-reference.md").read_text()
    assert current == generator.project_reference_markdown(current), \
        "docs/project-reference.md's key tables are out of date: run `make docs-reference`"


# What a page written as history looks like: an issue number, a chapter named after a round of
# work or a stop, a dated chapter heading.
HISTORY = re.compile(
    r"\bissues? ?#?\d+\b|\(#\d+\)|\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|"
    r"tenth|eleventh|twelfth) (?:stop|round)\b|\bround \d+\b|\bthis (?:round|stop)\b",
    re.IGNORECASE)
DATED_HEADING = re.compile(r"^#+ .*\b20\d\d-\d\d-\d\d\b", re.MULTILINE)


def test_user_docs_speak_of_the_product_not_of_its_history():
    found = []
    for page in USER_DOCS:
        text = page.read_text()
        for match in HISTORY.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{page.relative_to(REPO)}:{line}: {match.group(0)!r}")
        for match in DATED_HEADING.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{page.relative_to(REPO)}:{line}: dated heading")
    assert found == [], "history in user docs (it belongs in CHANGELOG.md):\n" + "\n".join(found)


def test_the_help_of_every_command_renders():
    """What docs/cli.md is generated from is what users see: `--help` works for every command."""
    import click
    from click.testing import CliRunner

    from mirrorspec.cli import cli

    def paths(group, path=()):
        yield path
        if isinstance(group, click.Group):
            for name, command in group.commands.items():
                yield from paths(command, path + (name,))

    for path in paths(cli):
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage: " in result.output


def test_readme_says_how_to_put_mirrorspec_on_path_and_how_the_demo_keeps_its_folder():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "source .venv/bin/activate" in readme and '.venv/bin:$PATH' in readme
    assert "MIRRORSPEC_DEMO_KEEP=0" in readme


def test_every_page_is_in_the_site_navigation_and_the_index():
    """A page a user can't reach from the docs index or the site's menu doesn't exist for them."""
    import yaml

    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text())["nav"]

    def pages(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, list):
            for item in node:
                yield from pages(item)
        elif isinstance(node, dict):
            for value in node.values():
                yield from pages(value)

    in_nav = set(pages(nav))
    on_disk = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")
               if "schemas" not in p.parts}
    assert on_disk - in_nav == set(), "pages missing from mkdocs.yml's nav"
    index = (REPO / "docs" / "index.md").read_text()
    assert {p for p in on_disk if p != "index.md" and f"({p})" not in index} == set(), \
        "pages the docs index doesn't link"
