"""`mirrorspec lint`: check a landing zone written by any producer against seed 000.

Pure Python with pyarrow (no JVM). Parquet files are read by their footers and their marker and
key columns only. The rules that decide whether the engine stops at a file are the engine's own
(`mirrorspec.openmirroring.mirroring`, `mirrorspec.landing.checks`, `mirrorspec.landing.layout`), so a table's
`stops_at` names the file (and row) where `mirrorspec mirror` would stop it.
"""

from __future__ import annotations

import csv
import fnmatch
import io
import json
import os
import re
import textwrap
from dataclasses import asdict, dataclass, field

from mirrorspec.landing import checks
from mirrorspec.openmirroring import mirroring
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.base import files as fsmod
from mirrorspec.landing import layout as landing
from mirrorspec.progress.mirror import read_state, snapshot_schema

# rule id → what it checks (the seed section it comes from)
RULES: dict[str, str] = {
    "layout/file-outside-table": "a file outside any table folder (Landing zone)",
    "layout/nested-without-schema": "a schema/table folder without the .schema suffix (Schema)",
    "layout/nested-folder": "a folder inside a table folder; tables don't nest (Landing zone)",
    "layout/unsafe-name": "a table or schema name the landing zone can't carry",
    "layout/empty-folder": "a folder without _metadata.json or data files",
    "layout/same-table": "two folders that are one table (a root folder is schema dbo)",
    "layout/partner-events": "_partnerEvents.json: invalid, or not at the landing-zone root",
    "metadata/missing": "every table folder must contain a _metadata.json file",
    "metadata/invalid": "_metadata.json is not valid JSON or has an invalid value",
    "metadata/unknown-key": "a _metadata.json key the seed doesn't define",
    "metadata/ignored-property": "a FileFormatTypeProperties entry the seed doesn't define",
    "metadata/key-changed": "keyColumns can't be changed once added",
    "warehouse/state-lost": "the Delta log's txn has neither its commit nor its state copy",
    "metadata/key-missing": "a key column missing from a data file",
    "metadata/extension": "FileFormat/FileExtension contradict the files' names",
    "metadata/dialect": "a delimited-text property contradicts the file's bytes",
    "files/not-data": "a file that isn't data (.parquet, .csv or the FileExtension); ignored",
    "files/underscore": "a file whose name starts with '_' is never read",
    "files/not-sequence-name": "file names are 20 digits in sequence mode (File name)",
    "files/duplicate-sequence": "two files carry the same sequence number",
    "files/gap": "a gap in the file sequence blocks every later file (File order)",
    "files/before-processed": "a file at or before the last applied sequence (or sequence 0): "
                              "never applied",
    "files/changed-after-applied": "a file whose size or time changed after it was applied "
                                   "(written in place): what it gained is never applied",
    "files/same-time": "LastUpdateTimeFileDetection: files with the same modification time",
    "files/older-than-processed": "LastUpdateTimeFileDetection: a file older than one processed",
    "content/zero-byte": "a zero-byte file",
    "content/unreadable": "a Parquet or delimited file that can't be read",
    "content/codec": "a Parquet codec the seed doesn't list (Snappy, GZIP, ZSTD)",
    "content/time-range": "a date or timestamp outside 0001-01-01 … 9999-12-31 (Delta's range)",
    "content/header": "a delimited file's header row (FirstRowAsHeader)",
    "content/encoding": "bytes that are invalid in the declared Encoding",
    "content/duplicate-column": "a column that appears twice in a file",
    "content/type-change": "a column's type changes between files (Change column type)",
    "content/null-type": "a Parquet column of the Null logical type (Fabric reads it as an "
                         "integer: SchemaMergeFailure)",
    "content/marker-position": "__rowMarker__ must be the final column (--strict stops it)",
    "content/marker-type": "__rowMarker__ should be an integer column (--strict stops it)",
    "content/engine-column": "a column named like one of the mirroring engine's working "
                             "columns (__marker, __p, …) or Spark's _metadata",
    "content/delete-not-nullable": "a delete row leaves a column declared IsNullable: false "
                                   "empty (applied; the service has been reported to fail it)",
    "content/row": "a bad row: __rowMarker__ value, NULL key in a 1/2/4 row, an update in a "
                   "keyless table, a malformed record or a value not of its type",
}
_SEPARATORS = mirroring.DELIMITED_PROPERTIES["ColumnSeparator"][1]
_KNOWN_UNDERSCORE = {mirroring.METADATA_FILE.lower(), landing.FOLDER_ID_FILE.lower(),
                     mirroring.PROCESSED_LEDGER_FILE.lower()}


@dataclass
class Finding:
    """One problem: where it is, which rule, and whether the engine stops the table there."""

    rule: str
    level: str                 # "error" or "warning"
    message: str
    table: str | None = None   # the table's folder, relative to the landing zone
    file: str | None = None    # relative to the landing zone
    row: int | None = None     # 1-based data row (the header apart)
    column: str | None = None
    stops: bool = False        # `mirrorspec mirror` stops the table at this file


