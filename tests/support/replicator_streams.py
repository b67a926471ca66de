"""Qlik Replicate, Arcion and AWS DMS as readers under the delivery harness
(tests/support/delivery_harness.py): each adapter renders a clean stream's events in its producer's
documented format, positions included, and parses a file with the reader's pure parser.

- Qlik Replicate (seed 001; Qlik's "Headers" page, AR_H_CHANGE_SEQ: `YYYYMMDDHHmmSShh` and a
  19-digit change number): a data message per line, `changeSequence` per change (empty for a
  full load's REFRESH rows), `columnMask` leaving out the columns an update did not send.
- Arcion (seed 002): JSON lines (snapshot objects, realtime records with before, after,
  exists), or headerless CSV (snapshot rows of x fields, realtime rows of 3x+3 fields:
  New_Val, Old_Val, Exists_Val per column, then opType, cursor, operationcount); the cursor
  carries `timestamp` (one per transaction here), `dscId` and `mutId` (one per change);
  Exists_Val 0 for a column an update did not send.
- AWS DMS (S3 target, CSV without a header): `Op`, the `TimestampColumnName` column (the source
  commit time: one transaction's rows share it), then the columns; `CsvNoSupValue` for a LOB
  column an update did not supply. Every file is a CDC file (the harness names files).
"""

from __future__ import annotations

import csv
import io
import json
import os
import tempfile
from typing import Any, Sequence

from tests.support.delivery_harness import COLUMNS, KEY, LARGE, Change, Delivered, Stream

from mirrorspec.artifacts.plan import ColumnSpec, SourceSpec, TablePlan
from mirrorspec.base.errors import SourceError
from mirrorspec.sources import arcion, qlik
from mirrorspec.sources.arrow_columns import as_lists
from mirrorspec.sources.delivery import DELIVERY_COLUMN, STATE_KEY, Marks

NAMES = [n for n, _ in COLUMNS]


def _text(name: str, value: Any) -> Any:
    """A value as these producers write text: lists as JSON, bytes as hex."""
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).hex()
    if isinstance(value, list):
        return json.dumps(value, separators=(",", ":"))
    return value


def _unchanged(event, item: Delivered) -> set[str]:
    """The large columns a partial image leaves out (those the update did not change)."""
    if not item.partial or event.op != "u":
        return set()
    return {n for n in LARGE if event.row[n] == event.before[n]}


def _table(keyed: bool, source_type: str, options: dict) -> TablePlan:
    return TablePlan(unique_id="prop.items", name="items", schema="prop", warehouse_schema="prop",
                     landing_path="/unused", delta_path="/unused", metadata={},
                     key_columns=[KEY] if keyed else [],
                     columns=[ColumnSpec(n, t) for n, t in COLUMNS],
                     source=SourceSpec(source_type, "/unused", dict(options)))


def _rows(out: dict[str, list], file: str) -> list[Change]:
    changes = []
    for i in range(len(out["_op"])):
        if out.get("_error") and out["_error"][i]:
            message, _, hint = out["_error"][i].partition("\n  hint: ")
            raise SourceError(message, file=out["_source_file"][i], line=out["_source_line"][i],
                              hint=hint or None)
        changes.append(Change({n: out[n][i] for n in NAMES}, out["_op"][i], out["_order"][i],
                              out["_present"][i], file, out["_source_line"][i],
                              out[DELIVERY_COLUMN][i]))
    return changes


def _state(marks: Marks) -> dict[str, Any]:
    return {STATE_KEY: marks.to_state()} if marks else {}


class _FileParser:
    """Writes a rendered file to a temporary folder so the reader's planner can scan it (one
    folder per adapter: the paths of a feed's files sort as their names, as in one feed)."""

    _folder: str | None = None

    def _path(self, text: str, file: str) -> str:
        if self._folder is None:
            self._folder = tempfile.mkdtemp(prefix="delivery-")
        path = os.path.join(self._folder, file)
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        return path


# --- Qlik Replicate ---------------------------------------------------------------------------------

