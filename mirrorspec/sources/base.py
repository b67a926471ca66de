"""The one canonical change model every source reader produces, and the reader interface.

A reader turns feed files into a Spark DataFrame of canonical changes with these columns:

- every column of the table (Spark types from the table's DataTypes; see mirroring.DATA_TYPES)
- `_op` (int): 0 insert, 1 update, 2 delete, 4 upsert (the row-marker codes), or
  8 truncate (every row of the table is deleted; the row's other columns are ignored)
- `_order` (any orderable type, structs allowed): the order changes are applied in
- `_present` (array<string> or null): the columns the change carries; null means all of them.
  An absent column is never NULL: the publisher completes it from the current mirrored row.
- `_source_file` (string) and `_source_line` (long): where the change came from, for errors.
- `_delivery` (optional struct, `sources.delivery.DELIVERY_TYPE`): where the change sits in its
  producer's at-least-once delivery; the publisher drops re-sends with it (`sources/delivery.py`).

Readers split a key change into a delete of the old key followed by an insert of the new one.
`mirrorspec/sources/` holds the pure side of each format (options, schema inference, the parser
Spark workers run); it never imports pyspark. The Spark readers live in `mirrorspec/spark/publish/feeds/`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol, Sequence

from mirrorspec.openmirroring import mirroring

try:  # orjson parses a message several times faster; the stdlib is the fallback
    from orjson import loads as _orjson_loads
except ImportError:  # pragma: no cover - orjson is an optional speed-up
    _orjson_loads = None

OP_INSERT = 0
OP_UPDATE = 1
OP_DELETE = 2
OP_UPSERT = 4
OP_TRUNCATE = 8

OP_COLUMN = "_op"
ORDER_COLUMN = "_order"
PRESENT_COLUMN = "_present"
SOURCE_FILE_COLUMN = "_source_file"
SOURCE_LINE_COLUMN = "_source_line"
CHANGE_COLUMNS = (OP_COLUMN, ORDER_COLUMN, PRESENT_COLUMN, SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN)
# Optional: the same id on the delete of the old key and the insert of the new key of one key
# change, so the insert's absent columns are completed from the old key's row.
PAIR_COLUMN = "_pair"
# Set (to "message\n  hint: hint") on the one row a parse task emits when its input is bad.
ERROR_COLUMN = "_error"


@dataclass(frozen=True)
class InferredColumn:
    name: str
    data_type: str  # a SchemaDefinition DataType name (mirroring.DATA_TYPES)
    nullable: bool = True


@dataclass(frozen=True)
class InferredSchema:
    """What a feed's own metadata says about a table (Qlik metadata messages, Debezium schemas)."""

    columns: tuple[InferredColumn, ...] = ()
    key_columns: tuple[str, ...] = ()
    origin: str = ""  # "file:line" the inference came from, for messages
    # True when the types are guessed from JSON values (no declared schema in the feed): the
    # YAML's types then win over them instead of conflicting.
    types_guessed: bool = False


@dataclass(frozen=True)
class ReadResult:
    """A reader's output for one batch of feed files."""

    changes: Any  # pyspark DataFrame of canonical changes
    files: tuple[str, ...] = ()  # the feed files fully consumed by this batch
    held_back: tuple[str, ...] = ()  # files (or tails) waiting for the next run, e.g. open txns
    info: dict[str, Any] = field(default_factory=dict)


class SourceFormat(Protocol):
    """A feed format's pure side, registered in `mirrorspec.sources.REGISTRY`."""

    type_name: str

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Columns and keys from the feed's own metadata, in pure Python (no JVM); or None."""