@dataclass
class TableReport:
    """The findings of one table folder and where the engine would stop it."""

    table: str                 # the table's folder, relative to the landing zone
    unique_id: str             # "<schema>.<table>" as the warehouse names it
    findings: list[Finding] = field(default_factory=list)
    files: int = 0
    stops_at: Finding | None = None


@dataclass
class LintResult:
    """Everything `lint` found in one landing zone."""

    landing_zone: str
    tables: list[TableReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)   # outside any table

    def all_findings(self) -> list[Finding]:
        return self.findings + [f for t in self.tables for f in t.findings]

    def count(self, level: str) -> int:
        return sum(1 for f in self.all_findings() if f.level == level)


@dataclass
class _Column:
    name: str
    type: str                  # Spark SQL type name, "void" for an all-NULL column


# --- the landing zone's layout -------------------------------------------------------------------

def lint_landing_zone(landing_zone: str, tables: tuple[str, ...] = (),
                      warehouse: str | None = None, strict: bool = False) -> LintResult:
    """Lint a local landing zone (optionally only `tables`: schema.table, names or globs);
    `warehouse` adds the checks against the mirrored tables' progress."""
    fs = fsmod.LocalFS()
    root = os.path.abspath(fsmod.local_path(landing_zone))
    if not os.path.isdir(root):
        raise LandingZoneError("the landing zone folder does not exist", file=landing_zone,
                               code="NotFound", hint="pass the folder that holds the tables")
    result = LintResult(root)
    rel = lambda path: os.path.relpath(path, root).replace(os.sep, "/")  # noqa: E731
    found: list[tuple[str | None, str, str]] = []
    for entry in sorted(fs.list(root), key=lambda e: e.name):
        if not entry.is_dir:
            _root_file(fs, root, entry, result, rel)
            continue
        if mirroring.is_reserved_name(entry.name):
            continue
        schema = mirroring.schema_from_folder(entry.name)
        if schema is not None:
            _unsafe(schema, "schema", rel(entry.path), None, result.findings)
            for sub in sorted(fs.list(entry.path), key=lambda e: e.name):
                if mirroring.is_reserved_name(sub.name):
                    continue
                if sub.is_dir:
                    found.append((schema, sub.name, sub.path))
                else:
                    result.findings.append(Finding(
                        "layout/file-outside-table", "warning",
                        "a file in a schema folder, outside any table; it is never read",
                        file=rel(sub.path)))
        elif _holds_table(fs, entry.path):
            found.append((None, entry.name, entry.path))
        else:
            _not_a_table(fs, entry, result, rel)
    _same_table(found, result, rel)
    for schema, name, path in found:
        unique_id = f"{mirroring.warehouse_schema(schema)}.{name}"
        if tables and not any(_selected(p, unique_id, name, rel(path)) for p in tables):
            continue
        report = TableReport(rel(path), unique_id)
        _unsafe(name, "table", rel(path), rel(path), report.findings)
        _lint_table(fs, root, path, report, rel, warehouse, strict, schema, name)
        result.tables.append(report)
    if tables:  # findings outside the selected tables are not asked for
        result.findings = []
    if tables and not result.tables:
        raise LandingZoneError(f"no table matches {', '.join(tables)}", file=landing_zone,
                               code="NotFound", hint="name tables as schema.table, a name or a glob")
    return result


def _same_table(found, result: LintResult, rel) -> None:
    """Folders mirrored into one table: `orders/` and `dbo.schema/orders/` (a root table is
    schema dbo)."""
    by_table: dict[str, list[str]] = {}
    for schema, name, path in found:
        unique_id = f"{mirroring.warehouse_schema(schema)}.{name}"
        by_table.setdefault(unique_id, []).append(rel(path))
    for folders in by_table.values():
        if len(folders) > 1:
            result.findings.append(Finding(
                "layout/same-table", "error",
                f"{' and '.join(folders)} are one table (a folder at the root is in schema "
                f"{mirroring.DEFAULT_SCHEMA}): both would be mirrored into the same Delta table, "
                "each replacing the other's rows; keep one folder", table=folders[0]))


def _selected(pattern: str, unique_id: str, name: str, folder: str) -> bool:
    return any(fnmatch.fnmatchcase(v.lower(), pattern.lower()) for v in (unique_id, name, folder))


def _holds_table(fs, path: str) -> bool:
    for entry in fs.list(path):
        if not entry.is_dir and (entry.name.lower() == mirroring.METADATA_FILE.lower()
                                 or mirroring.data_file_format(entry.name) is not None):
            return True
    return False


