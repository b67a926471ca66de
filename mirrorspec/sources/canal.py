"""Alibaba Canal FlatMessage JSON → canonical changes (`source: {type: canal}`).

A FlatMessage is one MySQL statement's rows: `database`, `table`, `type`, `isDdl`, `pkNames`,
`data` (the rows after the change; before it for DELETE), `old` (per row of `data`, the changed
columns' values before the change), `mysqlType`/`sqlType` (column types), `es`, `ts`, `id`.
Every value is a string (or null); the table's DataTypes type them.

- INSERT → an insert (0) per row of `data`; UPDATE → an update (1) per row, or, when `old`
  holds a key column (the key changed), a delete of the old key then an insert; DELETE → a
  delete (2) per row. INIT (Alibaba Cloud DTS's initial load) → an upsert (4) per row (an
  insert without keys), and a run of INIT messages starts with a truncate (8): a load run again
  replaces the table. `isDdl` messages are skipped and counted (`ddl`), except TRUNCATE, which
  is a truncate. `isDdl` must be a JSON boolean; a row message needs rows in `data`.
- Order: the feed's own order (file, line, row of `data`). FlatMessage carries no binlog
  position: `es` is the statement's start time and `id` Canal's batch number (restarting with
  Canal), so neither orders changes exactly.
- Delivery: Canal re-sends after a restart (at-least-once), and without a position a re-sent
  message can't be told from a new one. On a keyed table that is harmless (inserts land as
  upserts and a re-sent suffix replays in order); a keyless table's rows land as sent, so a
  re-send adds them again (declare key_columns). INIT and TRUNCATE rows replace the table: no
  position check; but a load run again right after itself reads as one run of INIT messages,
  so a keyless table stops at a load row equal to an earlier row of the run: in its file here
  (`DeliveryGate.reload`), across files and batches in the Spark reader
  (`spark.publish.reloads.stop_at_repeated_reads`). FlatMessage's `es`, `ts` and `id` are no position (see
  docs/sources/canal.md, Order).
- `data` and `old` of different lengths, an unknown `type` or a damaged message stop the table.
- Binary columns (BLOB, BINARY, VARBINARY) are sent as ISO-8859-1 text of their bytes.

Options: `key_columns`, `table`. The Spark reader is `mirrorspec.spark.publish.feeds.canal`.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import (OP_DELETE, OP_INSERT, OP_UPDATE, OP_UPSERT,
                                     InferredColumn, InferredSchema, iter_json_documents)
from mirrorspec.sources.debezium import Row, TableShape
from mirrorspec.sources.delivery import Marks
from mirrorspec.sources.row_images import (BatchPlan, DeliveryGate, ImageReader, Note,
                                           RowImageOptions, TableRouter,
                                           change_row, inferred, key_change_rows, local_messages,
                                           parse_options, qualified_name, table_name_matches,
                                           truncate_row, zero_date_to_null)

TYPE_NAME = "canal"
INSERT, INIT = "INSERT", "INIT"
ROW_TYPES = (INSERT, "UPDATE", "DELETE", INIT)  # INIT: a row of Alibaba Cloud DTS's initial load
DDL = "ddl"
INIT_START = "init-start"  # note: an initial load may start at the file's first row message
LAST_KIND = "last-kind"    # note, details [kind]: the file's last row message of the table

# MySQL column type (the `mysqlType` text's first word) → DataType; see docs/sources/canal.md.
MYSQL_TYPES = {
    "tinyint": "Int16", "smallint": "Int16", "mediumint": "Int32", "int": "Int32",
    "integer": "Int32", "bigint": "Int64", "year": "Int32", "bit": "Int64",
    "bool": "Boolean", "boolean": "Boolean",
    "float": "Single", "double": "Double", "real": "Double", "decimal": "Double",
    "numeric": "Double",
    "date": "IDate", "datetime": "DateTime", "timestamp": "DateTime",
    "binary": "ByteArray", "varbinary": "ByteArray", "tinyblob": "ByteArray",
    "blob": "ByteArray", "mediumblob": "ByteArray", "longblob": "ByteArray",
}
# unsigned types one size up (an unsigned bigint stays Int64: values above 2^63-1 are refused)
_UNSIGNED = {"smallint": "Int32", "int": "Int64", "integer": "Int64", "mediumint": "Int32"}
# java.sql.Types codes (`sqlType`) → DataType, for messages without `mysqlType`
SQL_TYPES = {-7: "Int64", -6: "Int16", 5: "Int16", 4: "Int32", -5: "Int64", 6: "Double",
             7: "Single", 8: "Double", 2: "Double", 3: "Double", 16: "Boolean", 91: "IDate",
             93: "DateTime", -2: "ByteArray", -3: "ByteArray", -4: "ByteArray",
             2004: "ByteArray"}
_WORD = re.compile(r"^\s*([a-zA-Z]+)")
FULL_IMAGE_HINT = "set binlog_row_image=FULL on the MySQL server (Canal's requirement)"


def data_type_for(mysql_type: str | None, sql_type: Any = None) -> str:
    """The DataType of a Canal column from its `mysqlType` text, else its `sqlType` code."""
    if mysql_type:
        match = _WORD.match(mysql_type)
        word = match[1].lower() if match else ""
        if "unsigned" in mysql_type.lower() and word in _UNSIGNED:
            return _UNSIGNED[word]
        return MYSQL_TYPES.get(word, "String")
    if isinstance(sql_type, int):
        return SQL_TYPES.get(sql_type, "String")
    return "String"


def _prepare(value: Any, data_type: str) -> Any:
    if data_type == "ByteArray" and isinstance(value, str):
        return value.encode("latin-1")  # Canal writes bytes as ISO-8859-1 text
    return zero_date_to_null(value, data_type)


def parse_text(text: str, file: str, shape: TableShape, options: RowImageOptions,
               skipped: dict[str, int] | None = None, notes: list[Note] | None = None,
               marks: Marks | None = None) -> Iterator[Row]:
    """Canonical rows of one Canal FlatMessage file (pure Python), each ending with its
    `_delivery` value (no position: `marks` never apply); DDL counted into `skipped`.

    A run of INIT messages (a DTS initial load) starts with a truncate. Where the file's first
    row message of the table is INIT, whether that truncate starts a new load or continues one
    from the file before depends on that file: an INIT_START note lets the Spark reader decide.
    The file's last row message kind is noted too (LAST_KIND)."""
    reader = ImageReader(shape, file, _prepare)
    router = TableRouter(options.table, file, "Canal")
    gate = DeliveryGate(TYPE_NAME, shape, file, marks, skipped, options.repeats_land)
    previous: str | None = None  # the kind of the table's last row message in this file
    for line, message in iter_json_documents(text, file):
        if not isinstance(message, dict) or "type" not in message:
            raise SourceError("not a Canal FlatMessage (no 'type')", file=file, line=line,
                              hint="point the source at Canal's flatMessage output only")
        if not isinstance(message["type"], str):
            raise SourceError(f"'type' is {message['type']!r}, not text", file=file, line=line,
                              hint="the message is damaged: rewrite it as Canal wrote it")
        kind = message["type"].upper()
        if _is_ddl(message, kind, file, line):
            if kind == "TRUNCATE" and router.keeps(qualified_name(message), line):
                previous = kind
                yield from gate.replace([truncate_row(len(shape.columns), None, file, line, 0,
                                                      notes)], "")
            elif kind != "TRUNCATE" and skipped is not None and table_name_matches(
                    options, qualified_name(message)):
                skipped[DDL] = skipped.get(DDL, 0) + 1
            continue
        if not router.keeps(qualified_name(message), line):
            continue
        starts = kind == INIT and previous != INIT
        if starts:  # a new initial load replaces the table's rows
            if previous is None and notes is not None:
                notes.append((INIT_START, [], (None, file, line, -1, None), line))
            yield from gate.replace([truncate_row(len(shape.columns), None, file, line, -1,
                                                  notes)], "")
        previous = kind
        rows = _rows(reader, message, kind, file, line)
        # an initial load replaces the table; other row messages have no position to check
        yield from (gate.reload(rows, "", line, starts) if kind == INIT else
                    gate.admit(rows, "", None, False, line))
    if previous is not None and notes is not None:
        notes.append((LAST_KIND, [previous], (None, file, 0, 0, None), 0))


