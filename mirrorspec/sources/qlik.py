"""Qlik Replicate JSON messages (Qlik's Kafka/MapR Streams message format) → canonical changes.

Files hold one message per line, or JSON arrays / concatenated documents. A message is the
envelope `{"magic": "atMSG", "type": "MD"|"DT", ..., "message": {...}}` or the bare message
(`{data, beforeData, headers}` for data, `{lineage, tableStructure, ...}` for metadata).

- Metadata (MD): `tableStructure.tableColumns` gives columns (ordinal, type, precision, scale,
  primaryKeyPosition); a later tableVersion adds columns. The reader remembers the structures it
  saw (reader state), since later files carry only data messages.
- Data (DT): REFRESH/INSERT → insert, UPDATE → update, DELETE → delete (key from beforeData,
  else data); an UPDATE whose key differs between beforeData and data → delete + insert.
  `columnMask` (hex, bit k−1 = ordinal k) tells absent columns from NULLs → `_present`.
- Order: changeSequence (fixed width; REFRESH's empty one first), then file path, then line.
- Only whole transactions are published: events from the first unfinished transaction on
  (one with `transactionLastEvent` false everywhere) wait for the next run.

This module is the pure parser: parsing runs in Python workers (the Spark reader is
`mirrorspec.spark.publish.feeds.qlik`); big line-per-message files are split into chunks at line boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import (ORDER_COLUMN, SOURCE_LINE_COLUMN, ChangeColumns,
                                     InferredColumn, InferredSchema, list_feed_files, reload_op)
from mirrorspec.sources.replicator_positions import (clean_chunk_deliveries, marks_of,
                                                     qlik_delivery, sequence_deliveries)
from mirrorspec.sources.delivery import DELIVERY_COLUMN, FileCheck, repeats_land
from mirrorspec.sources.delivery import STATE_KEY as DELIVERY_STATE
from mirrorspec.sources.qlik_messages import (ROW_EXTRA, FileScan, QlikColumn, QlikStructure, accepts,
                                              parse_rows, read_chunk, scan_file)


TYPE_NAME = "qlik_replicate"
# Line-per-message chunks go through the column-wise Arrow path (`qlik_columns`) when it can
# prove them; False sends every chunk through the row parser (benchmarks compare the two).
COLUMNWISE = True

def parse_task(task: dict) -> dict[str, Any]:
    """Parse one chunk of one file into canonical change columns (runs in a Python worker):
    lists, or Arrow arrays when the column-wise path took the chunk."""
    ctx = task["ctx"]
    if ctx.get("columnwise") and task["mode"] == "lines":
        from mirrorspec.sources.qlik_columns import parse_lines_chunk

        try:
            raw = read_chunk(task)
            changes = parse_lines_chunk(task, ctx, raw)
        except SourceError as exc:
            out = ChangeColumns([name for name, _ in ctx["columns"]], ROW_EXTRA)
            out.error(exc, task["file"], ("", task["file"], exc.line or 0, 0))
            return out.lists
        if changes is not None:
            changes = _with_deliveries(changes, task, ctx)
        if changes is not None:
            return changes
        task = dict(task, data=raw, compressed=False)  # read once
    return parse_rows(task)


def _with_deliveries(changes: dict[str, Any], task: dict, ctx: dict) -> dict[str, Any] | None:
    """The column-wise chunk's changes with their `_delivery` column, or None when the chunk
    may hold a re-send (the row parser then checks it message by message). One message per
    line on this path."""
    marks = marks_of(ctx.get("marks"))
    lines = changes[SOURCE_LINE_COLUMN]
    order = changes[ORDER_COLUMN]
    if hasattr(lines, "to_pylist") and hasattr(order, "field"):
        plain = sequence_deliveries(order.field("seq"), lines, task["file"], marks)
        if plain is not None:
            return {**changes, DELIVERY_COLUMN: plain}
    lines = lines.to_pylist() if hasattr(lines, "to_pylist") else list(lines)
    sequences = order.field("seq").to_pylist()
    by_line = dict(sorted(zip(lines, sequences)))
    check = FileCheck(marks, bool(ctx["keys"]), True, task["file"],
                      repeats_land=bool(ctx.get("repeats_land")))
    values = clean_chunk_deliveries([qlik_delivery(s, task["file"]) for s in by_line.values()],
                                    check, bool(ctx["keys"]))
    if values is None:
        return None
    value_of = dict(zip(by_line, values))
    return {**changes, DELIVERY_COLUMN: [value_of[line] for line in lines]}


# --- the reader ------------------------------------------------------------------------------

def _options(options: dict | None) -> dict:
    options = dict(options or {})
    decimal = str(options.get("decimal", "double")).lower()
    if decimal not in ("double", "string"):
        raise SourceError(f"source option decimal: {decimal!r} must be 'double' or 'string'")
    options["decimal"] = decimal
    return options


def _select(structures: list[QlikStructure], options: dict) -> list[QlikStructure]:
    """The metadata messages of the configured table; error when the feed mixes tables."""
    wanted_table, wanted_schema = options.get("table"), options.get("schema")
    chosen = [s for s in structures
              if (not wanted_table or s.table == wanted_table)
              and (not wanted_schema or s.schema == wanted_schema)]
    tables = {(s.schema, s.table) for s in chosen}
    if len(tables) > 1:
        listed = ", ".join(f"{s}.{t}" for s, t in sorted(tables, key=str))
        raise SourceError(f"the feed holds metadata for several tables ({listed})",
                          file=chosen[-1].file, line=chosen[-1].line,
                          hint="set source.options.table (and schema) to the Replicate table name")
    return chosen


def merge_columns(structures: Sequence[QlikStructure]) -> list[QlikColumn]:
    """Columns of every table version, first-seen order (a new tableVersion adds columns)."""
    seen: dict[str, QlikColumn] = {}
    for structure in structures:
        for column in structure.columns:
            seen[column.name] = column
    order: list[str] = []
    for structure in structures:
        for column in structure.columns:
            if column.name not in order:
                order.append(column.name)
    return [seen[n] for n in order]


@dataclass
class QlikBatch:
    """What the driver worked out for one batch of files."""

    columns: list[tuple[str, str]]
    keys: list[str]
    structures: list[QlikStructure]
    tasks: list[dict]


class QlikReplicateFormat:
    """`source.type: qlik_replicate`."""

    type_name = TYPE_NAME

    def infer_schema(self, path: str, options: dict[str, Any]) -> InferredSchema | None:
        """Columns and keys from the feed's metadata messages (pure Python)."""
        opts = _options(options)
        structures: list[QlikStructure] = []
        try:
            files = list_feed_files(path)
        except SourceError:
            return None
        for file in files:
            structures.extend(scan_file(file, opts["decimal"]).structures)
        structures = _select(structures, opts)
        if not structures:
            return None
        columns = merge_columns(structures)
        latest = structures[-1]
        return InferredSchema(
            columns=tuple(InferredColumn(c.name, c.data_type, c.nullable) for c in columns),
            key_columns=latest.key_columns, origin=f"{latest.file}:{latest.line}")

    def plan_tasks(self, table: Any, files: Sequence[str], state: dict[str, Any]) -> "QlikBatch":
        """Scan `files` on the driver: metadata, columns, keys and the parse tasks (pure Python)."""
        opts = _options(table.source.options)
        reader_state = dict(state.get("reader") or {})
        known = [QlikStructure.from_dict(d) for d in reader_state.get("structures", [])]
        scans = [scan_file(f, opts["decimal"]) for f in sorted(files)]
        origins = {(s.file, s.line) for s in known}
        found = [s for scan in scans for s in scan.structures if (s.file, s.line) not in origins]
        structures = sorted(_select(known + found, opts), key=lambda s: (s.file, s.line))
        columns, keys, ordinals = self._resolve(table, structures, scans)

        refresh_op = reload_op(state, keys)
        skip = reader_state.get("cutoff")
        ctx = {
            "columns": [[c, t] for c, t in columns], "keys": keys,
            "structures": [[s.file, s.line, {str(c.ordinal): c.name for c in s.columns}]
                           for s in structures],
            "default_ordinals": {str(k): v for k, v in ordinals.items()},
            "refresh_op": refresh_op, "binary": opts.get("binary_encoding", "hex"),
            "skip_before": skip or [], "skip_files": list(state.get("held_back", [])) if skip else [],
            "table": opts.get("table"), "columnwise": COLUMNWISE,
            "marks": state.get(DELIVERY_STATE),  # what earlier batches applied
            "repeats_land": repeats_land(table.source.options),
        }
        tasks = [{"file": scan.path, "mode": scan.mode, "start": a, "end": b, "first_line": line,
                  "compressed": scan.compressed, "ctx": ctx}
                 for scan in scans for a, b, line in scan.chunks]
        return QlikBatch(columns, keys, structures, tasks)

    @staticmethod
    def _resolve(table: Any, structures: list[QlikStructure], scans: list[FileScan]):
        """Columns [(name, DataType)], key columns and the fallback ordinal map for the batch."""
        feed = merge_columns(structures)
        planned = [(c.name, c.type or "String") for c in (table.columns or [])]
        if not planned and not feed:
            first = next(((s.path, s.first_data_line or 1) for s in scans if s.chunks), None)
            raise SourceError("data messages for a table with no metadata message and no YAML "
                              "columns", file=first[0] if first else None,
                              line=first[1] if first else None,
                              hint="declare the table's columns in its YAML, or replay the "
                                   "Replicate metadata message into the feed")
        columns = list(planned)
        names = {n for n, _ in planned}
        for column in feed:
            declared = next((t for n, t in planned if n == column.name), None)
            if declared is None:
                columns.append((column.name, column.data_type))
                names.add(column.name)
            elif not accepts(column.data_type, declared):
                where = next(s for s in reversed(structures)
                             if any(c.name == column.name for c in s.columns))
                raise SourceError(
                    f"column {column.name!r} is {declared} in the YAML but the feed's metadata "
                    f"says {column.qlik_type} ({column.data_type})", file=where.file, line=where.line,
                    hint="make the YAML type match the feed (or drop it to use the feed's)")
        feed_keys = list(structures[-1].key_columns) if structures else []
        keys = list(table.key_columns or [])
        if keys and feed_keys and keys != feed_keys:
            raise SourceError(f"key_columns {keys} in the YAML differ from the feed's primary key "
                              f"{feed_keys}", file=structures[-1].file, line=structures[-1].line,
                              hint="make key_columns match the table's primary key")
        keys = keys or feed_keys
        ordinals = {i + 1: n for i, (n, _) in enumerate(planned)}
        return columns, keys, ordinals