def _root_file(fs, root, entry, result: LintResult, rel) -> None:
    if entry.name == mirroring.PARTNER_EVENTS_FILE:
        try:
            landing.read_partner_events(fs, root)
        except LandingZoneError as exc:
            result.findings.append(Finding("layout/partner-events", "error", exc.message,
                                           file=rel(entry.path)))
    elif not mirroring.is_reserved_name(entry.name):
        result.findings.append(Finding("layout/file-outside-table", "warning",
                                       "a file at the landing-zone root, outside any table "
                                       "folder; it is never read", file=rel(entry.path)))


def _not_a_table(fs, entry, result: LintResult, rel) -> None:
    """A root folder holding no table files: a nested layout, or an empty folder."""
    nested = [sub for sub in fs.list(entry.path)
              if sub.is_dir and not mirroring.is_reserved_name(sub.name)
              and _holds_table(fs, sub.path)]
    for sub in sorted(nested, key=lambda e: e.name):
        result.findings.append(Finding(
            "layout/nested-without-schema", "error",
            f"{entry.name}/{sub.name} looks like a schema/table folder, but the service reads "
            f"tables only at the root or under <schema>.schema/; rename the folder to "
            f"{entry.name}{mirroring.SCHEMA_FOLDER_SUFFIX}", table=rel(sub.path)))
    if not nested:
        result.findings.append(Finding(
            "layout/empty-folder", "warning",
            "a folder without _metadata.json or data files: not a table (yet)",
            table=rel(entry.path)))


def _unsafe(name: str, what: str, where: str, table, findings: list[Finding]) -> None:
    reason = mirroring.unsafe_name_reason(name)
    if reason:
        findings.append(Finding("layout/unsafe-name", "warning",
                                f"{what} name {name!r} {reason}", table=table or where))


# --- one table -----------------------------------------------------------------------------------

def _lint_table(fs, root, path, report: TableReport, rel, warehouse, strict, schema, name):
    table = report.table
    add = report.findings.append
    metadata = _lint_metadata(fs, path, report, rel)
    if metadata is None:
        return
    listing = landing.list_folder(fs, path, metadata)
    for warning in dict.fromkeys(listing.warnings):
        file, _, message = warning.partition(": ")
        rule = "layout/nested-folder" if "folder ignored" in message else "files/not-data"
        add(Finding(rule, "warning", message, table=table, file=rel(file)))
    for entry in fs.list(path):
        lower = entry.name.lower()
        if entry.is_dir or not entry.name.startswith("_") or lower in _KNOWN_UNDERSCORE:
            continue
        message = ("_partnerEvents.json belongs at the landing-zone root, not in a table folder"
                   if entry.name == mirroring.PARTNER_EVENTS_FILE else
                   "names starting with '_' are never read (a temporary file left behind?)")
        add(Finding("layout/partner-events" if entry.name == mirroring.PARTNER_EVENTS_FILE
                    else "files/underscore", "warning", message, table=table, file=rel(entry.path)))
    _lint_extensions(listing, metadata, report, rel)

    state = None
    if warehouse:
        delta = os.path.join(warehouse, mirroring.warehouse_schema(schema), name)
        try:
            state = read_state(fs, delta, mirroring.mirror_id(schema, name))
        except LandingZoneError as exc:  # StateLost: the engine stops the table there too
            finding = Finding("warehouse/state-lost", "error", exc.message, table=table,
                              file=rel(delta), stops=True)
            add(finding)
            report.stops_at = report.stops_at or finding
            return
        problem = mirroring.key_change(state.record.keys if state.record else None,
                                       metadata.key_columns)
        if problem:
            finding = Finding("metadata/key-changed", "error", problem, table=table, stops=True,
                              file=rel(os.path.join(path, mirroring.METADATA_FILE)))
            add(finding)
            report.stops_at = finding  # the engine stops the table before applying anything
    processed = [e for e in fs.list(os.path.join(path, mirroring.PROCESSED_FOLDER))
                 if not e.is_dir]
    ordered, pending_count = _order_files(listing, metadata, processed, state, report, rel)
    union = _delta_columns(fs, state, warehouse, schema, name) if state and state.exists else []
    report.files = len(ordered)
    for order, file in enumerate(ordered):
        stop = _lint_file(fs, file, metadata, union, report, rel, strict)
        if stop is not None and report.stops_at is None and order < pending_count:
            report.stops_at = stop
        if stop is not None:
            break  # later files depend on this one's columns: the engine never reaches them


