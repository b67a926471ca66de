"""Maxwell's daemon JSON → canonical changes (`source: {type: maxwell}`).

One message per row: `database`, `table`, `type`, `ts`, `xid`, `xoffset`/`commit`, `data` (the
row; for a delete the row before it), `old` (changed columns' values before an update),
`position` ("binlog-file:offset", with output_binlog_position), `primary_key_columns` (with
output_primary_key_columns). Values are JSON: numbers, strings, base64 for binary columns,
arrays for SET columns (kept as JSON text).

- insert → insert (0); update → update (1), or, when `old` holds a key column, a delete of the
  old key then an insert; delete → delete (2). A bootstrap replaces the table: bootstrap-start →
  truncate (8), bootstrap-insert → upsert (4) on a keyed table (insert without keys),
  bootstrap-complete → nothing but its note; the Spark reader holds back the files of a
  bootstrap that has not completed (`plan_batch`). DDL messages (output_ddl) are skipped and
  counted (`ddl`). Any other type stops the table.
- Order: `position` (binlog file number, then offset), then feed file and line; a row without a
  position (bootstrap rows, or Maxwell without output_binlog_position) sorts at the position
  of the positioned row before it.
- Delivery (`delivery_of`): per `server_id` (else the binlog's base name), the binlog file
  number, the offset and `xoffset` (the row's place in its transaction; the transaction's last
  row, `commit: true`, has none and comes last). Maxwell re-sends from its stored position after
  a restart: a row at a position the file (or an earlier batch) already sent is dropped when
  it equals the first copy (`row_images.DeliveryGate`). Bootstrap rows have no position: a
  bootstrap replaces the table, so sending it again is harmless. A keyless table's binlog rows
  without `position` land as sent (a re-send can't be told from a second identical row).

Options: `key_columns`, `table`. The Spark reader is `mirrorspec.spark.publish.feeds.maxwell`.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import (OP_DELETE, OP_INSERT, OP_UPDATE, OP_UPSERT, InferredSchema,
                                     iter_json_documents)
from mirrorspec.sources.debezium import Row, TableShape
from mirrorspec.sources.delivery import Marks
from mirrorspec.sources.row_images import (BatchPlan, DeliveryGate, ImageReader, Note,
                                           RowImageOptions, TableRouter, borrow_positions,
                                           change_row, infer_from_images, key_change_rows,
                                           qualified_name, table_name_matches, truncate_row,
                                           zero_date_to_null)

TYPE_NAME = "maxwell"
STREAM_TYPES = ("insert", "update", "delete")  # binlog rows: they carry `position`
ROW_TYPES = (*STREAM_TYPES, "bootstrap-insert")
BOOTSTRAP_START, BOOTSTRAP_COMPLETE = "bootstrap-start", "bootstrap-complete"
BOOTSTRAP_MARKERS = (BOOTSTRAP_START, BOOTSTRAP_COMPLETE)
DDL_TYPES = ("database-create", "database-alter", "database-drop", "table-create",
             "table-alter", "table-drop")
_POSITION = re.compile(r"^(?P<base>.*?)\.?(?P<number>\d+):(?P<offset>\d+)$")
_INT64 = (1 << 63) - 1
_COMMIT_ROW = _INT64  # the `xoffset` of a transaction's last row (Maxwell writes none there)


def position_key(position: str) -> str:
    """A binlog position "mysql-bin.000006:800911" as a string that sorts like it: the file's
    base name, its number and the offset, both zero-padded. Raises ValueError."""
    match = _POSITION.match(position.strip())
    if not match:
        raise ValueError(f"{position!r} is not binlog-file:offset")
    return f"{match['base']}.{int(match['number']):020d}:{int(match['offset']):020d}"


def delivery_of(message: dict[str, Any]) -> tuple[str, tuple[int, ...] | None, bool]:
    """(stream, position, exact) of a Maxwell row for `delivery.Delivery`: the stream is the
    row's `server_id` (output_server_id), else the binlog's base name; the position is the
    binlog file number, the offset and `xoffset` (output_xoffset; the commit row has none and
    is its transaction's last); exact when `xoffset` or `commit` names the row within the rows
    that share a binlog event's position. (None position: a bootstrap row or Maxwell without
    output_binlog_position.) Raises ValueError for a position that isn't file:offset."""
    written = message.get("position")
    server = message.get("server_id")
    if written is None or message.get("type") not in STREAM_TYPES:
        return (f"server_id {server}" if server is not None else ""), None, False
    match = _POSITION.match(str(written).strip())
    if not match:
        raise ValueError(f"{written!r} is not binlog-file:offset")
    stream = f"server_id {server}" if server is not None else match["base"]
    xoffset = message.get("xoffset")
    if isinstance(xoffset, int) and not isinstance(xoffset, bool) and 0 <= xoffset < _INT64:
        row, exact = xoffset, True
    elif message.get("commit") is True:
        row, exact = _COMMIT_ROW, True
    else:
        row, exact = 0, False
    number, offset = int(match["number"]), int(match["offset"])
    if number > _INT64 or offset > _INT64:
        raise ValueError(f"{written!r} is out of range")
    return stream, (number, offset, row), exact


