"""Debezium JSON change events → canonical changes (`source: {type: debezium}`).

One event per line (NDJSON), pretty-printed/concatenated objects, or a JSON array per file. An
event is the Debezium envelope (`before`, `after`, `source`, `op`, `ts_ms`), with or without the
JsonConverter `{schema, payload}` wrapper, optionally inside a Kafka record `{key, value}`.

- `op` r/c → insert (0), u → update (1), d → delete (2, key from `before`), t → truncate (8);
  `m` (logical decoding messages) and tombstones (`null` values) are skipped.
- An update whose key differs between `before` and `after` → delete of the old key, then insert.
- `__debezium_unavailable_value` (Postgres TOAST, Oracle LOB placeholders) → the column is absent
  (`_present`), never the literal.
- Order: each connector's documented source position (`debezium_positions`), snapshot events
  first; ties by feed file and line. A position going backwards within a file is an error.

Options (`source.options`): `key_columns`, `decimal_handling` (double | string), `time_unit`
(ms | us | ns, for integer timestamps without a schema), `unavailable_value_placeholder`,
`table` (keep only events whose `source.table` — or `schema.table` — matches), `unwrapped`,
`avro` (Avro-encoded events: `avro.py`, `avro_schemas.py`). Avro JSON union wrappers found
without an `avro` block are removed by their shape.

This module is the pure parser (compile infers schemas with it; Spark workers run it); the Spark
reader is `mirrorspec.spark.publish.feeds.debezium`.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import gzip
import json
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Sequence

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import avro, avro_schemas, extended_json
from mirrorspec.sources.debezium_placeholders import DEFAULT as PLACEHOLDER
from mirrorspec.sources.debezium_placeholders import placeholder as placeholder_of
from mirrorspec.sources.debezium_positions import (PositionError, StreamCheck, delivery_of,
                                                   position_of, stream_of)
from mirrorspec.sources.delivery import DeliveryError, FileCheck, Marks, channel_of
from mirrorspec.sources.base import (
    OP_DELETE,
    OP_INSERT,
    OP_TRUNCATE,
    OP_UPDATE,
    OP_UPSERT,
    InferredColumn,
    InferredSchema,
    iter_json_documents,
    list_feed_files,
    to_boolean,
    value_converter,
)

TYPE_NAME = "debezium"
MONGO_ID = "_id"

# --- options ----------------------------------------------------------------------------------

_TIME_UNITS = {"ms": 1000, "us": 1, "ns": None}


@dataclass(frozen=True)
class DebeziumOptions:
    """`source.options` of a debezium table, validated."""

    key_columns: tuple[str, ...] = ()
    decimal_handling: str = "double"
    time_unit: str = "ms"
    placeholder: str = PLACEHOLDER
    table: str | None = None
    unwrapped: bool = False  # rows are ExtractNewRecordState output, even without __ fields


def parse_options(options: dict[str, Any] | None) -> DebeziumOptions:
    """`source.options` as DebeziumOptions. The JSON Schema (`$defs/debezium_options`) has
    checked names and values at validate time."""
    options = dict(options or {})
    keys = options.get("key_columns") or ()
    if isinstance(keys, str):
        keys = (keys,)
    return DebeziumOptions(
        key_columns=tuple(str(k) for k in keys),
        decimal_handling=str(options.get("decimal_handling", "double")),
        time_unit=str(options.get("time_unit", "ms")),
        placeholder=str(options.get("unavailable_value_placeholder", PLACEHOLDER)),
        table=str(options["table"]) if options.get("table") else None,
        unwrapped=bool(options.get("unwrapped", False)),
    )


# --- events -----------------------------------------------------------------------------------

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


# --- types ------------------------------------------------------------------------------------

_TS_MS = {"io.debezium.time.Timestamp", "org.apache.kafka.connect.data.Timestamp"}
_TS_US = {"io.debezium.time.MicroTimestamp"}
_TS_NS = {"io.debezium.time.NanoTimestamp"}
_TS_STR = {"io.debezium.time.ZonedTimestamp", "io.debezium.time.IsoTimestamp"}
_DATE_DAYS = {"io.debezium.time.Date", "org.apache.kafka.connect.data.Date"}
_DATE_STR = {"io.debezium.time.IsoDate"}
_TIME_MS = {"io.debezium.time.Time", "org.apache.kafka.connect.data.Time"}
_TIME_US = {"io.debezium.time.MicroTime"}
_TIME_NS = {"io.debezium.time.NanoTime"}
_TIME_STR = {"io.debezium.time.ZonedTime", "io.debezium.time.IsoTime"}
_DECIMAL = "org.apache.kafka.connect.data.Decimal"
_VAR_DECIMAL = "io.debezium.data.VariableScaleDecimal"
_WKB = {"io.debezium.data.geometry.Geometry", "io.debezium.data.geometry.Geography"}
# Kafka Connect schema types as the JsonConverter writes them (`float`, `double`), as Connect
# names them (`float32`, `float64`), and Avro's primitive names (`int`, `long`) for schemas
# converted from Avro. struct/array/map (and anything else) are kept as JSON text.
_PLAIN = {"int8": "Int16", "int16": "Int16", "int32": "Int32", "int64": "Int64",
          "int": "Int32", "long": "Int64",
          "float": "Single", "float32": "Single", "double": "Double", "float64": "Double",
          "boolean": "Boolean", "string": "String", "bytes": "ByteArray"}


def data_type_for(field: dict[str, Any], decimal_handling: str = "double") -> str:
    """The SchemaDefinition DataType a Debezium field schema maps to (see docs/sources/debezium.md)."""
    name = field.get("name") or ""
    if name in _TS_MS | _TS_US | _TS_NS | _TS_STR:
        return "DateTime"
    if name in _DATE_DAYS | _DATE_STR:
        return "IDate"
    if name in _TIME_MS | _TIME_US | _TIME_NS | _TIME_STR:
        return "String"
    if name in (_DECIMAL, _VAR_DECIMAL):
        return "Double" if decimal_handling == "double" else "String"
    if name in _WKB:
        return "ByteArray"  # the geometry's OGC Well-Known Binary (`wkb`); srid is dropped
    kind = field.get("type")
    if isinstance(kind, list):  # an Avro union such as ["null", "double"]
        kind = next((k for k in kind if isinstance(k, str) and k != "null"), None)
    return _PLAIN.get(kind if isinstance(kind, str) else "", "String")


@dataclass(frozen=True)
class _Kind:
    """How to decode a source value: the field's Connect type and logical name."""

    type: str | None
    name: str
    scale: int | None