def _lint_metadata(fs, path, report: TableReport, rel) -> mirroring.TableMetadata | None:
    """The table's `_metadata.json`, parsed as the engine does; None when the engine would stop
    the table at it."""
    add = report.findings.append
    entry = landing._metadata_entry(fs, path)
    if entry is None:
        add(Finding("metadata/missing", "error",
                    "no _metadata.json: the seed requires one in every table folder (the "
                    "engine mirrors the table as insert-only and keyless)", table=report.table))
        return mirroring.TableMetadata(present=False)
    where = rel(entry.path)
    try:
        metadata = landing.read_metadata(fs, path)
    except LandingZoneError as exc:
        finding = Finding("metadata/invalid", "error", exc.message, table=report.table,
                          file=where, row=exc.row, stops=True)
        add(finding)
        report.stops_at = finding
        return None
    for warning in metadata.warnings:
        message = warning.partition(": ")[2]
        if message.startswith("unknown key"):  # a misspelt key is silently ignored: an error
            level = "error" if "did you mean" in message else "warning"
            add(Finding("metadata/unknown-key", level, message, table=report.table, file=where))
        else:
            add(Finding("metadata/ignored-property", "warning", message, table=report.table,
                        file=where))
    return metadata


def _lint_extensions(listing, metadata, report: TableReport, rel) -> None:
    where = report.table + "/" + mirroring.METADATA_FILE
    formats = {f.format for f in listing.files}
    if metadata.present and metadata.file_format == mirroring.FILE_FORMAT_PARQUET \
            and "csv" in formats:
        report.findings.append(Finding("metadata/extension", "warning",
                                       "FileFormat is Parquet, but the folder holds delimited "
                                       "files", table=report.table, file=where))
    if metadata.file_extension and listing.files and not any(
            f.name.lower().split(".", 1)[-1].startswith(metadata.file_extension.lower())
            for f in listing.files):
        report.findings.append(Finding(
            "metadata/extension", "warning",
            f"FileExtension is {metadata.file_extension!r}, but no data file ends with it",
            table=report.table, file=where))


def _order_files(listing, metadata, processed, state, report: TableReport, rel):
    """The table's data files in the order the engine applies them, and how many of them a run
    would apply now (the rest wait behind a gap)."""
    add = report.findings.append
    table = report.table
    record = state.record if state is not None else None
    if metadata.last_update_time_detection:
        done = {e.name for e in processed} | (record.done if record else set())
        pending = landing.pending_by_time(listing, done)
        times: dict[float, str] = {}
        for file in pending.files:
            if file.mtime in times:
                add(Finding("files/same-time", "warning",
                            f"same modification time as {times[file.mtime]}: the two are "
                            "applied in name order", table=table, file=rel(file.path)))
            times.setdefault(file.mtime, file.name)
        newest = max((e.mtime for e in processed), default=None)
        for file in pending.files:
            if newest is not None and file.mtime < newest:
                add(Finding("files/older-than-processed", "warning",
                            "older than a file already processed: a service reading by "
                            "timestamp may skip it", table=table, file=rel(file.path)))
        for file, _kind, problem in landing.not_applied_as_placed(pending.applied_present, None,
                                                                  record):
            add(Finding("files/changed-after-applied", "warning", problem, table=table,
                        file=rel(file.path)))
        return pending.files, len(pending.files)
    applied = int(record.sequence or 0) if record else max(
        (mirroring.parse_sequence(e.name) or 0 for e in processed), default=0)
    try:
        pending = landing.pending_by_sequence(listing, applied)
    except LandingZoneError as exc:
        finding = Finding("files/duplicate-sequence", "error", exc.message + f" ({exc.hint})",
                          table=table, file=rel(exc.file), stops=True)
        add(finding)
        report.stops_at = finding
        return [], 0
    for warning in dict.fromkeys(listing.warnings):
        file, _, message = warning.partition(": ")
        if "20-digit" in message:
            add(Finding("files/not-sequence-name", "warning", message, table=table,
                        file=rel(file)))
    # the engine's own rule (it warns about the same files)
    for file, kind, problem in landing.not_applied_as_placed(pending.applied_present, applied,
                                                             record):
        rule = "files/before-processed" if kind == "late" else "files/changed-after-applied"
        add(Finding(rule, "warning", problem, table=table, file=rel(file.path)))
    blocked = sorted((f for f in listing.files if f.sequence is not None and f.sequence > applied
                      and f not in pending.files), key=lambda f: f.sequence)
    if pending.awaiting:
        add(Finding("files/gap", "warning",
                    f"waiting for {pending.awaiting}: a gap in the sequence blocks "
                    f"{len(blocked)} later file(s)", table=table,
                    file=rel(blocked[0].path) if blocked else None))
    return pending.files + blocked, len(pending.files)


def _delta_columns(fs, state, warehouse, schema, name) -> list[_Column]:
    """The mirrored Delta table's columns (its snapshot's `metaData`, after log cleanup too)."""
    doc = snapshot_schema(fs, os.path.join(warehouse, mirroring.warehouse_schema(schema), name))
    return [_Column(f["name"], _delta_type(f["type"])) for f in (doc or {}).get("fields", [])]


_DELTA_TYPES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}