class SourceReader(SourceFormat, Protocol):
    """A format's Spark reader, registered in `mirrorspec.spark.publish.feeds.READERS`."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]) -> ReadResult:
        """Read `files` (already filtered to the new ones) into canonical changes.

        `table` is the compiled TablePlan; `state` is what the publisher remembered for this
        table from earlier runs (reader-specific entries live under state["reader"]).
        """


# --- helpers shared by readers (pure Python; added by the Qlik/Arcion/publisher work) ----------
#
# ReadResult.info keys the publisher understands:
#   "state":       JSON-able reader state; saved as state["reader"] once the batch is published
#   "key_columns": key columns the feed's own metadata declares (used when the plan has none)
#   "columns":     [InferredColumn, ...] the feed declared (informational)
# The publisher passes the files it held back in an earlier run (ReadResult.held_back) again,
# together with the new ones; a reader that holds back must skip what it already published.

FEED_IGNORED_PREFIXES = ("_", ".")


class ChangeColumns:
    """Columnar output of one parse task (a Python worker): the table's columns, the change
    columns, `_pair`, `_error` and the format's `extra` columns, as equally long lists."""

    def __init__(self, columns: Sequence[str], extra: Sequence[str] = ()):
        self.columns = list(columns)
        self.extra = tuple(extra)
        self.lists: dict[str, list] = {c: [] for c in self.columns}
        for name in CHANGE_COLUMNS + (PAIR_COLUMN, ERROR_COLUMN) + self.extra:
            self.lists[name] = []

    def add(self, values: dict, op: int, order: tuple, present, file: str, line: int,
            *extra: Any) -> None:
        """Append one change; `extra` are the values of the extra columns, in order."""
        lists = self.lists
        for name in self.columns:
            lists[name].append(values.get(name))
        self.add_meta(op, order, present, file, line, *extra)

    def add_meta(self, op: int, order: tuple, present, file: str, line: int, *extra: Any) -> None:
        """Append the non-table columns of a change whose table values the caller appended."""
        lists = self.lists
        lists[OP_COLUMN].append(op)
        lists[ORDER_COLUMN].append(order)
        lists[PRESENT_COLUMN].append(present)
        lists[SOURCE_FILE_COLUMN].append(file)
        lists[SOURCE_LINE_COLUMN].append(line)
        lists[PAIR_COLUMN].append(None)
        lists[ERROR_COLUMN].append(None)
        for index, name in enumerate(self.extra):
            lists[name].append(extra[index] if index < len(extra) else None)

    def pair(self, pair_id: str) -> None:
        """Mark the last row as one half of a key change (see PAIR_COLUMN)."""
        self.lists[PAIR_COLUMN][-1] = pair_id

    def error(self, exc: Any, file: str, order: tuple) -> None:
        """The row that reports a SourceError (the task stops there)."""
        self.add({}, -1, order, None, exc.file or file, exc.line or 0)
        self.lists[ERROR_COLUMN][-1] = exc.message + (f"\n  hint: {exc.hint}" if exc.hint else "")


def reload_op(state: dict[str, Any], keys: Sequence[str]) -> int:
    """The marker of a snapshot row (Qlik REFRESH, an Arcion snapshot file): an insert on the
    first load; an upsert once the table has published anything, so a reload of a keyed table
    never duplicates its keys."""
    published_before = any(b.get("sequence") for b in state.get("batches", []))
    return OP_UPSERT if (published_before and keys) else OP_INSERT


def is_remote_path(path: str) -> bool:
    """True for a URI other than `file:` (s3a://, abfss://, …): read through the Spark layer."""
    return "://" in path and not path.startswith("file:")


def local_path(path: str) -> str:
    """A filesystem path for `path` (plain or `file:` URI). Other URIs are not readable here."""
    if path.startswith("file://"):
        return path[len("file://"):]
    if path.startswith("file:"):
        return path[len("file:"):]
    if is_remote_path(path):
        from mirrorspec.base.errors import SourceError
        raise SourceError(f"feed path {path!r} is a URI, readable only when publishing",
                          hint="the publisher reads URIs through Spark's Hadoop filesystems; "
                               "compile-time inference needs a local or mounted path")
    return path


def is_feed_path(relative: str) -> bool:
    """Whether a file (path relative to the feed folder) is a feed file: no part of it starts
    with `_` or `.` (temporary and hidden files and folders)."""
    return not any(part.startswith(FEED_IGNORED_PREFIXES) for part in relative.split("/") if part)


def list_feed_files(path: str) -> list[str]:
    """The local feed files under `path` (a folder, searched recursively, a file or a glob),
    sorted. Names starting with `_` or `.` (temporary and hidden files) are skipped.
    (`mirrorspec.base.files.list_feed_files` lists URIs too.)
    """
    import glob
    import os

    base = local_path(path)
    if any(ch in base for ch in "*?["):
        candidates = glob.glob(base, recursive=True)
    elif os.path.isdir(base):
        candidates = []
        for root, dirs, names in os.walk(base):
            dirs[:] = [d for d in dirs if is_feed_path(d)]
            candidates.extend(os.path.join(root, n) for n in names)
    elif os.path.isfile(base):
        candidates = [base]
    else:
        candidates = []
    return sorted(os.path.abspath(p) for p in candidates
                  if os.path.isfile(p) and is_feed_path(os.path.basename(p)))