def change_sequence(index: int) -> str:
    """A changeSequence: the hundredths timestamp, then the 19-digit change number."""
    return f"2024050210010000{index + 1:019d}"


class QlikAdapter(_FileParser):
    source_type = "qlik_replicate"
    options: dict[str, Any] = {}

    def render(self, stream: Stream, events: Sequence[Delivered], file: str) -> str:
        lines = []
        for item in events:
            event = stream.events[item.index]
            data = {n: _text(n, v) for n, v in event.row.items()}
            headers: dict[str, Any] = {"changeSequence": "" if event.snapshot else
                                       change_sequence(item.index)}
            before = None
            if event.op == "r":
                headers["operation"] = "REFRESH"
            elif event.op == "c":
                headers["operation"] = "INSERT"
            elif event.op == "u":
                headers["operation"] = "UPDATE"
                if stream.full_before:
                    before = {n: _text(n, v) for n, v in event.before.items()}
                left_out = _unchanged(event, item)
                if left_out:
                    for name in left_out:
                        del data[name]
                    ordinals = [NAMES.index(n) + 1 for n in NAMES if n not in left_out]
                    headers["columnMask"] = format(sum(1 << (o - 1) for o in ordinals), "x")
            else:
                headers["operation"] = "DELETE"
            lines.append(json.dumps({"magic": "atMSG", "type": "DT", "headers": None,
                                     "message": {"data": data, "beforeData": before,
                                                 "headers": headers}}))
        return "\n".join(lines) + "\n"

    def parse(self, text: str, file: str, keyed: bool, marks: Marks) -> list[Change]:
        path = self._path(text, file)
        batch = qlik.QlikReplicateFormat().plan_tasks(
            _table(keyed, self.source_type, self.options), [path], _state(marks))
        return [c for task in batch.tasks
                for c in _rows(as_lists(qlik.parse_task(task)), file)]


# --- Arcion -----------------------------------------------------------------------------------------

def cursor(stream: Stream, index: int) -> str:
    """An Arcion cursor as Replicant writes it (seed 002): one timestamp per transaction,
    one mutId per change."""
    group = stream.events[index].group
    return json.dumps({"extractorId": 0, "nodeID": "node1", "timestamp": 1620787841959 + group,
                       "extractionTimestamp": 1620787841959 + group, "dscId": 1620787053904,
                       "mutId": 1048408 + index, "partNum": 1, "v": 2}, separators=(",", ":"))


class ArcionAdapter(_FileParser):
    """Arcion's JSON files (the harness names files `.json`): snapshot objects and realtime
    records, one per line; `csv=True` renders the CSV form instead (for `.csv` files)."""

    source_type = "arcion"
    options: dict[str, Any] = {"header": False, "column_order": NAMES}

    def __init__(self, csv: bool = False):
        self.csv = csv

    def render(self, stream: Stream, events: Sequence[Delivered], file: str) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for item in events:
            event = stream.events[item.index]
            if event.snapshot:
                row = {n: _text(n, event.row[n]) for n in NAMES}
                if self.csv:
                    writer.writerow(row.values())
                else:
                    out.write(json.dumps(row) + "\n")
                continue
            new: dict[str, Any] = {}
            old: dict[str, Any] = {}
            if event.op == "c":
                new = dict(event.row)
            elif event.op == "u":
                left_out = _unchanged(event, item)
                new = {n: v for n, v in event.row.items() if n not in left_out and n != KEY}
                old = dict(event.before) if stream.full_before else {KEY: event.row[KEY]}
            else:
                old = dict(event.row) if stream.full_before else {KEY: event.row[KEY]}
            flags = {n: (1 if n in new else 0) | (2 if n in old else 0) for n in NAMES}
            op = {"c": "I", "u": "U", "d": "D"}[event.op]
            counts = '{"insertCount":0,"updateCount":0,"deleteCount":0,"replaceCount":0}'
            if self.csv:
                fields = []
                for name in NAMES:
                    fields += [_text(name, new[name]) if name in new else "NULL",
                               _text(name, old[name]) if name in old else "NULL",
                               str(flags[name])]
                writer.writerow(fields + [op, cursor(stream, item.index), counts])
                continue
            out.write(json.dumps({
                "tableName": {"namespace": {"catalog": None, "schema": "shop"}, "name": "items"},
                "opType": op, "cursor": cursor(stream, item.index),
                "before": {n: _text(n, old[n]) if n in old else "null" for n in NAMES},
                "after": {n: _text(n, new[n]) if n in new else "null" for n in NAMES},
                "exists": {n: str(f) for n, f in flags.items()},
                "operationcount": counts}) + "\n")
        return out.getvalue()

    def parse(self, text: str, file: str, keyed: bool, marks: Marks) -> list[Change]:
        path = self._path(text, file)
        _, _, tasks = arcion.ArcionFormat().plan_tasks(
            _table(keyed, self.source_type, self.options), [path], _state(marks))
        return [c for task in tasks for c in _rows(as_lists(arcion.parse_task(task)), file)]