def _delta_type(value) -> str:
    if not isinstance(value, str):
        return json.dumps(value)
    return _DELTA_TYPES.get(value, value)


# --- one file ------------------------------------------------------------------------------------

def _lint_file(fs, file, metadata, union: list[_Column], report: TableReport, rel,
               strict: bool) -> Finding | None:
    """Lint one data file; returns the finding the engine would stop the table at, if any."""
    where = dict(table=report.table, file=rel(file.path))

    def stop(rule, message, row=None, column=None) -> Finding:
        finding = Finding(rule, "error", message, row=row, column=column, stops=True, **where)
        report.findings.append(finding)
        return finding

    if file.size == 0:
        return stop("content/zero-byte", checks.ZERO_BYTE_MESSAGE)
    if file.format == "parquet":
        return _lint_parquet(file, metadata, union, report, where, stop, strict)
    return _lint_delimited(fs, file, metadata, union, report, where, stop, strict)


def _schema_stop(columns, marker_last, metadata, union, stop, strict,
                 marker_non_integer: str | None = None) -> Finding | None:
    trial = list(union)
    reason = checks.extend_columns(
        columns, trial, metadata.key_columns, strict, marker_last,
        type_of=lambda c: c.type, is_null=lambda t: t == "void", show=str,
        retyped=lambda c, t: _Column(c.name, t), marker_non_integer=marker_non_integer)
    if reason is None:
        union[:] = trial
        return None
    rule = ("metadata/key-missing" if "missing from the file" in reason else
            "content/type-change" if "changed type" in reason else
            "content/null-type" if mirroring.NULL_TYPE_TEXT in reason else
            "content/engine-column" if mirroring.ENGINE_COLUMN_TEXT in reason else
            "content/marker-type" if mirroring.MARKER_NOT_INTEGER in reason else
            "content/marker-position" if mirroring.MARKER_NOT_LAST in reason else
            "content/duplicate-column")
    return stop(rule, reason)


def _lint_parquet(file, metadata, union, report, where, stop, strict) -> Finding | None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = fsmod.local_path(file.path)
    try:
        footer = checks.parquet_footer(path, file.path)
        schema = footer.schema.to_arrow_schema()
    except LandingZoneError as exc:
        return stop("content/unreadable", exc.message)
    names = schema.names
    markers = [i for i, n in enumerate(names) if checks.is_marker(n)]
    marker = names[markers[0]] if markers else None
    marker_last = not markers or markers[0] == len(names) - 1
    marker_type = schema.field(marker).type if marker else None
    non_integer = (spark_type_name(marker_type) if marker_type is not None
                   and not pa.types.is_integer(marker_type) else None)
    if not strict:
        for problem in mirroring.marker_column_problems(marker_last, non_integer):
            rule = ("content/marker-type" if mirroring.MARKER_NOT_INTEGER in problem
                    else "content/marker-position")
            report.findings.append(Finding(rule, "warning", problem, column=marker, **where))
    columns = [_Column(f.name, spark_type_name(f.type)) for f in schema if not checks.is_marker(f.name)]
    found = _schema_stop(columns, marker_last, metadata, union, stop, strict, non_integer)
    if found is not None:
        return found
    codecs = checks.unsupported_codecs(footer)
    if codecs:
        return stop("content/codec", f"compressed with {', '.join(codecs)}: unreadable here; the "
                    "seed lists Snappy, GZIP and ZSTD (re-write the file under the same name)")
    out_of_range = checks.time_range_problem(path)
    if out_of_range is not None:
        return stop("content/time-range", out_of_range[2], row=out_of_range[0],
                    column=out_of_range[1])
    by_lower = {n.lower(): n for n in names}
    keys = [by_lower[k.lower()] for k in metadata.key_columns]
    try:
        data = pq.read_table(path, columns=([marker] if marker else []) + keys)
    except Exception as exc:  # noqa: BLE001 - pages the footer didn't show broken
        return stop("content/unreadable", f"not a readable Parquet file: {exc}")
    values = data.column(marker).combine_chunks() if marker else None
    text_bad = None
    if values is not None and not pa.types.is_integer(values.type):
        values, text_bad = _markers_from_text(values, metadata)
    _, _, bad = checks.first_bad_row(data.num_rows, values,
                                     [data.column(k).combine_chunks() for k in keys], metadata)
    bad = min(b for b in (bad, text_bad) if b is not None) if (bad or text_bad) else None
    if bad is None:
        return None
    column = marker if bad[1].startswith(checks.INVALID_MARKER_TEXT[0]) or "needs keyColumns" in \
        bad[1] else (checks.null_key_columns(bad[1]) or ", ".join(metadata.key_columns) or None)
    return stop("content/row", bad[1], row=bad[0] + 1, column=column)


