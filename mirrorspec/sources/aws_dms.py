"""AWS DMS Amazon S3 target files → canonical changes (`source: {type: aws_dms}`).

DMS writes full-load files (`LOAD00000001.csv`, hexadecimal counter) and CDC files named by
timestamp (`20231029-113401000.csv`), as CSV (default) or Parquet.

- CDC rows carry `Op` (I/U/D) as the first column: I → insert (0), U → update (1), D → delete (2).
  Full-load rows have no Op (unless `IncludeOpForFullLoad`) → insert. `CdcInsertsOnly` files have
  no Op either → insert.
- With `TimestampColumnName` set (option `timestamp_column`), DMS adds that column right after
  `Op` (first when there is no Op); it orders CDC changes.
- Order: full-load files first, then CDC rows by the timestamp column (if any), then file path and
  row. Full-load files come first whatever their names (`LOAD…` sorts after `2023…`).
- CSV without a header (DMS default; `AddColumnName=true` writes one): the columns are the
  table's YAML columns, in order. A row's Op column is recognised by its field count.
- `CsvNoSupValue` (option `no_sup_value`) marks LOB columns DMS did not supply in an update: such
  a column is absent (`_present`) and completed from the mirrored row, never the placeholder.

With `PreserveTransactions` and `CdcPath`, DMS writes the CDC rows of *all* tables in transaction
order into `CDC_TXN-<timestamp>.csv` files under the CdcPath folder (CSV only, no header), each
row `Op,table_name,schema_name,<columns…>`. A table takes the rows of its source table
(option `table`: `table_name` or `schema_name.table_name`; default: the YAML table name); full-load
files and per-table CDC files (`<schema>/<table>/…`) of other tables are skipped when the option
is set, so `source.path` may be the endpoint's bucket folder holding both.

DMS cannot express a primary-key change in S3 files (an update carries only the new image), so
a key change shows up as an update of a new key; see docs/sources/aws_dms.md.

This module is the pure parser; the Spark reader is `mirrorspec.spark.publish.feeds.aws_dms`.
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator

from mirrorspec.base.delimited_text import cell_type_problem
from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_UPDATE
from mirrorspec.sources.debezium import TableShape, coerce
from mirrorspec.sources.delivery import DeliveryError, FileCheck, Marks, repeats_land
from mirrorspec.sources.producers import redelivers
from mirrorspec.sources.replicator_positions import admit, dms_delivery

TYPE_NAME = "aws_dms"
OP_CODES = {"I": OP_INSERT, "U": OP_UPDATE, "D": OP_DELETE}
OP_COLUMN_NAME = "Op"
DMS_ORDER_FIELDS = (("phase", "int"), ("ts", "string"), ("file", "string"), ("line", "bigint"))
SEQUENCE_HINT = ("list the column the task's transformation rule adds with the expression "
                 "$AR_H_CHANGE_SEQ among the table's columns, where DMS writes it (after the "
                 "source columns), and name it in change_sequence_column")
TIMESTAMP_HINT = ("AWS DMS: set the S3 endpoint's TimestampColumnName and the source option "
                  "timestamp_column, so every CDC row carries its commit time")

@dataclass(frozen=True)
class DmsOptions:
    """`source.options` of an aws_dms table, validated (names follow the DMS S3 settings)."""

    format: str | None = None  # csv | parquet; None: by file extension
    timestamp_column: str | None = None  # TimestampColumnName
    change_sequence_column: str | None = None  # a column a rule fills with $AR_H_CHANGE_SEQ
    header: bool = False  # AddColumnName
    delimiter: str = ","  # CsvDelimiter
    quote: str = '"'  # "" when Rfc4180 is false
    null_value: str = ""  # CsvNullValue
    no_sup_value: str | None = None  # CsvNoSupValue (with UseCsvNoSupValue)
    binary_encoding: str = "hex"
    key_columns: tuple[str, ...] = ()
    source_table: str | None = None  # `table` or `schema.table` (transaction files)
    repeats_land: bool = False  # keyless_repeats: land (delivery.repeats_land)


def parse_options(options: dict[str, Any] | None) -> DmsOptions:
    """`source.options` as DmsOptions. The JSON Schema (`$defs/aws_dms_options`) has checked
    names and values at validate time."""
    options = dict(options or {})
    delimiter = str(options.get("delimiter", ","))
    keys = options.get("key_columns") or ()
    no_sup = options.get("no_sup_value")
    return DmsOptions(
        format=options.get("format"),
        timestamp_column=str(options["timestamp_column"]) if options.get("timestamp_column")
        else None,
        change_sequence_column=str(options["change_sequence_column"])
        if options.get("change_sequence_column") else None,
        header=bool(options.get("header", False)),
        delimiter="\t" if delimiter == "\\t" else delimiter,
        quote=str(options.get("quote", '"')),
        null_value=str(options.get("null_value", "")),
        no_sup_value=str(no_sup) if no_sup not in (None, "") else None,
        binary_encoding=str(options.get("binary_encoding", "hex")),
        key_columns=(keys,) if isinstance(keys, str) else tuple(str(k) for k in keys),
        source_table=str(options["table"]) if options.get("table") else None,
        repeats_land=repeats_land(options),
    )


def with_default_source_table(options: DmsOptions, table_name: str) -> DmsOptions:
    """`options` whose transaction-file rows default to the mirrored table's own name."""
    if options.source_table:
        return options
    return replace(options, source_table=table_name)


