"""Generates the two reference pages that must never drift from the code:

- docs/cli.md from the click commands (`mirrorspec --help` and every subcommand's help);
- the key tables of docs/project-reference.md from the JSON Schemas (schemas/*.schema.json).

    python scripts/docs_reference.py          # rewrite both pages
    python scripts/docs_reference.py --check  # exit 1 naming the page that differs (CI, tests)

`make docs-reference` runs the first form; tests/unit/repository/test_reference_docs.py the second. The
prose of project-reference.md is hand-written; only the blocks between
`<!-- generated from schemas/NAME.schema.json -->` and `<!-- end generated -->` are replaced.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
from pathlib import Path
from typing import Any, Iterator

import click

REPO = Path(__file__).resolve().parents[1]
CLI_DOC = REPO / "docs" / "cli.md"
PROJECT_DOC = REPO / "docs" / "project-reference.md"
SCHEMAS = REPO / "schemas"

BLOCK = re.compile(r"(<!-- generated from schemas/(\w+)\.schema\.json -->\n)(.*?)(<!-- end generated -->)",
                   re.DOTALL)


# --- docs/cli.md ------------------------------------------------------------------------------

def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _help_text(command: click.Command) -> str:
    text = inspect.cleandoc(command.help or "")
    return "\n".join(line for line in text.splitlines() if line.strip() != "\b").strip()


def _commands(group: click.Command, path: list[str], parent: click.Context | None = None
              ) -> Iterator[tuple[list[str], click.Command, click.Context]]:
    ctx = click.Context(group, info_name=path[-1], parent=parent,
                        **(group.context_settings if parent is None else {}))
    yield path, group, ctx
    if isinstance(group, click.Group):
        for name in sorted(group.commands):
            yield from _commands(group.commands[name], [*path, name], ctx)


def _options_table(command: click.Command, ctx: click.Context) -> list[str]:
    rows = []
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        flags, meaning = record
        rows.append(f"| `{_cell(flags)}` | {_cell(meaning)} |")
    if not rows:
        return []
    return ["| option | meaning |", "|---|---|", *rows, ""]


def _arguments(command: click.Command) -> list[str]:
    names = [p.human_readable_name for p in command.params if isinstance(p, click.Argument)]
    return [f"Arguments: {', '.join(f'`{n}`' for n in names)}.", ""] if names else []


def cli_markdown() -> str:
    """docs/cli.md: every command, its usage, what it does and each option, as `--help` says."""
    from mirrorspec.cli import cli

    lines = [
        "# Command-line reference",
        "",
        "Every `mirrorspec` command with its options, exactly as `mirrorspec COMMAND --help` prints",
        "them. This page is generated from the commands (`make docs-reference`); a test fails when",
        "it and the code differ. The guides explain the tasks these commands serve: start at the",
        "[docs index](index.md).",
        "",
        "Exit codes: 0 ok; 1 a user or project error, or a table that failed; 2 an internal error",
        "(its traceback goes to a log file the message names) or a usage error; 3",
        "`status --stale-after` found the mirror stale.",
        "",
    ]
    for path, command, ctx in _commands(cli, ["mirrorspec"]):
        name = " ".join(path)
        pieces = " ".join(command.collect_usage_pieces(ctx))
        lines += [f"## `{name}`", ""]
        help_text = _help_text(command)
        if help_text:
            lines += [help_text, ""]
        lines += ["```", f"{name} {pieces}".rstrip(), "```", ""]
        lines += _arguments(command)
        lines += _options_table(command, ctx)
        if isinstance(command, click.Group) and command.commands:
            subs = ", ".join(f"[`{sub}`](#{_anchor(f'{name} {sub}')})"
                             for sub in sorted(command.commands))
            lines += [f"Commands: {subs}.", ""]
    return "\n".join(lines).rstrip() + "\n"


def _anchor(heading: str) -> str:
    """The anchor mkdocs (Python-Markdown's toc) gives a heading `mirrorspec docs serve`."""
    return re.sub(r"[\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower())


# --- docs/project-reference.md ------------------------------------------------------------------

def _load(name: str) -> dict[str, Any]:
    return json.loads((SCHEMAS / f"{name}.schema.json").read_text())


def _type_text(node: dict[str, Any]) -> str:
    if "x-doc-type" in node:
        return str(node["x-doc-type"])
    kind = node.get("type")
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    if isinstance(kind, list):
        return " or ".join(str(k) for k in kind)
    return {"array": "list", "object": "mapping", None: "any"}.get(kind, str(kind))


def _default_text(node: dict[str, Any], required: bool) -> str:
    if "x-doc-default" in node:
        return str(node["x-doc-default"])
    if "default" in node:
        return f"`{json.dumps(node['default'])}`"
    return "required" if required else "none"


def walk(schema: Any, root: dict[str, Any], prefix: str = "",
         required: frozenset[str] = frozenset()) -> Iterator[tuple[str, dict[str, Any], bool]]:
    """(dotted key path, schema node, required) of every key a schema allows, depth first, the
    way a YAML file nests them: `a.b`, `list[].key`, `<name>` for a free-form mapping's keys
    (`x-doc-key-name` on the mapping names it). Local `$ref`s and if/then/else branches are
    followed; a key reached twice is yielded each time (the caller keeps the first)."""
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        yield from walk(target, root, prefix, required)
    needed = frozenset(schema.get("required", [])) | required
    for key, sub in schema.get("properties", {}).items():
        if not isinstance(sub, dict):
            continue
        path = f"{prefix}.{key}" if prefix else key
        yield path, sub, key in needed
        yield from walk(sub, root, path)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        name = schema.get("x-doc-key-name", "*")
        path = f"{prefix}.{name}" if prefix else name
        yield path, extra, False
        yield from walk(extra, root, path)
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], root, prefix + "[]")
    for branch in ("then", "else"):
        yield from walk(schema.get(branch), root, prefix, required)


def schema_table(name: str) -> str:
    """The key table of one schema: a row per key that carries its reference text
    (`markdownDescription`, which editors show on hover too), in the schema's order."""
    root = _load(name)
    rows: dict[str, str] = {}
    for path, node, required in walk(root, root):
        if path in rows or "markdownDescription" not in node:
            continue
        rows[path] = (f"| `{path}` | {_type_text(node)} | {_default_text(node, required)} | "
                      f"{node['markdownDescription']} |")
    return "\n".join(["| key | type | default | meaning |", "|---|---|---|---|", *rows.values()]) + "\n"


def project_reference_markdown(current: str) -> str:
    """project-reference.md with each generated block rebuilt from its schema."""
    return BLOCK.sub(lambda m: m.group(1) + schema_table(m.group(2)) + m.group(4), current)


# --- entry point --------------------------------------------------------------------------------

def generated() -> dict[Path, str]:
    """Each generated page and the text it must hold."""
    return {CLI_DOC: cli_markdown(),
            PROJECT_DOC: project_reference_markdown(PROJECT_DOC.read_text())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when a page differs")
    args = parser.parse_args(argv)
    stale = []
    for path, text in generated().items():
        if path.exists() and path.read_text() == text:
            continue
        if args.check:
            stale.append(path.relative_to(REPO))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(REPO)}")
    if stale:
        print(f"out of date: {', '.join(map(str, stale))}; run `make docs-reference`",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