def _marker_number(raw, default: int) -> int | None:
    """A non-integer marker cell as the engine reads it (trimmed text → number), None if invalid."""
    if raw is None:
        return default
    text = str(raw).strip()
    if text == "":
        return default
    try:
        number = float(text)
    except ValueError:
        return None
    return int(number) if number in mirroring.VALID_MARKERS else None


def _markers_from_text(values, metadata):
    import pyarrow as pa

    default = metadata.default_marker
    parsed, bad = [], None
    for index, raw in enumerate(values.to_pylist()):
        number = _marker_number(raw, default)
        if number is None and bad is None:
            bad = (index, checks.INVALID_MARKER_TEXT[0] + str(raw).strip()
                   + checks.INVALID_MARKER_TEXT[1])
        parsed.append(number if number is not None else default)
    return pa.array(parsed, pa.int64()), bad


def _lint_delimited(fs, file, metadata, union, report, where, stop, strict) -> Finding | None:
    options = metadata.delimited
    add = report.findings.append
    try:  # the whole file, decompressed as the engine reads it
        data = checks.read_start(fs, file, None)
    except LandingZoneError as exc:
        return stop("content/unreadable", exc.message)
    _check_bom(data, options, add, where)
    text = checks.decode(data, file, options)
    try:
        header = checks.parse_header(text, file, options)
    except LandingZoneError as exc:
        return stop("content/header", exc.message, row=exc.row)
    try:
        checks.check_encoding(fs, file, options)
    except LandingZoneError as exc:
        rule = "content/unreadable" if "compressed" in exc.message else "content/encoding"
        return stop(rule, exc.message, row=exc.row)
    _check_dialect(text, header, options, add, where)
    raw_header = next(csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""),
                                 **checks.csv_dialect(options)))
    for cell in raw_header:
        if cell != cell.strip():
            add(Finding("content/header", "warning", f"header name {cell!r} has white space "
                        "around it (read as {cell.strip()!r})", row=1, column=cell.strip(),
                        **where))
    markers = [i for i, n in enumerate(header) if checks.is_marker(n)]
    marker_last = not markers or markers[0] == len(header) - 1
    if not strict:
        for problem in mirroring.marker_column_problems(marker_last):
            add(Finding("content/marker-position", "warning", problem,
                        column=header[markers[0]], **where))
    declared = {c.name.lower(): c for c in metadata.columns}
    columns = [_Column(n, mirroring.spark_type_for(declared[n.lower()].data_type)
                       if n.lower() in declared else "string")
               for n in header if not checks.is_marker(n)]
    found = _schema_stop(columns, marker_last, metadata, union, stop, strict)
    if found is not None:
        return found
    notes: list[tuple[int, str]] = []
    bad = _first_bad_record(text, header, metadata, notes)
    for row, column in notes[:1]:
        add(Finding("content/delete-not-nullable", "warning", mirroring.delete_not_nullable(
            column), row=row, column=column, **where))
    if bad is not None:
        return stop("content/row", bad[1], row=bad[0], column=bad[2])
    return None


def _check_bom(data: bytes, options, add, where) -> None:
    encoding = checks.python_encoding(options.encoding).lower().replace("_", "-")
    if encoding in ("utf-8", "utf8", "ascii", "us-ascii", "cp1252", "latin1", "iso-8859-1") and \
            data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        add(Finding("metadata/dialect", "error", f"the file starts with a UTF-16 byte-order "
                    f"mark, but Encoding is {options.encoding!r}", **where))


def _check_dialect(text: str, header: list[str], options, add, where) -> None:
    first = text.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    if len(header) == 1:
        for separator in _SEPARATORS:
            if separator != options.column_separator and separator in first:
                add(Finding("metadata/dialect", "error",
                            f"ColumnSeparator is {json.dumps(options.column_separator)}, but the "
                            f"header looks {json.dumps(separator)}-separated; set ColumnSeparator "
                            "in FileFormatTypeProperties", row=1, **where))
                break
    ending = re.search(r"\r\n|\n|\r", text)
    if ending and ending.group(0) != options.row_separator:
        add(Finding("metadata/dialect", "warning",
                    f"RowSeparator is {json.dumps(options.row_separator)}, but the file's rows "
                    f"end with {json.dumps(ending.group(0))}", row=1, **where))


