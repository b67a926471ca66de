"""Rows and history of a Delta table through delta-rs (no JVM).

Rows go through DataFusion (`QueryBuilder`), which honours deletion vectors —
`DeltaTable.to_pyarrow_table()` refuses tables that have them. What delta-rs can't read (a reader
feature it lacks, a `--where` DataFusion can't plan, a URI scheme it doesn't know) raises
`DeltaRsUnsupported` so the command can fall back to Spark and say so.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any, Sequence

from mirrorspec.readers.errors import DeltaRsUnsupported, InspectError
from mirrorspec.readers.history import HistoryEntry, history_entry
from mirrorspec.readers.sql import quote_identifier, spark_where_to_datafusion

_HISTORY_HINT = "see `mirrorspec history TABLE` for the versions and their timestamps"
_NO_TABLE_HINT = "run `mirrorspec run` (or `mirrorspec mirror`) first"
# Hadoop URI schemes Spark uses and the object_store scheme delta-rs knows them by.
_SCHEMES = {"s3a": "s3", "s3n": "s3"}
_DELTA_RS_SCHEMES = ("s3", "gs", "az", "abfs", "abfss", "adl", "azure", "file", "memory")


def parse_timestamp(text: str) -> datetime:
    """`--timestamp` as an aware UTC datetime: ISO 8601 dates and times (`2026-01-31`,
    `2026-01-31 12:00:00`, `…T12:00:00Z`, `…+02:00`); without an offset it is UTC, the time zone
    mirrorspec's Spark sessions use."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InspectError(
            f"--timestamp {text!r} is not a date or time",
            hint="give an ISO 8601 time such as 2026-01-31 or 2026-01-31T12:00:00 (UTC unless it "
                 "has an offset); `mirrorspec history TABLE` lists the commit times") from None
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def table_uri(path: str) -> str:
    """The location delta-rs opens: an absolute local path, or the URI with Spark's Hadoop
    scheme mapped to object_store's (s3a:// → s3://)."""
    scheme, sep, rest = path.partition("://")
    if not sep:
        return os.path.abspath(path)
    scheme = _SCHEMES.get(scheme.lower(), scheme.lower())
    if scheme not in _DELTA_RS_SCHEMES:
        raise DeltaRsUnsupported(f"delta-rs does not read {scheme}:// locations")
    return f"{scheme}://{rest}"


def _first_line(exc: BaseException, width: int = 200) -> str:
    text = str(exc).strip()
    line = text.splitlines()[0] if text else type(exc).__name__
    return line if len(line) <= width else line[:width - 1] + "…"


def open_table(path: str, name: str, version: int | None = None,
               timestamp: datetime | None = None, storage_options: dict | None = None):
    """The `deltalake.DeltaTable` at `path`, as of `version` or `timestamp` when given.
    `storage_options`: object_store options for a URI (see readers/storage.py)."""
    import deltalake
    from deltalake.exceptions import DeltaError, TableNotFoundError

    uri = table_uri(path)
    try:
        table = deltalake.DeltaTable(uri, storage_options=storage_options or None)
    except TableNotFoundError as exc:
        if "://" in path and not path.startswith("file:"):
            # on an object store this is also what missing credentials look like: let Spark,
            # with the profile's Hadoop settings, give the real answer
            raise DeltaRsUnsupported(f"delta-rs could not open {path}: "
                                     f"{_first_line(exc)}") from None
        raise InspectError(f"{name} has no Delta table at {path}", hint=_NO_TABLE_HINT) from None
    except (DeltaError, OSError) as exc:  # OSError: object-store I/O (unreachable, denied)
        raise DeltaRsUnsupported(f"delta-rs could not open {path}: {_first_line(exc)}") from None
    if timestamp is not None:
        version = _version_at(table, name, timestamp)
    if version is not None and version != table.version():
        if version > table.version():
            raise InspectError(f"{name} has no version {version} (the latest is "
                               f"{table.version()})", hint=_HISTORY_HINT)
        try:
            table.load_as_version(version)
        except DeltaError as exc:
            raise InspectError(f"{name}: version {version} can't be read: {_first_line(exc)}",
                               hint=_HISTORY_HINT) from None
    return table


def _version_at(table: Any, name: str, timestamp: datetime) -> int:
    """The latest version committed at or before `timestamp` (as Delta's timestampAsOf)."""
    millis = timestamp.timestamp() * 1000
    commits = [(entry["version"], entry.get("timestamp") or 0) for entry in table.history()]
    earlier = [version for version, at in commits if at <= millis]
    if not earlier:
        first = min(commits, key=lambda c: c[0]) if commits else None
        if first is not None and first[0] > 0:  # older commits were cleaned from the log
            raise InspectError(f"{name}: {timestamp.isoformat()} is before the oldest version "
                               f"still in the log (version {first[0]} at {_iso(first[1])})",
                               hint=_HISTORY_HINT)
        since = f" (the first commit is at {_iso(first[1])})" if first else ""
        raise InspectError(f"{name} did not exist yet at {timestamp.isoformat()}{since}",
                           hint=_HISTORY_HINT)
    return max(earlier)