def _is_ddl(message: dict[str, Any], kind: str, file: str, line: int) -> bool:
    """`isDdl` as FlatMessage declares it (a Boolean; absent or null: not DDL), checked against
    `type`: a row type can't be DDL, and a message of another type must be."""
    flag = message.get("isDdl")
    if flag is not None and not isinstance(flag, bool):
        raise SourceError(f"'isDdl' is {flag!r}, not true or false", file=file, line=line,
                          hint="FlatMessage's isDdl is a JSON boolean; the message is damaged "
                               "or was not written by Canal: rewrite it")
    if flag and kind in ROW_TYPES:
        raise SourceError(f"a {kind} message with 'isDdl': true", file=file, line=line,
                          hint="row messages have isDdl false; the message is damaged: "
                               "rewrite it as Canal wrote it")
    if not flag and kind not in ROW_TYPES:
        raise SourceError(f"unknown Canal type {message['type']!r}", file=file, line=line,
                          hint=f"expected one of {', '.join(ROW_TYPES)} (or an isDdl "
                               "message)")
    return bool(flag)


def _rows(reader: ImageReader, message: dict[str, Any], kind: str, file: str, line: int
          ) -> list[Row]:
    if "data" not in message or message["data"] is None:
        raise SourceError(f"a {kind} message without 'data' (its rows)", file=file, line=line,
                          hint="the message is damaged: rewrite it as Canal wrote it")
    data = message["data"]
    old = message.get("old")
    if not isinstance(data, list) or (old is not None and not isinstance(old, list)):
        raise SourceError("'data' and 'old' must be arrays of rows", file=file, line=line)
    if not data:
        raise SourceError(f"a {kind} message with no rows in 'data'", file=file, line=line,
                          hint="the message is damaged: rewrite it as Canal wrote it")
    if kind == "UPDATE" and old is not None and len(old) != len(data):
        raise SourceError(f"'data' has {len(data)} row(s) but 'old' has {len(old)}",
                          file=file, line=line,
                          hint="each row of 'data' needs its 'old' row; the message is damaged")
    rows: list[Row] = []
    for index, image in enumerate(data):
        part = 2 * index
        if kind in (INSERT, INIT):
            values, present = reader.values(image, line, f"data[{index}]", False)
            op = OP_UPSERT if kind == INIT and reader.shape.key_columns else OP_INSERT
            rows.append(change_row(values, op, None, file, line, part, present))
            continue
        reader.need_keys(line, kind.lower())
        if not reader.has_keys(image):
            raise SourceError(f"data[{index}] lacks a key column "
                              f"({', '.join(reader.shape.key_columns)})", file=file, line=line)
        values, present = reader.values(image, line, f"data[{index}]", kind == "UPDATE")
        if kind == "DELETE":
            rows.append(change_row(values, OP_DELETE, None, file, line, part, None))
            continue
        changed_before = old[index] if old else None
        if isinstance(changed_before, dict) and any(
                k in changed_before for k in reader.shape.key_columns):
            previous, _ = reader.values({**image, **changed_before}, line, f"old[{index}]", True)
            pair = key_change_rows(reader, previous, values, present, None, file, line, part,
                                   FULL_IMAGE_HINT)
            if pair:
                rows.extend(pair)
                continue
        rows.append(change_row(values, OP_UPDATE, None, file, line, part, present))
    return rows


