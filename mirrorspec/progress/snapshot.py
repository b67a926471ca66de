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
from mirrorspec.progress.mirror import log_versions, snapshot_metadata

_CHECKSUM_FILE = "{:020d}.crc"


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
