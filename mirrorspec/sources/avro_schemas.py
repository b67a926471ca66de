"""Where an Avro Debezium feed's schemas come from: `.avsc` files named in the YAML, or a
Confluent-compatible schema registry (`GET /schemas/ids/{id}`), and how its records are read.

`source.options.avro` (see docs/sources/debezium.md, "Avro-encoded events"):
  encoding: json | confluent | container
                                 Avro JSON (console-consumer dumps), wire-format messages, or
                                 Avro object container files (a sink connector's .avro files)
  value_schema: <file.avsc>      the writer's schema of JSON dumps (else wrappers by shape)
  schemas: {<id>: <file.avsc>}   schema ids of wire-format messages, from files
  schema_registry_url, schema_registry_username, schema_registry_password,
  schema_registry_timeout_seconds (default 10)
Relative `.avsc` paths are resolved against the project folder at compile time.
"""

from __future__ import annotations

import base64
import io
import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import avro

JSON, CONFLUENT, CONTAINER = "json", "confluent", "container"
DEFAULT_TIMEOUT = 10.0


@dataclass(frozen=True)
class AvroConfig:
    """`source.options.avro`, validated by the JSON Schema; secrets resolved at run time."""

    encoding: str = JSON
    value_schema: str | None = None
    schemas: dict[int, str] = field(default_factory=dict)
    registry_url: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout: float = DEFAULT_TIMEOUT


def avro_config(options: dict[str, Any] | None) -> AvroConfig | None:
    """The table's Avro configuration, or None for a JSON (JsonConverter) feed."""
    block = (options or {}).get("avro")
    if not isinstance(block, dict):
        return None
    from mirrorspec.artifacts.plan import resolve_secrets

    block = resolve_secrets(dict(block))
    return AvroConfig(
        encoding=str(block.get("encoding", JSON)),
        value_schema=block.get("value_schema"),
        schemas={int(k): str(v) for k, v in (block.get("schemas") or {}).items()},
        registry_url=block.get("schema_registry_url"),
        username=block.get("schema_registry_username"),
        password=block.get("schema_registry_password"),
        timeout=float(block.get("schema_registry_timeout_seconds", DEFAULT_TIMEOUT)))


def is_wire_format(options: dict[str, Any] | None) -> bool:
    """True when a table's messages are Confluent wire-format bytes (staged as base64 lines)."""
    block = (options or {}).get("avro")
    return isinstance(block, dict) and block.get("encoding") == CONFLUENT


def resolve_paths(options: dict[str, Any], project_dir: str) -> dict[str, Any]:
    """`options` with the `.avsc` paths of `avro` made absolute (relative to the project)."""
    block = options.get("avro")
    if not isinstance(block, dict):
        return options

    def absolute(path: Any) -> Any:
        if not isinstance(path, str) or "://" in path or os.path.isabs(path):
            return path
        return os.path.normpath(os.path.join(project_dir, path))

    block = dict(block)
    if "value_schema" in block:
        block["value_schema"] = absolute(block["value_schema"])
    if isinstance(block.get("schemas"), dict):
        block["schemas"] = {k: absolute(v) for k, v in block["schemas"].items()}
    return {**options, "avro": block}


def _public(url: str) -> str:
    """A registry URL without credentials, for messages."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class Schema:
    """One writer's schema: the fastavro-parsed form (logical types dropped) and the Connect
    field schema the Debezium parser types columns with."""

    avro: Any
    parsed: Any
    connect: dict[str, Any]
    names: dict[str, Any]


def schema_of(text_or_doc: Any) -> Schema:
    """A Schema from an Avro schema (JSON text or parsed JSON). Raises ValueError."""
    import fastavro
    from fastavro.schema import SchemaParseException, UnknownType

    doc = json.loads(text_or_doc) if isinstance(text_or_doc, str) else text_or_doc
    try:
        parsed = fastavro.parse_schema(avro.without_logical_types(doc))
    except (SchemaParseException, UnknownType, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"not an Avro schema: {exc}") from None
    names = avro.named_types(doc)
    return Schema(doc, parsed, avro.connect_schema(doc, names), names)


def read_schema_file(path: str) -> Schema:
    """The Schema in an `.avsc` file; raises SourceError naming the file."""
    try:
        with open(path, encoding="utf-8") as handle:
            return schema_of(handle.read())
    except OSError as exc:
        raise SourceError(f"cannot read the Avro schema file: {exc.strerror}", file=path,
                          hint="fix source.options.avro (paths are relative to the project)"
                          ) from None
    except ValueError as exc:
        raise SourceError(f"not an Avro schema: {exc}", file=path) from None


class SchemaLookup:
    """Schemas by id: the `.avsc` files of `schemas`, else the registry (cached)."""

    def __init__(self, config: AvroConfig, opener: Callable[..., Any] | None = None):
        self.config = config
        self._cache: dict[int, Schema] = {}
        self._open = opener or urllib.request.urlopen

    def get(self, schema_id: int, file: str, line: int) -> Schema:
        """The schema of `schema_id`; SourceError located at file:line when it can't be had."""
        found = self._cache.get(schema_id)
        if found is None:
            path = self.config.schemas.get(schema_id)
            found = read_schema_file(path) if path else self._fetch(schema_id, file, line)
            self._cache[schema_id] = found
        return found

    def _fetch(self, schema_id: int, file: str, line: int) -> Schema:
        url = self.config.registry_url
        if not url:
            raise SourceError(f"schema id {schema_id} is not in source.options.avro.schemas "
                              "and no schema registry is configured", file=file, line=line,
                              hint="add the id's .avsc file under avro.schemas, or set "
                                   "avro.schema_registry_url")
        request = urllib.request.Request(f"{url.rstrip('/')}/schemas/ids/{schema_id}",
                                         headers={"Accept": "application/vnd.schemaregistry.v1"
                                                            "+json, application/json"})
        if self.config.username is not None:
            token = f"{self.config.username}:{self.config.password or ''}".encode("utf-8")
            request.add_header("Authorization", "Basic " + base64.b64encode(token).decode())
        where = _public(url)
        try:
            with self._open(request, timeout=self.config.timeout) as response:
                body = json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                raise SourceError(f"schema id {schema_id} is unknown to the schema registry "
                                  f"at {where}", file=file, line=line,
                                  hint="the message was written with a schema this registry "
                                       "doesn't have: point avro.schema_registry_url at the "
                                       "producer's registry") from None
            raise SourceError(f"schema registry at {where} answered HTTP {exc.code} for schema "
                              f"id {schema_id}", file=file, line=line,
                              hint="check the registry and its credentials; nothing of the "
                                   "batch was published") from None
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", exc)
            raise SourceError(f"schema registry at {where} is unreachable for schema id "
                              f"{schema_id} ({reason})", file=file, line=line,
                              hint="start or reach the registry and rerun; nothing of the "
                                   "batch was published") from None
        kind = body.get("schemaType", "AVRO") if isinstance(body, dict) else None
        if kind != "AVRO" or not isinstance(body.get("schema"), str):
            raise SourceError(f"schema id {schema_id} at {where} is not an Avro schema "
                              f"({kind})", file=file, line=line)
        try:
            return schema_of(body["schema"])
        except ValueError as exc:
            raise SourceError(f"schema id {schema_id} at {where}: {exc}", file=file,
                              line=line) from None


