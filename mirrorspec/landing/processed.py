"""A table folder's data files and its `_ProcessedFiles/`, JVM-free: the engine moves applied
files there after each commit (`move_to_processed`, recording each name in its ledger first) and
purges them after the retention (`purge_processed`, only names it moved itself); the runner moves
them back on `--full-refresh`; `applied_files` says which files each commit applied."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.base.faults import crash_point
from mirrorspec.base.files import Entry, Files, FileSystem, join, outside_root
from mirrorspec.landing.layout import LandingFile, file_stats, same_version, time_order_key
from mirrorspec.progress.mirror import (MirrorRecord, copied_records, engine_commits,
                                        log_versions)


def ledger_path(landing_path: str) -> str:
    """The engine's ledger of the names it moved into `_ProcessedFiles/`."""
    return join(landing_path, mirroring.PROCESSED_LEDGER_FILE)


def move_to_processed(fs: FileSystem, landing_path: str, files: list[LandingFile],
                      unique_id: str) -> None:
    """Move applied files into `_ProcessedFiles/` (after their commit), keeping their names.

    A file whose size, time or ETag differ from its listing is not the file that was applied:
    a publisher deleted the folder and re-uploaded it from file 1 while the pass ran (or wrote
    the file again in place). It stays where it is, for the next pass to find the recreated
    folder (or warn about the rewrite)."""
    now = {e.name: e for e in fs.list(landing_path)}
    files = [f for f in files if f.name not in now or same_version(now[f.name], file_stats(f))]
    if not files:
        return
    processed = join(landing_path, mirroring.PROCESSED_FOLDER)
    # Recorded before the moves: the purge deletes only names the engine moved itself.
    fs.append_lines(ledger_path(landing_path), [f.name for f in files])
    for index, file in enumerate(files):
        try:
            fs.rename(file.path, join(processed, file.name))
        except OSError:
            if fs.exists(file.path):
                raise
            continue  # another process moved it already
        if index == 0:
            crash_point("during_moves", unique_id)


def purge_processed(fs: FileSystem, landing_path: str, retention_days: float,
                    now: float | None = None) -> None:
    """Delete from `_ProcessedFiles` the files past the retention that the engine moved there
    itself (names in its ledger); never another entry, never through a link."""
    ledger = ledger_path(landing_path)
    if not fs.exists(ledger):
        return
    recorded = {n for n in fs.read_text(ledger).splitlines() if n}
    processed = join(landing_path, mirroring.PROCESSED_FOLDER)
    limit = (time.time() if now is None else now) - retention_days * 86400
    present = set()
    for entry in fs.list(processed):
        if entry.name not in recorded or not fs.is_plain_file(entry.path):
            continue
        if entry.mtime < limit:
            fs.delete(entry.path)
        else:
            present.add(entry.name)
    pending = {e.name for e in fs.list(landing_path)}
    keep = recorded & (present | pending)  # a name moved back (full refresh) stays known
    if keep != recorded:
        fs.write_text(ledger, "".join(f"{n}\n" for n in sorted(keep)))


class LandingFiles(Files):
    """The filesystem layer (`files.Files`) plus what the runner does to landing folders."""

    def data_files(self, folder: str) -> list[str]:
        return sorted(e.name for e in self.fs(folder).list(folder)
                      if not e.is_dir and not mirroring.is_reserved_name(e.name))

    def has_data(self, folder: str) -> bool:
        """Data files in the folder or in its `_ProcessedFiles/`."""
        processed = self.join(folder, mirroring.PROCESSED_FOLDER)
        return bool(self.data_files(folder) or self.data_files(processed))

    def restore_processed(self, folder: str) -> int:
        """Move `_ProcessedFiles/*` back into the table folder (a name already there wins),
        keeping modification times: LastUpdateTimeFileDetection orders by them."""
        processed = self.join(folder, mirroring.PROCESSED_FOLDER)
        filesystem = self.fs(folder)
        real = outside_root(processed, folder)
        if real is not None:
            raise LandingZoneError(
                f"a symlink leads to {real}, outside the table folder; nothing is moved back "
                "through it", file=processed, code="LinkOutsideRoot",
                hint="replace the link with the folder itself")
        present = {e.name for e in filesystem.list(folder)}
        moved = 0
        for entry in sorted(filesystem.list(processed), key=lambda e: e.name):
            if entry.is_dir or entry.name in present:
                continue
            filesystem.rename(entry.path, self.join(folder, entry.name), mtime=entry.mtime)
            moved += 1
        return moved


