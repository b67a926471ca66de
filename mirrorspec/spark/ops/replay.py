"""Replay a mirrored table from its own history: the landing files its commits applied, found in
`_ProcessedFiles/` (or still in the table folder), applied again in order by the same engine
into a scratch warehouse, then reconciled with the live table.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.errors import MirrorspecError
from mirrorspec.base import files as fsmod
from mirrorspec.landing.processed import applied_files
from mirrorspec.progress.mirror import copied_records, engine_commits

_COPY_CHUNK = 1 << 20  # bytes per read: a remote file comes through py4j in few calls


@dataclass
class History:
    """What a table's progress records say it applied."""

    files: list[str] = field(default_factory=list)   # names, in the order they were applied
    paths: list[str] = field(default_factory=list)   # where those files are now
    missing: list[str] = field(default_factory=list)  # applied, but gone (purged)
    mode: str = "sequence"
    landing_path: str | None = None
    keys: list[str] | None = None
    folder_id: str | None = None
    from_log: bool = True  # False: older commits were cleaned up (see landing.processed)


def read_history(delta_path: str, landing_path: str | None = None,
                 files: fsmod.Files | None = None) -> History:
    """Every landing file the engine applied, oldest first, looked up in `landing_path` (default:
    the folder the engine recorded) and its `_ProcessedFiles/`. Works after Delta's log cleanup
    too (`landing.processed.applied_files`). `files` serves the table and the landing folder
    (default: local files only; a URI raises `files.SessionNeeded`)."""
    files = files or fsmod.Files()
    filesystem = files.fs(delta_path)
    if not filesystem.is_dir(fsmod.join(delta_path, "_delta_log")):
        raise MirrorspecError(f"{delta_path} is not a Delta table")
    records = [record for _, record, _ in engine_commits(filesystem, delta_path,
                                                         newest_first=False)]
    records = records or copied_records(filesystem, delta_path)
    history = History()
    for record in records:
        history.mode = record.mode
        history.landing_path = record.landing_path or history.landing_path
        history.keys = record.keys if record.keys is not None else history.keys
        history.folder_id = record.folder_id or history.folder_id
    history.landing_path = landing_path or history.landing_path
    if history.landing_path and files.fs(history.landing_path).is_dir(history.landing_path):
        applied = applied_files(files.fs(history.landing_path), filesystem, delta_path,
                                history.landing_path)
        history.files = [f.name for f in applied.files]
        history.paths = [f.path for f in applied.files]
        history.missing = applied.missing
        history.from_log = applied.from_log
    return history


def pending_files(landing_path: str, applied: list[str],
                  filesystem: fsmod.FileSystem | None = None) -> list[str]:
    """Data files in the table folder that no commit applied yet (not replayed)."""
    done = set(applied)
    listing = (filesystem or fsmod.filesystem_for(landing_path)).list(landing_path)
    return sorted(e.name for e in listing
                  if not e.is_dir and mirroring.data_file_format(e.name) is not None
                  and e.name not in done)


def stage(landing_path: str, paths: list[str], scratch: str, schema: str | None,
          table: str, mode: str, filesystem: fsmod.FileSystem | None = None) -> str:
    """Copy `_metadata.json` and the applied files (read through `filesystem`, default local
    files) into a local scratch landing zone, laid out like the real one; in LastUpdateTime mode
    the copies get increasing modification times in the order they were applied. Returns the
    scratch landing zone."""
    source = filesystem or fsmod.filesystem_for(landing_path)
    landing = os.path.join(scratch, "landing")
    folder = os.path.join(landing, mirroring.table_folder(table, schema))
    os.makedirs(folder)
    metadata = fsmod.join(landing_path, mirroring.METADATA_FILE)
    if source.exists(metadata) and not source.is_dir(metadata):
        _copy(source, metadata, os.path.join(folder, mirroring.METADATA_FILE))
    for order, path in enumerate(paths):
        target = os.path.join(folder, os.path.basename(path))
        _copy(source, path, target)
        if mode == "time":
            os.utime(target, (1_000_000_000 + order, 1_000_000_000 + order))
    return landing


def _copy(source: fsmod.FileSystem, path: str, target: str) -> None:
    with source.open_stream(path) as reader, open(target, "wb") as writer:
        shutil.copyfileobj(reader, writer, _COPY_CHUNK)
