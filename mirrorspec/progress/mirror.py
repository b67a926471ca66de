"""A mirrored table's exactly-once progress, read so that it outlives Delta's log cleanup.

Each mirrorspec commit carries the progress twice over: the Delta `txn` action (appId
`mirrorspec:<schema>.<table>`, version = last file number or batch counter), which Delta keeps in
every checkpoint, and `userMetadata` (file names, folder token, counters), which lives only in
the commit's JSON file. Delta deletes JSON commits older than `delta.logRetentionDuration` once a
checkpoint covers them, and OPTIMIZE, VACUUM or a data fix add commits after ours. So after each
commit the engine also writes the userMetadata state to `<table>/_mirrorspec/state/<txn>.json`
(VACUUM never touches folders starting with `_`), and reading the progress is:

1. the newest JSON commit carrying mirrorspec userMetadata (no cleanup reached it yet), else
2. the state copy whose txn version is the snapshot's `txn` for our appId (read from the latest
   checkpoint and the JSON commits after it, as the Delta protocol describes: no Spark job).

A snapshot txn without its state copy (a crash between commit and copy, then cleanup) is refused
rather than guessed: applying a batch twice is the one thing never allowed.
"""

from __future__ import annotations

import io
import json
import os
import re
from dataclasses import dataclass, field, fields
from typing import Any, Iterator, Mapping

from mirrorspec.base.errors import LandingZoneError, MirrorspecError
from mirrorspec.base import files as fsmod
from mirrorspec.base.files import Entry, Files, FileSystem

STATE_KEY = "mirrorspec"
STATE_FORMAT = 1
STATE_FOLDER = "_mirrorspec/state"
KEEP_STATE_COPIES = 500  # older copies are pruned; `history` explains this many batches
_LOG_FILE = re.compile(r"^\d{20}\.json$")
# classic, multi-part (.0000000001.0000000003) and V2 (.<uuid>) checkpoint files
_CHECKPOINT = re.compile(
    r"^(\d{20})\.checkpoint(\.\d{10}\.\d{10}|\.[0-9a-fA-F-]{36})?\.(parquet|json)$")
_STATE_FILE = re.compile(r"^(\d{20})\.json$")


@dataclass(frozen=True)
class MirrorRecord:
    """What each mirror commit records under userMetadata[STATE_KEY] (and in its state copy):
    the one definition of the record's shape. `to_json` writes the keys in the order every
    earlier version wrote them; `from_json` reads any record STATE_FORMAT 1 ever wrote (keys a
    record lacks take their defaults)."""

    table: str
    mode: str                      # "sequence" (20-digit names) or "time" (LastUpdateTime)
    files: list[str]               # the landing files this commit applied, in order
    carry: list[str] = field(default_factory=list)   # applied earlier, still in the folder
    stats: dict[str, Any] = field(default_factory=dict)  # each file's version as listed
    sequence: int | None = None    # the last applied 20-digit sequence
    keys: list[str] | None = None  # None only in records older than the key columns
    batch: int = 0                 # the batch counter (the txn version in time mode)
    watermark: list[Any] = field(default_factory=list)  # [mtime, name] of the last file
    folder_id: str | None = None
    landing_zone: str | None = None
    landing_path: str | None = None
    rows: int = 0
    bytes: int = 0
    processed_rows: int = 0        # cumulative, as Fabric's monitoring counts them
    processed_bytes: int = 0
    attempt: str | None = None     # who committed: a conflicting writer is told apart by it
    format: int = STATE_FORMAT

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "table": self.table, "mode": self.mode,
                "files": list(self.files), "carry": list(self.carry), "stats": dict(self.stats),
                "sequence": self.sequence,
                "keys": list(self.keys) if self.keys is not None else None, "batch": self.batch,
                "watermark": list(self.watermark), "folder_id": self.folder_id,
                "landing_zone": self.landing_zone, "landing_path": self.landing_path,
                "rows": self.rows, "bytes": self.bytes, "processed_rows": self.processed_rows,
                "processed_bytes": self.processed_bytes, "attempt": self.attempt}

    def user_metadata(self) -> str:
        """The commit's userMetadata: the record under STATE_KEY, compact JSON."""
        return json.dumps({STATE_KEY: self.to_json()}, separators=(",", ":"))

    @classmethod
    def from_json(cls, meta: Mapping[str, Any]) -> "MirrorRecord":
        values: dict[str, Any] = {}
        for spec in fields(cls):
            value = meta.get(spec.name)
            # a null where the record has a non-null default (an older writer) takes the default
            if value is not None or (spec.name in meta and spec.default is None):
                values[spec.name] = value
        values.setdefault("table", "")
        values.setdefault("mode", "sequence")
        values.setdefault("files", [])
        return cls(**values)

    @property
    def txn_version(self) -> int:
        """The txn version the commit carried: the batch counter in time mode, else the last
        applied sequence."""
        return int((self.batch if self.mode == "time" else self.sequence) or 0)

    @property
    def done(self) -> set[str]:
        """The landing files applied so far that the record names (this commit's and carried)."""
        return set(self.files) | set(self.carry)


