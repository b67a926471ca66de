"""Looking at mirrored tables through Spark: row previews with Delta time travel and the Delta
history. `show`/`history` use delta-rs (`mirrorspec/readers/`) and come here only for what
delta-rs can't read."""

from __future__ import annotations

import json
from typing import Any

from mirrorspec.base.errors import InspectError
from mirrorspec.readers.history import HistoryEntry, history_entry

__all__ = ["InspectError", "HistoryEntry", "history_entry", "preview", "history"]


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
        try:
            rows = df.limit(max(0, int(limit))).collect()
        except (OverflowError, ValueError):  # a date beyond Python's year 9999: shown as text
            rows = df.select(*[_as_text(df, c) for c in df.columns]).limit(
                max(0, int(limit))).collect()
    except Exception as exc:  # noqa: BLE001 - Spark/Delta analysis errors become user errors
        raise InspectError(f"{name}: {_first_line(exc)}", hint=_hint(exc, version, timestamp)) \
            from None
    return list(df.columns), [list(row) for row in rows]


def _as_text(df, column: str):
    """A date/timestamp column cast to text (other columns unchanged)."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    field = df.schema[column]
    quoted = F.col("`" + column.replace("`", "``") + "`")
    if isinstance(field.dataType, (T.DateType, T.TimestampType, T.TimestampNTZType)):
        return quoted.cast("string").alias(column)
    return quoted


def safe_message(exc: BaseException) -> str:
    """An exception's text; some Delta errors fail to render through Spark's error classes,
    so fall back to the Java exception's own text."""
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - rendering the error class itself failed: fall back
        text = ""
        java = getattr(exc, "java_exception", None) or getattr(exc, "_origin", None)
        try:
            text = str(java.toString()) if java is not None else ""
        except Exception:  # noqa: BLE001 - the gateway may be gone: try the description
            text = ""
        if not text:
            try:
                text = str(getattr(exc, "desc", "") or getattr(exc, "_desc", "") or "")
            except Exception:  # noqa: BLE001 - nothing renders: the type name is the message
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
    feed = _feed_versions(spark, delta_path)
    entries = [history_entry(r["version"], r["timestamp"], r["operation"],
                             r["operationMetrics"] or {}, r["userMetadata"],
                             feed.get(r["version"])) for r in rows]
    entries += cleaned_up_commits(spark, delta_path, min((e.version for e in entries),
                                                         default=None))
    return entries[:limit] if limit else entries


def _feed_versions(spark, delta_path: str) -> dict[int, bool | None]:
    """Which versions carry a change data feed, from the log read through the session."""
    from mirrorspec.progress.snapshot import feed_versions
    from mirrorspec.spark.platform import hadoop_fs

    try:
        return feed_versions(hadoop_fs.filesystem_for(delta_path, spark), delta_path)
    except Exception:  # noqa: BLE001 - the feed column is then unknown, the history still shown
        return {}


def changes(spark, delta_path: str, name: str, from_version: int | None, start,
            to_version: int | None, end, limit: int | None, order_by: list[str]
            ) -> tuple[list[str], list[list[Any]], int, int, int]:
    """The change data feed through Spark (`readChangeFeed`), for what delta-rs can't read:
    (columns, rows, first version, last version, rows in the range), ordered as
    `mirrorspec.readers.changes` orders them."""
    from pyspark.sql import functions as F

    from mirrorspec.readers.changes import CHANGE_ORDER, CHANGE_TYPE, COMMIT_VERSION, FEED_COLUMNS

    _require_delta(spark, delta_path, name)
    reader = spark.read.format("delta").option("readChangeFeed", "true")
    reader = (reader.option("startingTimestamp", start.isoformat()) if start is not None
              else reader.option("startingVersion", int(from_version or 0)))
    if end is not None:
        reader = reader.option("endingTimestamp", end.isoformat())
    elif to_version is not None:
        reader = reader.option("endingVersion", int(to_version))
    try:
        df = reader.load(delta_path)
        present = {c.lower(): c for c in df.columns if c not in FEED_COLUMNS}
        keys = [present[c.lower()] for c in order_by if c.lower() in present]
        rank = F.array_position(F.array(*[F.lit(c) for c in CHANGE_ORDER]), F.col(CHANGE_TYPE))
        df = df.orderBy(COMMIT_VERSION, *keys, rank).select(
            *[c for c in df.columns if c not in FEED_COLUMNS], *FEED_COLUMNS)
        span = df.agg(F.min(COMMIT_VERSION), F.max(COMMIT_VERSION), F.count(F.lit(1))).first()
        rows = df.limit(max(0, int(limit))).collect() if limit is not None else df.collect()
    except Exception as exc:  # noqa: BLE001 - Spark/Delta errors become user errors
        raise InspectError(f"{name}: {_first_line(exc)}",
                           hint="`mirrorspec history TABLE` shows which versions carry a feed") \
            from None
    first = span[0] if span[0] is not None else (from_version or 0)
    last = span[1] if span[1] is not None else (to_version if to_version is not None else first)
    return list(df.columns), [list(r) for r in rows], int(first), int(last), int(span[2])


def cleaned_up_commits(spark, delta_path: str, oldest: int | None) -> list[HistoryEntry]:
    """mirrorspec commits older than the Delta log still reaches (`oldest`), newest first, from
    the engine's state copies (`mirrorspec.progress.mirror`): Delta's log cleanup removed them,
    but which landing files each applied is still known."""
    from datetime import datetime, timezone

    from mirrorspec.spark.platform import hadoop_fs
    from mirrorspec.progress.mirror import STATE_KEY, state_copies

    if oldest is None or oldest == 0:
        return []
    entries = []
    for copy in reversed(state_copies(hadoop_fs.filesystem_for(delta_path, spark), delta_path)):
        version = copy.get("version")
        if version is None or version >= oldest:
            continue
        stamp = copy.get("timestamp")
        when = (datetime.fromtimestamp(stamp / 1000, timezone.utc) if isinstance(stamp, int)
                else "")
        entries.append(history_entry(version, when, f"{copy.get('operation')} (log cleaned up)",
                                     copy.get("metrics") or {},
                                     json.dumps({STATE_KEY: copy["meta"]})))
    return entries