def _kind(field: dict[str, Any] | None) -> _Kind:
    if not field:
        return _Kind(None, "", None)
    scale = (field.get("parameters") or {}).get("scale")
    return _Kind(field.get("type"), field.get("name") or "",
                 int(scale) if scale is not None else None)


class _Timestamp(int):
    """Microseconds since the epoch (UTC)."""


class _Date(int):
    """Days since the epoch."""


class _TimeOfDay(int):
    """Microseconds since midnight."""


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
_EPOCH_DATE = dt.date(1970, 1, 1)


def _micros(value: dt.datetime) -> int:
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def parse_timestamp(text: str) -> int:
    """Microseconds since the epoch of an ISO-8601 / `YYYY-MM-DD HH:MM:SS[.f]` text (UTC unless it
    carries an offset). Raises ValueError."""
    text = text.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    head, sep, frac = text.partition(".")
    if sep:
        # Python accepts at most 6 fractional digits: truncate nanoseconds, keep the offset.
        digits = len(frac) - len(frac.lstrip("0123456789"))
        frac = frac[:min(digits, 6)] + frac[digits:]
        text = head + "." + frac
    return _micros(dt.datetime.fromisoformat(text))


def parse_date(text: str) -> int:
    """Days since the epoch of `YYYY-MM-DD` (a timestamp text keeps its date). Raises ValueError."""
    text = text.strip()
    if len(text) > 11 and text[4:5] == "-":
        return parse_timestamp(text) // 86_400_000_000
    try:
        return (dt.date.fromisoformat(text) - _EPOCH_DATE).days
    except ValueError:
        # Oracle's default DATE text (DMS writes it: `4-Jun-14`)
        for pattern in ("%d-%b-%y", "%d-%b-%Y"):
            try:
                return (dt.datetime.strptime(text, pattern).date() - _EPOCH_DATE).days
            except ValueError:
                pass
        raise


def _bytes(value: Any) -> bytes:
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    return base64.b64decode(str(value), validate=True)


def _unscaled(value: Any) -> int:
    return int.from_bytes(_bytes(value), "big", signed=True)


