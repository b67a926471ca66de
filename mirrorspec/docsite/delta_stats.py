"""What the docs site shows about a Delta table, read through delta-rs (no JVM).

Rows = Σ numRecords of the live files minus the rows their deletion vectors remove
(`DeltaTable.count()` ignores deletion vectors, so it is not used). Anything delta-rs can't
vouch for (a file without statistics) makes the row count None instead of a wrong number; a
table delta-rs can't open (none there, a gap in the log, a feature it lacks) gives no summary.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HISTORY_LIMIT = 20  # commits of history the docs site shows per table
CHANGES_LIMIT = 20  # change rows of the last version with changes the docs site shows


@dataclass(frozen=True)
class DeltaColumn:
    """A column of the Delta table's current schema (its metaData.schemaString)."""

    name: str
    type: str  # Spark SQL's name: bigint, string, struct<…>
    nullable: bool


@dataclass(frozen=True)
class DeltaSummary:
    """What the docs site shows about a Delta table."""

    version: int
    rows: int | None  # None when some file has no numRecords statistics
    files: int
    size_bytes: int
    last_commit: str | None  # ISO 8601 UTC of the latest commitInfo timestamp
    last_operation: str | None
    columns: tuple[DeltaColumn, ...] = ()  # the observed schema; () when unknown
    history: tuple = ()  # mirrorspec.readers.history.HistoryEntry, newest first (≤ HISTORY_LIMIT)
    feed: "FeedSummary | None" = None  # the change data feed, when the table records one


@dataclass(frozen=True)
class FeedSummary:
    """The table's change data feed: since which version, and the last changes it holds."""

    since: int | None  # the first version of the stretch of versions with a feed up to now
    version: int | None  # the last version that recorded change rows (None: none yet)
    columns: tuple[str, ...] = ()
    rows: tuple[tuple, ...] = ()  # ≤ CHANGES_LIMIT change rows of `version`
    total: int = 0  # change rows `version` recorded


def summarize(table_path: str | Path, storage_options: dict | None = None
              ) -> DeltaSummary | None:
    """Summary of the Delta table at a path or URI, or None when there is none (or delta-rs
    can't read it). `storage_options`: see mirrorspec/readers/storage.py."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        from deltalake import DeltaTable

        from mirrorspec.readers.delta import table_uri

        table = DeltaTable(table_uri(str(table_path)), storage_options=storage_options or None)
        files = pa.table(table.get_add_actions(flatten=True))
        commits = sorted(table.history(HISTORY_LIMIT), key=lambda c: c.get("version", -1),
                         reverse=True)
        deleted = 0
        if files.num_rows and _has_deletion_vectors(table):
            # selection vectors: True keeps a row, False deletes it
            keep = pc.list_flatten(pa.table(table.deletion_vectors()).column("selection_vector"))
            deleted = len(keep) - int(pc.sum(keep.cast("int64")).as_py() or 0)
        schema = table.schema().to_json()
    except Exception:  # noqa: BLE001 - no table, or one delta-rs can't read: nothing to show
        return None
    records = files.column("num_records") if "num_records" in files.column_names else None
    rows = None
    if records is not None and records.null_count == 0:
        rows = int(pc.sum(records).as_py() or 0) - deleted
    latest = commits[0] if commits else {}
    timestamp = latest.get("timestamp")
    return DeltaSummary(
        version=table.version(), rows=rows, files=files.num_rows,
        size_bytes=int(pc.sum(files.column("size_bytes")).as_py() or 0),
        last_commit=_iso(timestamp) if isinstance(timestamp, int) else None,
        last_operation=latest.get("operation"),
        columns=_columns(schema),
        history=tuple(_history(commits, str(table_path))),
        feed=_feed(table, str(table_path), commits))


def _has_deletion_vectors(table) -> bool:
    return "deletionVectors" in (table.protocol().reader_features or [])


def _columns(schema_string: Any) -> tuple[DeltaColumn, ...]:
    try:
        schema = json.loads(schema_string) if isinstance(schema_string, str) else None
    except ValueError:
        return ()
    fields = schema.get("fields") if isinstance(schema, dict) else None
    return tuple(DeltaColumn(str(f.get("name")), _type_name(f.get("type")),
                             bool(f.get("nullable", True)))
                 for f in fields or [] if isinstance(f, dict))


def _type_name(data_type: Any) -> str:
    """Spark SQL's spelling of a Delta schema type (long → bigint; nested types summarised)."""
    if isinstance(data_type, str):
        return {"long": "bigint", "integer": "int", "short": "smallint",
                "byte": "tinyint"}.get(data_type, data_type)
    if isinstance(data_type, dict):
        kind = data_type.get("type")
        if kind == "array":
            return f"array<{_type_name(data_type.get('elementType'))}>"
        if kind == "map":
            return (f"map<{_type_name(data_type.get('keyType'))},"
                    f"{_type_name(data_type.get('valueType'))}>")
        if kind == "struct":
            return "struct<…>"
    return str(data_type)


def _history(commits: list[dict], path: str) -> list:
    """delta-rs commitInfos (newest first) as history entries."""
    from mirrorspec.readers.delta import feed_versions
    from mirrorspec.readers.history import history_entry

    feed = feed_versions(path)
    return [history_entry(c.get("version", -1),
                          _iso(c["timestamp"]) if isinstance(c.get("timestamp"), int) else "",
                          str(c.get("operation") or ""), c.get("operationMetrics") or {},
                          c.get("userMetadata"), feed.get(c.get("version", -1)))
            for c in commits]


def _feed(table, path: str, commits: list[dict]) -> FeedSummary | None:
    """The feed of a table whose latest version carries one: since when, and the change rows of
    the newest shown commit that recorded some (a MERGE or an append, not maintenance)."""
    from mirrorspec.base.console import json_value
    from mirrorspec.progress.snapshot import CHANGE_DATA_FEED_PROPERTY
    from mirrorspec.readers.changes import read_changes
    from mirrorspec.readers.delta import _python_values, feed_versions

    configuration = table.metadata().configuration or {}
    if str(configuration.get(CHANGE_DATA_FEED_PROPERTY, "")).lower() != "true":
        return None
    versions = feed_versions(path)
    since = table.version()
    while versions.get(since - 1) is True:
        since -= 1
    if not versions:
        since = None
    for commit in commits:  # newest first
        version = commit.get("version", -1)
        if version < (since or 0) or not _changed_rows(commit):
            continue
        try:
            read = read_changes(path, from_version=version, to_version=version,
                                limit=CHANGES_LIMIT)
        except Exception:  # noqa: BLE001 - a change file gone (VACUUM), a feature delta-rs lacks
            break
        # as JSON keeps them: the site's catalog.json holds the summary too
        rows = tuple(tuple(json_value(v) for v in row)
                     for row in zip(*(_python_values(c) for c in read.data.columns)))
        return FeedSummary(since, version, tuple(read.data.column_names), rows, read.total)
    return FeedSummary(since, None)


def _changed_rows(commit: dict) -> bool:
    """Whether a commit wrote or removed rows (its metrics say so); maintenance doesn't."""
    operation = str(commit.get("operation") or "")
    return operation in ("WRITE", "MERGE", "DELETE", "UPDATE", "CREATE TABLE AS SELECT",
                         "REPLACE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT")


def _iso(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
