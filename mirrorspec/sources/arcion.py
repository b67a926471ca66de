"""Arcion Replicant S3 files, CSV and JSON, snapshot and realtime → canonical changes.

CSV (RFC 4180 quoting):
- snapshot rows: x fields, one per column → insert;
- realtime rows: 3x+3 fields: per column `New_Val, Old_Val, Exists_Val` (0 neither, 1 new,
  2 old, 3 both), then `opType` (I/U/D), `cursor` (JSON text), `operationcount` (JSON text).
  Arcion does not write the triplets in table-ordinal order (the seed's region rows start with
  r_comment), so the order is never assumed: with a header row the triplets are mapped by the
  header's names; without one, by the source option `column_order` (the columns in the order
  Arcion writes them), else by the order of the YAML columns.
JSON: snapshot objects `{column: "value"}` and realtime records `{tableName, opType, cursor,
before, after, exists, operationcount}`, one per line or concatenated / pretty-printed.

Every value is text; `NULL`/`null` means NULL only where Exists says the value is present.
I → insert, U → update (only the columns present: `_present`), D → delete (key from the old
values), a key change → delete + insert. Order: snapshot rows first, then realtime changes by
their cursor position (timestamp, dscId, mutId: `replicator_positions`), then files by the
cursor timestamp of their first change (then path) and file order. A change whose cursor a
file or an earlier batch already sent is a re-send, dropped (`sources/delivery.py`).
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from typing import Any, Sequence

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import (OP_INSERT, ChangeColumns, InferredSchema, iter_json_documents,
                                     loads_line, read_task_bytes, reload_op, value_converter)
from mirrorspec.sources.delivery import DELIVERY_COLUMN, DeliveryError, FileCheck, repeats_land
from mirrorspec.sources.delivery import STATE_KEY as DELIVERY_STATE
from mirrorspec.sources.qlik_messages import decode, read_bytes
from mirrorspec.sources.replicator_positions import UNPOSITIONED, admit, arcion_delivery, \
    arcion_position, marks_of

TYPE_NAME = "arcion"
CHUNK_BYTES = 16 * 1024 * 1024
META_FIELDS = ("optype", "cursor", "operationcount")

# CSV chunks go through the column-wise Arrow path (`arcion_columns`) when it can prove them;
# False sends every chunk through the Python parser (benchmarks compare the two).
COLUMNWISE = True
_AFFIX = re.compile(r"(^(new|old|exists|before|after)(_val)?[_.: ]+)|([_.: ]+(new|old|exists|before|after)(_val)?$)",
                    re.IGNORECASE)


def _norm(name: str) -> str:
    return str(name).strip().strip('"').lower()


def _meta_name(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def header_column(names: Sequence[str], known: Sequence[str]) -> str:
    """The column a header triplet (or single field) names: its known column, or its first name
    with New/Old/Exists affixes removed."""
    by_norm = {_norm(k): k for k in known}
    for name in names:
        for candidate in (name, _AFFIX.sub("", str(name).strip())):
            if _norm(candidate) in by_norm:
                return by_norm[_norm(candidate)]
    return _AFFIX.sub("", str(names[0]).strip())


def _is_header(row: Sequence[str], known: Sequence[str]) -> bool:
    if not known:
        return True
    names = {_norm(k) for k in known}
    matching = sum(1 for f in row if _norm(f) in names or _norm(_AFFIX.sub("", f.strip())) in names
                   or _meta_name(f) in META_FIELDS)
    return matching * 2 >= len(row)


@dataclass
class Layout:
    """How a file's fields map to columns: `realtime` triplets or `snapshot` fields (None: both
    are possible and the field count decides, when there is no header)."""

    columns: list[str]
    realtime: bool | None
    header: bool
    # without a header: snapshot rows follow the table's order (the seed's `0, AFRICA ,AFRICA`),
    # realtime triplets Arcion's (`column_order`)
    snapshot_columns: list[str] | None = None


def _cursor_timestamp(text: Any) -> int | None:
    try:
        cursor = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return None
    if isinstance(cursor, dict):
        value = cursor.get("timestamp")
        try:
            return int(value) if value is not None else None
        except (TypeError, ValueError):
            return None
    return None


@dataclass
class FileScan:
    path: str
    kind: str  # "csv" | "json"
    mode: str  # json: "lines" | "documents"; csv: "csv"
    layout: Layout | None
    chunks: list[tuple[int, int, int]] = field(default_factory=list)
    first_timestamp: int | None = None
    compressed: bool = False
    json_columns: list[str] = field(default_factory=list)


def _options(options: dict | None) -> dict:
    options = dict(options or {})
    header = options.get("header", "auto")
    if isinstance(header, str):
        header = header.lower()
    if header not in (True, False, "auto", "true", "false"):
        raise SourceError(f"source option header: {header!r} must be true, false or auto")
    options["header"] = {"true": True, "false": False}.get(header, header)
    order = options.get("column_order")
    if order is not None and (not isinstance(order, list) or not all(isinstance(c, str) for c in order)):
        raise SourceError("source option column_order must be a list of column names")
    nulls = options.get("null_values", ["NULL", "null"])
    options["null_values"] = [nulls] if isinstance(nulls, str) else list(nulls)
    delimiter = options.get("delimiter", ",")
    if not isinstance(delimiter, str) or len(delimiter) != 1:
        raise SourceError(f"source option delimiter: {delimiter!r} must be one character")
    options["delimiter"] = delimiter
    return options


def _file_kind(path: str, head: bytes) -> str:
    lower = path.lower().removesuffix(".gz")
    if lower.endswith((".json", ".jsonl", ".ndjson")):
        return "json"
    if lower.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    return "json" if head.lstrip()[:1] in (b"{", b"[") else "csv"


def scan_file(path: str, known: Sequence[str], options: dict,
              chunk_bytes: int | None = None) -> FileScan:
    """Header, layout, first cursor timestamp and chunks of one feed file (driver side)."""
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    raw = read_bytes(path)
    compressed = path.endswith(".gz") or raw[:2] == b"\x1f\x8b"
    kind = _file_kind(path, raw[:64])
    if kind == "json":
        return _scan_json(path, raw, compressed)
    text_head = decode(raw[: 1 << 20], path) if len(raw) > 1 << 20 else decode(raw, path)
    reader = csv.reader(io.StringIO(text_head, newline=""), delimiter=options["delimiter"])
    first = _next_row(reader, path)
    if first is None:
        return FileScan(path, "csv", "csv", None, [], None, compressed)
    header = options["header"]
    has_header = _is_header(first, known) if header == "auto" else bool(header)
    if not has_header and not known and not options.get("column_order"):
        raise SourceError("CSV file without a header row, and the table's YAML lists no columns",
                          file=path, line=1,
                          hint="turn on include-header in Arcion's applier, or declare the "
                               "columns (in Arcion's order: source option column_order)")
    if has_header:
        fields = [f.strip() for f in first]
        if len(fields) >= 3 and [_meta_name(f) for f in fields[-3:]] == list(META_FIELDS) \
                and (len(fields) - 3) % 3 == 0:
            columns = [header_column(fields[i:i + 3], known) for i in range(0, len(fields) - 3, 3)]
            layout = Layout(columns, True, True)
        else:
            layout = Layout([header_column([f], known) for f in fields], False, True)
        data_row = _next_row(reader, path)
    else:
        order = list(options.get("column_order") or known)
        layout = Layout(order, None, False, list(known or order))
        data_row = first
    timestamp = None
    if data_row is not None and len(data_row) == 3 * len(layout.columns) + 3:
        timestamp = _cursor_timestamp(data_row[-2])
    return FileScan(path, "csv", "csv", layout, _csv_chunks(raw, compressed, chunk_bytes),
                    timestamp, compressed)


def _next_row(reader: Any, path: str) -> list[str] | None:
    """The next non-empty row the scan reads, or None at the end."""
    try:
        return next((r for r in reader if r), None)
    except csv.Error as exc:
        raise SourceError(f"malformed CSV: {exc}", file=path, line=reader.line_num) from None


def _csv_chunks(raw: bytes, compressed: bool, chunk_bytes: int) -> list[tuple[int, int, int]]:
    """Split at line ends outside quotes (RFC 4180 doubles quotes, so parity tells)."""
    if compressed:
        return [(0, len(raw), 1)]
    chunks, start, line, quotes = [], 0, 1, 0
    while start < len(raw):
        end = min(start + chunk_bytes, len(raw))
        while end < len(raw):
            newline = raw.find(b"\n", end)
            if newline == -1:
                end = len(raw)
                break
            if (quotes + raw.count(b'"', start, newline)) % 2 == 0:
                end = newline + 1
                break
            end = newline + 1
        quotes = (quotes + raw.count(b'"', start, end)) % 2
        chunks.append((start, end, line))
        line += raw.count(b"\n", start, end)
        start = end
    return chunks


def _line_chunks(raw: bytes, chunk_bytes: int | None = None) -> list[tuple[int, int, int]]:
    chunk_bytes = chunk_bytes or CHUNK_BYTES
    chunks, start, line = [], 0, 1
    while start < len(raw):
        end = raw.find(b"\n", min(start + chunk_bytes, len(raw)))
        end = len(raw) if end == -1 else end + 1
        chunks.append((start, end, line))
        line += raw.count(b"\n", start, end)
        start = end
    return chunks


def _scan_json(path: str, raw: bytes, compressed: bool) -> FileScan:
    head = raw.lstrip(b" \t\r\n\xef\xbb\xbf")
    mode = "lines"
    if head[:1] == b"[":
        mode = "documents"
    else:
        try:
            json.loads(head.split(b"\n", 1)[0])
        except ValueError:
            mode = "documents"
    first_doc, timestamp = None, None
    if mode == "documents":
        for _, doc in iter_json_documents(decode(raw, path), path):
            first_doc = doc
            break
    elif head:
        first_doc = json.loads(head.split(b"\n", 1)[0])
    columns: list[str] = []
    if isinstance(first_doc, dict):
        if "opType" in first_doc:
            timestamp = _cursor_timestamp(first_doc.get("cursor"))
            for part in ("exists", "after", "before"):
                if isinstance(first_doc.get(part), dict):
                    columns = list(first_doc[part])
                    break
        else:
            columns = list(first_doc)
    chunks = [(0, len(raw), 1)] if (mode == "documents" or compressed) else _line_chunks(raw)
    return FileScan(path, "json", mode, None, chunks, timestamp, compressed, columns)


# --- the worker-side parser --------------------------------------------------------------------

def parse_task(task: dict) -> dict[str, Any]:
    """Parse one chunk of one Arcion file into canonical change columns (Python worker): Arrow
    arrays from the column-wise path when it proves the chunk, else lists."""
    ctx = task["ctx"]
    out = ChangeColumns([n for n, _ in ctx["columns"]], (DELIVERY_COLUMN,))
    try:
        columns = _Parser(task, ctx, out).run()
    except SourceError as exc:
        out.error(exc, task["file"], (0, -1, -1, -1, 0, exc.line or 0, 0))
        columns = None
    return columns if columns is not None else out.lists


class _Parser:
    def __init__(self, task: dict, ctx: dict, out: ChangeColumns):
        self.task, self.out = task, out
        self.path = task["file"]
        self.rank = task["rank"]
        self.check = FileCheck(marks_of(ctx.get("marks")), bool(ctx["keys"]), True, self.path,
                               repeats_land=bool(ctx.get("repeats_land")))
        self.position: tuple[int, ...] = UNPOSITIONED  # the last realtime change's, for order
        self.names = [n for n, _ in ctx["columns"]]
        self.all = frozenset(self.names)
        self.keys = list(ctx["keys"])
        self.nulls = frozenset(ctx["null_values"])
        self.snapshot_op = ctx.get("snapshot_op", OP_INSERT)
        binary = ctx.get("binary", "hex")
        self.converters = {n: value_converter(t, binary) for n, t in ctx["columns"]}

    def run(self) -> dict[str, Any] | None:
        """Parse the task into `self.out`; or return the columns the column-wise path made."""
        task = self.task
        raw = read_task_bytes(task)
        if task["compressed"]:
            raw = read_bytes(task["file"], raw)
        text = decode(raw, self.path, task["first_line"])
        if task["kind"] == "csv":
            if task["ctx"].get("columnwise"):
                from mirrorspec.sources.arcion_columns import parse_csv_chunk

                columns = parse_csv_chunk(task, task["ctx"], raw)
                if columns is not None:
                    return columns
            self._csv(text)
        elif task["mode"] == "documents":
            for line, doc in iter_json_documents(text, self.path, task["first_line"]):
                self._json(doc, line)
        else:
            for index, chunk in enumerate(text.split("\n")):
                if chunk.strip():
                    line = task["first_line"] + index
                    try:
                        doc = loads_line(chunk)
                    except ValueError as exc:
                        raise SourceError(f"malformed JSON: {exc}", file=self.path, line=line) from None
                    self._json(doc, line)
        return None

    # values ---------------------------------------------------------------------------------
    def value(self, name: str, text: Any, line: int) -> Any:
        if text is None or (isinstance(text, str) and text in self.nulls):
            return None
        try:
            return self.converters[name](text)
        except ValueError as exc:
            raise SourceError(f"column {name!r}: {exc}", file=self.path, line=line,
                              hint="fix the value, or declare the column's type in the YAML") from None

    # CSV --------------------------------------------------------------------------------------
    def _csv(self, text: str) -> None:
        task = self.task
        layout = task["layout"]
        columns = layout["columns"]
        x = len(columns)
        reader = csv.reader(io.StringIO(text, newline=""), delimiter=task["delimiter"], strict=True)
        skip_header = layout["header"] and task["start"] == 0
        previous = 0
        first_line = task["first_line"]
        while True:
            try:
                fields = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                raise SourceError(f"malformed CSV: {exc}", file=self.path,
                                  line=first_line + reader.line_num - 1) from None
            line = first_line + previous
            previous = reader.line_num
            if not fields or (len(fields) == 1 and not fields[0].strip()):
                continue
            if skip_header:
                skip_header = False
                continue
            n = len(fields)
            if n == 3 * x + 3 and layout["realtime"] is not False:
                self._realtime_csv(fields, columns, line)
            elif n == x and layout["realtime"] is not True:
                order = layout.get("snapshot_columns") or columns
                self._snapshot({c: v for c, v in zip(order, fields)}, line)
            else:
                expected = (f"3x+3 = {3 * x + 3}" if layout["realtime"] else
                            f"{x}" if layout["realtime"] is False else f"{x} or 3x+3 = {3 * x + 3}")
                raise SourceError(f"row has {n} fields; expected {expected} for {x} column(s)",
                                  file=self.path, line=line,
                                  hint="check the header / column_order against the file")

    def _realtime_csv(self, fields: list[str], columns: list[str], line: int) -> None:
        x = len(columns)
        new, old = {}, {}
        for i, name in enumerate(columns):
            exists_text = fields[3 * i + 2].strip()
            if exists_text not in ("0", "1", "2", "3"):
                raise SourceError(f"Exists value {exists_text!r} of column {name!r} is not 0, 1, 2 or 3",
                                  file=self.path, line=line)
            exists = ord(exists_text) - 48
            if name not in self.all:
                continue
            if exists & 1:
                new[name] = self.value(name, fields[3 * i], line)
            if exists & 2:
                old[name] = self.value(name, fields[3 * i + 1], line)
        op = fields[3 * x].strip().upper()
        for what, text in (("cursor", fields[3 * x + 1]), ("operationcount", fields[3 * x + 2])):
            if text and not text.isspace():
                try:
                    loads_line(text)
                except ValueError as exc:
                    raise SourceError(f"malformed JSON in {what}: {exc}", file=self.path,
                                      line=line) from None
        self._change(op, new, old, line, fields[3 * x + 1])

    # JSON -------------------------------------------------------------------------------------
    def _json(self, doc: Any, line: int) -> None:
        if not isinstance(doc, dict):
            raise SourceError(f"expected a JSON object, found {type(doc).__name__}",
                              file=self.path, line=line)
        if "opType" not in doc:
            self._snapshot(doc, line)
            return
        op = str(doc.get("opType") or "").strip().upper()
        before, after = doc.get("before") or {}, doc.get("after") or {}
        exists = doc.get("exists")
        for what in ("cursor", "operationcount"):
            text = doc.get(what)
            if isinstance(text, str) and text.strip():
                try:
                    json.loads(text)
                except ValueError as exc:
                    raise SourceError(f"malformed JSON in {what}: {exc}", file=self.path,
                                      line=line) from None
        new, old = {}, {}
        names = set(before) | set(after) | (set(exists) if isinstance(exists, dict) else set())
        for name in names:
            if isinstance(exists, dict):
                text = str(exists.get(name, "0")).strip()
                if text not in ("0", "1", "2", "3"):
                    raise SourceError(f"Exists value {text!r} of column {name!r} is not 0, 1, 2 or 3",
                                      file=self.path, line=line)
                flags = ord(text) - 48
            else:  # no exists block: what the operation implies
                flags = {"I": 1, "D": 2}.get(op, 3 if name in before else 1)
            if name not in self.all:
                continue
            if flags & 1:
                new[name] = self.value(name, after.get(name), line)
            if flags & 2:
                old[name] = self.value(name, before.get(name), line)
        self._change(op, new, old, line, doc.get("cursor"))

    # both -------------------------------------------------------------------------------------
    def _snapshot(self, values: dict, line: int) -> None:
        row = {n: self.value(n, v, line) for n, v in values.items() if n in self.all}
        present = None if len(row) == len(self.all) else sorted(row)
        delivery = admit(self.check, arcion_delivery(None, self.path, True), (), ())
        self.out.add(row, self.snapshot_op, (0, *UNPOSITIONED, self.rank, line, 0), present,
                     self.path, line, delivery)

    def _change(self, op: str, new: dict, old: dict, line: int, cursor: Any) -> None:
        path, keys, out = self.path, self.keys, self.out
        position = arcion_position(cursor)
        try:
            delivery = admit(self.check, arcion_delivery(position, path, False), (),
                             (op, tuple(sorted(new.items())), tuple(sorted(old.items()))))
        except DeliveryError as exc:
            raise SourceError(exc.message, file=path, line=line, hint=exc.hint) from None
        if delivery is None:
            return  # a re-send of a change already applied or sent
        if position is not None:
            self.position = position
        rank = (1, *self.position, self.rank)
        if op == "I":
            out.add(new, 0, (*rank, line, 0), self._present(new), path, line, delivery)
        elif op == "U":
            row = dict(new)
            if keys and all(k in old for k in keys) and all(k in new for k in keys) \
                    and any(old[k] != new[k] for k in keys):
                out.add(old, 2, (*rank, line, 0), None, path, line, delivery)
                out.pair(f"{path}:{line}")
                for name, value in old.items():  # in the old image: the old values
                    row.setdefault(name, value)
                out.add(row, 0, (*rank, line, 1), self._present(row), path, line, delivery)
                out.pair(f"{path}:{line}")  # what neither image holds comes from the old key
                return
            for k in keys:
                if k not in row and k in old:
                    row[k] = old[k]
            out.add(row, 1, (*rank, line, 0), self._present(row), path, line, delivery)
        elif op == "D":
            row = old if (keys and all(k in old for k in keys)) or not new else new
            out.add(row, 2, (*rank, line, 0), None, path, line, delivery)
        else:
            raise SourceError(f"unknown opType {op!r} (expected I, U or D)", file=path, line=line)

    def _present(self, row: dict) -> list[str] | None:
        return None if len(row) >= len(self.all) else sorted(row)


# --- the format ------------------------------------------------------------------------------

class ArcionFormat:
    """`source.type: arcion`."""

    type_name = TYPE_NAME

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Arcion files carry no types or keys: nothing to infer (declare them in the YAML)."""
        return None

    def plan_tasks(self, table: Any, files: Sequence[str],
                   state: dict[str, Any] | None = None) -> tuple[list, list, list[dict]]:
        """Scan `files` on the driver: (columns, keys, parse tasks) (pure Python)."""
        opts = _options(table.source.options)
        known = [c.name for c in (table.columns or [])]
        scans = [scan_file(f, known, opts) for f in sorted(files)]
        columns = [(c.name, c.type or "String") for c in (table.columns or [])]
        names = {n for n, _ in columns}
        for scan in scans:
            extra = scan.layout.columns if scan.layout else scan.json_columns
            for name in extra:
                if name not in names:
                    columns.append((name, "String"))
                    names.add(name)
        if not columns:
            first = scans[0].path if scans else None
            raise SourceError("no columns: the feed has no header and the YAML lists none",
                              file=first, line=1 if first else None,
                              hint="declare the table's columns in its YAML")
        keys = list(table.key_columns or [])
        ordered = sorted(scans, key=lambda s: (s.first_timestamp is not None,
                                               s.first_timestamp or 0, s.path))
        ranks = {s.path: i for i, s in enumerate(ordered)}
        ctx = {"columns": [[n, t] for n, t in columns], "keys": keys,
               "null_values": opts["null_values"], "binary": opts.get("binary_encoding", "hex"),
               "snapshot_op": reload_op(state or {}, keys), "columnwise": COLUMNWISE,
               "marks": (state or {}).get(DELIVERY_STATE),  # what earlier batches applied
               "repeats_land": repeats_land(table.source.options)}
        tasks = []
        for scan in scans:
            layout = None
            if scan.layout is not None:
                layout = {"columns": scan.layout.columns, "realtime": scan.layout.realtime,
                          "header": scan.layout.header,
                          "snapshot_columns": scan.layout.snapshot_columns}
            for start, end, line in scan.chunks:
                tasks.append({"file": scan.path, "kind": scan.kind, "mode": scan.mode,
                              "start": start, "end": end, "first_line": line,
                              "compressed": scan.compressed, "rank": ranks[scan.path],
                              "layout": layout, "delimiter": opts["delimiter"], "ctx": ctx})
        return columns, keys, tasks


__all__ = ["ArcionFormat", "parse_task", "scan_file", "header_column"]
