"""A Delta table's current size, read through delta-rs (no JVM).

Rows = Σ numRecords of the live files minus the rows their deletion vectors remove
(`DeltaTable.count()` ignores deletion vectors, so it is not used). Anything delta-rs can't vouch
for (a file without statistics) makes the row count None instead of a wrong number; a table
delta-rs can't open gives no summary at all.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path


@dataclass(frozen=True)
class DeltaSummary:
    """What the docs site shows about a Delta table."""

    version: int
    rows: int | None  # None when some file has no numRecords statistics
    files: int
    size_bytes: int
    last_commit: str | None  # ISO 8601 UTC of the latest commitInfo timestamp
    last_operation: str | None


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
        latest = table.history(1)
        deleted = 0
        if files.num_rows and _has_deletion_vectors(table):
            # selection vectors: True keeps a row, False deletes it
            keep = pc.list_flatten(pa.table(table.deletion_vectors()).column("selection_vector"))
            deleted = len(keep) - int(pc.sum(keep.cast("int64")).as_py() or 0)
    except Exception:  # noqa: BLE001 - no table, or one delta-rs can't read: nothing to show
        return None
    records = files.column("num_records") if "num_records" in files.column_names else None
    rows = None
    if records is not None and records.null_count == 0:
        rows = int(pc.sum(records).as_py() or 0) - deleted
    commit = latest[0] if latest else {}
    timestamp = commit.get("timestamp")
    return DeltaSummary(
        version=table.version(), rows=rows, files=files.num_rows,
        size_bytes=int(pc.sum(files.column("size_bytes")).as_py() or 0),
        last_commit=_iso(timestamp) if isinstance(timestamp, int) else None,
        last_operation=commit.get("operation"))


def _has_deletion_vectors(table) -> bool:
    return "deletionVectors" in (table.protocol().reader_features or [])


def _iso(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
