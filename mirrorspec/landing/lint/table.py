"""One table folder linted: its `_metadata.json`, stray files, the order the engine applies its
files in, its progress in the warehouse, then each file up to the one the engine stops at."""

from __future__ import annotations

import json
import os

from mirrorspec.base.errors import LandingZoneError
from mirrorspec.landing import checks
from mirrorspec.landing import layout as landing
from mirrorspec.landing.lint.columns import Column
from mirrorspec.landing.lint.delimited import lint_delimited
from mirrorspec.landing.lint.findings import Finding, TableReport
from mirrorspec.landing.lint.parquet import lint_parquet
from mirrorspec.openmirroring import mirroring
from mirrorspec.progress.mirror import read_state, snapshot_schema


_KNOWN_UNDERSCORE = {mirroring.METADATA_FILE.lower(), landing.FOLDER_ID_FILE.lower(),
                     mirroring.PROCESSED_LEDGER_FILE.lower()}


# --- one table -----------------------------------------------------------------------------------

def lint_table(fs, root, path, report: TableReport, rel, warehouse, strict, schema, name):
    """Lint one table folder into `report`, up to the file the engine would stop it at."""
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
        stop = lint_file(fs, file, metadata, union, report, rel, strict)
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
                          file=where, line=exc.row, stops=True)  # a JSON error's row is its line
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


def _delta_columns(fs, state, warehouse, schema, name) -> list[Column]:
    """The mirrored Delta table's columns (its snapshot's `metaData`, after log cleanup too)."""
    doc = snapshot_schema(fs, os.path.join(warehouse, mirroring.warehouse_schema(schema), name))
    return [Column(f["name"], _delta_type(f["type"])) for f in (doc or {}).get("fields", [])]


_DELTA_TYPES = {"long": "bigint", "integer": "int", "short": "smallint", "byte": "tinyint"}


def _delta_type(value) -> str:
    if not isinstance(value, str):
        return json.dumps(value)
    return _DELTA_TYPES.get(value, value)


def lint_file(fs, file, metadata, union: list[Column], report: TableReport, rel,
              strict: bool) -> Finding | None:
    """Lint one data file; returns the finding the engine would stop the table at, if any."""
    where = dict(table=report.table, file=rel(file.path))

    def stop(rule, message, row=None, column=None, line=None) -> Finding:
        finding = Finding(rule, "error", message, row=row, line=line, column=column, stops=True,
                          **where)
        report.findings.append(finding)
        return finding

    if file.size == 0:
        return stop("content/zero-byte", checks.ZERO_BYTE_MESSAGE)
    if file.format == "parquet":
        return lint_parquet(file, metadata, union, report, where, stop, strict)
    return lint_delimited(fs, file, metadata, union, report, where, stop, strict)
