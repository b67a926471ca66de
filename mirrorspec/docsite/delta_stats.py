"""A Delta table's current size from its transaction log, without Spark (seed 003).

Replays `_delta_log`: the latest complete checkpoint (read with pyarrow when it is installed)
then the JSON commits after it, keeping the live `add` actions. Rows = Σ stats.numRecords minus
the rows each file's deletion vector removes. Anything the replay can't vouch for (no stats, an
unreadable checkpoint, a gap in the commits) makes the row count None instead of a wrong number.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

_COMMIT = re.compile(r"^(\d{20})\.json$")
_CHECKPOINT = re.compile(r"^(\d{20})\.checkpoint(?:\.(\d+)\.(\d+))?\.parquet$")


HISTORY_LIMIT = 20  # commits of history the docs site shows per table


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
    history: tuple = ()  # mirrorspec.spark.inspect.HistoryEntry, newest first (≤ HISTORY_LIMIT)


@dataclass
class _File:
    records: int | None
    deleted: int
    size: int


def summarize(table_path: str | Path) -> DeltaSummary | None:
    """Summary of the Delta table at a local path, or None when there is none (or it can't be
    read consistently)."""
    log = Path(table_path) / "_delta_log"
    try:
        names = [p.name for p in log.iterdir()]
    except OSError:
        return None
    commits = sorted(int(m.group(1)) for m in map(_COMMIT.match, names) if m)
    checkpoint = _latest_checkpoint(names)
    files: dict[tuple, _File] = {}
    info: dict[str, Any] = {}
    start = 0
    if checkpoint is not None:
        version, parts = checkpoint
        actions = _read_checkpoint(log, version, parts)
        if actions is None:
            return None
        _apply(files, actions, info)
        start = version + 1
    later = [v for v in commits if v >= start]
    if later and later != list(range(start, later[-1] + 1)):
        return None  # a gap: the log is being written or damaged
    if checkpoint is None and not later:
        return None
    for version in later:
        try:
            text = (log / f"{version:020d}.json").read_text(encoding="utf-8")
        except OSError:
            return None
        _apply(files, _json_lines(text), info)
    version = later[-1] if later else checkpoint[0]
    rows: int | None = 0
    for entry in files.values():
        if entry.records is None:
            rows = None
            break
        rows += entry.records - entry.deleted
    timestamp = info.get("timestamp")
    return DeltaSummary(
        version=version, rows=rows, files=len(files),
        size_bytes=sum(f.size for f in files.values()),
        last_commit=_iso(timestamp) if isinstance(timestamp, int) else None,
        last_operation=info.get("operation"),
        columns=_columns(info.get("schema")),
        history=tuple(_history(log, version, commits)))


def _latest_checkpoint(names: Iterable[str]) -> tuple[int, int] | None:
    """(version, parts) of the newest checkpoint whose every part is present."""
    found: dict[tuple[int, int], set[int]] = {}
    for name in names:
        match = _CHECKPOINT.match(name)
        if not match:
            continue
        version = int(match.group(1))
        parts = int(match.group(3) or 1)
        found.setdefault((version, parts), set()).add(int(match.group(2) or 1))
    complete = [key for key, seen in found.items() if seen == set(range(1, key[1] + 1))]
    return max(complete) if complete else None


def _read_checkpoint(log: Path, version: int, parts: int) -> list[dict] | None:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    if parts == 1:
        paths = [log / f"{version:020d}.checkpoint.parquet"]
    else:
        paths = [log / f"{version:020d}.checkpoint.{i:010d}.{parts:010d}.parquet"
                 for i in range(1, parts + 1)]
    actions: list[dict] = []
    try:
        for path in paths:
            table = pq.read_table(path, columns=["add", "metaData"])
            for row in table.to_pylist():
                if row.get("add"):
                    actions.append({"add": row["add"]})
                elif row.get("metaData"):
                    actions.append({"metaData": row["metaData"]})
    except Exception:  # noqa: BLE001 - any unreadable checkpoint just means "unknown"
        return None
    return actions


def _json_lines(text: str) -> list[dict]:
    actions = []
    for line in text.splitlines():
        if line.strip():
            try:
                action = json.loads(line)
            except ValueError:
                continue
            if isinstance(action, dict):
                actions.append(action)
    return actions


def _apply(files: dict[tuple, _File], actions: Iterable[dict], info: dict[str, Any]) -> None:
    """Apply one commit. A logical file is (path, deletion vector id): a DV update removes
    (path, old DV) and adds (path, new DV) in the same commit, in any order, so removes go
    first."""
    actions = list(actions)
    for action in actions:
        if action.get("remove"):
            files.pop(_identity(action["remove"]), None)
    for action in actions:
        if action.get("add"):
            add = action["add"]
            files[_identity(add)] = _File(_records(add.get("stats")), _deleted(add),
                                          int(add.get("size") or 0))
        elif action.get("metaData"):
            info["schema"] = action["metaData"].get("schemaString")
        elif action.get("commitInfo"):
            commit = action["commitInfo"]
            info["timestamp"] = commit.get("timestamp", info.get("timestamp"))
            info["operation"] = commit.get("operation", info.get("operation"))


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


def _history(log: Path, latest: int, commits: list[int]) -> list:
    """The newest HISTORY_LIMIT commits still in the log, as history entries (newest first)."""
    from mirrorspec.spark.inspect import history_entry  # pure Python: no pyspark import

    present = set(commits)
    out = []
    for version in range(latest, max(-1, latest - HISTORY_LIMIT), -1):
        if version not in present:
            break  # older commit files were cleaned up
        try:
            actions = _json_lines((log / f"{version:020d}.json").read_text(encoding="utf-8"))
        except OSError:
            break
        commit = next((a["commitInfo"] for a in actions if isinstance(a.get("commitInfo"), dict)),
                      {})
        timestamp = commit.get("timestamp")
        out.append(history_entry(version, _iso(timestamp) if isinstance(timestamp, int) else "",
                                 str(commit.get("operation") or ""),
                                 commit.get("operationMetrics") or {},
                                 commit.get("userMetadata")))
    return out


def _identity(action: dict) -> tuple:
    vector = action.get("deletionVector")
    if not isinstance(vector, dict):
        return (action.get("path"), None)
    return (action.get("path"), vector.get("storageType"), vector.get("pathOrInlineDv"),
            vector.get("offset"))


def _records(stats: Any) -> int | None:
    if isinstance(stats, str):
        try:
            stats = json.loads(stats)
        except ValueError:
            return None
    if isinstance(stats, dict) and isinstance(stats.get("numRecords"), int):
        return stats["numRecords"]
    return None


def _deleted(add: dict) -> int:
    vector = add.get("deletionVector")
    if isinstance(vector, dict) and isinstance(vector.get("cardinality"), int):
        return vector["cardinality"]
    return 0


def _iso(millis: int) -> str:
    return datetime.fromtimestamp(millis / 1000, tz=timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
