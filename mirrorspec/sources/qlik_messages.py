"""Qlik Replicate messages, one at a time: type mapping, metadata structures, the
envelope, `columnMask`, file scanning and the row parser (`parse_into`).

This is the definition of the format: `qlik.parse_task` runs it in the Python workers, and the
column-wise path (`qlik_columns`) hands it every message it cannot prove. It imports neither
of those modules.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import asdict, dataclass
from typing import Any

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.delivery import DELIVERY_COLUMN, DeliveryError, FileCheck
from mirrorspec.sources.replicator_positions import admit, marks_of, qlik_delivery
from mirrorspec.sources.base import (ERROR_COLUMN, ChangeColumns, iter_json_documents, loads_line,
                                     read_feed_bytes,
                                     read_task_bytes, value_converter)

CHUNK_BYTES = 16 * 1024 * 1024  # the most bytes one parse task reads

# Qlik Replicate data type → SchemaDefinition DataType (NUMERIC: see numeric_data_type)
QLIK_TYPES: dict[str, str] = {
    "INT1": "Int16", "INT2": "Int16", "INT4": "Int32", "INT8": "Int64",
    "UINT1": "Int16", "UINT2": "Int32", "UINT4": "Int64", "UINT8": "Int64",
    "REAL4": "Single", "REAL8": "Double",
    "STRING": "String", "WSTRING": "String", "CLOB": "String", "NCLOB": "String",
    "BOOLEAN": "Boolean", "BYTES": "ByteArray", "BLOB": "ByteArray",
    "DATE": "IDate", "TIME": "String", "DATETIME": "DateTime",
}
_INTS = ("Int16", "Int32", "Int64")
# DataTypes a YAML column may declare for a feed type without it being a conflict.
_ACCEPTED: dict[str, tuple[str, ...]] = {
    "Int16": _INTS + ("Double", "Single", "String"),
    "Int32": ("Int32", "Int64", "Double", "String"),
    "Int64": ("Int64", "Double", "String"),
    "Single": ("Single", "Double", "String"),
    "Double": ("Double", "String"),
    "String": ("String",),
    "Boolean": ("Boolean", "String"),
    "ByteArray": ("ByteArray", "String"),
    "IDate": ("IDate", "DateTime", "String"),
    "DateTime": ("DateTime", "String"),
}
_TYPE_WITH_ARGS = re.compile(r"^\s*([A-Za-z0-9_]+)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$")


def numeric_data_type(precision: int | None, scale: int | None, decimal: str = "double") -> str:
    """NUMERIC(p,s): integers up to 18 digits → Int64 (up to 9 → Int32), else Double (or String
    with the source option `decimal: string`, which keeps every digit)."""
    if scale == 0 and precision and precision <= 9:
        return "Int32"
    if scale == 0 and precision and precision <= 18:
        return "Int64"
    return "String" if decimal == "string" else "Double"


def data_type_for(qlik_type: str, precision: int | None = None, scale: int | None = None,
                  decimal: str = "double") -> str:
    """The DataType a Qlik column type lands as (unknown types land as String)."""
    match = _TYPE_WITH_ARGS.match(str(qlik_type or ""))
    name = match.group(1).upper() if match else str(qlik_type).upper()
    if match and match.group(2) is not None:
        precision = int(match.group(2))
        scale = int(match.group(3) or 0)
    if name in ("NUMERIC", "DECIMAL", "NUMBER"):
        return numeric_data_type(precision, scale, decimal)
    return QLIK_TYPES.get(name, "String")


def accepts(feed_type: str, declared: str) -> bool:
    """Whether a YAML DataType is a faithful representation of a feed DataType."""
    return declared == feed_type or declared in _ACCEPTED.get(feed_type, (feed_type, "String"))


# --- metadata ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class QlikColumn:
    name: str
    ordinal: int
    qlik_type: str
    data_type: str
    key_position: int = 0
    nullable: bool = True


@dataclass(frozen=True)
class QlikStructure:
    """One metadata message: a table's columns at one tableVersion, and where it was read."""

    schema: str | None
    table: str | None
    version: int | None
    columns: tuple[QlikColumn, ...]
    file: str
    line: int

    @property
    def key_columns(self) -> tuple[str, ...]:
        keyed = sorted((c.key_position, c.name) for c in self.columns if c.key_position)
        return tuple(name for _, name in keyed)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(doc: dict[str, Any]) -> "QlikStructure":
        cols = tuple(QlikColumn(**c) for c in doc["columns"])
        return QlikStructure(doc.get("schema"), doc.get("table"), doc.get("version"), cols,
                             doc["file"], int(doc["line"]))


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def parse_structure(message: dict, file: str, line: int, decimal: str = "double") -> QlikStructure:
    """A metadata message's `lineage` and `tableStructure.tableColumns`."""
    lineage = message.get("lineage") or {}
    table_columns = (message.get("tableStructure") or {}).get("tableColumns")
    if not isinstance(table_columns, dict) or not table_columns:
        raise SourceError("metadata message without tableStructure.tableColumns", file=file,
                          line=line, hint="the Replicate metadata message must list the columns")
    columns = []
    for name, spec in table_columns.items():
        if not isinstance(spec, dict):
            raise SourceError(f"metadata column {name!r} is not an object", file=file, line=line)
        qlik_type = str(spec.get("type") or "STRING")
        columns.append(QlikColumn(
            name=name, ordinal=_int(spec.get("ordinal")), qlik_type=qlik_type,
            data_type=data_type_for(qlik_type, _int(spec.get("precision"), None),
                                    _int(spec.get("scale"), None), decimal),
            key_position=_int(spec.get("primaryKeyPosition")),
            nullable=spec.get("nullable") is not False))
    if any(c.ordinal <= 0 for c in columns):  # no ordinals: the listed order
        columns = [QlikColumn(c.name, i + 1, c.qlik_type, c.data_type, c.key_position, c.nullable)
                   for i, c in enumerate(columns)]
    columns.sort(key=lambda c: c.ordinal)
    version = lineage.get("tableVersion")
    return QlikStructure(lineage.get("schema"), lineage.get("table"),
                         _int(version, None) if version is not None else None,
                         tuple(columns), file, line)