@dataclass
class AppliedFiles:
    """The landing files the engine applied to a Delta table, in the order it applied them."""

    files: list[LandingFile] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # applied, but no longer in the landing zone
    mode: str = "sequence"  # or "time" (LastUpdateTimeFileDetection)
    from_log: bool = True  # False: rebuilt from the latest progress (older commits cleaned up)
    record: MirrorRecord | None = None  # the latest engine record


def applied_files(landing_fs: FileSystem, warehouse_fs: FileSystem, delta_path: str,
                  landing_path: str, metadata: mirroring.TableMetadata | None = None) -> AppliedFiles:
    """Which landing files the engine's commits applied, oldest first, found in the table
    folder or its `_ProcessedFiles/`: the one reader that data tests, replay and history share.

    With the whole Delta log, each commit's recorded `files`. Once Delta's log cleanup has
    removed the first commits, the latest progress record (a JSON commit, or the state copy
    every mirror commit writes) still says how far the engine got: every 20-digit file up to
    its sequence, or every file up to its (mtime, name) watermark under
    LastUpdateTimeFileDetection (with the files in `_ProcessedFiles/` first, in the order the
    engine moved them) — files are applied in that order and never skipped.
    """
    processed_folder = join(landing_path, mirroring.PROCESSED_FOLDER)
    where: dict[str, Entry] = {}
    moved: set[str] = set()  # names in _ProcessedFiles/ (they win over the folder's)
    for folder in (processed_folder, landing_path):
        for entry in landing_fs.list(folder):
            if not entry.is_dir and entry.name not in where:
                where[entry.name] = entry
                if folder == processed_folder:
                    moved.add(entry.name)
    extension = metadata.file_extension if metadata is not None else None

    def landing_file(entry: Entry) -> LandingFile:
        return LandingFile(entry.name, entry.path, entry.size, entry.mtime,
                           mirroring.data_file_format(entry.name, extension) or "parquet",
                           mirroring.parse_sequence(entry.name))

    commits = list(engine_commits(warehouse_fs, delta_path, newest_first=False))
    versions = log_versions(warehouse_fs, delta_path)
    result = AppliedFiles()
    if versions and versions[0] == 0:
        for _, record, _ in commits:
            result.record = record
            for name in record.files:
                found = where.get(str(name))
                if found is None:
                    result.missing.append(str(name))
                else:
                    result.files.append(landing_file(found))
        if result.record is not None:
            result.mode = result.record.mode
        return result
    latest = [record for _, record, _ in commits] + copied_records(warehouse_fs, delta_path)
    if not latest:
        return result
    record = max(latest, key=lambda r: r.txn_version)
    result.record, result.from_log, result.mode = record, False, record.mode
    data = [landing_file(e) for e in where.values()
            if mirroring.data_file_format(e.name, extension) is not None]
    if result.mode == "time":
        # Every file in _ProcessedFiles/ was applied, and moved there right after its batch's
        # commit, in the order applied (the move stamps the time); the files still in the folder
        # were applied up to the watermark.
        mark = tuple(record.watermark or (0, ""))
        watermark = (float(mark[0]), str(mark[1]))
        result.files = (sorted((f for f in data if f.name in moved), key=time_order_key)
                        + sorted((f for f in data if f.name not in moved
                                  and time_order_key(f) <= watermark), key=time_order_key))
        return result
    last = int(record.sequence or 0)
    numbered = {f.sequence: f for f in data if f.sequence is not None and 0 < f.sequence <= last}
    result.files = [numbered[s] for s in sorted(numbered)]
    result.missing = [f"{s:020d}.*" for s in range(1, last + 1) if s not in numbered]
    return result