TRANSACTION_PREFIX = "CDC_TXN-"


def is_transaction_file(path: str) -> bool:
    """DMS names PreserveTransactions files CDC_TXN-<timestamp>.csv."""
    return os.path.basename(path).upper().startswith(TRANSACTION_PREFIX)


def _split_source_table(name: str) -> tuple[str | None, str]:
    schema, dot, table = name.rpartition(".")
    return (schema or None) if dot else None, table


def matches_source_table(table_name: str, schema_name: str | None, wanted: str) -> bool:
    """True when a row's (table_name, schema_name) is `wanted` (`table` or `schema.table`),
    compared case-insensitively."""
    schema, table = _split_source_table(wanted)
    if table_name.lower() != table.lower():
        return False
    return schema is None or (schema_name or "").lower() == schema.lower()


def belongs_to_table(path: str, options: DmsOptions) -> bool:
    """Whether a feed file can hold rows of the table: transaction files always (their rows
    are routed), other files only under `<schema>/<table>/` (date partition folders may follow)
    when `source_table` was given."""
    if is_transaction_file(path) or not options.source_table:
        return True
    folders = os.path.normpath(os.path.dirname(path)).replace("\\", "/").split("/")
    return any(matches_source_table(folders[i], folders[i - 1] if i else None,
                                    options.source_table) for i in range(len(folders)))


def is_full_load_file(path: str) -> bool:
    """DMS names full-load files LOAD<hex counter>.<ext>."""
    return os.path.basename(path).upper().startswith("LOAD")


def file_format(path: str, options: DmsOptions) -> str:
    """'parquet' or 'csv' for a DMS file."""
    if is_transaction_file(path):
        return "csv"  # DMS writes transaction files as CSV whatever DataFormat says
    if options.format:
        return options.format
    name = path.lower()
    return "parquet" if name.endswith((".parquet", ".parquet.gz", ".parq")) else "csv"


# --- CSV (pure Python) -------------------------------------------------------------------------

@dataclass(frozen=True)
class _Layout:
    """Where the Op, timestamp, change sequence and data columns sit in a row."""

    op_index: int | None
    ts_index: int | None
    columns: tuple[tuple[int | None, str, str], ...]  # (field index or None, name, DataType)
    width: int
    seq_index: int | None = None  # the change_sequence_column's field

    def with_sequence(self, name: str | None) -> "_Layout":
        """The layout with the field of the change sequence column `name` (a table column)."""
        index = next((i for i, column, _ in self.columns if column == name), None)
        return replace(self, seq_index=index) if name else self


def _headerless_layouts(shape: TableShape, options: DmsOptions) -> dict[int, _Layout]:
    """Layouts by field count: without Op (full load) and with Op (CDC)."""
    ts_name = options.timestamp_column
    data = [(name, data_type) for name, data_type in shape.columns if name != ts_name]
    layouts = {}
    for has_op in (False, True):
        at = 1 if has_op else 0
        ts_index = at if ts_name else None
        first = at + (1 if ts_name else 0)
        columns = []
        for name, data_type in shape.columns:
            if name == ts_name:
                columns.append((ts_index, name, data_type))
            else:
                columns.append((first + data.index((name, data_type)), name, data_type))
        width = first + len(data)
        layouts[width] = _Layout(0 if has_op else None, ts_index, tuple(columns),
                                 width).with_sequence(options.change_sequence_column)
    return layouts