def plan_batch(notes: list[dict[str, Any]], files: list[str], state: dict[str, Any]
               ) -> BatchPlan:
    """Drop the truncate before a file's leading INIT rows where the file before it (or the
    batch before, `state["last_kind"]`) ended inside the same initial load; keep the kind of
    the table's last row message for the next batch."""
    last = state.get("last_kind")
    by_file: dict[str, list[dict[str, Any]]] = {}
    for note in notes:
        by_file.setdefault(note["file"], []).append(note)
    dropped: list[tuple[str, int]] = []
    for file in files:
        mine = by_file.get(file, [])
        dropped += [(file, n["line"]) for n in mine if n["kind"] == INIT_START and last == INIT]
        for note in mine:
            if note["kind"] == LAST_KIND:
                last = note["details"][0]
    return BatchPlan(dropped=dropped,
                     state={**state, "last_kind": last} if last else dict(state))


class CanalFormat:
    """`canal`: Alibaba Canal FlatMessage JSON (MySQL binlog)."""

    type_name = TYPE_NAME

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Columns from `mysqlType` (else `sqlType`) of the first row message; keys from
        `pkNames`."""
        opts = parse_options(options)
        if "://" in path and not path.startswith("file:"):
            return None
        for file, line, message in local_messages(path, limit=1000):
            if not isinstance(message, dict) or message.get("isDdl") or not table_name_matches(
                    opts, qualified_name(message)):
                continue
            mysql = message.get("mysqlType") or {}
            sql = message.get("sqlType") or {}
            names = list(mysql) or list(sql)
            if not names:
                continue
            columns = [InferredColumn(n, data_type_for(mysql.get(n), sql.get(n)),
                                      n not in (message.get("pkNames") or ()))
                       for n in names]
            return inferred(columns, [str(k) for k in message.get("pkNames") or ()],
                            f"{file}:{line}", opts, types_guessed=False)
        return inferred((), (), "", opts)
