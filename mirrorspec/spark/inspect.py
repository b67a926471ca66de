"""Looking at mirrored tables: row previews with Delta time travel, and the Delta history with
the landing files each commit applied."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mirrorspec.errors import InspectError

# Keys under which the engine's commit userMetadata lists the landing files a commit applied.
_FILE_KEYS = ("files", "files_applied", "applied_files", "appliedFiles", "filesApplied")


def _require_delta(spark, delta_path: str, name: str) -> None:
    from delta.tables import DeltaTable

    if not DeltaTable.isDeltaTable(spark, delta_path):
        raise InspectError(f"{name} has no Delta table at {delta_path}",
                           hint="run `mirrorspec run` (or `mirrorspec mirror`) first")


def preview(spark, delta_path: str, name: str | None = None, limit: int = 20,
            where: str | None = None, version: int | None = None,
            timestamp: str | None = None, order_by: list[str] | tuple[str, ...] = ()
            ) -> tuple[list[str], list[list[Any]]]:
    """Columns and up to `limit` rows of the Delta table, as of `version` or `timestamp`,
    sorted by `order_by` (e.g. the key columns) when those columns exist."""
    name = name or delta_path
    _require_delta(spark, delta_path, name)
    if version is not None and timestamp is not None:
        raise InspectError("give --version or --timestamp, not both")
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", int(version))
    if timestamp is not None:
        reader = reader.option("timestampAsOf", str(timestamp))
    try:
        df = reader.load(delta_path)
        if where:
            df = df.where(where)
        present = {c.lower(): c for c in df.columns}
        order = [present[c.lower()] for c in order_by if c.lower() in present]
        if order:
            df = df.orderBy(*order)
        rows = df.limit(max(0, int(limit))).collect()
    except Exception as exc:  # noqa: BLE001 - Spark/Delta analysis errors become user errors
        raise InspectError(f"{name}: {_first_line(exc)}", hint=_hint(exc, version, timestamp)) \
            from None
    return list(df.columns), [list(row) for row in rows]


def safe_message(exc: BaseException) -> str:
    """An exception's text; some Delta errors fail to render through Spark's error classes,
    so fall back to the Java exception's own text."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001
        text = ""
        java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
        try:
            text = str(java.toString()) if java is not None else ""
        except Exception:  # noqa: BLE001
            text = ""
        if not text:
            try:
                text = str(getattr(exc, "desc", "") or getattr(exc, "_desc", "") or "")
            except Exception:  # noqa: BLE001
                text = ""
    return text or type(exc).__name__


def _first_line(exc: Exception) -> str:
    text = safe_message(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _hint(exc: Exception, version, timestamp) -> str | None:
    text = safe_message(exc)
    if version is not None or timestamp is not None:
        return "see `mirrorspec history TABLE` for the versions and their timestamps"
    if "PARSE" in text or "UNRESOLVED" in text or "cannot be resolved" in text:
        return "--where takes a Spark SQL condition over the table's columns"
    return None


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


def history(spark, delta_path: str, name: str | None = None, limit: int | None = None
            ) -> list[HistoryEntry]:
    """The table's Delta history, newest first, with applied files and row counts per commit."""
    from delta.tables import DeltaTable

    name = name or delta_path
    _require_delta(spark, delta_path, name)
    table = DeltaTable.forPath(spark, delta_path)
    df = table.history(limit) if limit else table.history()
    rows = df.select("version", "timestamp", "operation", "operationMetrics",
                     "userMetadata").orderBy("version", ascending=False).collect()
    return [history_entry(r["version"], r["timestamp"], r["operation"],
                          r["operationMetrics"] or {}, r["userMetadata"]) for r in rows]


def history_entry(version: int, timestamp: Any, operation: str, metrics: dict[str, str],
                  user_metadata: str | None) -> HistoryEntry:
    """Build a HistoryEntry from one history row (pure; tested without Spark)."""
    meta: dict[str, Any] | str | None = None
    if user_metadata:
        try:
            meta = json.loads(user_metadata)
        except (TypeError, ValueError):
            meta = user_metadata
    files: list[str] = []
    if isinstance(meta, dict):
        state = meta.get("mirrorspec")  # the engine keeps its commit state under this key
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
    written = metric("numOutputRows")
    if inserted is None and operation in ("WRITE", "CREATE TABLE AS SELECT",
                                          "REPLACE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT"):
        inserted = written
    return HistoryEntry(
        version=int(version),
        timestamp=timestamp.isoformat() if hasattr(timestamp, "isoformat") else str(timestamp),
        operation=operation,
        files_applied=files,
        rows_inserted=inserted,
        rows_updated=metric("numTargetRowsUpdated", "numUpdatedRows"),
        rows_deleted=metric("numTargetRowsDeleted", "numDeletedRows"),
        rows_written=written,
        user_metadata=meta,
        metrics=metrics,
    )
