"""JSON Schema validation of loaded documents: every error, each located `file:line:col: key.path`.

The schemas live in `mirrorspec/schemas/` (also used by editors through yaml-language-server).
Validators are built once per process. jsonschema's messages are rewritten into plain ones with
a did-you-mean suggestion for unknown keys and misspelt values.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any, Callable, Protocol

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.load.yaml_doc import Document
from mirrorspec.openmirroring.mirroring import DATA_TYPES, data_type_suggestions
from mirrorspec.base.suggest import suggest

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError
    from referencing import Registry

SCHEMA_FILES = {
    "project": "project.schema.json",
    "tables": "tables.schema.json",
    "profiles": "profiles.schema.json",
}

_JSON_TYPES = {
    dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "an integer",
    float: "a number", type(None): "nothing (null)",
}
_EXPECTED = {
    "object": "a mapping", "array": "a list", "string": "a string", "boolean": "true or false",
    "integer": "an integer", "number": "a number", "null": "null",
}
_YAML11_BOOLS = {"yes", "no", "on", "off", "y", "n"}
# Backslash escapes people type unquoted; YAML only turns them into characters in "double quotes".
_ESCAPES = {"\\t": "\\t", "\\n": "\\n", "\\r": "\\r", "\\r\\n": "\\r\\n", "tab": "\\t"}


def schema_text(kind: str) -> str:
    """The JSON text of a schema ('project', 'tables' or 'profiles')."""
    folder = resources.files("mirrorspec").joinpath("schemas")
    return folder.joinpath(SCHEMA_FILES[kind]).read_text(encoding="utf-8")


@lru_cache(maxsize=None)
def load_schema(kind: str) -> dict[str, Any]:
    """A schema as a dict."""
    schema: dict[str, Any] = json.loads(schema_text(kind))
    return schema


@lru_cache(maxsize=None)
def _registry() -> Registry:
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012

    return Registry().with_resources(
        (file, Resource.from_contents(load_schema(name), default_specification=DRAFT202012))
        for name, file in SCHEMA_FILES.items())


@lru_cache(maxsize=None)
def _validator(kind: str) -> Draft202012Validator:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(load_schema(kind), registry=_registry())


@lru_cache(maxsize=None)
def _fast_check(kind: str) -> Callable[[Any], bool]:
    from mirrorspec.load.fastcheck import SchemaCompiler

    compiler = SchemaCompiler({file: load_schema(name) for name, file in SCHEMA_FILES.items()})
    return compiler.compile(SCHEMA_FILES[kind])


def validate_document(doc: Document, kind: str) -> list[MirrorspecError]:
    """All schema problems of `doc` against schema `kind`, in file order.

    A compiled check answers "valid?" quickly; jsonschema explains only the invalid documents.
    """
    if _fast_check(kind)(doc.data):
        return []
    validator = _validator(kind)
    problems: list[MirrorspecError] = []
    for error in validator.iter_errors(doc.data):
        problems.extend(_convert(doc, error))
    problems.sort(key=lambda p: (p.location.line or 0, p.location.col or 0) if p.location else (0, 0))
    return problems


class Locates(Protocol):
    """What turns a key path into a located problem (a Document, or a merged table's locator)."""

    def problem(self, path: tuple[Any, ...], message: str, at_key: bool = False,
                hint: str | None = None) -> MirrorspecError: ...


def source_option_problems(source: Any, where: Locates) -> list[MirrorspecError]:
    """Problems of a `source` mapping merged from `defaults:` and a table.

    Each document is validated on its own, so a type set in `defaults:` and options set in the
    table (or the other way round) meet only here.
    """
    from jsonschema import Draft202012Validator

    schema = {"$ref": f"{SCHEMA_FILES['tables']}#/$defs/source"}
    validator = Draft202012Validator(schema, registry=_registry())
    problems: list[MirrorspecError] = []
    for error in validator.iter_errors(source):
        problems.extend(_convert(where, error))
    return problems


def _suggest_value(value: str, allowed: list[Any]) -> str:
    """Did-you-mean for an enum value; DataTypes also know other systems' names (Integer)."""
    strings = [v for v in allowed if isinstance(v, str)]
    close = suggest(value, strings)
    if close or not set(DATA_TYPES) <= set(strings):
        return close
    types = data_type_suggestions(value)
    if not types:
        return ""
    return " (did you mean " + " or ".join(f"'{t}'" for t in types) + "?)"


def _describe(value: Any) -> str:
    kind = _JSON_TYPES.get(type(value), type(value).__name__)
    if isinstance(value, (dict, list)):
        return kind
    return f"{kind} {json.dumps(value, default=str)}"


def _convert(doc: Locates, error: ValidationError) -> list[MirrorspecError]:
    path = tuple(error.absolute_path)
    kind = error.validator
    expected_value: Any = error.validator_value
    instance = error.instance
    schema = error.schema if isinstance(error.schema, dict) else {}
    if kind == "additionalProperties" and isinstance(instance, dict):
        known = schema.get("properties", {})
        problems = []
        for key in instance:
            if key not in known:
                problems.append(doc.problem(path + (key,), f"unknown key '{key}'" + suggest(key, known),
                                            at_key=True))
        return problems
    if kind == "required" and isinstance(instance, dict):
        missing = [k for k in expected_value if k not in instance]
        return [doc.problem(path, f"missing required key '{k}'", at_key=True) for k in missing]
    if kind == "type":
        expected = expected_value
        expected = [expected] if isinstance(expected, str) else list(expected)
        wanted = " or ".join(_EXPECTED.get(t, t) for t in expected)
        hint = None
        if isinstance(instance, str) and "boolean" in expected and instance.lower() in _YAML11_BOOLS:
            hint = "write true or false: yes/no/on/off are text in YAML 1.2"
        elif isinstance(instance, str) and expected == ["object"] and path and isinstance(path[-1], int):
            hint = f"an item here is a mapping: write `- name: {instance}`"
        return [doc.problem(path, f"expected {wanted}, got {_describe(instance)}", hint=hint)]
    if kind == "enum":
        allowed = ", ".join(json.dumps(v) for v in expected_value)
        message = f"{json.dumps(instance, default=str)} is not one of {allowed}"
        hint = None
        if isinstance(instance, str):
            message += _suggest_value(instance, expected_value)
            if instance in _ESCAPES:
                hint = f'write the character in double quotes: "{_ESCAPES[instance]}"'
        return [doc.problem(path, message, hint=hint)]
    if kind == "const":
        return [doc.problem(path, f"must be {json.dumps(expected_value)}, "
                                  f"got {json.dumps(instance, default=str)}")]
    if kind in ("minProperties", "maxProperties") and path[-2:-1] == ("tests",):
        return [doc.problem(path, "a test is one key naming its type (unique, not_null, "
                                  "accepted_values, relationships, row_count, freshness)")]
    if kind == "minLength" and expected_value == 1:
        return [doc.problem(path, "must not be empty")]
    if kind == "minItems" and expected_value == 1:
        return [doc.problem(path, "must list at least one value")]
    if kind == "maxLength" and expected_value == 1:
        return [doc.problem(path, f"{json.dumps(instance)} must be one character or empty")]
    if kind == "pattern":
        described = error.schema.get("description") if isinstance(error.schema, dict) else None
        if described:  # the schema says in words what the pattern means
            return [doc.problem(path, f"{json.dumps(instance)} is not valid: {described}")]
        return [doc.problem(path, f"{json.dumps(instance)} does not match {expected_value}")]
    if error.schema is False and path[-1:] == ("source",):  # source: if path then no kafka
        return [doc.problem(path + ("kafka",), "source.path and source.kafka are exclusive: a "
                                               "feed is read from files or from Kafka topics",
                            at_key=True, hint="remove one of them")]
    return [doc.problem(path, error.message)]