# Reads a URI's bytes on the driver; installed by the Spark layer (publisher) before it reads.
_remote_reader: Callable[[str], bytes] | None = None


def use_remote_reader(reader: Callable[[str], bytes] | None) -> None:
    """Install how the driver reads feed files given as URIs (the Spark layer's filesystem)."""
    global _remote_reader
    _remote_reader = reader


def read_feed_bytes(path: str) -> bytes:
    """The bytes of a whole feed file: local, or a URI through the installed remote reader."""
    if is_remote_path(path) and _remote_reader is not None:
        return _remote_reader(path)
    with open(local_path(path), "rb") as handle:
        return handle.read()


def read_task_bytes(task: dict[str, Any]) -> bytes:
    """The bytes a parse task covers: the whole file when `compressed`, else `start`..`end`.
    For a URI the Spark layer ships them with the task (`data`); local files are read here."""
    if task.get("data") is not None:
        return task["data"]
    if is_remote_path(task["file"]) and _remote_reader is None:  # in a worker, not shipped
        from mirrorspec.base.errors import SourceError
        raise SourceError("feed file could not be read through Spark (removed while publishing?)",
                          file=task["file"], hint="rerun; nothing of this batch was published")
    if task.get("compressed") or "start" not in task:
        return read_feed_bytes(task["file"])
    with open(local_path(task["file"]), "rb") as handle:
        handle.seek(task["start"])
        return handle.read(task["end"] - task["start"])


def iter_json_documents(text: str, file: str, first_line: int = 1):
    """Yield (line, value) for every JSON document in `text`: one per line, concatenated,
    pretty-printed, or the elements of top-level JSON arrays. Raises SourceError naming the line."""
    import json

    from mirrorspec.base.errors import SourceError

    decoder = json.JSONDecoder()
    pos, n = 0, len(text)
    line, line_pos = first_line, 0  # line number of text[line_pos]
    depth_array = False

    def line_of(offset: int) -> int:
        nonlocal line, line_pos
        line += text.count("\n", line_pos, offset)
        line_pos = offset
        return line

    while True:
        while pos < n and text[pos] in " \t\r\n\ufeff":
            pos += 1
        if pos >= n:
            if depth_array:
                raise SourceError("unterminated JSON array", file=file, line=line_of(pos))
            return
        ch = text[pos]
        if depth_array and ch == ",":
            pos += 1
            continue
        if depth_array and ch == "]":
            depth_array = False
            pos += 1
            continue
        if not depth_array and ch == "[":
            depth_array = True
            pos += 1
            continue
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise SourceError(f"malformed JSON: {exc.msg}", file=file,
                              line=line_of(exc.pos),
                              hint="fix or rewrite the file; nothing of this batch was published") from None
        yield line_of(pos), value
        pos = end


# What a column of an integer DataType accepts, for every reader that converts feed values
# here: a JSON integer; a JSON number with no fractional part that a double holds exactly
# (`7.0`, `1e3`; not beyond 2**53); text of ASCII digits with an optional sign (`"-12"`, `"+7"`),
# for formats that send numbers as text. Nothing else: no booleans, no fractions or exponents
# in text (`"12.0"`, `"1e3"`), no `_` separators, no other scripts' digits, no blanks.
_ASCII_INTEGER = re.compile(r"[+-]?[0-9]+")
# A double's integers are exact up to 2**53; a JSON number beyond that may already be rounded.
_EXACT_DOUBLE = float(1 << 53)
# What a Double/Single column accepts as text: a JSON-style number in ASCII (sign, digits,
# fraction, exponent) or NaN / Infinity / Inf with an optional sign, in any case.
_ASCII_NUMBER = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                           r"|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])")


def _int_converter(bits: int):
    """The converter of an integer column of `bits` bits (see _ASCII_INTEGER for what it takes);
    it raises ValueError with the reason."""
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def convert(value: Any) -> int:
        if type(value) is int:
            number = value
        elif isinstance(value, bool):
            raise ValueError(f"{value!r} is not an integer")
        elif isinstance(value, int):
            number = int(value)
        elif isinstance(value, float):
            if not value.is_integer():
                raise ValueError(f"{value!r} is not an integer")
            if abs(value) > _EXACT_DOUBLE:
                raise ValueError(f"{value!r} is beyond the integers a JSON number holds exactly "
                                 "(2^53): send it as an integer or as text")
            number = int(value)
        elif isinstance(value, str) and _ASCII_INTEGER.fullmatch(value):
            number = int(value)
        else:
            raise ValueError(f"{value!r} is not an integer")
        if number < low or number > high:
            raise ValueError(f"{value!r} is out of the Int{bits} range")
        return number
    return convert