# --- records ------------------------------------------------------------------------------------

def wire_records(data: bytes, file: str, lookup: SchemaLookup) -> Iterator[tuple[int, Any]]:
    """(line, Kafka record) of a file of wire-format messages (`avro.wire_lines`), each side
    decoded with its schema into a `{schema, payload}` wrapper the Debezium parser reads."""
    for line, key, value in avro.wire_lines(data, file):
        record: dict[str, Any] = {"key": None, "value": None}
        if value is not None:
            record["value"] = _decoded(value, "value", file, line, lookup)
        if key is not None:
            if key[:1] == bytes([avro.MAGIC]) and len(key) >= 5:
                record["key"] = _decoded(key, "key", file, line, lookup)
            else:  # a StringConverter/JsonConverter key
                try:
                    record["key"] = json.loads(key.decode("utf-8"))
                except (UnicodeDecodeError, ValueError):
                    record["key"] = None
        yield line, record


def _decoded(message: bytes, what: str, file: str, line: int, lookup: SchemaLookup) -> Any:
    try:
        schema_id, body = avro.split_wire(message, what)
    except ValueError as exc:
        raise SourceError(str(exc), file=file, line=line,
                          hint="set source.options.avro.encoding to json for "
                               "console-consumer dumps") from None
    schema = lookup.get(schema_id, file, line)
    try:
        payload = avro.decode_body(body, schema.parsed)
    except (EOFError, ValueError, TypeError, IndexError, KeyError, OverflowError) as exc:
        raise SourceError(f"the {what} doesn't decode with schema id {schema_id}: "
                          f"{type(exc).__name__}: {exc}", file=file, line=line,
                          hint="the registry's schema for this id is not the writer's") from None
    return {"schema": schema.connect, "payload": payload}


def container_records(data: bytes, file: str) -> Iterator[tuple[int, Any]]:
    """(record number, `{schema, payload}`) of an Avro object container file; the writer's
    schema is in the file (fastavro's logical-type values are read by the Debezium parser)."""
    import fastavro

    try:
        records = fastavro.reader(io.BytesIO(data))
        schema = schema_of(records.writer_schema)
        for number, record in enumerate(records, start=1):
            yield number, {"schema": schema.connect, "payload": record}
    except (EOFError, ValueError, TypeError, IndexError, KeyError, OverflowError) as exc:
        raise SourceError(f"not a readable Avro container file: {type(exc).__name__}: {exc}",
                          file=file, hint="set source.options.avro.encoding to the files' "
                                          "encoding") from None


def json_records(records: Iterator[tuple[int, Any]], file: str, schema: Schema | None
                 ) -> Iterator[tuple[int, Any]]:
    """Avro JSON-encoded records (values, or `{key, value}` records) without union wrappers:
    by the writer's schema when given, else by shape."""
    for line, raw in records:
        if isinstance(raw, dict) and set(raw) == {"key", "value"}:
            key, value = raw["key"], raw["value"]
            yield line, {"key": avro.unwrap_by_shape(key),
                         "value": _json_value(value, file, line, schema)}
        else:
            yield line, _json_value(raw, file, line, schema)


def _json_value(value: Any, file: str, line: int, schema: Schema | None) -> Any:
    if value is None:
        return None
    if schema is None:
        return avro.unwrap_by_shape(value)
    try:
        payload = avro.unwrap_with_schema(value, schema.avro, schema.names)
    except (ValueError, TypeError, AttributeError) as exc:
        raise SourceError(f"the value doesn't match avro.value_schema: {exc}", file=file,
                          line=line, hint="point value_schema at the writer's schema") from None
    return {"schema": schema.connect, "payload": payload}
