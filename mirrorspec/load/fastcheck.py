"""A JSON Schema → Python closure compiler for the keywords mirrorspec's schemas use.

It only answers "valid or not", quickly; jsonschema then explains the documents that aren't
(see `validate.py`). Compiling fails on any keyword it doesn't implement, so it can never be
more lenient than jsonschema on our schemas (the tests compare both on many documents).
"""

from __future__ import annotations

import re
from typing import Any, Callable

Check = Callable[[Any], bool]

# Keywords that describe and never constrain: JSON Schema's own, VS Code's `markdownDescription`
# (the reference text editors show on hover), and `x-…` extensions (the reference page's
# type and default columns: scripts/docs_reference.py).
_ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description", "default", "examples",
                "$comment", "markdownDescription"}
_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and v.is_integer()),
}


def _strict_equal_in(value: Any, allowed: list[Any]) -> bool:
    """jsonschema's enum equality: booleans never equal numbers."""
    for item in allowed:
        if isinstance(item, bool) or isinstance(value, bool):
            if isinstance(item, bool) and isinstance(value, bool) and item == value:
                return True
        elif isinstance(item, (int, float)) and isinstance(value, (int, float)):
            if item == value:
                return True
        elif type(item) is type(value) and item == value:
            return True
    return False


class SchemaCompiler:
    """Compiles schemas (and the `$ref`s between them) into checks."""

    def __init__(self, schemas: dict[str, dict[str, Any]]):
        self.schemas = schemas  # file name → schema
        self._cache: dict[tuple[str, str], Check] = {}

    def compile(self, file: str) -> Check:
        return self._ref(file, "#")

    def _ref(self, file: str, pointer: str) -> Check:
        key = (file, pointer)
        if key in self._cache:
            return self._cache[key]
        holder: list[Check] = []
        self._cache[key] = lambda v: holder[0](v)  # recursion-safe forward reference
        node: Any = self.schemas[file]
        for part in pointer.lstrip("#").strip("/").split("/"):
            if part:
                node = node[part.replace("~1", "/").replace("~0", "~")]
        check = self._schema(file, node)
        holder.append(check)
        self._cache[key] = check
        return check

    def _schema(self, file: str, schema: Any) -> Check:
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        checks: list[Check] = []
        for keyword, value in schema.items():
            if keyword in _ANNOTATIONS or keyword.startswith("x-") or keyword in ("then", "else"):
                continue
            checks.append(self._keyword(file, schema, keyword, value))
        if not checks:
            return lambda v: True
        if len(checks) == 1:
            return checks[0]
        return lambda v: all(check(v) for check in checks)

    def _keyword(self, file: str, schema: dict[str, Any], keyword: str, value: Any) -> Check:
        if keyword == "$ref":
            target_file, _, pointer = value.partition("#")
            return self._ref(target_file or file, "#" + pointer)
        if keyword == "type":
            names = [value] if isinstance(value, str) else list(value)
            tests = [_TYPES[name] for name in names]
            return lambda v: any(t(v) for t in tests)
        if keyword == "enum":
            allowed = list(value)
            if all(isinstance(a, str) for a in allowed):
                options = frozenset(allowed)
                return lambda v: isinstance(v, str) and v in options
            return lambda v: _strict_equal_in(v, allowed)
        if keyword == "const":
            return lambda v: _strict_equal_in(v, [value])
        if keyword == "properties":
            props = {name: self._schema(file, sub) for name, sub in value.items()}
            return lambda v: not isinstance(v, dict) or all(
                props[k](item) for k, item in v.items() if k in props)
        if keyword == "additionalProperties":
            known = frozenset(schema.get("properties", {}))
            if value is False:
                return lambda v: not isinstance(v, dict) or all(k in known for k in v)
            sub = self._schema(file, value)
            return lambda v: not isinstance(v, dict) or all(
                sub(item) for k, item in v.items() if k not in known)
        if keyword == "required":
            names = list(value)
            return lambda v: not isinstance(v, dict) or all(n in v for n in names)
        if keyword == "items":
            sub = self._schema(file, value)
            return lambda v: not isinstance(v, list) or all(sub(item) for item in v)
        if keyword == "minLength":
            return lambda v: not isinstance(v, str) or len(v) >= value
        if keyword == "maxLength":
            return lambda v: not isinstance(v, str) or len(v) <= value
        if keyword == "minItems":
            return lambda v: not isinstance(v, list) or len(v) >= value
        if keyword == "minProperties":
            return lambda v: not isinstance(v, dict) or len(v) >= value
        if keyword == "maxProperties":
            return lambda v: not isinstance(v, dict) or len(v) <= value
        if keyword == "pattern":
            regex = re.compile(value)
            return lambda v: not isinstance(v, str) or regex.search(v) is not None
        if keyword == "exclusiveMinimum":
            return lambda v: not _TYPES["number"](v) or v > value
        if keyword == "minimum":
            return lambda v: not _TYPES["number"](v) or v >= value
        if keyword == "if":
            condition = self._schema(file, value)
            then = self._schema(file, schema.get("then", True))
            otherwise = self._schema(file, schema.get("else", True))
            return lambda v: then(v) if condition(v) else otherwise(v)
        raise NotImplementedError(f"fastcheck: JSON Schema keyword {keyword!r} is not supported")
