"""The landing zone's layout linted (files and folders outside tables, names, one table in two
folders), then each selected table."""

from __future__ import annotations

import fnmatch
import os

from mirrorspec.base import files as fsmod
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.landing import layout as landing
from mirrorspec.landing.lint.findings import Finding, LintResult, TableReport
from mirrorspec.landing.lint.table import lint_table
from mirrorspec.openmirroring import mirroring


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
        lint_table(fs, root, path, report, rel, warehouse, strict, schema, name)
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