def _header_layout(header: list[str], shape: TableShape, options: DmsOptions, file: str,
                   line: int) -> _Layout:
    positions = {name: i for i, name in enumerate(header)}
    op_index = positions.get(OP_COLUMN_NAME)
    ts_index = positions.get(options.timestamp_column) if options.timestamp_column else None
    if options.timestamp_column and ts_index is None:
        raise SourceError(f"the header has no timestamp column {options.timestamp_column!r}",
                          file=file, line=line,
                          hint="set timestamp_column to DMS's TimestampColumnName, or remove it")
    columns = tuple((positions.get(name), name, data_type) for name, data_type in shape.columns)
    known = [i for i, _, _ in columns if i is not None]
    if not known:
        raise SourceError(f"the header names none of the table's columns "
                          f"({', '.join(shape.names)})", file=file, line=line,
                          hint="set header: false if the file has no header row")
    return _Layout(op_index, ts_index, columns, len(header)).with_sequence(
        options.change_sequence_column)


def parse_csv(text: str, file: str, shape: TableShape, options: DmsOptions,
              marks: Marks | None = None) -> Iterator[tuple]:
    """Canonical rows of one DMS CSV file (pure Python), each ending with its `_delivery`
    value. A CDC row the delivery `marks` of earlier batches cover is dropped as a re-send; a
    keyless table stops at a row equal to one the file sent at the same commit time (or, with
    no commit times, at all): `delivery.FileCheck`, unordered."""
    if options.change_sequence_column and options.change_sequence_column not in shape.names:
        raise SourceError(f"change_sequence_column {options.change_sequence_column!r} is not "
                          "one of the table's columns", file=file,
                          hint=SEQUENCE_HINT)
    if text.startswith("\ufeff"):
        text = text[1:]  # a UTF-8 byte-order mark is not part of the first field
    quoting = csv.QUOTE_MINIMAL if options.quote else csv.QUOTE_NONE
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=options.delimiter,
                        quotechar=options.quote or None, quoting=quoting, strict=True)
    phase = 0 if is_full_load_file(file) else 1
    transactions = is_transaction_file(file)
    wanted = options.source_table or ""
    layouts = None if options.header and not transactions else _headerless_layouts(shape, options)
    layout: _Layout | None = None
    null, no_sup = options.null_value, options.no_sup_value
    previous_end = 0
    # a file's rows need not be in commit-time order (the reader orders them)
    check = FileCheck(marks, bool(shape.key_columns), redelivers(TYPE_NAME), file,
                      ordered=False, repeats_land=options.repeats_land)
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise SourceError(f"malformed CSV: {exc}", file=file, line=previous_end + 1,
                              hint="check the delimiter and quote options") from None
        line = previous_end + 1
        previous_end = reader.line_num
        if not fields or fields == [""]:
            continue
        if transactions:
            if len(fields) < 3:
                raise SourceError(f"transaction row has {len(fields)} fields; expected "
                                  "Op,table_name,schema_name and the columns", file=file,
                                  line=line, hint="CDC_TXN- files are PreserveTransactions "
                                                  "files; rename other files")
            if not matches_source_table(fields[1], fields[2], wanted):
                continue  # another table's row
            fields = [fields[0], *fields[3:]]
        elif options.header and layout is None:
            layout = _header_layout(fields, shape, options, file, line)
            continue
        if layouts is not None:
            layout = layouts.get(len(fields))
            if transactions and (layout is None or layout.op_index is None):
                raise SourceError(
                    f"transaction row of {wanted} has "
                    f"{len(fields) + 2} fields; expected {max(layouts) + 2} (Op, table_name, "
                    f"schema_name, then the table's {len(shape.columns)} columns"
                    f"{' and the timestamp column' if options.timestamp_column else ''})",
                    file=file, line=line,
                    hint="the YAML columns must list every column DMS writes, in order")
            if layout is None:
                counts = " or ".join(str(n) for n in sorted(layouts))
                raise SourceError(
                    f"row has {len(fields)} fields; expected {counts} (the table's "
                    f"{len(shape.columns)} columns, the Op column and the timestamp column)",
                    file=file, line=line,
                    hint="the YAML columns must list every column DMS writes, in order; set "
                         "header: true if the file has a header row")
        elif len(fields) != layout.width:
            raise SourceError(f"row has {len(fields)} fields; the header has {layout.width}",
                              file=file, line=line)
        ts = fields[layout.ts_index] if layout.ts_index is not None else None
        sequence = fields[layout.seq_index] if layout.seq_index is not None else None
        row = _csv_row(fields, layout, shape, options, file, line, phase, null, no_sup,
                       sequence if options.change_sequence_column else ts)
        value = _admit_row(check, options, phase == 0, ts, sequence, file, line, tuple(fields))
        if value is not None:
            yield (*row, value)


