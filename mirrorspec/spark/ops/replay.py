"""Replay a mirrored table from its own history: the landing files its commits applied, found in
`_ProcessedFiles/` (or still in the table folder), applied again in order by the same engine
into a scratch warehouse, then reconciled with the live table.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

from mirrorspec import mirroring
from mirrorspec.errors import MirrorspecError
from mirrorspec import files as fsmod
from mirrorspec.progress.mirror import engine_commits, log_versions


@dataclass
class History:
    """What a table's Delta log says it applied."""

    files: list[str] = field(default_factory=list)   # in the order they were applied
    mode: str = "sequence"
    landing_path: str | None = None
    keys: list[str] | None = None
    first_version: int | None = None
    folder_id: str | None = None


def read_history(delta_path: str) -> History:
    """Every landing file the engine's commits applied, oldest first (from the `_delta_log`
    JSON). Raises MirrorspecError when the log no longer starts at version 0."""
    filesystem = fsmod.LocalFS()
    if not os.path.isdir(os.path.join(delta_path, "_delta_log")):
        raise MirrorspecError(f"{delta_path} is not a Delta table")
    versions = log_versions(filesystem, delta_path)
    history = History(first_version=versions[0] if versions else None)
    if not versions or versions[0] != 0:
        raise MirrorspecError(
            f"the Delta log of {delta_path} starts at version {history.first_version}: older "
            "commits were cleaned up, so the history of applied files is incomplete",
            hint="replay needs the whole log (delta.logRetentionDuration)")
    for _, meta, _ in engine_commits(filesystem, delta_path, newest_first=False):
        history.files += list(meta.get("files") or [])
        history.mode = meta.get("mode", history.mode)
        history.landing_path = meta.get("landing_path", history.landing_path)
        history.keys = meta.get("keys", history.keys)
        history.folder_id = meta.get("folder_id", history.folder_id)
    return history


def find_files(landing_path: str, names: list[str]) -> tuple[list[str], list[str]]:
    """(paths found, names missing) of the applied files, looked for in `_ProcessedFiles/` and
    in the table folder."""
    found, missing = [], []
    for name in names:
        for folder in (os.path.join(landing_path, mirroring.PROCESSED_FOLDER), landing_path):
            path = os.path.join(folder, name)
            if os.path.isfile(path):
                found.append(path)
                break
        else:
            missing.append(name)
    return found, missing


def pending_files(landing_path: str, applied: list[str]) -> list[str]:
    """Data files in the table folder that no commit applied yet (not replayed)."""
    done = set(applied)
    return sorted(e.name for e in fsmod.LocalFS().list(landing_path)
                  if not e.is_dir and mirroring.data_file_format(e.name) is not None
                  and e.name not in done)


def stage(landing_path: str, paths: list[str], scratch: str, schema: str | None,
          table: str, mode: str) -> str:
    """Copy `_metadata.json` and the applied files into a scratch landing zone, laid out like the
    real one; in LastUpdateTime mode the copies get increasing modification times in the order
    they were applied. Returns the scratch landing zone."""
    landing = os.path.join(scratch, "landing")
    folder = os.path.join(landing, mirroring.table_folder(table, schema))
    os.makedirs(folder)
    metadata = os.path.join(landing_path, mirroring.METADATA_FILE)
    if os.path.isfile(metadata):
        shutil.copyfile(metadata, os.path.join(folder, mirroring.METADATA_FILE))
    for order, path in enumerate(paths):
        target = os.path.join(folder, os.path.basename(path))
        shutil.copyfile(path, target)
        if mode == "time":
            os.utime(target, (1_000_000_000 + order, 1_000_000_000 + order))
    return landing
