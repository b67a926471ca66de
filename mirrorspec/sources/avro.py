"""Avro-encoded Debezium events (pure Python): the JSON encoding and the Confluent wire format.

- Avro's JSON encoding, as `kafka-avro-console-consumer` prints a topic: a union value is
  wrapped in an object named by its branch (`{"string": "x"}`, `{"int": 5}`,
  `{"server1.dbo.t.Value": {…}}`; null stays `null`). With the writer's schema the wrappers are
  removed by the schema (`unwrap_with_schema`); without it by their shape (`unwrap_by_shape`):
  an object with one member named like an Avro type (a primitive name, or a dotted full name).
- The Confluent wire format: magic byte 0, a 4-byte big-endian schema id, the Avro binary body
  (`split_wire`); the schema comes from a schema registry or from `.avsc` files
  (`mirrorspec.sources.avro_schemas`).

Avro schemas become the Kafka Connect field schemas the Debezium parser already types columns
with (`connect_schema`): Debezium's AvroConverter keeps the Connect logical name in
`connect.name` (and `connect.parameters.scale`), and plain Avro logical types map to their
Connect equivalents, so an Avro feed lands the same column types as the JSON one.
"""

from __future__ import annotations

import base64
import binascii
import copy
import io
import struct
from typing import Any

from mirrorspec.base.errors import SourceError

PRIMITIVES = frozenset(("null", "boolean", "int", "long", "float", "double", "bytes", "string"))
MAGIC = 0
# Avro logical types → the Connect logical name that carries the same meaning
_LOGICAL = {
    "decimal": "org.apache.kafka.connect.data.Decimal",
    "date": "org.apache.kafka.connect.data.Date",
    "time-millis": "org.apache.kafka.connect.data.Time",
    "time-micros": "io.debezium.time.MicroTime",
    "timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "timestamp-micros": "io.debezium.time.MicroTimestamp",
    "timestamp-nanos": "io.debezium.time.NanoTimestamp",
    "local-timestamp-millis": "org.apache.kafka.connect.data.Timestamp",
    "local-timestamp-micros": "io.debezium.time.MicroTimestamp",
}
_CONNECT_TYPES = {"int": "int32", "long": "int64", "float": "float", "double": "double",
                  "boolean": "boolean", "string": "string", "bytes": "bytes", "null": "null"}


# --- schemas ------------------------------------------------------------------------------------

def _full_name(schema: dict[str, Any], namespace: str) -> tuple[str, str]:
    name = str(schema.get("name", ""))
    if "." in name:
        return name, name.rsplit(".", 1)[0]
    space = schema.get("namespace", namespace) or ""
    return (f"{space}.{name}" if space else name), space


def named_types(schema: Any, namespace: str = "", found: dict[str, Any] | None = None
                ) -> dict[str, Any]:
    """Every named type (record, enum, fixed) of a schema by full and short name."""
    found = {} if found is None else found
    if isinstance(schema, list):
        for branch in schema:
            named_types(branch, namespace, found)
    elif isinstance(schema, dict):
        kind = schema.get("type")
        if kind in ("record", "error", "enum", "fixed"):
            full, namespace = _full_name(schema, namespace)
            found[full] = schema
            found.setdefault(full.rsplit(".", 1)[-1], schema)
        for field in schema.get("fields") or ():
            named_types(field.get("type"), namespace, found)
        for key in ("items", "values"):
            if key in schema:
                named_types(schema[key], namespace, found)
        if isinstance(kind, (dict, list)):
            named_types(kind, namespace, found)
    return found