def decode(value: Any, kind: _Kind) -> Any:
    """A Debezium JSON value → a Python value that carries its meaning (timestamps, dates,
    times and decimals as the helper types above). Raises ValueError."""
    if value is None:
        return None
    if isinstance(value, (decimal.Decimal, dt.date, dt.time, uuid.UUID)):
        return _native(value)  # an Avro decoder's logical-type object
    name = kind.name
    if name in _TS_MS:
        return _Timestamp(int(value) * 1000)
    if name in _TS_US:
        return _Timestamp(int(value))
    if name in _TS_NS:
        return _Timestamp(int(value) // 1000)
    if name in _TS_STR:
        return _Timestamp(parse_timestamp(str(value)))
    if name in _DATE_DAYS:
        return _Date(int(value))
    if name in _DATE_STR:
        return _Date(parse_date(str(value)))
    if name in _TIME_MS:
        return _TimeOfDay(int(value) * 1000)
    if name in _TIME_US:
        return _TimeOfDay(int(value))
    if name in _TIME_NS:
        return _TimeOfDay(int(value) // 1000)
    if name in (_DECIMAL, _VAR_DECIMAL) and isinstance(value, (int, float)) \
            and not isinstance(value, bool):
        return decimal.Decimal(str(value))  # the JsonConverter's decimal.format=NUMERIC
    if name == _DECIMAL and kind.type == "bytes":
        return decimal.Decimal(_unscaled(value)).scaleb(-(kind.scale or 0))
    if name == _VAR_DECIMAL and isinstance(value, dict):
        return _variable_decimal(value)
    if name in _WKB and isinstance(value, dict) and "wkb" in value:
        return _bytes(value["wkb"])
    if kind.type == "bytes":
        return _bytes(value)
    return value


def _native(value: Any) -> Any:
    """A Python logical value as the helper types above (Decimal and UUID text unchanged)."""
    if isinstance(value, dt.datetime):
        return _Timestamp(_micros(value))
    if isinstance(value, dt.date):
        return _Date((value - _EPOCH_DATE).days)
    if isinstance(value, dt.time):
        return _TimeOfDay(((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000
                          + value.microsecond)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


def _variable_decimal(value: dict[str, Any]) -> decimal.Decimal:
    return decimal.Decimal(_unscaled(value["value"])).scaleb(-int(value.get("scale") or 0))


def _is_variable_decimal(value: Any) -> bool:
    """A schemaless VariableScaleDecimal: `{"scale": 2, "value": "<base64>"}`."""
    return (isinstance(value, dict) and len(value) == 2 and "scale" in value
            and isinstance(value.get("value"), str))


_INT_RANGES = {"Int16": 1 << 15, "Int32": 1 << 31, "Int64": 1 << 63}
# The strict number rule every reader shares (`sources.base.value_converter`): integers from
# JSON integers, integral JSON numbers and ASCII digit text; never `true`, `"1_000"`, `"1e3"`,
# other scripts' digits or blanks.
_NUMBERS = {data_type: value_converter(data_type)
            for data_type in ("Int16", "Int32", "Int64", "Double", "Single")}


def _to_number(value: Any, data_type: str) -> int | float:
    """A value of an integer or number column by the shared rule (`_NUMBERS`), after what only
    Debezium decodes: an Avro or VariableScaleDecimal `Decimal` (an integer column takes it only
    when it is whole). ValueError with the reason otherwise."""
    if isinstance(value, decimal.Decimal):
        if data_type not in _INT_RANGES:
            return float(value)
        if not value.is_finite() or value != value.to_integral_value():
            raise ValueError(f"{value} is not an integer")
        value = int(value)
    return _NUMBERS[data_type](value)


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dt.datetime):  # a MongoDB $date
        return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _Timestamp):
        return (_EPOCH + dt.timedelta(microseconds=int(value))).strftime("%Y-%m-%d %H:%M:%S.%f")
    if isinstance(value, _Date):
        return (_EPOCH_DATE + dt.timedelta(days=int(value))).isoformat()
    if isinstance(value, _TimeOfDay):
        seconds, micros = divmod(int(value), 1_000_000)
        hours, rest = divmod(seconds, 3600)
        return f"{hours:02d}:{rest // 60:02d}:{rest % 60:02d}.{micros:06d}"
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, sort_keys=False)
    return str(value)


def coerce(value: Any, data_type: str, int_time_unit: str = "ms",
           binary: str = "base64") -> Any:
    """A decoded value → what the Arrow column of `data_type` holds: int, float, bool, str, bytes,
    microseconds (DateTime/ITime) or days (IDate). Strings are parsed. Raises ValueError."""
    if value is None:
        return None
    if data_type == "String":
        return _to_text(value)
    if data_type in _NUMBERS:
        if isinstance(value, (_Timestamp, _Date, _TimeOfDay)):  # a temporal value's number
            value = int(value)
        return _to_number(value, data_type)
    if data_type == "Boolean":
        if isinstance(value, float) and value in (0, 1):  # Debezium JSON may spell 1 as 1.0
            return bool(value)
        return to_boolean(value)
    if isinstance(value, dt.datetime):  # a MongoDB $date
        value = _Timestamp(_micros(value))
    if data_type in ("DateTime", "ITime"):
        if isinstance(value, _Timestamp):
            return int(value)
        if isinstance(value, _Date):
            return int(value) * 86_400_000_000
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a timestamp")
        if isinstance(value, int):
            if int_time_unit == "ns":
                return value // 1000
            return value * _TIME_UNITS[int_time_unit]
        return parse_timestamp(str(value))
    if data_type == "IDate":
        if isinstance(value, _Date):
            return int(value)
        if isinstance(value, _Timestamp):
            return int(value) // 86_400_000_000
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a date")
        if isinstance(value, int):
            return value
        return parse_date(str(value))
    if data_type == "ByteArray":
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        if binary == "hex":
            text = str(value).strip()
            if text[:2] in ("0x", "0X", "\\x"):
                text = text[2:]
            return binascii.unhexlify(text)
        return base64.b64decode(str(value), validate=True)
    raise ValueError(f"unknown DataType {data_type!r}")


_NO_KIND = _Kind(None, "", None)
_FAST_TYPES = {"String": str, "Int16": int, "Int32": int, "Int64": int, "Double": float,
               "Single": float, "Boolean": bool}


def _converter(kind: _Kind, data_type: str, time_unit: str) -> Callable[[Any], Any]:
    """decode + coerce for one column, with a fast path for values already of the right type."""
    plain = not kind.name and kind.type != "bytes"
    fast = _FAST_TYPES.get(data_type)
    limit = _INT_RANGES.get(data_type)

    def convert(value: Any) -> Any:
        if plain and fast is not None and type(value) is fast:
            if limit is None or -limit <= value < limit:
                return value
        if plain and data_type != "String" and _is_variable_decimal(value):
            value = _variable_decimal(value)
        return coerce(value if plain else decode(value, kind), data_type, time_unit)

    return convert


def is_unavailable(value: Any, placeholder: str = PLACEHOLDER) -> bool:
    """True for Debezium's "unchanged, not sent" placeholder in any of its forms
    (`debezium_placeholders`)."""
    return placeholder_of(placeholder).matches(value)


# --- events → canonical rows ------------------------------------------------------------------

@dataclass(frozen=True)
class TableShape:
    """What a parser needs of the table: its columns (name, DataType) and key columns."""

    columns: tuple[tuple[str, str], ...]
    key_columns: tuple[str, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _ in self.columns)


# A canonical row as the parsers emit it: column values in table order, then
# (op, order tuple, present list or None, file, line); EventParser adds the `_delivery` value.
Row = tuple


_PLACEHOLDER_TYPES = (str, list, dict, bytes, bytearray)


class EventParser:
    """Turns the events of one file into canonical rows for one table. `marks` are the
    delivery marks of earlier batches (`delivery.Marks`): events they cover, and events the
    file repeats, are re-sends and yield no rows (`delivery.FileCheck`)."""

    def __init__(self, shape: TableShape, options: DebeziumOptions, file: str,
                 marks: Marks | None = None):
        self.shape = shape
        self.options = options
        self.file = file
        self._last_fields: list | None = None
        self._last_converters: list | None = None
        self._plain = self._build_converters({})
        self._stream = StreamCheck()
        try:
            self._placeholder = placeholder_of(options.placeholder)
        except ValueError as exc:
            raise SourceError(str(exc), file=file,
                              hint="fix source.options.unavailable_value_placeholder") from None
        self._channel = channel_of(file)
        self._check = FileCheck(marks, keyed=bool(shape.key_columns), file=file)
        self._width = len(shape.columns)
        self._key_indexes = [shape.names.index(k) for k in shape.key_columns]
        self.resent = False  # whether the last event was a re-send (rows() returned none)

    def _converters(self, schema: dict[str, Any] | None) -> list[Callable[[Any], Any]]:
        """One converter per table column for events of `schema` (reused while the row schema
        stays equal, which it does from one event to the next)."""
        fields = row_fields(schema)
        if not fields:
            return self._plain
        if fields != self._last_fields:
            self._last_fields = fields
            self._last_converters = self._build_converters({f.get("field"): _kind(f)
                                                            for f in fields})
        return self._last_converters

    def _build_converters(self, kinds: dict[str, _Kind]) -> list[Callable[[Any], Any]]:
        return [_converter(kinds.get(name, _NO_KIND), data_type, self.options.time_unit)
                for name, data_type in self.shape.columns]

    def _matches_table(self, envelope: dict[str, Any]) -> bool:
        wanted = self.options.table
        if not wanted:
            return True
        source = envelope.get("source") or {}
        table = source.get("table") or source.get("collection")
        schema = source.get("schema") or source.get("db")
        return wanted in (table, f"{schema}.{table}")

    def _image(self, image: Any, event: Event, what: str, partial: bool) -> tuple[list, list | None]:
        """(values in table order, present names or None) of a `before`/`after` image."""
        if isinstance(image, str):  # MongoDB connectors send the document as JSON text
            image = self._document(image, event, what)
        if not isinstance(image, dict):
            raise SourceError(f"'{what}' is not an object", file=self.file, line=event.line)
        converters = self._converters(event.value_schema)
        values: list = []
        present: list[str] = []
        absent = False
        unavailable = self._placeholder.matches
        for (name, data_type), convert in zip(self.shape.columns, converters):
            if name not in image:
                if partial:
                    absent = True
                    values.append(None)
                    continue
                values.append(None)
                present.append(name)
                continue
            raw = image[name]
            if type(raw) is dict and raw and str(next(iter(raw))).startswith("$"):
                raw = self._extended(raw, event, what)  # an Extended-JSON wrapper
            if raw is None:
                values.append(None)
                present.append(name)
                continue
            if type(raw) in _PLACEHOLDER_TYPES and unavailable(raw):
                absent = True
                values.append(None)
                continue
            try:
                values.append(convert(raw))
            except (ValueError, TypeError, KeyError, ArithmeticError, binascii.Error) as exc:
                hint = "fix the value or the column's type in the YAML"
                if avro.is_wrapper(raw):
                    hint += ("; it looks like an Avro union wrapper: read Avro JSON dumps with "
                             "source.options.avro (docs/sources/debezium.md)")
                raise SourceError(f"column {name!r} ({data_type}): cannot read {raw!r} "
                                  f"in '{what}': {exc}", file=self.file, line=event.line,
                                  hint=hint) from None
            present.append(name)
        return values, (present if absent else None)

    def _document(self, text: str, event: Event, what: str) -> Any:
        """A MongoDB document sent as Extended-JSON text, decoded."""
        try:
            return extended_json.loads(text)
        except json.JSONDecodeError as exc:
            raise SourceError(f"'{what}' is not a JSON document: {exc.msg}", file=self.file,
                              line=event.line) from None
        except extended_json.ExtendedJsonError as exc:
            raise SourceError(f"'{what}': {exc}", file=self.file, line=event.line) from None

    def _extended(self, value: Any, event: Event, what: str) -> Any:
        try:
            return extended_json.decode(value)
        except extended_json.ExtendedJsonError as exc:
            raise SourceError(f"'{what}': {exc}", file=self.file, line=event.line) from None

    def _key(self, values: list) -> tuple:
        names = self.shape.names
        return tuple(values[names.index(k)] for k in self.shape.key_columns)

    def _key_image(self, event: Event) -> dict[str, Any] | None:
        """The row key from the Kafka key, or a MongoDB event's `filter` (1.x oplog mode).
        The MongoDB connector's key is `{"id": "<the _id as Extended JSON>"}`."""
        key = event.key
        if isinstance(key, dict) and all(k in key for k in self.shape.key_columns):
            return key
        keys = self.shape.key_columns
        if keys == (MONGO_ID,) and isinstance(key, dict) and isinstance(key.get("id"), str):
            return {MONGO_ID: self._document(key["id"], event, "key")}
        filter_text = event.envelope.get("filter")
        if isinstance(filter_text, str):
            found = self._document(filter_text, event, "filter")
            if isinstance(found, dict) and all(k in found for k in keys):
                return found
        return None

    def rows(self, event: Event) -> list[Row]:
        """The canonical rows of one event (none, one, or two for a key change); none for an
        event the delivery checks find re-sent (`resent` is then True)."""
        self.resent = False
        envelope = event.envelope
        if not self._matches_table(envelope):
            return []
        position, order, stream = self._position(event)
        rows = self._change_rows(event, order, stream)
        if not rows:
            return rows
        width = self._width
        if len(rows) == 1:
            row = rows[0]
            content: Any = (row[width], row[:width], row[width + 2] and tuple(row[width + 2]))
        else:
            content = tuple((r[width], r[:width], r[width + 2] and tuple(r[width + 2]))
                            for r in rows)
        delivery = delivery_of(position, self._channel)
        key: tuple = ()
        if delivery.per_key:
            if rows[0][width] == OP_TRUNCATE:
                # a truncate waits for every transaction on the table: it orders all changes
                delivery = delivery._replace(per_key=False)
            else:
                key = tuple(rows[-1][i] for i in self._key_indexes)
        try:
            value = self._check.admit(delivery, key, content)
        except DeliveryError as exc:
            raise SourceError(f"{exc.message} (source position fields: {position.fields})",
                              file=self.file, line=event.line, hint=exc.hint) from None
        self.resent = value is None
        if value is None:
            return []
        return [r + (value,) for r in rows]

    def _change_rows(self, event: Event, order: tuple, stream: str) -> list[Row]:
        envelope = event.envelope
        op = envelope.get("op")
        width = len(self.shape.columns)

        def row(op_code: int, values: list, present: list | None, part: int) -> Row:
            return (*values, op_code, (*order, self.file, event.line, part, stream), present,
                    self.file, event.line)

        if op in ("r", "c"):
            values, present = self._image(envelope.get("after"), event, "after", False)
            return [row(OP_INSERT, values, present, 0)]
        if op == "u":
            self._need_keys(event, "update")
            if envelope.get("after") is None and (
                    "updateDescription" in envelope or "patch" in envelope):
                values, present = self._mongo_update(event)
                return [row(OP_UPDATE, values, present, 0)]
            values, present = self._image(envelope.get("after"), event, "after", True)
            before = envelope.get("before")
            if isinstance(before, dict):
                old, old_present = self._image(before, event, "before", True)
                if present is not None:
                    present = self._from_before(values, present, old, old_present)
                if all(k in before for k in self.shape.key_columns) and \
                        self._key(old) != self._key(values):
                    return [row(OP_DELETE, old, None, 0), row(OP_INSERT, values, present, 1)]
            return [row(OP_UPDATE, values, present, 0)]
        if op == "d":
            self._need_keys(event, "delete")
            before = envelope.get("before")
            if before is None:
                before = self._key_image(event)
            if before is None:
                raise SourceError("delete event without a 'before' image (or Kafka key)",
                                  file=self.file, line=event.line,
                                  hint="configure the source table's replica identity so "
                                       "deletes carry the key; for MongoDB keep the Kafka "
                                       "record key in the feed ({key, value} records or "
                                       "print.key=true)")
            values, _ = self._image(before, event, "before", True)
            return [row(OP_DELETE, values, None, 0)]
        if op == "t":
            return [row(OP_TRUNCATE, [None] * width, None, 0)]
        if op == "m":
            return []
        if op == "_upsert":  # an unwrapped row without __op
            values, present = self._image(envelope.get("after"), event, "after", False)
            return [row(OP_UPSERT if self.shape.key_columns else OP_INSERT, values, present, 0)]
        raise SourceError(f"unknown Debezium operation {op!r}", file=self.file, line=event.line,
                          hint="expected one of r, c, u, d, t")

    def _from_before(self, values: list, present: list[str], old: list,
                     old_present: list[str] | None) -> list[str] | None:
        """Fill the columns `after` lacks (placeholders) from the event's own `before` where it
        holds a value: an unchanged column's value before the update is its value after it.
        A NULL there is not taken: REPLICA IDENTITY DEFAULT sends key-only before images with
        NULL elsewhere, and a TOAST-ed value is never NULL. Returns the new present list."""
        have = set(present)
        for index, name in enumerate(self.shape.names):
            if name in have or old[index] is None:
                continue
            if old_present is not None and name not in old_present:
                continue
            values[index] = old[index]
            have.add(name)
        return None if len(have) == len(self.shape.names) else [
            n for n in self.shape.names if n in have]

    def _position(self, event: Event) -> tuple[Any, tuple, str]:
        """(Position, phase and position parts, stream) of an event."""
        source = event.envelope.get("source")
        try:
            position = position_of(source if isinstance(source, dict) else None)
        except PositionError as exc:
            raise SourceError(f"bad source position: {exc}", file=self.file, line=event.line,
                              hint="fix the event; its position orders it among the "
                                   "batch's changes") from None
        return position, self._stream.order(position), stream_of(position)

    def _mongo_update(self, event: Event) -> tuple[list, list | None]:
        """A MongoDB update without the full document: the key (pre-image `before`, Kafka key
        or `filter`) plus `updateDescription` (updatedFields set, removedFields NULL) or the 1.x
        `patch` (`$set`/`$unset`, `$v: 2` `diff`, or a whole replacement document)."""
        envelope = event.envelope
        before = envelope.get("before")
        if isinstance(before, str):
            before = self._document(before, event, "before")
        key = before if isinstance(before, dict) else self._key_image(event)
        if key is None or not all(k in key for k in self.shape.key_columns):
            raise SourceError("MongoDB update without the document's key (no 'before', Kafka "
                              "key or 'filter')", file=self.file, line=event.line,
                              hint="keep the Kafka record key in the feed (print.key=true or "
                                   "the {key, value} form)")
        description = envelope.get("updateDescription")
        if isinstance(description, dict):
            updated = description.get("updatedFields")
            sets = self._document(updated, event, "updatedFields") if isinstance(
                updated, str) else dict(updated or {})
            unsets = list(description.get("removedFields") or ())
        else:
            patch = envelope.get("patch")
            try:
                parsed = json.loads(patch) if isinstance(patch, str) else patch
            except json.JSONDecodeError as exc:
                raise SourceError(f"'patch' is not a JSON document: {exc.msg}", file=self.file,
                                  line=event.line) from None
            if not isinstance(parsed, dict):
                raise SourceError("'patch' is not a JSON document", file=self.file,
                                  line=event.line)
            if not any(str(k).startswith("$") for k in parsed):  # a replacement document
                document = {k: self._extended(v, event, "patch") for k, v in parsed.items()}
                document.update({k: key[k] for k in self.shape.key_columns})
                return self._image(document, event, "patch", False)
            sets, unsets = self._patch_operators(parsed, event)
        fields = dict(sets)
        fields.update({name: None for name in unsets})
        columns = set(self.shape.names)
        for name in fields:
            if name not in columns and "." in name and name.split(".", 1)[0] in columns:
                raise SourceError(f"MongoDB update of the nested field {name!r}: the new value "
                                  f"of column {name.split('.', 1)[0]!r} is not in the event",
                                  file=self.file, line=event.line,
                                  hint="set the connector's capture.mode to "
                                       "change_streams_update_full so updates carry the "
                                       "whole document")
        image = {name: key[name] for name in self.shape.key_columns}
        image.update({k: v for k, v in fields.items() if k not in image})
        return self._image(image, event, "updateDescription", True)

    def _patch_operators(self, patch: dict[str, Any], event: Event
                         ) -> tuple[dict[str, Any], list[str]]:
        diff = patch.get("diff")
        if isinstance(diff, dict):  # oplog $v: 2
            nested = [k[1:] for k in diff if k.startswith("s") and k not in ("u", "i", "d")]
            sets = {**(diff.get("u") or {}), **(diff.get("i") or {})}
            sets.update({f"{name}.": None for name in nested})  # nested diffs: refused below
            unsets = list(diff.get("d") or ())
        else:
            sets = dict(patch.get("$set") or {})
            unsets = list(patch.get("$unset") or ())
        return {k: self._extended(v, event, "patch") for k, v in sets.items()}, unsets

    def _need_keys(self, event: Event, what: str) -> None:
        if not self.shape.key_columns:
            raise SourceError(f"{what} event for a table without key columns", file=self.file,
                              line=event.line,
                              hint="declare key_columns for the table (or in source.options)")


RESENT = "resent"  # the skip-count kind of events the delivery checks found re-sent


def parse_text(text: str, file: str, shape: TableShape, options: DebeziumOptions,
               skipped: dict[str, int] | None = None,
               positions: dict[str, int] | None = None,
               marks: Marks | None = None) -> Iterator[Row]:
    """Canonical rows of one Debezium feed file (pure Python). Messages that change no row
    (schema changes, heartbeats, transaction boundaries, re-sent events) are counted by kind
    into `skipped`; `positions` gets the count of events per position stream (see
    debezium_positions); `marks` are the delivery marks of earlier batches."""
    yield from parse_records(iter_records(text, file), file, shape, options, skipped, positions,
                             marks)


def parse_records(records: Iterable[tuple[int, Any]], file: str, shape: TableShape,
                  options: DebeziumOptions, skipped: dict[str, int] | None = None,
                  positions: dict[str, int] | None = None,
                  marks: Marks | None = None) -> Iterator[Row]:
    """parse_text for (line, record) pairs already decoded (JSON or Avro)."""
    parser = EventParser(shape, options, file, marks)
    counts = skipped if skipped is not None else {}
    for line, raw in records:
        event = to_event(line, raw, file, options.unwrapped)
        if isinstance(event, Control):
            counts[event.kind] = counts.get(event.kind, 0) + 1
        elif event is not None:
            rows = parser.rows(event)
            if not rows and parser.resent:
                counts[RESENT] = counts.get(RESENT, 0) + 1
            for row in rows:
                if positions is not None:
                    stream = row[len(shape.columns) + 1][-1]
                    positions[stream] = positions.get(stream, 0) + 1
                yield row


# --- schema inference (compile time, no JVM) --------------------------------------------------

def read_local_text(file: str) -> str:
    """Text of a local feed file (gzip by extension)."""
    if file.endswith((".gz", ".gzip")):
        with gzip.open(file, "rt", encoding="utf-8") as handle:
            return handle.read()
    with open(file, encoding="utf-8") as handle:
        return handle.read()


def infer_from_events(events: Iterable[tuple[str, Event]], options: DebeziumOptions
                      ) -> InferredSchema | None:
    """Columns from the first event with a value schema; keys from options, else the first Kafka
    key schema (or key object) seen alongside."""
    columns: tuple[InferredColumn, ...] = ()
    origin = ""
    keys = options.key_columns
    documents: dict[str, str] = {}  # MongoDB: the union of the documents' fields, first seen first
    for file, event in events:
        document = _mongo_document(event)
        if document is not None and not columns:
            for name, value in document.items():
                if value is not None and documents.get(name) in (None, "Null"):
                    documents[name] = extended_json.data_type_of(value)
                documents.setdefault(name, "Null")
            origin = origin or f"{file}:{event.line}"
            if not keys and MONGO_ID in document:
                keys = (MONGO_ID,)
            continue
        if not columns:
            fields = row_fields(event.value_schema)
            if fields:
                columns = tuple(
                    InferredColumn(f["field"], data_type_for(f, options.decimal_handling),
                                   bool(f.get("optional", True)))
                    for f in fields if f.get("field"))
                origin = f"{file}:{event.line}"
        if not keys:
            if _is_mongo(event):
                keys = (MONGO_ID,)  # the connector's Kafka key is {"id": <the _id>}
            elif event.key_schema and event.key_schema.get("fields"):
                keys = tuple(f["field"] for f in event.key_schema["fields"] if f.get("field"))
            elif isinstance(event.key, dict) and event.key:
                keys = tuple(event.key)
        if columns and keys:
            break
    if documents and not columns:
        columns = tuple(InferredColumn(name, "String" if kind == "Null" else kind,
                                       name != MONGO_ID) for name, kind in documents.items())
    if not columns and not keys:
        return None
    return InferredSchema(columns=columns, key_columns=tuple(keys), origin=origin)


def _is_mongo(event: Event) -> bool:
    envelope = event.envelope
    source = envelope.get("source") or {}
    return (source.get("connector") == "mongodb" or "updateDescription" in envelope
            or "patch" in envelope or isinstance(envelope.get("after"), str)
            or isinstance(envelope.get("before"), str))


def _mongo_document(event: Event) -> dict[str, Any] | None:
    """The decoded `after` (else `before`) of a MongoDB event (Extended-JSON text), or None."""
    envelope = event.envelope
    for image in (envelope.get("after"), envelope.get("before")):
        if isinstance(image, str):
            try:
                document = extended_json.loads(image)
            except ValueError:  # JSONDecodeError and ExtendedJsonError; the parser names it
                return None
            return document if isinstance(document, dict) else None
    return None


def local_feed_texts(path: str) -> Iterator[tuple[str, str]]:
    """(file, text) of each local feed file under `path`, in order; an unreadable one is a
    SourceError naming it."""
    for file in list_feed_files(path):
        try:
            yield file, read_local_text(file)
        except (OSError, UnicodeDecodeError) as exc:
            raise SourceError(f"cannot read feed file: {exc}", file=file) from None


def _local_events(path: str, limit: int = 10_000, unwrapped: bool = False
                  ) -> Iterator[tuple[str, Event]]:
    seen = 0
    for file, text in local_feed_texts(path):
        for line, raw in iter_records(text, file):
            event = to_event(line, raw, file, unwrapped)
            if isinstance(event, Event):
                yield file, event
            seen += 1
            if seen >= limit:
                return


# --- the reader -------------------------------------------------------------------------------

def table_shape(table: Any, extra_keys: Sequence[str] = ()) -> TableShape:
    """The TableShape of a compiled TablePlan (columns without a type read as String)."""
    columns = tuple((c.name, c.type or "String") for c in table.columns)
    if not columns:
        raise SourceError(f"table {table.unique_id} has no columns",
                          hint="declare the columns in the YAML, or let compile infer them "
                               "from the feed")
    keys = tuple(table.key_columns or extra_keys)
    missing = [k for k in keys if k not in {n for n, _ in columns}]
    if missing:
        raise SourceError(f"table {table.unique_id}: key column(s) {', '.join(missing)} "
                          f"are not columns")
    return TableShape(columns, keys)


class DebeziumFormat:
    """`debezium`: Debezium JSON change events."""

    type_name = TYPE_NAME

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Columns from the first event's schema; keys from options or the Kafka key schema.
        An Avro feed's columns come from its `value_schema` file (no registry at compile)."""
        opts = parse_options(options)
        config = avro_schemas.avro_config(options)
        if config is not None:
            if not config.value_schema:
                return None
            schema = avro_schemas.read_schema_file(config.value_schema)
            event = Event(0, {}, schema.connect)
            return infer_from_events([(config.value_schema, event)], opts)
        if "://" in path and not path.startswith("file:"):
            return None  # remote feeds are inferred at run time, not by compile
        return infer_from_events(_local_events(path, unwrapped=opts.unwrapped), opts)

    def resolve_options(self, options: dict[str, Any], project_dir: str) -> dict[str, Any]:
        """`options` with project-relative file names made absolute (the Avro schemas)."""
        return avro_schemas.resolve_paths(options, project_dir)

    def record_decoder(self, options: dict[str, Any]) -> tuple[Callable[..., Iterator[Row]],
                                                               bool] | None:
        """For an Avro feed: (parse(data, file, shape, opts, skipped, positions, marks), whether
        data is the file's bytes); None for JSON (JsonConverter) feeds, read by parse_text."""
        config = avro_schemas.avro_config(options)
        if config is None:
            return None
        if config.encoding == avro_schemas.CONTAINER:
            def parse_container(data: bytes, file: str, shape: TableShape,
                                opts: DebeziumOptions, skipped: dict[str, int] | None = None,
                                positions: dict[str, int] | None = None,
                                marks: Marks | None = None) -> Iterator[Row]:
                yield from parse_records(avro_schemas.container_records(data, file), file,
                                         shape, opts, skipped, positions, marks)
            return parse_container, True
        if config.encoding == avro_schemas.CONFLUENT:
            lookup = avro_schemas.SchemaLookup(config)

            def parse_wire(data: bytes, file: str, shape: TableShape, opts: DebeziumOptions,
                           skipped: dict[str, int] | None = None,
                           positions: dict[str, int] | None = None,
                           marks: Marks | None = None) -> Iterator[Row]:
                yield from parse_records(avro_schemas.wire_records(data, file, lookup), file,
                                         shape, opts, skipped, positions, marks)
            return parse_wire, True
        value_schema = (avro_schemas.read_schema_file(config.value_schema)
                        if config.value_schema else None)

        def parse_json(text: str, file: str, shape: TableShape, opts: DebeziumOptions,
                       skipped: dict[str, int] | None = None,
                       positions: dict[str, int] | None = None,
                       marks: Marks | None = None) -> Iterator[Row]:
            records = avro_schemas.json_records(iter_records(text, file), file, value_schema)
            yield from parse_records(records, file, shape, opts, skipped, positions, marks)
        return parse_json, False