def arcion_row(op: str, key: int, name: str, mut: int) -> str:
    """One realtime CSV row of a (name, id) table as seed 002 writes it: a triplet per column
    in that order, then opType, the cursor and operationcount."""
    new, exists = ("NULL", "0") if op == "D" else (name, "1")
    cursor_text = json.dumps({"extractorId": 0, "nodeID": "node1",
                              "timestamp": 1620787841959 + mut,
                              "extractionTimestamp": 1620787841959 + mut,
                              "dscId": 1620787053904, "mutId": 1048408 + mut, "partNum": 1,
                              "v": 2})
    key_triplet = [str(key), "NULL", "1"] if op == "I" else ["NULL", str(key), "2"]
    fields = [new, "NULL", exists, *key_triplet, op, cursor_text, '{"insertCount":1}']
    return ",".join('"' + f.replace('"', '""') + '"' if "," in f or '"' in f else f
                    for f in fields)


# --- AWS DMS ----------------------------------------------------------------------------------------

NO_SUP = "NOSUP"


def commit_time(stream: Stream, index: int) -> str:
    """The TimestampColumnName value of a CDC row: its transaction's commit time."""
    group = stream.events[index].group
    return f"2023-10-29 11:{group // 60:02d}:{group % 60:02d}.{123456 + group:06d}"


def change_seq(index: int) -> str:
    """An AR_H_CHANGE_SEQ a DMS transformation rule writes into a column: `YYYYMMDDHHmmSShh`
    and a 19-digit change number."""
    return f"2023102911340100{index + 1:019d}"


class DmsAdapter:
    """DMS CSV: `Op`, the commit time, the columns; with `sequence_column`, the
    `$AR_H_CHANGE_SEQ` column a transformation rule adds after them."""

    source_type = "aws_dms"
    options: dict[str, Any] = {"timestamp_column": "commit_ts", "no_sup_value": NO_SUP}
    sequence_column: str | None = None

    def render(self, stream: Stream, events: Sequence[Delivered], file: str) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        for item in events:
            event = stream.events[item.index]
            left_out = _unchanged(event, item)
            values = [NO_SUP if n in left_out else _text(n, event.row[n]) for n in NAMES]
            op = {"r": "I", "c": "I", "u": "U", "d": "D"}[event.op]
            sequence = [change_seq(item.index)] if self.sequence_column else []
            writer.writerow([op, commit_time(stream, item.index), *values, *sequence])
        return out.getvalue()

    def parse(self, text: str, file: str, keyed: bool, marks: Marks) -> list[Change]:
        from mirrorspec.sources.aws_dms import parse_csv, parse_options
        from mirrorspec.sources.debezium import TableShape

        extra = [(self.sequence_column, "String")] if self.sequence_column else []
        shape = TableShape((*COLUMNS, *extra), (KEY,) if keyed else ())
        width = len(COLUMNS) + len(extra)
        return [Change(dict(zip(NAMES, r[:width])), r[width], r[width + 1], r[width + 2],
                       r[width + 3], r[width + 4], r[width + 5])
                for r in parse_csv(text, file, shape, parse_options(self.options), marks)]
