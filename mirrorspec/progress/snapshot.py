"""What a Delta table's latest snapshot says about itself, read from its log without Spark.

Delta writes, beside each commit, a checksum file `<version>.crc` holding the snapshot of that
version in brief: the size of its data files, its `metaData` (schema, table properties) and
`protocol`. When the newest commit has one, the engine takes the table's size, schema and
properties from it, where asking Spark (`DESCRIBE DETAIL`, `SHOW TBLPROPERTIES`, a read's schema)
would plan statements and build the snapshot's state before the MERGE builds it anyway. Without
one (a writer that skips checksums, a crash between commit and checksum) the schema and
properties come from the newest `metaData` action (`mirror.snapshot_schema`'s way) and the size
is unknown: callers then ask Spark.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mirrorspec.base import files as fsmod
from mirrorspec.base.files import FileSystem
from mirrorspec.progress import mirror as _log
from mirrorspec.progress.mirror import log_versions, snapshot_metadata

_CHECKSUM_FILE = "{:020d}.crc"
# The table property of Delta's change data feed, as the log's metaData.configuration holds it
# (spark/platform/delta.py sets it under this name).
CHANGE_DATA_FEED_PROPERTY = "delta.enableChangeDataFeed"


@dataclass(frozen=True)
class SnapshotFacts:
    """The latest version of a Delta table, as its log describes it."""

    version: int
    size_bytes: int | None = None            # the data files' bytes; None: no checksum file
    configuration: dict[str, str] = field(default_factory=dict)  # table properties
    schema: dict[str, Any] | None = None     # the parsed schemaString
    reader_features: tuple[str, ...] = ()

    def property(self, name: str) -> str | None:
        """A table property's value, or None when the table doesn't set it."""
        return self.configuration.get(name)


def latest_facts(filesystem: FileSystem, delta_path: str) -> SnapshotFacts | None:
    """The facts of the table's newest commit (None: no commit files, so no table or a log
    cleaned down to its checkpoint, which callers then ask Spark about)."""
    versions = log_versions(filesystem, delta_path)
    if not versions:
        return None
    version = versions[-1]
    log = fsmod.join(delta_path, "_delta_log")
    checksum = _read_checksum(filesystem, fsmod.join(log, _CHECKSUM_FILE.format(version)))
    if checksum is not None:
        metadata = checksum.get("metadata") or {}
        protocol = checksum.get("protocol") or {}
        size = checksum.get("tableSizeBytes")
        return SnapshotFacts(version, int(size) if isinstance(size, int) else None,
                             dict(metadata.get("configuration") or {}),
                             _schema_of(metadata),
                             tuple(protocol.get("readerFeatures") or ()))
    metadata = snapshot_metadata(filesystem, delta_path)
    if metadata is None:
        return SnapshotFacts(version)
    return SnapshotFacts(version, None, dict(metadata.get("configuration") or {}),
                         _schema_of(metadata))


def _read_checksum(filesystem: FileSystem, path: str) -> dict[str, Any] | None:
    try:
        if not filesystem.exists(path):
            return None
        data = json.loads(filesystem.read_bytes(path).decode("utf-8"))
    except (OSError, ValueError):
        return None  # unreadable or half written: the log itself still answers
    return data if isinstance(data, dict) and isinstance(data.get("metadata"), dict) else None


def _schema_of(metadata: dict[str, Any]) -> dict[str, Any] | None:
    try:
        schema = json.loads(metadata.get("schemaString") or "null")
    except ValueError:
        return None
    return schema if isinstance(schema, dict) else None


def feed_versions(filesystem: FileSystem, delta_path: str) -> dict[int, bool | None]:
    """For each version whose commit file is still in the log: whether it carries a change data
    feed (`delta.enableChangeDataFeed` true in the table properties in effect at that version).
    Walks the commit files oldest first, following each `metaData` action; before the oldest
    one (a log cleaned up to a checkpoint) the checkpoint's table properties hold, and None
    (unknown) until a `metaData` action says when there is no such checkpoint."""
    log = fsmod.join(delta_path, "_delta_log")
    entries = filesystem.list(log)
    commits = sorted((e for e in entries if _log._LOG_FILE.match(e.name)), key=lambda e: e.name)
    if not commits:
        return {}
    first = int(commits[0].name.split(".")[0])
    enabled: bool | None = False
    if first > 0:
        enabled = None
        for entry in entries:
            match = _log._CHECKPOINT.match(entry.name)
            if match and int(match.group(1)) == first - 1:
                try:
                    metadata = _log._metadata_in_checkpoint(filesystem, entry)
                except Exception:  # noqa: BLE001 - a partial/corrupt checkpoint: unknown
                    continue
                if metadata is not None:
                    enabled = _feed_on(metadata)
                    break
    versions: dict[int, bool | None] = {}
    for entry in commits:
        for line in filesystem.read_bytes(entry.path).decode("utf-8").splitlines():
            if '"metaData"' in line:
                enabled = _feed_on(_log._metadata_action(line))
        versions[int(entry.name.split(".")[0])] = enabled
    return versions


def _feed_on(metadata: dict[str, Any]) -> bool:
    value = (metadata.get("configuration") or {}).get(CHANGE_DATA_FEED_PROPERTY)
    return str(value).strip().lower() == "true"