def _first_bad_record(text: str, header: list[str], metadata, notes: list[tuple[int, str]]
                      ) -> tuple[int, str, str | None] | None:
    """The first bad data row (1-based), its problem and column, as the engine's row check
    decides (malformed record, marker, value type, NULL key, keyless update). Adds to `notes`
    (row, column) of each delete row before it that leaves an `IsNullable: false` column empty
    (applied here; see `mirroring.delete_not_nullable`)."""
    options = metadata.delimited
    reader = csv.reader(io.StringIO(text.lstrip("\ufeff"), newline=""), **checks.csv_dialect(options))
    try:
        next(reader)
    except (StopIteration, csv.Error):
        return None
    lower = [h.lower() for h in header]
    marker_at = next((i for i, n in enumerate(header) if checks.is_marker(n)), None)
    declared = {c.name.lower(): c for c in metadata.columns}
    key_names = [k for k in metadata.key_columns if k.lower() in lower]
    keys = [lower.index(k.lower()) for k in key_names]
    key_set = set(keys)
    default = metadata.default_marker
    keyed_markers = {int(m) for m in mirroring.KEYED_MARKERS}
    for number, cells in enumerate(_records(reader), start=1):
        if isinstance(cells, str) or len(cells) != len(header):
            return number, checks.MALFORMED_TEXT, None
        values = [None if _is_null(c, options.null_value) else c for c in cells]
        marker = default if marker_at is None else _marker_number(values[marker_at], default)
        type_problems, value_problems = [], []
        for index, name in enumerate(header):
            column = declared.get(name.lower())
            if column is None or index == marker_at:
                continue
            value = values[index]
            if value is not None and not _castable(value, column.data_type):
                problem = (f"value '{value}' of column {name} is not a valid {column.data_type}",
                           name)
                (type_problems if index in key_set else value_problems).append(problem)
            if (value is None or (value == "" and column.data_type != "String")) \
                    and not column.nullable:
                value_problems.append((f"column {name} is NULL, but SchemaDefinition declares "
                                       "it IsNullable: false", name))
        if type_problems:
            return number, type_problems[0][0], type_problems[0][1]
        if marker is None:
            assert marker_at is not None  # a marker is parsed only where the column is
            raw = (values[marker_at] or "").strip()
            return (number, checks.INVALID_MARKER_TEXT[0] + raw + checks.INVALID_MARKER_TEXT[1],
                    header[marker_at])
        if value_problems and marker != int(mirroring.RowMarker.DELETE):
            return number, value_problems[0][0], value_problems[0][1]
        if marker == int(mirroring.RowMarker.DELETE):
            notes += [(number, name) for problem, name in value_problems
                      if problem.endswith("IsNullable: false") and name not in key_names]
        if marker in keyed_markers:
            if not metadata.keyed:
                return (number, checks.KEYLESS_TEXT[0] + str(marker) + checks.KEYLESS_TEXT[1],
                        header[marker_at] if marker_at is not None else None)
            null = [name for name, k in zip(key_names, keys)
                    if _key_null(values[k], declared.get(lower[k]))]
            if null:
                return number, checks.null_key_problem(null, marker), ", ".join(null)
    return None


def _records(reader):
    """The reader's records; a csv.Error ends them with a malformed marker."""
    while True:
        try:
            yield next(reader)
        except StopIteration:
            return
        except csv.Error:
            yield "malformed"
            return


def _is_null(cell: str, null_value: str) -> bool:
    return cell == null_value if null_value else cell == ""


def _key_null(value, column) -> bool:
    if value is None:
        return True
    return value == "" and column is not None and column.data_type != "String"


_INTEGER_RANGES = {"Int16": 15, "Int32": 31, "Int64": 63}
_BOOLEAN_TEXT = {"t", "true", "y", "yes", "1", "f", "false", "n", "no", "0"}
_DATE = r"\s*[+-]?\d{4,}(-\d{1,2}(-\d{1,2})?)?"
_TIMESTAMP = re.compile(_DATE + r"([ T]\d{1,2}(:\d{1,2}(:\d{1,2}(\.\d{0,9})?)?)?"
                        r"\s*(Z|[+-]\d{1,2}(:?\d{2})?|[A-Za-z/_]+)?)?\s*$")
_DATE_ONLY = re.compile(_DATE + r"([ T].*)?\s*$")


def _castable(text: str, data_type: str) -> bool:
    """Whether Spark's try_cast turns the cell into a value of its SchemaDefinition DataType
    (an empty cell of a non-String type is no value, never a problem)."""
    kind = mirroring.canonical_data_type(data_type)
    value = text.strip()
    if kind == "String" or text == "":
        return True
    if kind in _INTEGER_RANGES:
        if not re.fullmatch(r"[+-]?\d+", value):
            return False
        bits = _INTEGER_RANGES[kind]
        return -(2 ** bits) <= int(value) < 2 ** bits
    if kind in ("Double", "Single"):
        try:
            float(value.rstrip("dDfF"))
            return True
        except ValueError:
            return value.lower() in ("nan", "infinity", "-infinity", "+infinity", "inf", "-inf")
    if kind == "Boolean":
        return value.lower() in _BOOLEAN_TEXT
    if kind == "IDate":
        return bool(_DATE_ONLY.match(value))
    if kind == "ITime" and re.match(mirroring.TIME_ONLY_PATTERN, text):
        return True
    if kind in ("DateTime", "ITime"):
        return bool(_TIMESTAMP.match(value))
    return True


