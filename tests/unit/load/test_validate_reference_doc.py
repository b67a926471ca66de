"""docs/project-reference.md and the JSON Schemas can't drift: same keys on both sides."""

from __future__ import annotations

import re
from pathlib import Path

from mirrorspec.load.validate import load_schema

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "project-reference.md"
SECTIONS = {"## mirrorspec_project.yml": "project", "## profiles.yml": "profiles",
            "## tables/**/*.yml": "tables"}
ROW = re.compile(r"^\| `([^`]+)` \|")


def schema_keys(schema: dict, root: dict, prefix: str = "") -> set[str]:
    """Dotted key paths of a schema: `a.b`, `list[].key`, `*` for free-form mapping keys.
    Local `$ref`s are followed; references into another schema file are not (their keys are
    documented where that file is)."""
    keys: set[str] = set()
    if not isinstance(schema, dict):  # `true` / `false` schemas have no keys
        return keys
    ref = schema.get("$ref")
    if ref is not None:
        if ref.startswith("#/"):
            node = root
            for part in ref[2:].split("/"):
                node = node[part]
            keys |= schema_keys(node, root, prefix)
        elif "properties" not in schema:
            return keys
    for key, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{key}" if prefix else key
        keys.add(path)
        keys |= schema_keys(sub, root, path)
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        keys |= schema_keys(extra, root, f"{prefix}.*" if prefix else "*")
    if isinstance(schema.get("items"), dict):
        keys |= schema_keys(schema["items"], root, prefix + "[]")
    for branch in ("then", "else"):
        if isinstance(schema.get(branch), dict):
            keys |= schema_keys(schema[branch], root, prefix)
    return keys


def documented_keys() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {kind: set() for kind in SECTIONS.values()}
    kind = None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            kind = SECTIONS.get(line.strip())
            continue
        match = ROW.match(line)
        if kind and match and match.group(1) != "key":
            found[kind].add(re.sub(r"<[^>]+>", "*", match.group(1)))
    return found


def test_every_schema_key_is_documented_and_every_documented_key_exists():
    documented = documented_keys()
    for kind in SECTIONS.values():
        schema = load_schema(kind)
        keys = schema_keys(schema, schema)
        assert keys, kind
        assert sorted(keys - documented[kind]) == [], f"{kind}: keys missing from {DOC.name}"
        assert sorted(documented[kind] - keys) == [], f"{kind}: documented keys not in the schema"


def test_the_defaults_row_names_every_key_defaults_accept():
    defaults = load_schema("tables")["$defs"]["table_defaults"]["properties"]
    row = next(line for line in DOC.read_text().splitlines() if line.startswith("| `defaults` |"))
    for key in defaults:
        assert f"`{key}`" in row, key


def test_every_data_type_and_source_type_is_documented():
    text = DOC.read_text()
    table = load_schema("tables")["$defs"]
    for name in table["column"]["properties"]["type"]["enum"] + table["source"]["properties"]["type"]["enum"]:
        assert f"`{name}`" in text, name
