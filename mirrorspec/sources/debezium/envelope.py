"""A Debezium message → its change event: the envelope (`before`, `after`, `source`, `op`,
`ts_ms`), with or without the JsonConverter `{schema, payload}` wrapper, optionally inside a
Kafka record `{key, value}`; messages that change no row (`Control`: schema changes, heartbeats,
transaction boundaries); ExtractNewRecordState ("unwrapped") rows; the records of a feed file
(JSON documents or `key<TAB>value` lines). Shapes from Debezium's connector documentation
(tests/fixtures/debezium/README.md)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import avro
from mirrorspec.sources.base import iter_json_documents, to_boolean

MONGO_ID = "_id"


@dataclass
class Event:
    """One Debezium change event, unwrapped."""

    line: int
    envelope: dict[str, Any]
    value_schema: dict[str, Any] | None
    key: Any = None
    key_schema: dict[str, Any] | None = None


def _unwrap(value: Any) -> tuple[Any, dict[str, Any] | None]:
    """(payload, schema) of a JsonConverter value (wrapped or not, or a JSON-encoded string)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return value, None
    if isinstance(value, dict) and "payload" in value and set(value) <= {"schema", "payload"}:
        schema = value.get("schema")
        return value.get("payload"), schema if isinstance(schema, dict) else None
    return value, None


@dataclass(frozen=True)
class Control:
    """A message of a Debezium topic that changes no row: `kind` is one of CONTROL_KINDS."""

    line: int
    kind: str


SCHEMA_CHANGE = "schema_change"
HEARTBEAT = "heartbeat"
TRANSACTION = "transaction"
CONTROL_KINDS = (SCHEMA_CHANGE, HEARTBEAT, TRANSACTION)
_HEARTBEAT_SCHEMA = "io.debezium.connector.common.Heartbeat"
_TRANSACTION_SCHEMA = "io.debezium.connector.common.TransactionMetadataValue"
_SCHEMA_CHANGE_SCHEMA = ".SchemaChangeValue"


def control_kind(payload: Any, schema: dict[str, Any] | None) -> str | None:
    """Which message without `op` this is: a schema change (`ddl`/`tableChanges`, the schema
    change topic and schema history), a heartbeat (`{"ts_ms": …}`, schema
    io.debezium.connector.common.Heartbeat) or a transaction boundary (`status` BEGIN/END); or
    None for anything else. Shapes from Debezium's connector documentation (tests/fixtures/
    debezium/README.md)."""
    name = str((schema or {}).get("name") or "")
    if not isinstance(payload, dict):
        return None
    if name.endswith(_SCHEMA_CHANGE_SCHEMA) or "tableChanges" in payload or (
            "ddl" in payload and {"databaseName", "source"} & set(payload)):
        return SCHEMA_CHANGE
    if name.endswith(_HEARTBEAT_SCHEMA) or set(payload) == {"ts_ms"}:
        return HEARTBEAT
    if name.endswith(_TRANSACTION_SCHEMA) or (
            payload.get("status") in ("BEGIN", "END") and "id" in payload
            and {"event_count", "data_collections"} & set(payload)):
        return TRANSACTION
    return None


def to_event(line: int, raw: Any, file: str, unwrapped: bool = False) -> Event | Control | None:
    """The event of one JSON value, a Control for a message that changes no row (schema change,
    heartbeat, transaction boundary), or None for a tombstone. Raises SourceError otherwise.

    ExtractNewRecordState ("unwrapped") rows are recognised by their `__`-prefixed fields
    (`add.fields`, `delete.handling.mode=rewrite`), or taken as such with `unwrapped`."""
    key = key_schema = None
    if isinstance(raw, dict) and "value" in raw and not {"op", "payload", "after"} & set(raw):
        key, key_schema = _unwrap(raw.get("key"))
        raw = raw.get("value")
    payload, schema = _unwrap(raw)
    if payload is None:
        return None  # tombstone: Kafka's compaction marker after a delete
    if schema is None and _in_avro_json(payload):
        payload = avro.unwrap_by_shape(payload)  # a kafka-avro-console-consumer dump
        key = avro.unwrap_by_shape(key)
    if isinstance(payload, dict) and "op" not in payload and (
            unwrapped or any(str(k).startswith(UNWRAPPED_PREFIX) for k in payload)):
        kind = control_kind(payload, schema)
        if kind is not None:
            return Control(line, kind)
        payload, schema = unwrapped_envelope(payload, schema)
    if isinstance(payload, dict) and "op" not in payload:
        kind = control_kind(payload, schema)
        if kind is not None:
            return Control(line, kind)
    if not isinstance(payload, dict) or "op" not in payload:
        fields = ", ".join(list(payload)[:8]) if isinstance(payload, dict) else type(payload).__name__
        raise SourceError(f"not a Debezium change event (no 'op' field; found {fields})",
                          file=file, line=line,
                          hint="point the source at the topic's change events only. A row of "
                               "ExtractNewRecordState (unwrapped) without __-prefixed fields is "
                               "read with source.options.unwrapped: true (better: configure "
                               "add.fields=op,source.ts_ms and delete.handling.mode=rewrite)")
    return Event(line, payload, schema, key, key_schema)


