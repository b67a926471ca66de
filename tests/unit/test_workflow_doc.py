"""docs/workflow.md's command reference against the CLI itself: every command and subcommand
(walking the click group), every flag (long and short), argument and environment variable is
documented, and the flag tables claim no flag the command lacks. Generic: a new command or flag
fails here until it is documented."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest

from mirrorspec.cli import cli

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "workflow.md"
REFERENCE = "## Command reference"


def commands(group: click.Command = cli, path: tuple[str, ...] = ()):
    """(path, command) of the group and every visible command under it, depth first."""
    yield path, group
    if isinstance(group, click.Group):
        for name in sorted(group.commands):
            command = group.commands[name]
            if not command.hidden:
                yield from commands(command, path + (name,))


def sections() -> dict[str, str]:
    """Heading text → body, for the `###` sections of the command reference."""
    text = DOC.read_text(encoding="utf-8")
    assert REFERENCE in text, f"{DOC} has no '{REFERENCE}' section"
    reference = text.split(REFERENCE, 1)[1].split("\n## ", 1)[0]
    out = {}
    for chunk in reference.split("\n### ")[1:]:
        heading, _, body = chunk.partition("\n")
        out[heading.strip()] = body
    return out


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def documented(path: tuple[str, ...]) -> str:
    """The command's own section plus the shared sections it links to."""
    all_sections = sections()
    heading = "`" + " ".join(("mirrorspec",) + path) + "`"
    assert heading in all_sections, (
        f"docs/workflow.md documents no `{' '.join(('mirrorspec',) + path)}`: add a "
        f"'### {heading}' section under '{REFERENCE}' with a usage block and a table of its flags")
    body = all_sections[heading]
    by_anchor = {anchor(h): b for h, b in all_sections.items()}
    linked = [by_anchor[a] for a in re.findall(r"\]\(#([\w-]+)\)", body) if a in by_anchor]
    return "\n".join([body, *linked])


GLOBAL_FLAGS = {flag for p in cli.params for flag in [*p.opts, *p.secondary_opts]}


def flags_of(command: click.Command) -> list[click.Parameter]:
    """Its parameters; on a subcommand, without the root group's flags it also accepts
    (those are documented once, under `mirrorspec`)."""
    params = [p for p in command.params if not getattr(p, "hidden", False)]
    if command is cli:
        return params
    return [p for p in params if p.expose_value or not set(p.opts) <= GLOBAL_FLAGS]


CASES = [pytest.param(path, command, id=" ".join(path) or "mirrorspec")
         for path, command in commands()]


@pytest.mark.parametrize("path,command", CASES)
def test_every_command_flag_argument_and_env_var_is_documented(path, command):
    text = documented(path)
    missing = []
    for param in flags_of(command):
        if isinstance(param, click.Argument):
            if param.human_readable_name.upper() not in text:
                missing.append(param.human_readable_name.upper())
            continue
        for flag in [*param.opts, *param.secondary_opts]:
            if not re.search(rf"`{re.escape(flag)}(?![\w-])", text):
                missing.append(flag)
        envvars = param.envvar if isinstance(param.envvar, (list, tuple)) else [param.envvar]
        for name in filter(None, envvars):
            if f"${name}" not in text:
                missing.append(f"${name}")
    assert not missing, (f"`mirrorspec {' '.join(path)}`: not in docs/workflow.md's command "
                         f"reference: {', '.join(missing)}")


@pytest.mark.parametrize("path,command", CASES)
def test_flag_tables_claim_no_flag_the_command_lacks(path, command):
    heading = "`" + " ".join(("mirrorspec",) + path) + "`"
    body = sections().get(heading, "")
    real = {flag for p in flags_of(command) if isinstance(p, click.Option)
            for flag in [*p.opts, *p.secondary_opts]} | {"--help", "-h"}
    claimed = set()
    for line in body.splitlines():
        if line.startswith("| `-"):
            claimed.update(re.findall(r"`(--?[\w-]+)`", line.split("|")[1]))
    assert claimed <= real, f"{heading}: documented but not a flag: {sorted(claimed - real)}"


def test_the_help_of_every_command_renders():
    """What the test compares with is what users see: `--help` works for every command."""
    from click.testing import CliRunner

    for path, _ in commands():
        result = CliRunner().invoke(cli, [*path, "--help"])
        assert result.exit_code == 0, (path, result.output)
        assert "Usage: " in result.output


def test_readme_says_how_to_put_mirrorspec_on_path_and_how_the_demo_keeps_its_folder():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "source .venv/bin/activate" in readme and '.venv/bin:$PATH' in readme
    assert "MIRRORSPEC_DEMO_KEEP=0" in readme