def _iso(millis: int | float) -> str:
    return datetime.fromtimestamp(millis / 1000, tz=timezone.utc).isoformat(
        timespec="milliseconds").replace("+00:00", "Z")


def preview(path: str, name: str | None = None, limit: int = 20, where: str | None = None,
            version: int | None = None, timestamp: datetime | None = None,
            order_by: Sequence[str] = (), storage_options: dict | None = None
            ) -> tuple[list[str], list[list[Any]], int]:
    """Columns, up to `limit` rows (sorted by `order_by` where those columns exist) and the
    version read, of the Delta table at `path`, optionally as of `version` or `timestamp`."""
    data, read_version = preview_arrow(path, name, limit, where, version, timestamp, order_by,
                                       storage_options)
    rows = [list(row) for row in zip(*(_python_values(column) for column in data.columns))]
    return list(data.column_names), rows, read_version


def preview_arrow(path: str, name: str | None = None, limit: int | None = 20,
                  where: str | None = None, version: int | None = None,
                  timestamp: datetime | None = None, order_by: Sequence[str] = (),
                  storage_options: dict | None = None) -> tuple[Any, int]:
    """`preview` as a pyarrow.Table (all rows when `limit` is None) and the version read."""
    import pyarrow as pa
    from deltalake import QueryBuilder
    from deltalake.exceptions import DeltaError

    name = name or path
    if version is not None and timestamp is not None:
        raise InspectError("give --version or --timestamp, not both")
    table = open_table(path, name, version, timestamp, storage_options)
    try:
        columns = [field.name for field in table.schema().fields]
    except (DeltaError, OSError) as exc:
        raise DeltaRsUnsupported(_first_line(exc)) from None
    present = {c.lower(): c for c in columns}
    sql = "SELECT * FROM t"
    if where:
        sql += f" WHERE ({spark_where_to_datafusion(where, columns)})"
    order = [present[c.lower()] for c in order_by if c.lower() in present]
    if order:
        sql += " ORDER BY " + ", ".join(f"{quote_identifier(c)} ASC NULLS FIRST" for c in order)
    if limit is not None:
        sql += f" LIMIT {max(0, int(limit))}"
    try:
        reader = QueryBuilder().register("t", table).execute(sql)
        data = pa.RecordBatchReader.from_stream(reader).read_all()
    except (DeltaError, OSError) as exc:
        text = str(exc)
        if where and "No field named" in text:
            known = ", ".join(columns)
            raise InspectError(f"{name}: --where {where!r}: {_first_line(exc)}",
                               hint=f"the columns are: {known}") from None
        what = "evaluate --where" if where else "read the table"
        raise DeltaRsUnsupported(f"could not {what}: {_first_line(exc)}") from None
    return data, table.version()


def _python_values(column) -> list:
    """Python values of an Arrow column. Time-zoned timestamps become naive UTC datetimes, as
    Spark's UTC session shows them (and pyarrow would import pandas, ~1 s, to attach the zone)."""
    import pyarrow as pa

    if pa.types.is_timestamp(column.type) and column.type.tz is not None:
        column = column.cast(pa.timestamp(column.type.unit))
    try:
        return column.to_pylist()
    except (OverflowError, ValueError):
        if not (pa.types.is_timestamp(column.type) or pa.types.is_date(column.type)):
            raise
    # A date outside Python's years 1-9999 (written before mirror refused them): shown as the
    # text NumPy gives it (its datetime64 spans ±290,000 years), never a crash.
    spelled = column.to_numpy(zero_copy_only=False)
    values: list = []
    for index, scalar in enumerate(column):
        try:
            values.append(scalar.as_py())
        except (OverflowError, ValueError):
            values.append(str(spelled[index]))
    return values


def feed_versions(path: str) -> dict[int, bool | None]:
    """Which versions of the table at `path` carry a change data feed, from its log
    (`progress.snapshot.feed_versions`); {} for a URI (not known without reading the log
    through Spark) or a log that can't be read."""
    from mirrorspec.base import files as fsmod
    from mirrorspec.progress.snapshot import feed_versions as from_log

    if "://" in path and not path.startswith("file:"):
        return {}
    try:
        return from_log(fsmod.LocalFS(), fsmod.local_path(path))
    except (OSError, ValueError):
        return {}


def history(path: str, name: str | None = None, limit: int | None = None,
            storage_options: dict | None = None) -> list[HistoryEntry]:
    """The table's commits, newest first, with applied landing files and row counts."""
    from deltalake.exceptions import DeltaError

    name = name or path
    table = open_table(path, name, storage_options=storage_options)
    try:
        commits = table.history(limit)
    except (DeltaError, OSError) as exc:
        raise DeltaRsUnsupported(_first_line(exc)) from None
    commits = sorted(commits, key=lambda c: c.get("version", -1), reverse=True)
    feed = feed_versions(path)
    return [history_entry(c.get("version", -1), _iso(c.get("timestamp") or 0),
                          c.get("operation") or "", c.get("operationMetrics") or {},
                          c.get("userMetadata"), feed.get(c.get("version", -1)))
            for c in commits]