def _float_converter(value: Any) -> float:
    """A Double/Single column's value: a JSON number, or text matching _ASCII_NUMBER."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a number")
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            raise ValueError(f"{value!r} is out of the Double range") from None
    if isinstance(value, str) and _ASCII_NUMBER.fullmatch(value):
        return float(value)
    raise ValueError(f"{value!r} is not a number")


def _string_converter(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    import json
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


_TRUE = frozenset(("true", "t", "1", "y", "yes"))
_FALSE = frozenset(("false", "f", "0", "n", "no"))


def to_boolean(value: Any) -> bool:
    """A feed's boolean: true/false, integer 0/1 or the usual words; else ValueError."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError(f"{value!r} is not a boolean")


def _binary_converter(encoding: str):
    import base64
    import binascii

    def convert(value: Any) -> bytes:
        if isinstance(value, (bytes, bytearray)):
            return bytes(value)
        text = str(value).strip()
        try:
            if encoding == "base64":
                return base64.b64decode(text, validate=True)
            if text[:2] in ("0x", "0X"):
                text = text[2:]
            return bytes.fromhex(text)
        except (ValueError, binascii.Error):
            raise ValueError(f"{value!r} is not {encoding}-encoded binary") from None
    return convert


def _parse_datetime(value: Any):
    import datetime as dt
    import re

    if isinstance(value, dt.datetime):
        return value
    text = str(value).strip()
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        # more than 6 fractional digits (e.g. SQL Server datetime2(7)): keep microseconds
        match = re.match(r"^(.*?[T ]\d{2}:\d{2}:\d{2})\.(\d+)(.*)$", text)
        if not match:
            raise ValueError(f"{value!r} is not a date-time (YYYY-MM-DD HH:MM:SS[.ffffff])") from None
        try:
            parsed = dt.datetime.fromisoformat(f"{match[1]}.{match[2][:6]}{match[3]}")
        except ValueError:
            raise ValueError(f"{value!r} is not a date-time (YYYY-MM-DD HH:MM:SS[.ffffff])") from None
    if parsed.tzinfo is not None:
        parsed = parsed.astimezone(dt.timezone.utc).replace(tzinfo=None)
    return parsed


def _date_converter(value: Any):
    import datetime as dt

    text = str(value).strip()
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        try:
            return _parse_datetime(text).date()
        except ValueError:
            raise ValueError(f"{value!r} is not a date (YYYY-MM-DD)") from None


def _time_converter(value: Any):
    import datetime as dt

    text = str(value).strip()
    if len(text) <= 18 and text.count(":") >= 1 and "-" not in text:
        try:
            return dt.datetime.combine(dt.date.fromisoformat(mirroring.TIME_ONLY_DATE),
                                       dt.time.fromisoformat(text[:15]))
        except ValueError:
            raise ValueError(f"{value!r} is not a time (HH:MM:SS[.ffffff])") from None
    return _parse_datetime(text)


def value_converter(data_type: str | None, binary_encoding: str = "hex"):
    """A function turning a feed value (JSON value or text) into the Python value of a
    SchemaDefinition DataType; it raises ValueError with a short reason. None → String."""
    name = (data_type or "String").lower()
    if name == "int16":
        return _int_converter(16)
    if name == "int32":
        return _int_converter(32)
    if name == "int64":
        return _int_converter(64)
    if name in ("double", "single"):
        return _float_converter
    if name == "boolean":
        return to_boolean
    if name == "bytearray":
        return _binary_converter(binary_encoding)
    if name == "idate":
        return _date_converter
    if name == "datetime":
        return _parse_datetime
    if name == "itime":
        return _time_converter
    return _string_converter


def loads_line(chunk: bytes | str) -> Any:
    """Parse one JSON document (orjson when installed; the stdlib for its error messages and
    for integers beyond 64 bits)."""
    if _orjson_loads is not None:
        try:
            return _orjson_loads(chunk)
        except ValueError:
            pass
    return json.loads(chunk)