# --- the Parquet → Spark type names (how the engine's local-file reader maps them) -------------

def spark_type_name(arrow_type) -> str:
    """The Spark SQL type name the engine reads a Parquet column of `arrow_type` as."""
    import pyarrow as pa
    t = pa.types
    if t.is_null(arrow_type):
        return "void"
    if t.is_unsigned_integer(arrow_type):
        return {8: "smallint", 16: "int", 32: "bigint", 64: "decimal(20,0)"}[arrow_type.bit_width]
    if t.is_integer(arrow_type):
        return {8: "tinyint", 16: "smallint", 32: "int", 64: "bigint"}[arrow_type.bit_width]
    if t.is_boolean(arrow_type):
        return "boolean"
    if t.is_float32(arrow_type):
        return "float"
    if t.is_floating(arrow_type):
        return "double"
    if t.is_string(arrow_type) or t.is_large_string(arrow_type):
        return "string"
    if t.is_binary(arrow_type) or t.is_large_binary(arrow_type) or \
            t.is_fixed_size_binary(arrow_type):
        return "binary"
    if t.is_date(arrow_type):
        return "date"
    if t.is_time(arrow_type):
        return "timestamp_ntz"
    if t.is_timestamp(arrow_type):
        return "timestamp" if arrow_type.tz else "timestamp_ntz"
    if t.is_decimal(arrow_type):
        return f"decimal({arrow_type.precision},{arrow_type.scale})"
    return str(arrow_type)


# --- output --------------------------------------------------------------------------------------

def to_json(result: LintResult) -> dict:
    """The `--format json` document."""
    return {
        "landing_zone": result.landing_zone,
        "summary": {"tables": len(result.tables), "errors": result.count("error"),
                    "warnings": result.count("warning")},
        "findings": [asdict(f) for f in result.findings],
        "tables": [{"table": t.table, "unique_id": t.unique_id, "files": t.files,
                    "stops_at": asdict(t.stops_at) if t.stops_at else None,
                    "findings": [asdict(f) for f in t.findings]} for t in result.tables],
    }


def to_sarif(result: LintResult, version: str) -> dict:
    """The `--format sarif` document (SARIF 2.1.0), paths relative to the landing zone."""
    used = sorted({f.rule for f in result.all_findings()})
    results = []
    for finding in result.all_findings():
        uri = finding.file or finding.table or "."
        location: dict = {"artifactLocation": {"uri": uri, "uriBaseId": "LANDINGZONE"}}
        if finding.row is not None and finding.file and not finding.file.lower().endswith(
                (".parquet", ".json")):
            location["region"] = {"startLine": finding.row + 1}  # the header is line 1
        elif finding.row is not None and finding.file and finding.file.endswith(".json"):
            location["region"] = {"startLine": finding.row}
        text = finding.message
        if finding.row is not None and finding.file and finding.file.lower().endswith(".parquet"):
            text = f"row {finding.row}: {text}"
        results.append({"ruleId": finding.rule, "ruleIndex": used.index(finding.rule),
                        "level": finding.level, "message": {"text": text},
                        "locations": [{"physicalLocation": location}]})
    return {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mirrorspec lint", "version": version,
                "rules": [{"id": rule, "shortDescription": {"text": RULES[rule]}}
                          for rule in used]}},
            "originalUriBaseIds": {"LANDINGZONE": {
                "uri": "file://" + result.landing_zone.rstrip("/") + "/"}},
            "results": results,
        }],
    }


def to_text(result: LintResult) -> str:
    """Findings grouped by table, one problem per line pair (readable at 80 columns)."""
    lines = []

    def show(finding: Finding, base: str | None) -> None:
        where = finding.file or finding.table or "."
        if base and where.startswith(base + "/"):
            where = where[len(base) + 1:]
        if finding.row is not None:
            where += (": line " if where.endswith(".json") else ": row ") + str(finding.row)
        if finding.column:
            where += f", column {finding.column}"
        lines.append(f"  {finding.level:<7} {where}  [{finding.rule}]")
        lines.extend(textwrap.wrap(finding.message, 78, initial_indent=" " * 10,
                                   subsequent_indent=" " * 10, break_on_hyphens=False))

    if result.findings:
        lines.append("(landing zone)")
        for finding in result.findings:
            show(finding, None)
    for table in result.tables:
        state = "clean" if not table.findings else (
            f"stops at {table.stops_at.file.rsplit('/', 1)[-1]}" if table.stops_at and
            table.stops_at.file else "problems")
        lines.append(f"{table.unique_id} ({table.files} file(s)): {state}")
        for finding in table.findings:
            show(finding, table.table)
    lines.append(f"{len(result.tables)} table(s), {result.count('error')} error(s), "
                 f"{result.count('warning')} warning(s)")
    return "\n".join(lines) + "\n"