@dataclass
class TableState:
    """What the Delta table says about the table's progress."""

    exists: bool = False
    record: MirrorRecord | None = None  # userMetadata[STATE_KEY] of our latest commit
    version: int | None = None                 # Delta version of that commit
    metrics: dict[str, Any] = field(default_factory=dict)  # its operationMetrics
    operation: str | None = None
    timestamp: int | None = None                # its commit time (ms since the epoch)
    from_copy: bool = False                     # read from the state copy (JSON cleaned up)


def read_state(filesystem: FileSystem, delta_path: str, app_id: str | None = None) -> TableState:
    """The table's latest mirrorspec progress (see the module docstring). Raises
    LandingZoneError `StateLost` when the snapshot's txn has neither its JSON commit nor its
    state copy."""
    log = fsmod.join(delta_path, "_delta_log")
    entries = filesystem.list(log)
    commits = sorted((e for e in entries if _LOG_FILE.match(e.name)), key=lambda e: e.name,
                     reverse=True)
    state = TableState(exists=bool(commits) or any(".checkpoint" in e.name for e in entries))
    if not state.exists:
        return state
    for version, record, info in engine_commits(filesystem, delta_path):
        state.record = record
        state.version = version
        state.metrics = info.get("operationMetrics") or {}
        state.operation = info.get("operation")
        state.timestamp = info.get("timestamp")
        return state
    if app_id is None:
        return state
    txn = snapshot_txn(filesystem, log, entries, app_id)
    if txn is None:
        return state  # never mirrored by us (or only by a version before the txn)
    copy = read_state_copy(filesystem, delta_path, txn)
    if copy is None:
        raise LandingZoneError(
            f"the Delta log says {app_id} applied up to {txn}, but the commit that says which "
            f"files that was has been cleaned up and its copy in {STATE_FOLDER} is missing",
            file=delta_path, code="StateLost",
            hint="nothing was applied; recreate the table folder (or run --full-refresh) to "
                 "rebuild the table, since applying files again could double rows")
    state.record = MirrorRecord.from_json(copy["meta"])
    state.version = copy.get("version")
    state.metrics = copy.get("metrics") or {}
    state.operation = copy.get("operation")
    state.timestamp = copy.get("timestamp")
    state.from_copy = True
    return state


def engine_commits(filesystem: FileSystem, delta_path: str,
                   newest_first: bool = True) -> Iterator[tuple[int, MirrorRecord, dict[str, Any]]]:
    """(version, record, commitInfo) of each commit of a Delta table that the engine made
    (its `userMetadata[STATE_KEY]`) whose JSON file is still in `_delta_log` (no Spark job)."""
    log = fsmod.join(delta_path, "_delta_log")
    commits = sorted((e for e in filesystem.list(log) if _LOG_FILE.match(e.name)),
                     key=lambda e: e.name, reverse=newest_first)
    for entry in commits:
        try:
            text = filesystem.read_bytes(entry.path).decode("utf-8")
        except OSError:
            continue
        for line in text.splitlines():
            if '"commitInfo"' not in line:
                continue
            info = json.loads(line).get("commitInfo") or {}
            try:
                user = json.loads(info.get("userMetadata") or "null")
            except ValueError:
                user = None
            if isinstance(user, dict) and isinstance(user.get(STATE_KEY), dict):
                yield int(entry.name.split(".")[0]), MirrorRecord.from_json(user[STATE_KEY]), info


def log_versions(filesystem: FileSystem, delta_path: str) -> list[int]:
    """The versions of the commit files in a Delta table's `_delta_log`, oldest first."""
    log = fsmod.join(delta_path, "_delta_log")
    return sorted(int(e.name.split(".")[0]) for e in filesystem.list(log)
                  if _LOG_FILE.match(e.name))


# --- the snapshot's txn, as the Delta protocol describes -------------------------------------

def snapshot_txn(filesystem: FileSystem, log: str, entries: list[Entry], app_id: str) -> int | None:
    """The version of `app_id`'s `txn` action in the table's latest snapshot: from the newest
    complete checkpoint, then every JSON commit after it."""
    checkpoints: dict[int, list[Entry]] = {}
    for entry in entries:
        match = _CHECKPOINT.match(entry.name)
        if match:
            checkpoints.setdefault(int(match.group(1)), []).append(entry)
    txn = None
    start = -1
    for version in sorted(checkpoints, reverse=True):
        try:
            found = [_txn_in_checkpoint(filesystem, e, app_id) for e in checkpoints[version]]
        except Exception:  # noqa: BLE001 - a partial/corrupt checkpoint: use an older one
            continue
        known = [v for v in found if v is not None]
        txn, start = (max(known) if known else None), version
        break
    for entry in sorted((e for e in entries if _LOG_FILE.match(e.name)), key=lambda e: e.name):
        if int(entry.name.split(".")[0]) <= start:
            continue
        for line in filesystem.read_bytes(entry.path).decode("utf-8").splitlines():
            if '"txn"' not in line:
                continue
            action = json.loads(line).get("txn")
            if isinstance(action, dict) and action.get("appId") == app_id:
                txn = int(action["version"])
    return txn


