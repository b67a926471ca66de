"""Reading a landing zone's layout: its tables, their `_metadata.json` and their pending files.

Nothing here reads data; it lists folders and decides which files a run applies, in which order.
The rules themselves (names, markers, metadata keys) come from `mirrorspec.openmirroring.mirroring`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.base import files as fsmod

if TYPE_CHECKING:
    from mirrorspec.progress.mirror import MirrorRecord

FOLDER_ID_FILE = "_mirrorspec_folder_id"


@dataclass(frozen=True)
class TableFolder:
    """A table found in the landing zone."""

    schema: str | None
    name: str
    path: str


@dataclass(frozen=True)
class LandingFile:
    """A data file of a table folder."""

    name: str
    path: str
    size: int
    mtime: float
    format: str              # "parquet" or "csv"
    sequence: int | None     # for 20-digit names
    etag: str | None = None  # an object store's version tag, when the listing gives one


@dataclass
class FolderListing:
    """What a table folder holds right now."""

    files: list[LandingFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    folder_id: str | None = None


@dataclass
class Pending:
    """The files a run applies (in order), and what blocks the ones after."""

    files: list[LandingFile]
    awaiting: str | None = None          # 20-digit name a gap waits for
    applied_present: list[LandingFile] = field(default_factory=list)  # applied, still in place


def _holds_table(filesystem, path: str) -> bool:
    for entry in filesystem.list(path):
        if entry.is_dir:
            continue
        if entry.name.lower() == mirroring.METADATA_FILE.lower():
            return True
        if mirroring.data_file_format(entry.name) is not None:
            return True
    return False


def discover(filesystem, landing_zone: str) -> list[TableFolder]:
    """Tables of a landing zone: root folders and `<schema>.schema/<table>` folders that hold
    `_metadata.json` or data files. Names starting with `_` are never tables."""
    tables: list[TableFolder] = []
    for entry in sorted(filesystem.list(landing_zone), key=lambda e: e.name):
        if not entry.is_dir or mirroring.is_reserved_name(entry.name):
            continue
        schema = mirroring.schema_from_folder(entry.name)
        if schema is not None:
            for sub in sorted(filesystem.list(entry.path), key=lambda e: e.name):
                if sub.is_dir and not mirroring.is_reserved_name(sub.name) \
                        and _holds_table(filesystem, sub.path):
                    tables.append(TableFolder(schema, sub.name, sub.path))
        elif _holds_table(filesystem, entry.path):
            tables.append(TableFolder(None, entry.name, entry.path))
    return tables


def hidden_folders(filesystem, landing_zone: str) -> list[str]:
    """Warnings for the dot-folders of a landing zone and its schema folders: never tables."""
    warnings = []
    for entry in sorted(filesystem.list(landing_zone), key=lambda e: e.name):
        if not entry.is_dir:
            continue
        if entry.name.startswith("."):
            warnings.append(_hidden_warning(entry.path))
        elif mirroring.schema_from_folder(entry.name) is not None:
            warnings.extend(_hidden_warning(sub.path) for sub in filesystem.list(entry.path)
                            if sub.is_dir and sub.name.startswith("."))
    return warnings


def _hidden_warning(path: str) -> str:
    return f"{path}: hidden folder (name starts with '.') ignored; it is never mirrored"


def _metadata_entry(filesystem, folder: str):
    for entry in filesystem.list(folder):
        if not entry.is_dir and entry.name.lower() == mirroring.METADATA_FILE.lower():
            return entry
    return None


def read_metadata(filesystem, folder: str) -> mirroring.TableMetadata:
    """The folder's `_metadata.json` (file name and keys case-insensitive); a folder without one
    is insert-only and keyless (`present=False`). Raises LandingZoneError when it is invalid."""
    entry = _metadata_entry(filesystem, folder)
    if entry is None:
        return mirroring.TableMetadata(present=False)
    try:
        text = filesystem.read_bytes(entry.path).decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LandingZoneError(f"_metadata.json is not UTF-8 text ({exc.reason})",
                               file=entry.path, code="InvalidMetadata") from None
    return mirroring.parse_metadata_text(text, entry.path)


def read_partner_events(filesystem, landing_zone: str) -> dict | None:
    """The landing zone's `_partnerEvents.json`, or None. Raises LandingZoneError if invalid."""
    path = fsmod.join(landing_zone, mirroring.PARTNER_EVENTS_FILE)
    if not filesystem.exists(path):
        return None
    try:
        data = json.loads(filesystem.read_bytes(path).decode("utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise LandingZoneError(f"invalid JSON: {exc}", file=path,
                               code="InvalidPartnerEvents") from exc
    if not isinstance(data, dict):
        raise LandingZoneError("_partnerEvents.json must hold a JSON object", file=path,
                               code="InvalidPartnerEvents")
    return data


def list_folder(filesystem, folder: str, metadata: mirroring.TableMetadata) -> FolderListing:
    """Data files of a table folder, its identity token and warnings about other files."""
    listing = FolderListing()
    for entry in filesystem.list(folder):
        if entry.name == FOLDER_ID_FILE and not entry.is_dir:
            try:
                listing.folder_id = filesystem.read_bytes(entry.path).decode().strip() or None
            except OSError:
                listing.folder_id = None
            continue
        if entry.is_dir and entry.name.startswith("."):
            listing.warnings.append(_hidden_warning(entry.path))
            continue
        if mirroring.is_reserved_name(entry.name):
            continue
        if entry.is_dir:
            listing.warnings.append(f"{entry.path}: folder ignored (tables don't nest)")
            continue
        fmt = mirroring.data_file_format(entry.name, metadata.file_extension)
        if fmt is None:
            listing.warnings.append(f"{entry.path}: not a data file (.parquet, .csv"
                                    + (f", .{metadata.file_extension}" if metadata.file_extension
                                       else "") + "); ignored")
            continue
        listing.files.append(LandingFile(entry.name, entry.path, entry.size, entry.mtime, fmt,
                                         mirroring.parse_sequence(entry.name),
                                         getattr(entry, "etag", None)))
    return listing


def folder_signature(filesystem, folder: str) -> tuple:
    """What a table folder holds (names, sizes, modification times), to tell whether it
    changed between two passes without reading any file."""
    return tuple(sorted((e.name, e.size, e.mtime) for e in filesystem.list(folder)))


def pending_by_sequence(listing: FolderListing, applied: int) -> Pending:
    """Files continuing the 20-digit sequence after `applied` (0: nothing applied yet, so the
    first file is 1). A gap blocks every later file; `awaiting` names the missing file."""
    numbered: dict[int, LandingFile] = {}
    for file in listing.files:
        if file.sequence is None:
            listing.warnings.append(f"{file.path}: not a 20-digit sequence name; ignored "
                                    "(set fileDetectionStrategy to LastUpdateTimeFileDetection "
                                    "for other names)")
            continue
        if file.sequence in numbered:
            raise LandingZoneError(
                f"two files carry sequence {file.sequence}: {numbered[file.sequence].name} and "
                f"{file.name}", file=file.path, code="DuplicateSequence",
                hint="remove one of them; the table resumes on the next run")
        numbered[file.sequence] = file
    applied_present = sorted((f for s, f in numbered.items() if s <= applied),
                             key=lambda f: f.sequence)
    later = sorted(s for s in numbered if s > applied)
    pending: list[LandingFile] = []
    expected = applied + 1
    for sequence in later:
        if sequence != expected:
            break
        pending.append(numbered[sequence])
        expected += 1
    awaiting = None
    if later and later[-1] >= expected:
        extension = numbered[later[-1]].name.split(".", 1)[1]
        awaiting = mirroring.sequence_file_name(expected, extension)
    return Pending(pending, awaiting, applied_present)


def time_order_key(file: LandingFile) -> tuple[float, str]:
    """LastUpdateTimeFileDetection order: modification time, then name."""
    return (file.mtime, file.name)


def pending_by_time(listing: FolderListing, done: set[str]) -> Pending:
    """Files not applied yet (`done`: names applied and possibly still in place), in mtime then
    name order."""
    applied_present = sorted((f for f in listing.files if f.name in done), key=time_order_key)
    pending = sorted((f for f in listing.files if f.name not in done), key=time_order_key)
    return Pending(pending, None, applied_present)


# --- a file's identity over time: written once, never changed ---------------------------------

def file_stats(file) -> list:
    """What identifies one version of a listed file: [size, mtime in ms] (+ ETag when known),
    recorded in the commit that applies it."""
    stats = [int(file.size), int(round(file.mtime * 1000))]
    etag = getattr(file, "etag", None)
    return stats + [etag] if etag else stats


def same_version(file, recorded) -> bool:
    """Whether `file` (a LandingFile or a listing entry) is the version `recorded` by
    `file_stats` (an ETag is compared only when both sides have one)."""
    now = file_stats(file)
    return now[:2] == list(recorded[:2]) and (len(now) < 3 or len(recorded) < 3
                                              or now[2] == recorded[2])


def unsettled(files: list[LandingFile], settle_seconds: float, now: float) -> int | None:
    """The index of the first of `files` modified less than `settle_seconds` before `now`
    (it and every later file wait for a later pass), or None."""
    if settle_seconds <= 0:
        return None
    for index, file in enumerate(files):
        if now - file.mtime < settle_seconds:
            return index
    return None


def not_applied_as_placed(applied_present: list[LandingFile], applied: int | None,
                          record: MirrorRecord | None) -> list[tuple[LandingFile, str, str]]:
    """Files at or before the table's progress that were never applied as they are now, as
    (file, kind, what the producer must do): kind "late" for a 20-digit name at or before the
    last applied sequence `applied` (sequence 0 included) that no commit applied, "changed"
    for an applied name whose size, time or ETag changed since (`applied` None:
    LastUpdateTimeFileDetection, only "changed"). `record` is the engine's latest record;
    without one (`lint` with no warehouse) the last applied file is the one kept in place."""
    if record is not None:
        known = record.done
    else:
        known = {f.name for f in applied_present if applied and f.sequence == applied}
    recorded = record.stats if record is not None else {}
    found = []
    for file in applied_present:
        if file.name in known:
            if file.name in recorded and not same_version(file, recorded[file.name]):
                found.append((file, "changed", mirroring.changed_file_problem(applied=True)))
        elif applied is not None:
            problem = mirroring.late_file_problem(file.name, file.sequence, applied)
            if problem:
                found.append((file, "late", problem))
    return found