def _in_avro_json(payload: Any) -> bool:
    """Whether a value without a schema is in Avro's JSON encoding, told only where Debezium's
    own schemas say union: the envelope's `before`/`after`/`source` fields
    (`avro.envelope_in_avro_json`), or an ExtractNewRecordState row's added `__` fields (all
    optional). A plain JSON row whose map column looks like a wrapper stays as it is."""
    if avro.envelope_in_avro_json(payload):
        return True
    return isinstance(payload, dict) and "op" not in payload and any(
        str(k).startswith(UNWRAPPED_PREFIX) and avro.is_wrapper(v) for k, v in payload.items())


# --- formats found in the wild ------------------------------------------------------------------

UNWRAPPED_PREFIX = "__"
# `__source_<field>` and these short names (add.fields=op,table,lsn,ts_ms) feed the envelope.
_UNWRAPPED_SOURCE = {"table": "table", "db": "db", "schema": "schema", "lsn": "lsn", "scn": "scn"}


def unwrapped_envelope(row: dict[str, Any], schema: dict[str, Any] | None
                       ) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The Debezium envelope (and envelope schema) of an ExtractNewRecordState row.

    `__op` c/r/u/d keeps its meaning; `__deleted` true (delete.handling.mode=rewrite) is a
    delete whose row is the `before` image; a row without `__op` is an upsert (`_upsert`).
    `__source_ts_ms`, `__source_lsn`, … become `source` fields, so ordering works as for
    envelopes; `__ts_ms` is the envelope's ts_ms."""
    data = {k: v for k, v in row.items() if not str(k).startswith(UNWRAPPED_PREFIX)}
    extra = {str(k)[len(UNWRAPPED_PREFIX):]: v for k, v in row.items()
             if str(k).startswith(UNWRAPPED_PREFIX)}
    source: dict[str, Any] = {}
    for name, value in extra.items():
        if name.startswith("source_"):
            source[name[len("source_"):]] = value
        elif name in _UNWRAPPED_SOURCE:
            source.setdefault(_UNWRAPPED_SOURCE[name], value)
    deleted = extra.get("deleted")
    try:
        deleted = to_boolean(deleted) if deleted is not None else False
    except ValueError:
        deleted = False
    op = extra.get("op")
    if deleted or op == "d":
        envelope = {"op": "d", "before": data, "after": None}
    elif op in ("c", "r", "u"):
        envelope = {"op": op, "before": None, "after": data}
    else:
        envelope = {"op": "_upsert", "before": None, "after": data}
    envelope["source"] = source
    if "ts_ms" in extra:
        envelope["ts_ms"] = extra["ts_ms"]
    if schema and schema.get("fields"):
        fields = [f for f in schema["fields"]
                  if not str(f.get("field", "")).startswith(UNWRAPPED_PREFIX)]
        schema = {"type": "struct", "fields": [
            {"field": "before", "type": "struct", "optional": True, "fields": fields},
            {"field": "after", "type": "struct", "optional": True, "fields": fields}]}
    return envelope, schema


def iter_records(text: str, file: str):
    """Yield (line, value) for every record of a Debezium feed file: JSON documents (see
    iter_json_documents), or `key<TAB>value` lines as `kafka-console-consumer --property
    print.key=true` prints them, yielded as Kafka records `{"key": …, "value": …}` (an empty
    or `null` value is a tombstone)."""
    if not _is_key_value_text(text):
        yield from iter_json_documents(text, file)
        return
    decoder = json.JSONDecoder()
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip(" \r\ufeff")
        if not stripped.strip():
            continue
        parsed = _split_key_value(decoder, stripped)
        if parsed is None:
            raise SourceError("not a key<TAB>value line (the file's first record is one, so "
                              "every line must be)", file=file, line=number,
                              hint="fix the line, or write the topic without print.key")
        key, value_text = parsed
        value_text = value_text.strip()
        if value_text in ("", "null"):
            value: Any = None
        else:
            try:
                value = json.loads(value_text)
            except json.JSONDecodeError as exc:
                raise SourceError(f"malformed JSON value after the key: {exc.msg}", file=file,
                                  line=number) from None
        yield number, {"key": key, "value": value}


def _split_key_value(decoder: json.JSONDecoder, line: str) -> tuple[Any, str] | None:
    try:
        key, end = decoder.raw_decode(line)
    except json.JSONDecodeError:
        return None
    if end >= len(line) or line[end] != "\t":
        return None
    return key, line[end + 1:]


def _is_key_value_text(text: str) -> bool:
    """True when the first non-blank line is `<JSON>\t<JSON or nothing>` (not one document)."""
    for line in text.splitlines():
        stripped = line.strip(" \r\ufeff")
        if not stripped.strip():
            continue
        if "\t" not in stripped:
            return False
        try:
            json.loads(stripped)
            return False
        except json.JSONDecodeError:
            return _split_key_value(json.JSONDecoder(), stripped) is not None
    return False


def _struct_fields(schema: dict[str, Any] | None, name: str) -> list[dict[str, Any]] | None:
    """Fields of the envelope's `before`/`after` struct in a value schema."""
    if not schema:
        return None
    for field in schema.get("fields") or ():
        if field.get("field") == name and field.get("type") == "struct":
            return list(field.get("fields") or ())
    return None


def row_fields(schema: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    """The row's column schemas (from `after`, else `before`), or None without a schema."""
    return _struct_fields(schema, "after") or _struct_fields(schema, "before")
