"""One Delta commit as `mirrorspec history` shows it, from a commitInfo (pure Python)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mirrorspec.progress.mirror import STATE_KEY

# Keys under which the engine's commit userMetadata lists the landing files a commit applied.
_FILE_KEYS = ("files", "files_applied", "applied_files", "appliedFiles", "filesApplied")
_WRITES = ("WRITE", "CREATE TABLE AS SELECT", "REPLACE TABLE AS SELECT",
           "CREATE OR REPLACE TABLE AS SELECT")


@dataclass
class HistoryEntry:
    """One Delta commit of a mirrored table."""

    version: int
    timestamp: str
    operation: str
    files_applied: list[str] = field(default_factory=list)
    rows_inserted: int | None = None
    rows_updated: int | None = None
    rows_deleted: int | None = None
    rows_written: int | None = None
    user_metadata: dict[str, Any] | str | None = None
    metrics: dict[str, str] = field(default_factory=dict)
    change_data_feed: bool | None = None  # the version carries a change data feed; None: unknown


def history_entry(version: int, timestamp: Any, operation: str, metrics: dict[str, Any] | None,
                  user_metadata: str | None, change_data_feed: bool | None = None
                  ) -> HistoryEntry:
    """Build a HistoryEntry from one commit (Spark's history row or delta-rs' commitInfo)."""
    meta: dict[str, Any] | str | None = None
    if user_metadata:
        try:
            meta = json.loads(user_metadata)
        except (TypeError, ValueError):
            meta = user_metadata
    files: list[str] = []
    if isinstance(meta, dict):
        state = meta.get(STATE_KEY)
        source = state if isinstance(state, dict) else meta
        for key in _FILE_KEYS:
            value = source.get(key)
            if isinstance(value, list):
                files = [str(v) for v in value]
                break
            if isinstance(value, str):
                files = [value]
                break
    metrics = {k: str(v) for k, v in (metrics or {}).items()}

    def metric(*names: str) -> int | None:
        for n in names:
            if n in metrics:
                try:
                    return int(metrics[n])
                except ValueError:
                    return None
        return None

    inserted = metric("numTargetRowsInserted")
    written = metric("numOutputRows", "num_added_rows")
    updated = metric("numTargetRowsUpdated", "numUpdatedRows")
    deleted = metric("numTargetRowsDeleted", "numDeletedRows")
    if inserted is None and operation in _WRITES:
        inserted = written
        # the engine's initial load appends: it changes no existing row (0, not unknown)
        if inserted is not None and operation in ("WRITE", "CREATE TABLE AS SELECT"):
            updated = 0 if updated is None else updated
            deleted = 0 if deleted is None else deleted
    return HistoryEntry(
        version=int(version),
        timestamp=timestamp.isoformat() if hasattr(timestamp, "isoformat") else str(timestamp),
        operation=operation,
        files_applied=files,
        rows_inserted=inserted,
        rows_updated=updated,
        rows_deleted=deleted,
        rows_written=written,
        user_metadata=meta,
        metrics=metrics,
        change_data_feed=change_data_feed,
    )
