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

The registry client sends credentials as HTTP Basic auth: `schema_registry_username`/`_password`,
or the user-info of the URL (`https://user:password@host`), as Confluent's clients do
(`basic.auth.credentials.source` URL or USER_INFO; confluent-kafka-python refuses both at once).
They are never printed, never followed to another host (a redirect is refused, not followed),
and one request takes at most the timeout in all (`base/deadline_http.py`).
"""

from __future__ import annotations

import base64
import io
import json
import os
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Iterator

from mirrorspec.base.deadline_http import request
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
    registry_url: str | None = field(default=None, repr=False)  # may hold user:password@
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
    """A URL without credentials, query or fragment, for messages (never raises)."""
    parts = urllib.parse.urlsplit(url)
    host = parts.netloc.rsplit("@", 1)[-1]
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, "", ""))


@dataclass(frozen=True)
class _Registry:
    """Where the registry is (no user-info) and the Authorization header to send, if any."""

    base: str
    authorization: str | None = field(default=None, repr=False)


def _registry(config: AvroConfig) -> _Registry:
    """The registry of `config`; ValueError (a message without credentials) for a URL that
    can't be used."""
    url = config.registry_url or ""
    parts = urllib.parse.urlsplit(url)
    try:
        parts.port  # noqa: B018 - a port that is not a number raises here
    except ValueError:
        raise ValueError(f"avro.schema_registry_url {_public(url)} has a port that is not a "
                         "number") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"avro.schema_registry_url {_public(url)} is not an http(s) URL")
    base = _public(url).rstrip("/")
    in_url = parts.username is not None or parts.password is not None
    if in_url and config.username is not None:
        raise ValueError("the schema registry's credentials are given twice: in "
                         "avro.schema_registry_url and in avro.schema_registry_username")
    if in_url:
        user = urllib.parse.unquote(parts.username or "")
        password = urllib.parse.unquote(parts.password or "")
    elif config.username is not None:
        user, password = config.username, config.password or ""
    else:
        return _Registry(base)
    token = base64.b64encode(f"{user}:{password}".encode("utf-8")).decode("ascii")
    return _Registry(base, "Basic " + token)


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

    def __init__(self, config: AvroConfig):
        self.config = config
        self._cache: dict[int, Schema] = {}

    def get(self, schema_id: int, file: str, line: int) -> Schema:
        """The schema of `schema_id`; SourceError located at file:line when it can't be had."""
        found = self._cache.get(schema_id)
        if found is None:
            path = self.config.schemas.get(schema_id)
            found = read_schema_file(path) if path else self._fetch(schema_id, file, line)
            self._cache[schema_id] = found
        return found

    def _fetch(self, schema_id: int, file: str, line: int) -> Schema:
        if not self.config.registry_url:
            raise SourceError(f"schema id {schema_id} is not in source.options.avro.schemas "
                              "and no schema registry is configured", file=file, line=line,
                              hint="add the id's .avsc file under avro.schemas, or set "
                                   "avro.schema_registry_url")
        try:
            registry = _registry(self.config)
        except ValueError as exc:
            raise SourceError(str(exc), file=file, line=line,
                              hint="write it as http(s)://host[:port][/path]; credentials in "
                                   "the URL (user:password@) or in schema_registry_username "
                                   "and schema_registry_password, not both") from None
        where = registry.base
        headers = {"Accept": "application/vnd.schemaregistry.v1+json, application/json"}
        if registry.authorization:
            headers["Authorization"] = registry.authorization
        timeout = self.config.timeout
        try:
            answer = request("GET", f"{where}/schemas/ids/{schema_id}", timeout, headers)
        except TimeoutError:
            raise SourceError(f"schema registry at {where} did not answer within {timeout:g}s "
                              f"for schema id {schema_id}", file=file, line=line,
                              hint="check the registry, or raise "
                                   "avro.schema_registry_timeout_seconds; nothing of the batch "
                                   "was published") from None
        except OSError as exc:
            reason = exc.strerror or str(exc) or type(exc).__name__  # never the URL
            raise SourceError(f"schema registry at {where} is unreachable for schema id "
                              f"{schema_id} ({reason})", file=file, line=line,
                              hint="start or reach the registry and rerun; nothing of the "
                                   "batch was published") from None
        if answer.status == 404:
            raise SourceError(f"schema id {schema_id} is unknown to the schema registry "
                              f"at {where}", file=file, line=line,
                              hint="the message was written with a schema this registry "
                                   "doesn't have: point avro.schema_registry_url at the "
                                   "producer's registry")
        if 300 <= answer.status < 400:
            location = answer.headers.get("Location") or ""
            moved = _public(urllib.parse.urljoin(where + "/", location)) if location else "?"
            raise SourceError(f"schema registry at {where} answered HTTP {answer.status} "
                              f"(a redirect to {moved}) for schema id {schema_id}; redirects "
                              "are not followed, so credentials never reach another host",
                              file=file, line=line,
                              hint="point avro.schema_registry_url at the registry itself")
        if answer.status != 200:
            raise SourceError(f"schema registry at {where} answered HTTP {answer.status} for "
                              f"schema id {schema_id}", file=file, line=line,
                              hint="check the registry and its credentials; nothing of the "
                                   "batch was published")
        try:
            body = json.loads(answer.body.decode("utf-8"))
        except ValueError:
            raise SourceError(f"schema registry at {where} answered schema id {schema_id} "
                              "with something that is not JSON", file=file, line=line) from None
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