def _txn_in_checkpoint(filesystem: FileSystem, entry: Entry, app_id: str) -> int | None:
    if entry.name.endswith(".json"):  # a V2 checkpoint written as JSON
        data = filesystem.read_bytes(entry.path)
        rows = [json.loads(line).get("txn") for line in data.decode("utf-8").splitlines()
                if '"txn"' in line]
    else:
        import pyarrow.parquet as pq

        # a local checkpoint is read column-wise in place (only `txn`); a remote one whole
        source = (fsmod.local_path(entry.path) if isinstance(filesystem, fsmod.LocalFS)
                  else io.BytesIO(filesystem.read_bytes(entry.path)))
        parquet = pq.ParquetFile(source)
        if "txn" not in parquet.schema_arrow.names:
            return None
        rows = parquet.read(columns=["txn"]).column("txn").to_pylist()
    versions = [int(r["version"]) for r in rows if r and r.get("appId") == app_id]
    return max(versions) if versions else None


def snapshot_schema(filesystem: FileSystem, delta_path: str) -> dict[str, Any] | None:
    """The table's schema (the parsed `schemaString` of its latest `metaData` action) as the Delta
    protocol defines the snapshot: the newest JSON commit that has one, else the newest complete
    checkpoint — so it stays right after log cleanup. None when there is no table."""
    metadata = snapshot_metadata(filesystem, delta_path)
    return _schema_of(metadata) if metadata is not None else None


def snapshot_metadata(filesystem: FileSystem, delta_path: str) -> dict[str, Any] | None:
    """The table's latest `metaData` action (schemaString, configuration, …), found as
    `snapshot_schema` says. None when there is no table."""
    log = fsmod.join(delta_path, "_delta_log")
    entries = filesystem.list(log)
    checkpoints: dict[int, list[Entry]] = {}
    for entry in entries:
        match = _CHECKPOINT.match(entry.name)
        if match:
            checkpoints.setdefault(int(match.group(1)), []).append(entry)
    start = max(checkpoints) if checkpoints else -1
    for entry in sorted((e for e in entries if _LOG_FILE.match(e.name)), key=lambda e: e.name,
                        reverse=True):
        if int(entry.name.split(".")[0]) <= start:
            break
        for line in filesystem.read_bytes(entry.path).decode("utf-8").splitlines():
            if '"metaData"' in line:
                return _metadata_action(line)
    for version in sorted(checkpoints, reverse=True):
        for entry in checkpoints[version]:
            try:
                metadata = _metadata_in_checkpoint(filesystem, entry)
            except Exception:  # noqa: BLE001 - a partial/corrupt checkpoint: try an older one
                continue
            if metadata is not None:
                return metadata
    return None


def _metadata_in_checkpoint(filesystem: FileSystem, entry: Entry) -> dict[str, Any] | None:
    if entry.name.endswith(".json"):
        for line in filesystem.read_bytes(entry.path).decode("utf-8").splitlines():
            if '"metaData"' in line:
                return _metadata_action(line)
        return None
    import pyarrow.parquet as pq

    source = (fsmod.local_path(entry.path) if isinstance(filesystem, fsmod.LocalFS)
              else io.BytesIO(filesystem.read_bytes(entry.path)))
    parquet = pq.ParquetFile(source)
    if "metaData" not in parquet.schema_arrow.names:
        return None
    for row in parquet.read(columns=["metaData"]).column("metaData").to_pylist():
        if row and row.get("schemaString"):
            if isinstance(row.get("configuration"), list):  # a Parquet map reads as pairs
                row["configuration"] = dict(row["configuration"])
            return dict(row)
    return None


def _metadata_action(line: str) -> dict[str, Any]:
    action = json.loads(line)["metaData"]
    return action if isinstance(action, dict) else {}


def _schema_of(metadata: dict[str, Any]) -> dict[str, Any]:
    schema = json.loads(metadata["schemaString"])
    return schema if isinstance(schema, dict) else {}


# --- the state copies -----------------------------------------------------------------------

def state_copy_path(delta_path: str, txn: int) -> str:
    return fsmod.join(delta_path, STATE_FOLDER, f"{txn:020d}.json")