def parse_text(text: str, file: str, shape: TableShape, options: RowImageOptions,
               skipped: dict[str, int] | None = None, notes: list[Note] | None = None,
               marks: Marks | None = None) -> Iterator[Row]:
    """Canonical rows of one Maxwell file (pure Python), each ending with its `_delivery`
    value; DDL and re-sent rows (`marks`: the delivery marks of earlier batches) counted in
    `skipped`, the bootstraps' starts and ends and the file's greatest position noted in
    `notes`."""
    rows = _parse(text, file, shape, options, skipped, notes, marks)
    return borrow_positions(rows, len(shape.columns), file, notes)


def _parse(text: str, file: str, shape: TableShape, options: RowImageOptions,
           skipped: dict[str, int] | None, notes: list[Note] | None,
           marks: Marks | None) -> Iterator[Row]:
    reader = ImageReader(shape, file, zero_date_to_null)
    router = TableRouter(options.table, file, "Maxwell")
    gate = DeliveryGate(TYPE_NAME, shape, file, marks, skipped, options.repeats_land)
    for line, message in iter_json_documents(text, file):
        if not isinstance(message, dict) or "type" not in message:
            raise SourceError("not a Maxwell message (no 'type')", file=file, line=line,
                              hint="point the source at Maxwell's JSON output only")
        kind = message["type"]
        if kind in DDL_TYPES:
            if skipped is not None and table_name_matches(options, qualified_name(message)):
                skipped["ddl"] = skipped.get("ddl", 0) + 1
            continue
        if kind not in ROW_TYPES and kind not in BOOTSTRAP_MARKERS:
            raise SourceError(f"unknown Maxwell type {kind!r}", file=file, line=line,
                              hint=f"expected one of {', '.join(ROW_TYPES)} (or a bootstrap "
                                   "marker or DDL message)")
        if not router.keeps(qualified_name(message), line):
            continue
        position = None
        if message.get("position") is not None and kind in STREAM_TYPES:
            written = str(message["position"])
            try:
                position = position_key(written)
                stream, place, exact = delivery_of(message)
            except ValueError as exc:
                raise SourceError(f"'position': {exc}", file=file, line=line) from None
        if kind in BOOTSTRAP_MARKERS:
            order = (None, file, line, 0, None)
            if notes is not None:
                notes.append((kind, [], order, line))
            if kind == BOOTSTRAP_START:  # the bootstrap replaces the table's rows
                yield from gate.replace([truncate_row(len(shape.columns), None, file, line, 0,
                                                      notes)], delivery_of(message)[0])
            continue
        rows = _rows(reader, message, kind, position, file, line)
        if kind not in STREAM_TYPES:
            yield from gate.replace(rows, delivery_of(message)[0])
        elif position is None:
            yield from gate.admit(rows, delivery_of(message)[0], None, False, line)
        else:
            yield from gate.admit(rows, stream, place, exact, line)


def _rows(reader: ImageReader, message: dict[str, Any], kind: str, position: str | None,
          file: str, line: int) -> list[Row]:
    data = message.get("data")
    if kind in ("insert", "bootstrap-insert"):
        values, present = reader.values(data, line, "data", False)
        op = OP_UPSERT if kind == "bootstrap-insert" and reader.shape.key_columns else OP_INSERT
        return [change_row(values, op, position, file, line, 0, present)]
    reader.need_keys(line, kind)
    if not isinstance(data, dict) or not reader.has_keys(data):
        raise SourceError(f"'data' lacks a key column ({', '.join(reader.shape.key_columns)})",
                          file=file, line=line)
    values, present = reader.values(data, line, "data", True)
    if kind == "delete":
        return [change_row(values, OP_DELETE, position, file, line, 0, None)]
    old = message.get("old")
    if isinstance(old, dict) and any(k in old for k in reader.shape.key_columns):
        previous, _ = reader.values({**data, **old}, line, "old", True)
        pair = key_change_rows(reader, previous, values, present, position, file, line, 0,
                               "set binlog_row_image=FULL on the MySQL server")
        if pair:
            return pair
    return [change_row(values, OP_UPDATE, position, file, line, 0, present)]


def plan_batch(notes: list[dict[str, Any]], files: list[str], state: dict[str, Any]
               ) -> BatchPlan:
    """Hold back every file from a bootstrap that has not completed yet (the earliest
    bootstrap-start with no bootstrap-complete after it; a rerun after a crash starts again
    without completing the first): a bootstrap lands whole, in one landing file, or not yet."""
    unfinished: dict[str, Any] | None = None
    for note in notes:
        if note["kind"] == BOOTSTRAP_START:
            unfinished = unfinished or note
        elif note["kind"] == BOOTSTRAP_COMPLETE:
            unfinished = None
    held = [f for f in files if unfinished is not None and f >= unfinished["file"]]
    return BatchPlan(held=held, state=dict(state))


def _inference_images(message: dict[str, Any], options: RowImageOptions
                      ) -> tuple[list[dict[str, Any]], Any] | None:
    """A row message's `data` and its `primary_key_columns`."""
    if message.get("type") not in ROW_TYPES or not table_name_matches(
            options, qualified_name(message)):
        return None
    data = message.get("data")
    return ([data] if isinstance(data, dict) else []), message.get("primary_key_columns")


class MaxwellFormat:
    """`maxwell`: Maxwell's daemon JSON (MySQL binlog)."""

    type_name = TYPE_NAME

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Columns from the rows' JSON values; keys from `primary_key_columns`."""
        return infer_from_images(path, options, _inference_images)