def check_parquet_rows(file: str, rows: Iterable[tuple[int, Any, Any, Any]], keyed: bool,
                       options: DmsOptions, marks: Marks | None = None
                       ) -> Iterator[tuple[int, tuple | None]]:
    """The delivery checks of a DMS Parquet file's rows, as `parse_csv` makes them: for each
    (line, timestamp text, change sequence text, fingerprint of the row's values), in line
    order, (line, its `_delivery` value or None for a re-send to drop). Raises SourceError at
    the row that can't be landed safely."""
    check = FileCheck(marks, keyed, redelivers(TYPE_NAME), file, ordered=False,
                      repeats_land=options.repeats_land)
    full_load = is_full_load_file(file)
    for line, ts, sequence, content in rows:
        yield line, _admit_row(check, options, full_load, ts, sequence, file, line, content)


def _admit_row(check: FileCheck, options: DmsOptions, full_load: bool, ts: Any, sequence: Any,
               file: str, line: int, content: Any) -> tuple | None:
    """A row's `_delivery` value, None for a re-send (see `parse_csv`)."""
    try:
        delivery = dms_delivery(full_load, ts, file, sequence,
                                bool(options.change_sequence_column))
        return admit(check, delivery, (), content)
    except DeliveryError as exc:
        hint = exc.hint if options.change_sequence_column else f"{exc.hint} ({TIMESTAMP_HINT})"
        raise SourceError(exc.message, file=file, line=line, hint=hint) from None


def _csv_row(fields, layout: _Layout, shape: TableShape, options: DmsOptions, file: str,
             line: int, phase: int, null: str, no_sup: str | None, ts: str | None) -> tuple:
    op = OP_INSERT
    if layout.op_index is not None:
        code = fields[layout.op_index].strip()
        if code:
            op = OP_CODES.get(code.upper(), -1)
            if op < 0:
                raise SourceError(f"unknown DMS operation {code!r} in the Op column", file=file,
                                  line=line, hint="expected I, U or D")
    if op != OP_INSERT and not shape.key_columns:
        raise SourceError("update/delete row for a table without key columns", file=file,
                          line=line, hint="declare key_columns for the table")
    values = []
    present: list[str] = []
    absent = False
    for index, name, data_type in layout.columns:
        raw = fields[index] if index is not None else None
        if raw is not None and no_sup is not None and raw == no_sup:
            absent = True
            values.append(None)
            continue
        present.append(name)
        if raw is None or raw == null:
            values.append(None)
            continue
        try:
            values.append(coerce(raw, data_type, binary=options.binary_encoding))
        except (ValueError, TypeError, ArithmeticError) as exc:
            assert index is not None  # raw is a field of the record
            raise SourceError(f"{cell_type_problem(name, index + 1, data_type, raw)} ({exc})",
                              file=file, line=line,
                              hint="fix the value or the column's type in the YAML") from None
    order = (phase, (ts or None) if phase else None, file, line)
    return (*values, op, order, present if absent else None, file, line)


# --- the format --------------------------------------------------------------------------------

class AwsDmsFormat:
    """`aws_dms`: AWS DMS S3 target CSV and Parquet files."""

    type_name = TYPE_NAME

    def infer_schema(self, path: str, options: dict[str, Any]):
        """DMS files carry no schema a compile could trust (CSV has none): the YAML declares it."""
        return None

    def rewritable(self, path: str) -> bool:
        """Whether DMS may write the file again under its name: a full-load file. A table
        reload applies TargetTablePrepMode first (DROP_AND_CREATE empties the table's folder)
        and numbers the new load's files from LOAD00000001 again, so a name the publisher
        already read holds the new load (the publisher then reads it again)."""
        return is_full_load_file(path)