def classify(doc: Any) -> tuple[str, dict]:
    """('MD'|'DT', message) for an envelope or a bare message; ValueError for anything else."""
    if not isinstance(doc, dict):
        raise ValueError(f"expected a JSON object, found {type(doc).__name__}")
    if "magic" in doc or ("type" in doc and "message" in doc):
        kind = str(doc.get("type") or "").upper()
        message = doc.get("message")
        if isinstance(message, str):
            raise ValueError("the envelope's message is not a JSON object (Avro-encoded messages "
                             "are not supported: set the Replicate endpoint's message format to JSON)")
        if kind not in ("MD", "DT") or not isinstance(message, dict):
            raise ValueError(f"unknown message type {doc.get('type')!r} (expected MD or DT)")
        return kind, message
    if "tableStructure" in doc or "lineage" in doc:
        return "MD", doc
    if "data" in doc or "beforeData" in doc or "headers" in doc:
        return "DT", doc
    raise ValueError("not a Qlik Replicate message (no envelope, data, beforeData or headers)")


def mask_ordinals(mask: Any) -> set[int] | None:
    """Ordinals set in a columnMask/changeMask hex string (bit k−1 = ordinal k), or None."""
    if mask is None:
        return None
    if isinstance(mask, (bytes, bytearray)):
        number = int.from_bytes(bytes(mask), "big")
    else:
        text = str(mask).strip()
        if not text:
            return None
        try:
            number = int(text, 16)
        except ValueError:
            raise ValueError(f"mask {mask!r} is not hexadecimal") from None
    result, ordinal = set(), 1
    while number:
        if number & 1:
            result.add(ordinal)
        number >>= 1
        ordinal += 1
    return result


# --- files -----------------------------------------------------------------------------------------

def read_bytes(path: str, raw: bytes | None = None) -> bytes:
    raw = read_feed_bytes(path) if raw is None else raw
    if path.endswith(".gz") or raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw


def _avro_error(path: str) -> SourceError:
    return SourceError("Avro-encoded Qlik Replicate messages are not supported", file=path, line=1,
                       hint="set the Replicate target endpoint's message format to JSON")


@dataclass
class FileScan:
    """What the driver learns from one feed file before the workers parse it."""

    path: str
    mode: str  # "lines" (one message per line) or "documents" (arrays, pretty-printed)
    structures: list[QlikStructure]
    chunks: list[tuple[int, int, int]]  # (start byte, end byte, first line)
    first_data_line: int | None
    compressed: bool


def decode(raw: bytes, path: str, line: int = 1) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError(f"not UTF-8 text ({exc.reason})", file=path,
                          line=line + raw.count(b"\n", 0, exc.start)) from None


_CONTENT = re.compile(rb"[^ \t\r\n]")


def _first_content(raw: bytes) -> int:
    """Offset of the first byte that is neither whitespace nor a UTF-8 byte-order mark; -1 if
    none."""
    found = _CONTENT.search(raw)
    if found and raw.startswith(b"\xef\xbb\xbf", found.start()):
        found = _CONTENT.search(raw, found.start() + 3)
    return found.start() if found else -1


def scan_file(path: str, decimal: str = "double", chunk_bytes: int | None = None) -> FileScan:
    """Find the metadata messages of a file and split it into chunks for the workers."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    raw = read_bytes(path)
    compressed = path.endswith(".gz") or raw[:2] == b"\x1f\x8b"
    if raw.startswith(b"Obj\x01"):
        raise _avro_error(path)
    start = _first_content(raw)  # offsets, not slices: a slice would copy the whole file
    if start == -1:
        return FileScan(path, "lines", [], [], None, compressed)
    if raw[start:start + 1] not in (b"{", b"["):
        if b"atMSG" in raw[:4096]:
            raise _avro_error(path)
        raise SourceError("malformed JSON: the file does not start with a JSON object or array",
                          file=path, line=1 + raw.count(b"\n", 0, start))
    mode = "lines"
    if raw[start:start + 1] == b"[":
        mode = "documents"
    else:
        end = raw.find(b"\n", start)
        first = raw[start:len(raw) if end == -1 else end].strip()
        try:
            json.loads(first)
        except ValueError:
            mode = "documents"
    structures: list[QlikStructure] = []
    first_data: int | None = None
    if mode == "documents":
        for line, doc in iter_json_documents(decode(raw, path), path):
            try:
                kind, message = classify(doc)
            except ValueError as exc:
                raise SourceError(str(exc), file=path, line=line) from None
            if kind == "MD":
                structures.append(parse_structure(message, path, line, decimal))
            elif first_data is None:
                first_data = line
        return FileScan(path, mode, structures, [(0, len(raw), 1)], first_data, compressed)
    pos = raw.find(b'"tableStructure"')
    line, line_pos = 1, 0
    while pos != -1:
        start = raw.rfind(b"\n", 0, pos) + 1
        end = raw.find(b"\n", pos)
        end = len(raw) if end == -1 else end
        line += raw.count(b"\n", line_pos, start)
        line_pos = start
        try:
            kind, message = classify(json.loads(decode(raw[start:end], path, line)))
        except ValueError as exc:
            raise SourceError(f"malformed JSON: {exc}", file=path, line=line) from None
        if kind == "MD":
            structures.append(parse_structure(message, path, line, decimal))
        pos = raw.find(b'"tableStructure"', end)
    chunks = []
    if compressed:
        chunks.append((0, len(raw), 1))
    else:
        start, first_line = 0, 1
        while start < len(raw):
            end = raw.find(b"\n", min(start + chunk_bytes, len(raw)))
            end = len(raw) if end == -1 else end + 1
            chunks.append((start, end, first_line))
            first_line += raw.count(b"\n", start, end)
            start = end
    return FileScan(path, mode, structures, chunks, None, compressed)


# --- the worker-side parser --------------------------------------------------------------------

TXN_COLUMNS = ("_txn", "_txn_last")
OUTPUT_EXTRA = TXN_COLUMNS + (ERROR_COLUMN,)  # dropped once the batch is checked
ROW_EXTRA = TXN_COLUMNS + (DELIVERY_COLUMN,)  # the extra columns of a parse task's rows


def _content(value: Any) -> str:
    """A data image as text equal for equal images (what tells a re-send from another change)."""
    return json.dumps(value, sort_keys=True, default=str) if value else ""


def read_chunk(task: dict) -> bytes:
    raw = read_task_bytes(task)
    return read_bytes(task["file"], raw) if task["compressed"] else raw


def _documents(task: dict):
    raw = read_chunk(task)
    path, first = task["file"], task["first_line"]
    if task["mode"] == "documents":
        yield from iter_json_documents(decode(raw, path, first), path, first)
        return
    for index, chunk in enumerate(raw.split(b"\n")):
        if index == 0 and chunk.startswith(b"\xef\xbb\xbf") and task.get("start", 0) == 0:
            chunk = chunk[3:]  # the file's byte-order mark, maybe on a line of its own
        if not chunk or chunk.isspace():
            continue
        line = first + index
        try:
            doc = loads_line(chunk)
        except ValueError as exc:
            raise SourceError(f"malformed JSON: {exc}", file=path, line=line) from None
        if isinstance(doc, list):
            for item in doc:
                yield line, item
        else:
            yield line, doc


def as_bool(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "t"):
        return True
    if text in ("false", "0", "f"):
        return False
    return None


_ALL = None  # "every column present" in the mask cache


def parse_into(task: dict, ctx: dict, out: ChangeColumns) -> None:
    path = task["file"]
    names = [name for name, _ in ctx["columns"]]
    converters = {name: value_converter(dt, ctx.get("binary", "hex")) for name, dt in ctx["columns"]}
    hot = [(name, converters[name], out.lists[name]) for name in names]
    keys = list(ctx["keys"])
    all_names = frozenset(names)
    # (file, line, {ordinal: name}) of every metadata message, in order
    structures = [(s[0], s[1], {int(k): v for k, v in s[2].items()}) for s in ctx["structures"]]
    default_map = {int(k): v for k, v in ctx["default_ordinals"].items()}
    refresh_op = ctx["refresh_op"]
    skip_before = tuple(ctx["skip_before"]) if path in ctx.get("skip_files", ()) else None
    table_filter = ctx.get("table")
    check = FileCheck(marks_of(ctx.get("marks")), bool(keys), True, path,
                      repeats_land=bool(ctx.get("repeats_land")))
    idx, current = -1, (structures[0][2] if structures else default_map)
    positions = [(s[0], s[1]) for s in structures]
    masks: dict[Any, frozenset | None] = {}

    def convert(name: str, value: Any, line: int) -> Any:
        if value is None:
            return None
        try:
            return converters[name](value)
        except ValueError as exc:
            raise SourceError(f"column {name!r}: {exc}", file=path, line=line,
                              hint="fix the value, or declare the column's type in the YAML") from None

    for line, doc in _documents(task):
        # the structure in effect: the last metadata message before this position
        while idx + 1 < len(positions) and positions[idx + 1] <= (path, line):
            idx += 1
            current = structures[idx][2]
            masks = {}
        try:
            kind, message = classify(doc)
        except ValueError as exc:
            raise SourceError(str(exc), file=path, line=line) from None
        if kind == "MD":
            continue
        if table_filter and message.get("table") not in (None, table_filter):
            continue
        headers = message.get("headers") or {}
        operation = str(headers.get("operation") or "").upper()
        sequence = str(headers.get("changeSequence") or "")
        data = message.get("data")
        before = message.get("beforeData")
        if data is not None and not isinstance(data, dict):
            raise SourceError("data is not a JSON object", file=path, line=line)
        if before is not None and not isinstance(before, dict):
            raise SourceError("beforeData is not a JSON object", file=path, line=line)
        data = data or {}
        txn = headers.get("transactionId") or None
        last = as_bool(headers.get("transactionLastEvent"))
        order = (sequence, path, line, 0)
        if skip_before is not None and order < skip_before:
            continue
        try:
            delivery = admit(check, qlik_delivery(sequence, path), (),
                             (operation, sequence, _content(data), _content(before)))
        except DeliveryError as exc:
            raise SourceError(exc.message, file=path, line=line, hint=exc.hint) from None
        if delivery is None:
            continue  # a re-send of a change already applied or sent
        if delivery[-1]:
            # a sequence going back to one the file did not send: changeSequence orders the
            # batch (files need not be in its order), so this is a change, not a re-send to prove
            delivery = (*delivery[:-1], False)
        mask = headers.get("columnMask")
        if isinstance(mask, str) and not mask.strip():
            mask = None  # a blank mask says nothing: the data's keys tell the columns
        if mask:
            if mask not in masks:
                try:
                    ordinals = mask_ordinals(mask)
                except ValueError as exc:
                    raise SourceError(str(exc), file=path, line=line) from None
                mapping = current
                if not ordinals <= current.keys():  # a newer table version, in a file read later
                    mapping = next((m for _, _, m in reversed(structures)
                                    if ordinals <= m.keys()), current)
                chosen = frozenset(mapping[o] for o in ordinals if o in mapping) & all_names
                masks[mask] = _ALL if chosen == all_names else chosen
            present = masks[mask]
        else:
            present = _ALL if all_names <= data.keys() else frozenset(data) & all_names

        if operation in ("INSERT", "REFRESH", "UPDATE"):
            op = 0 if operation == "INSERT" else (refresh_op if operation == "REFRESH" else 1)
            key_change = False
            if operation == "UPDATE" and before and keys:
                key_change = any(k in before and k in data and before[k] != data[k] for k in keys)
            if present is _ALL and not key_change:  # the common case: a full row
                try:
                    for name, conv, values in hot:
                        value = data.get(name)
                        values.append(None if value is None else conv(value))
                except ValueError:
                    for _name, _, values in hot:  # roll back, then name the culprit
                        if len(values) > len(out.lists["_op"]):
                            values.pop()
                    for name in names:
                        convert(name, data.get(name), line)
                    raise
                out.add_meta(op, order, None, path, line, txn, last, delivery)
                continue
            present = set(all_names if present is _ALL else present)
            row = {n: convert(n, data.get(n), line) for n in present}
            pair_id = None
            if operation == "UPDATE" and before and keys:
                old = {k: convert(k, before.get(k), line) for k in keys if k in before}
                for k in keys:
                    if k not in present and k in old:
                        row[k] = old[k]
                        present.add(k)
                if len(old) == len(keys) and all(k in present for k in keys) \
                        and any(old[k] != row[k] for k in keys):
                    old_row = {n: convert(n, before.get(n), line) for n in before if n in all_names}
                    pair_id = f"{path}:{line}"
                    out.add(old_row, 2, (sequence, path, line, 0), None, path, line, txn, last,
                            delivery)
                    out.pair(pair_id)
                    if not mask:  # without a mask, beforeData's columns are the old values
                        for n in before:
                            if n in all_names and n not in present:
                                row[n] = old_row[n]
                                present.add(n)
                    op, order = 0, (sequence, path, line, 1)
            out.add(row, op, order, None if present >= all_names else sorted(present),
                    path, line, txn, last, delivery)
            if pair_id:  # what is still absent comes from the old key
                out.pair(pair_id)
        elif operation == "DELETE":
            source = before if before else data
            row = {n: convert(n, source.get(n), line) for n in source if n in all_names}
            out.add(row, 2, order, None, path, line, txn, last, delivery)
        else:
            raise SourceError(f"unknown operation {headers.get('operation')!r} (expected REFRESH, "
                              "INSERT, UPDATE or DELETE)", file=path, line=line)


def parse_rows(task: dict) -> dict[str, Any]:
    """The row parser on one chunk: canonical change columns as lists (a located error row
    where a message is bad)."""
    ctx = task["ctx"]
    out = ChangeColumns([name for name, _ in ctx["columns"]], ROW_EXTRA)
    try:
        parse_into(task, ctx, out)
    except SourceError as exc:
        out.error(exc, task["file"], ("", task["file"], exc.line or 0, 0))
    return out.lists