def read_state_copy(filesystem: FileSystem, delta_path: str, txn: int) -> dict[str, Any] | None:
    """The state copy of txn version `txn`, or None."""
    path = state_copy_path(delta_path, txn)
    if not filesystem.exists(path):
        return None
    try:
        copy = json.loads(filesystem.read_bytes(path).decode("utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(copy, dict) and isinstance(copy.get("meta"), dict):
        return copy
    return None


def write_state_copy(filesystem: FileSystem, delta_path: str, state: TableState) -> None:
    """Keep `state` (a committed mirrorspec commit) where log cleanup can't drop it, and prune
    copies beyond the newest KEEP_STATE_COPIES."""
    if state.record is None:
        raise ValueError("write_state_copy needs a state read from a mirrorspec commit")
    txn = state.record.txn_version
    copy = {"format": STATE_FORMAT, "txn": txn, "version": state.version,
            "operation": state.operation, "metrics": state.metrics,
            "timestamp": state.timestamp, "meta": state.record.to_json()}
    filesystem.write_text(state_copy_path(delta_path, txn),
                          json.dumps(copy, separators=(",", ":"), sort_keys=True))
    folder = fsmod.join(delta_path, STATE_FOLDER)
    names = sorted(e.name for e in filesystem.list(folder) if _STATE_FILE.match(e.name))
    for name in names[:-KEEP_STATE_COPIES]:
        filesystem.delete(fsmod.join(folder, name))


def state_copies(filesystem: FileSystem, delta_path: str) -> list[dict[str, Any]]:
    """Every kept state copy, oldest first (for `history` once the log is cleaned up); each
    one's record is `MirrorRecord.from_json(copy["meta"])` (`copied_records`)."""
    folder = fsmod.join(delta_path, STATE_FOLDER)
    copies = []
    for entry in sorted(filesystem.list(folder), key=lambda e: e.name):
        if _STATE_FILE.match(entry.name):
            copy = read_state_copy(filesystem, delta_path, int(entry.name[:20]))
            if copy is not None:
                copies.append(copy)
    return copies


def copied_records(filesystem: FileSystem, delta_path: str) -> list[MirrorRecord]:
    """The records of every kept state copy, oldest first."""
    return [MirrorRecord.from_json(copy["meta"]) for copy in state_copies(filesystem, delta_path)]


# --- finding a mirrored table (reconcile, replay) -----------------------------------------------

def names_folder(table: str) -> bool:
    """TABLE names a Delta folder, not a table: a URI (checked through its filesystem later), or
    a local folder holding a `_delta_log`."""
    return fsmod.is_remote(table) or os.path.isdir(
        os.path.join(fsmod.local_path(table), "_delta_log"))


def resolve_table(table: str, warehouse: str | None,
                  files: Files | None = None) -> tuple[str, str]:
    """(unique id, Delta path) of TABLE: a Delta folder, or schema.table / table (dbo) in the
    warehouse (a folder or a URI). `files` serves the paths; the default serves local files
    only, so a URI raises `files.SessionNeeded` and is checked once a session can reach it."""
    files = files or fsmod.Files()
    if names_folder(table):
        path = fsmod.normalize(table)
        if not files.fs(path).is_dir(fsmod.join(path, "_delta_log")):
            raise MirrorspecError(f"{table} is not a Delta table folder (no _delta_log)",
                                  hint="check the path, or name the table and pass --warehouse")
        parts = path.replace(os.sep, "/").rstrip("/").split("/")
        return f"{parts[-2]}.{parts[-1]}", path
    if not warehouse:
        raise MirrorspecError(f"{table} is not a Delta table folder; pass --warehouse to find "
                              "schema.table in a warehouse")
    schema, _, name = table.rpartition(".")
    schema = schema or "dbo"
    path = fsmod.normalize(fsmod.join(warehouse, schema, name))
    if not files.fs(path).is_dir(fsmod.join(path, "_delta_log")):
        raise MirrorspecError(f"no mirrored table {schema}.{name} in {warehouse}",
                              hint="run `mirrorspec mirror` first, or check the name")
    return f"{schema}.{name}", path


def table_keys(path: str, key: str | None, filesystem: FileSystem | None = None) -> list[str]:
    """--key, else the keyColumns the engine recorded when it last committed the table (an
    empty list for a keyless table: rows are then compared as a multiset). `filesystem` serves
    `path` (default: local files; a URI needs the session's, see `resolve_table`)."""
    if key:
        return [k.strip() for k in key.split(",") if k.strip()]
    record = read_state(filesystem or fsmod.filesystem_for(path), path).record
    keys = record.keys if record is not None else None
    if keys is None:
        raise MirrorspecError("the table's key columns are not recorded (it was mirrored by an "
                              "older version)", hint="pass --key col1,col2")
    return list(keys)