def connect_schema(schema: Any, names: dict[str, Any] | None = None) -> dict[str, Any]:
    """The Kafka Connect field schema (`type`, `name`, `parameters`, `optional`, `fields`) of an
    Avro schema, as the JsonConverter would have written it for the same Connect schema."""
    names = named_types(schema) if names is None else names
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        inner = connect_schema(branches[0], names) if len(branches) == 1 else {"type": "string"}
        return {**inner, "optional": "null" in schema or inner.get("optional", False)}
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return {"type": _CONNECT_TYPES[schema], "optional": False}
        if schema in names:
            return connect_schema(names[schema], names)
        return {"type": "string", "optional": False}
    kind = schema.get("type")
    if isinstance(kind, (dict, list)):
        return connect_schema(kind, names)
    out: dict[str, Any] = {"optional": False}
    if kind in ("record", "error"):
        out["type"] = "struct"
        out["fields"] = [{**connect_schema(f.get("type"), names), "field": f.get("name")}
                         for f in schema.get("fields") or ()]
    elif kind == "enum":
        out["type"] = "string"
    elif kind == "fixed":
        out["type"] = "bytes"
    elif kind in ("array", "map"):
        out["type"] = kind
    else:
        out["type"] = schema.get("connect.type") or _CONNECT_TYPES.get(str(kind), "string")
    logical = schema.get("logicalType")
    name = schema.get("connect.name") or _LOGICAL.get(str(logical or ""))
    if name:
        out["name"] = name
    parameters = dict(schema.get("connect.parameters") or {})
    if logical == "decimal" and "scale" in schema:
        parameters.setdefault("scale", str(schema["scale"]))
    if parameters:
        out["parameters"] = parameters
    return out


