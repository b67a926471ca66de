"""MongoDB Extended JSON (v1 strict, v2 canonical and relaxed) → Python values.

The Debezium MongoDB connector sends documents (`after`, `before`, `updateDescription.
updatedFields`, the 1.x `patch`/`filter` and the Kafka key's `id`) as Extended-JSON text; its
`json.serialization.mode` chooses the variant. Every variant's type wrappers are decoded here
(names from MongoDB's Extended JSON v1/v2 specification, as listed in
docs/sources/debezium.md):

| wrapper | value |
|---|---|
| `$numberInt`, `$numberLong` | int |
| `$numberDouble` (also `Infinity`, `-Infinity`, `NaN`) | float |
| `$numberDecimal` | decimal.Decimal |
| `$oid`, `$symbol`, `$code`, `$uuid` | str (the hex id, the text, the UUID) |
| `$date` (ms, `{$numberLong}`, or ISO text), `$timestamp` `{t, i}` | aware datetime (UTC) |
| `$binary` (`{base64, subType}` or v1 `"…", $type`) | bytes; subtype 3/4 (UUID) → its text |
| `$regularExpression`, `$regex`/`$options` | str `/pattern/options` |
| `$minKey`, `$maxKey` | str `MinKey` / `MaxKey` |
| `$undefined` | None |

Inside nested documents and arrays the decoded values are kept JSON-ready (decimals and
dates as text, binary as base64), because such a column lands as JSON text.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import uuid
from typing import Any

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


class ExtendedJsonError(ValueError):
    """A `$`-wrapper whose value is not what the specification allows."""


def loads(text: str) -> Any:
    """Decode Extended-JSON text: a document's fields as typed values (see the module
    docstring), or one value."""
    parsed = json.loads(text)
    if isinstance(parsed, dict) and _wrapper(parsed) is _NOT_WRAPPED:
        return {k: decode(v) for k, v in parsed.items()}
    return decode(parsed)


def decode(value: Any) -> Any:
    """Decode one already-parsed field value: a wrapper to its typed value, a nested document
    or array to JSON-ready values."""
    if isinstance(value, dict):
        wrapped = _wrapper(value)
        if wrapped is not _NOT_WRAPPED:
            return wrapped
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def plain(value: Any) -> Any:
    """Decode a nested value into something json.dumps can write."""
    value = decode(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, dt.datetime):
        return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    return value


_NOT_WRAPPED = object()


def _wrapper(doc: dict[str, Any]) -> Any:
    if not doc:
        return _NOT_WRAPPED
    first = next(iter(doc))
    if not isinstance(first, str) or not first.startswith("$"):
        return _NOT_WRAPPED
    try:
        return _unwrap(first, doc)
    except (ValueError, TypeError, KeyError, decimal.InvalidOperation, OverflowError) as exc:
        raise ExtendedJsonError(f"bad Extended JSON {first}: {json.dumps(doc)[:120]} ({exc})"
                                ) from None


def _unwrap(first: str, doc: dict[str, Any]) -> Any:
    value = doc[first]
    if first in ("$numberInt", "$numberLong"):
        return int(value)
    if first == "$numberDouble":
        return float(value)
    if first == "$numberDecimal":
        return decimal.Decimal(value)
    if first in ("$oid", "$symbol", "$code"):
        return str(value)
    if first == "$uuid":
        return str(uuid.UUID(str(value)))
    if first == "$date":
        return _date(value)
    if first == "$timestamp":
        return _EPOCH + dt.timedelta(seconds=int(value["t"]))
    if first == "$binary":
        if isinstance(value, dict):  # v2: {"base64": …, "subType": "04"}
            data, subtype = value["base64"], value.get("subType", "00")
        else:  # v1: {"$binary": "…", "$type": "04"}
            data, subtype = value, doc.get("$type", "00")
        raw = base64.b64decode(str(data), validate=True)
        if int(str(subtype), 16) in (3, 4) and len(raw) == 16:
            return str(uuid.UUID(bytes=raw))
        return raw
    if first == "$regularExpression":
        return f"/{value['pattern']}/{value.get('options', '')}"
    if first == "$regex":
        return f"/{value}/{doc.get('$options', '')}"
    if first in ("$minKey", "$maxKey"):
        return "MinKey" if first == "$minKey" else "MaxKey"
    if first == "$undefined":
        return None
    # an unknown `$` name ($dbPointer, $numberLong's misspellings, a field that merely starts
    # with `$`): kept as a document
    return {k: plain(v) for k, v in doc.items()}


def _date(value: Any) -> dt.datetime:
    if isinstance(value, dict):
        value = int(value["$numberLong"])
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _EPOCH + dt.timedelta(milliseconds=value)
    text = str(value).strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    parsed = dt.datetime.fromisoformat(text)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.timezone.utc)
    return parsed.astimezone(dt.timezone.utc)


def data_type_of(value: Any) -> str:
    """The SchemaDefinition DataType a decoded top-level value suggests (for inference)."""
    if isinstance(value, bool):
        return "Boolean"
    if isinstance(value, int):
        return "Int64"
    if isinstance(value, (float, decimal.Decimal)):
        return "Double"
    if isinstance(value, dt.datetime):
        return "DateTime"
    if isinstance(value, bytes):
        return "ByteArray"
    return "String"
