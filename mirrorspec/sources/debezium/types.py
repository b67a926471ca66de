"""Debezium's Kafka Connect types: the SchemaDefinition DataType a field schema maps to
(`data_type_for`), a source value decoded by its schema (`decode`: timestamps, dates, times,
decimals, geometries, bytes) and coerced to the column's type (`coerce`), the per-column
converter the parser runs, and the "unchanged, not sent" placeholder test (`is_unavailable`)."""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import decimal
import json
import uuid
from dataclasses import dataclass
from typing import Any, Callable

from mirrorspec.sources.base import to_boolean, value_converter
from mirrorspec.sources.debezium.placeholders import DEFAULT as PLACEHOLDER
from mirrorspec.sources.debezium.placeholders import placeholder as placeholder_of

_TIME_UNITS = {"ms": 1000, "us": 1, "ns": None}


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
class Kind:
    """How to decode a source value: the field's Connect type and logical name."""

    type: str | None
    name: str
    scale: int | None


def field_kind(field: dict[str, Any] | None) -> Kind:
    if not field:
        return Kind(None, "", None)
    scale = (field.get("parameters") or {}).get("scale")
    return Kind(field.get("type"), field.get("name") or "",
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


def decode(value: Any, kind: Kind) -> Any:
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


NO_KIND = Kind(None, "", None)
_FAST_TYPES = {"String": str, "Int16": int, "Int32": int, "Int64": int, "Double": float,
               "Single": float, "Boolean": bool}


def converter(kind: Kind, data_type: str, time_unit: str) -> Callable[[Any], Any]:
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
    (`placeholders`)."""
    return placeholder_of(placeholder).matches(value)