def without_logical_types(schema: Any) -> Any:
    """A copy of `schema` whose logical types are dropped, so a decoder returns the underlying
    values (bytes, ints) and the Debezium parser reads them as it reads JSON values."""
    schema = copy.deepcopy(schema)

    def strip(node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                strip(item)
        elif isinstance(node, dict):
            node.pop("logicalType", None)
            for value in node.values():
                strip(value)
    strip(schema)
    return schema


# --- the JSON encoding --------------------------------------------------------------------------

def is_wrapper(value: Any) -> bool:
    """An Avro JSON union wrapper: one member named like an Avro type."""
    if type(value) is not dict or len(value) != 1:
        return False
    name = next(iter(value))
    return isinstance(name, str) and (name in PRIMITIVES or ("." in name and " " not in name))


def looks_avro_json(value: Any) -> bool:
    """A Debezium envelope (or ExtractNewRecordState row) in Avro's JSON encoding: a member
    wrapped in its union branch (`"after": {"server1.inventory.customers.Value": {…}}`,
    `"name": {"string": "x"}`). By shape alone: a map column can look the same."""
    return isinstance(value, dict) and any(is_wrapper(v) for v in value.values())


def _record_wrapper(value: Any) -> bool:
    """`{"<full.record.Name>": {…}}`: a union branch that is a named record."""
    if type(value) is not dict or len(value) != 1:
        return False
    name, inner = next(iter(value.items()))
    return (isinstance(name, str) and "." in name and " " not in name
            and name not in PRIMITIVES and type(inner) is dict)


def envelope_in_avro_json(payload: Any) -> bool:
    """A Debezium envelope in Avro's JSON encoding, told by the envelope's own schema: its
    `before`/`after` are unions of null and the row record (so wrapped in the record's full
    name), and its `source` struct holds only plain values in JSON (a wrapped field there
    means Avro). A plain JSON envelope never looks like this, whatever its columns hold."""
    if not isinstance(payload, dict) or "op" not in payload:
        return False
    after, before = payload.get("after"), payload.get("before")
    if after is not None or before is not None:  # a row image tells (and is the cheap check)
        return _record_wrapper(after) or _record_wrapper(before)
    source = payload.get("source")
    return isinstance(source, dict) and any(is_wrapper(v) for v in source.values())


def unwrap_by_shape(value: Any) -> Any:
    """`value` without union wrappers, recognised by their shape (see is_wrapper)."""
    while is_wrapper(value):
        name, inner = next(iter(value.items()))
        if name == "bytes" and isinstance(inner, str):
            return _json_bytes(inner)
        value = inner
    if type(value) is dict:
        return {k: unwrap_by_shape(v) for k, v in value.items()}
    if type(value) is list:
        return [unwrap_by_shape(v) for v in value]
    return value


def _json_bytes(text: str) -> bytes:
    """Avro's JSON encoding of bytes: one code point 0-255 per byte."""
    try:
        return text.encode("latin-1")
    except UnicodeEncodeError:
        raise ValueError("bytes value has a character above \\u00ff") from None


def unwrap_with_schema(value: Any, schema: Any, names: dict[str, Any]) -> Any:
    """A datum in Avro's JSON encoding → plain values, guided by the writer's schema
    (unions unwrapped by branch name; bytes and fixed as bytes). Raises ValueError."""
    if isinstance(schema, list):
        if value is None:
            if "null" not in schema:
                raise ValueError("null for a union without null")
            return None
        if not isinstance(value, dict) or len(value) != 1:
            raise ValueError(f"union value {value!r} is not wrapped in its branch name")
        name, inner = next(iter(value.items()))
        for branch in schema:
            if _branch_name(branch, names) in (name, name.rsplit(".", 1)[-1]):
                return unwrap_with_schema(inner, branch, names)
        raise ValueError(f"union has no branch {name!r}")
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return _json_bytes(value) if schema == "bytes" and isinstance(value, str) else value
        return unwrap_with_schema(value, names.get(schema, "string"), names)
    kind = schema.get("type")
    if isinstance(kind, (dict, list)) or kind in PRIMITIVES:
        return unwrap_with_schema(value, kind, names)
    if kind in ("record", "error"):
        if not isinstance(value, dict):
            raise ValueError(f"record value {value!r} is not an object")
        return {f["name"]: unwrap_with_schema(value.get(f["name"]), f.get("type"), names)
                for f in schema.get("fields") or () if f.get("name") in value}
    if kind == "fixed":
        return _json_bytes(value) if isinstance(value, str) else value
    if kind == "array":
        return [unwrap_with_schema(v, schema.get("items"), names) for v in value or ()]
    if kind == "map":
        return {k: unwrap_with_schema(v, schema.get("values"), names)
                for k, v in (value or {}).items()}
    return value


def _branch_name(branch: Any, names: dict[str, Any]) -> str:
    if isinstance(branch, str):
        return branch
    kind = branch.get("type")
    if kind in ("record", "error", "enum", "fixed"):
        return _full_name(branch, "")[0] if "." in str(branch.get("name", "")) else \
            next((full for full, s in names.items() if s is branch and "." in full),
                 str(branch.get("name")))
    if kind in ("array", "map"):
        return str(kind)
    return _branch_name(kind, names) if isinstance(kind, (dict, list)) else str(kind)


# --- the Confluent wire format --------------------------------------------------------------------

def split_wire(message: bytes, what: str = "value") -> tuple[int, bytes]:
    """(schema id, Avro body) of a Confluent wire-format message. Raises ValueError."""
    if len(message) < 5 or message[0] != MAGIC:
        raise ValueError(f"the {what} is not in the Confluent wire format (magic byte 0, a "
                         "4-byte schema id, the Avro body)")
    return struct.unpack(">I", message[1:5])[0], message[5:]


def decode_body(body: bytes, parsed_schema: Any) -> Any:
    """The Avro binary `body` read with a fastavro-parsed schema (logical types dropped). The
    body must decode exactly: bytes left after the record mean the schema is not the writer's
    (e.g. a registry's schema with fewer fields), so ValueError rather than missing columns."""
    import fastavro

    stream = io.BytesIO(body)
    record = fastavro.schemaless_reader(stream, parsed_schema)
    left = len(body) - stream.tell()
    if left:
        raise ValueError(f"{left} byte(s) left after the record: the schema is not the one "
                         "the message was written with")
    return record


def wire_lines(data: bytes, file: str):
    """Yield (line, key bytes or None, value bytes or None) of a file of Confluent wire-format
    messages, one per line in base64 (`[key<TAB>]value`; an empty value is a tombstone)."""
    for number, raw in enumerate(data.splitlines(), start=1):
        line = raw.strip(b" \r\n")
        if not line:
            continue
        parts = line.split(b"\t")
        if len(parts) > 2:
            raise SourceError("more than one tab in a wire-format line", file=file, line=number,
                              hint="one message per line: base64 value, or base64 key, a tab, "
                                   "base64 value")
        # Spark's base64() breaks lines every 76 characters; staging turns breaks into spaces
        parts = [b"".join(p.split()) for p in parts]
        try:
            decoded = [base64.b64decode(p, validate=True) if p and p != b"null" else None
                       for p in parts]
        except (binascii.Error, ValueError):
            raise SourceError("a wire-format line is not base64", file=file, line=number,
                              hint="one message per line: base64 value, or base64 key, a tab, "
                                   "base64 value") from None
        key, value = (decoded[0], decoded[1]) if len(decoded) == 2 else (None, decoded[0])
        yield number, key, value
