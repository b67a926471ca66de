"""Publisher conformance: what real Fabric would punish, noticed per request.

Each finding is logged when it happens and kept for the JSON report (`serve --report FILE`,
rewritten atomically on every finding and at stop) so a publisher's CI can fail on it.
Kinds (docs/onelake.md "Conformance findings"):

- `zero-byte-visible`: a data file was visible under its final name with 0 bytes (create before
  flush); Fabric may read it in that window and stop the table.
- `not-sequence-name`: a data file whose name is not a 20-digit sequence number.
- `sequence-gap`: a 20-digit name that is not the table's next number (the table waits for it).
- `before-processed`: a sequence at or below one already processed: it is never applied.
- `key-columns-changed`: a `_metadata.json` rewritten with other keyColumns.
- `rename-source-not-found`: a rename whose source does not exist, with the client bug it matches.
- `item-type`: an item addressed as `.MirroredDatabase` (real OneLake paths use
  `.MountedRelationalDatabase`).
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from mirrorspec import mirroring
from mirrorspec.errors import LandingZoneError
from mirrorspec.serve.names import Place


@dataclass(frozen=True)
class Finding:
    kind: str
    severity: str  # "error": Fabric stops or skips; "warning": risky or waits
    path: str
    message: str
    at: str


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _key_columns(path: Path) -> tuple[str, ...] | None:
    """The keyColumns of a `_metadata.json`; None when it is missing, empty (being rewritten)
    or invalid (the engine reports that itself)."""
    try:
        text = path.read_text(encoding="utf-8")
        if not text.strip():
            return None
        return mirroring.parse_metadata_text(text, str(path)).key_columns
    except (OSError, UnicodeDecodeError, LandingZoneError):
        return None


class Conformance:
    """Collects findings; `log(severity, message, **fields)` prints each one as it happens."""

    def __init__(self, landing: Path, report: Path | None,
                 log: Callable[..., None], item: dict | None = None):
        self.landing = landing
        self.report = report
        self.item = item  # the mirrored database the report is about (serve --root's others)
        self.log = log
        self.findings: list[Finding] = []
        self.requests = 0
        self._visible_empty: dict[tuple[str, ...], float] = {}
        self._keys: dict[tuple[str, ...], tuple[str, ...] | None] = {}
        self._lock = threading.Lock()
        self._item_types_seen: set[str] = set()
        self.write_report()

    def add(self, kind: str, severity: str, path: str, message: str) -> None:
        finding = Finding(kind, severity, path, message, _now())
        with self._lock:
            self.findings.append(finding)
        self.log(severity, f"conformance {kind}: {path}: {message}", finding=asdict(finding))
        self.write_report()

    # --- hooks the handlers call ----------------------------------------------------------
    def item_segment(self, item: str) -> None:
        suffix = item.rpartition(".")[2].lower() if "." in item else ""
        if suffix == "mirroreddatabase" and item not in self._item_types_seen:
            self._item_types_seen.add(item)
            self.add("item-type", "warning", item, "real OneLake paths name a mirrored database "
                     "`<name>.MountedRelationalDatabase`; `.MirroredDatabase` did not resolve there")

    def created(self, place: Place, visible: bool) -> None:
        """A file was created (0 bytes, uncommitted)."""
        if visible and self._data_file(place):
            self._visible_empty[place.rel] = time.monotonic()

    def before_publish(self, place: Place) -> None:
        """Remember the keyColumns a `_metadata.json` has before it is created (truncated) or
        replaced; the first call of an upload wins."""
        if place.area == "landing" and place.rel and place.rel[-1] == mirroring.METADATA_FILE:
            keys = _key_columns(self.landing.joinpath(*place.rel))
            if self._keys.get(place.rel) is None:
                self._keys[place.rel] = keys

    def published(self, place: Place, size: int) -> None:
        """A file got its final content under `place` (flush, Put Blob/Block List, rename)."""
        if place.area != "landing" or not place.rel:
            return
        started = self._visible_empty.pop(place.rel, None)
        if started is not None:
            seconds = time.monotonic() - started
            self.add("zero-byte-visible", "error", place.ws_path,
                     f"visible with 0 bytes for {seconds:.3f} s before its flush; Fabric may read "
                     "it in that window and stop the table ('Parquet file size is 0 bytes'). "
                     "Upload to a `_`-prefixed temporary name, then rename it")
        if place.rel[-1] == mirroring.METADATA_FILE:
            self._metadata(place)
        elif self._data_file(place):
            self._sequence(place)

    def rename_source_missing(self, source_segments: list[str], dest: Place, raw: str) -> None:
        """A rename answered SourcePathNotFound: say which known client bug it matches."""
        source_name = source_segments[-1] if source_segments else ""
        if source_segments and source_segments[0] == "LandingZone":
            hint = ("the source is `/LandingZone/...`: the Azure SDK's rename_file through an "
                    "account URL ending in `/<workspace>/<item>/Files` drops that prefix (the "
                    "known fabric-toolbox OpenMirroringPythonSDK case); use the account URL "
                    "`https://<host>/onelake` with file_system=<workspace>")
        elif dest.rel and dest.rel[-1].startswith("_") and not source_name.startswith("_"):
            hint = ("the destination is the `_` temporary name and the source the final name: "
                    "the arguments are swapped (the debezium-fabric-mirror@1f22d4e case); call "
                    "rename_file on the temporary file's client with the final name")
        else:
            hint = "the source path does not exist (was it uploaded, or already moved?)"
        self.add("rename-source-not-found", "error", dest.ws_path,
                 f"x-ms-rename-source {raw!r} does not exist: {hint}")

    # --- checks ------------------------------------------------------------------------------
    def _data_file(self, place: Place) -> bool:
        return (place.area == "landing" and len(place.rel) >= 2
                and mirroring.data_file_format(place.rel[-1]) is not None
                and not any(mirroring.is_reserved_name(p) for p in place.rel[:-1]))

    def _metadata(self, place: Place) -> None:
        before = self._keys.pop(place.rel, None)
        after = _key_columns(self.landing.joinpath(*place.rel))
        if before is not None and after is not None and before != after:
            self.add("key-columns-changed", "error", place.ws_path,
                     f"keyColumns changed from {list(before)} to {list(after)}: Fabric does not "
                     "re-key a table; delete and recreate the table folder instead")

    def _sequence(self, place: Place) -> None:
        folder = self.landing.joinpath(*place.rel[:-1])
        name = place.rel[-1]
        metadata = folder / mirroring.METADATA_FILE
        if metadata.exists():
            try:
                parsed = mirroring.parse_metadata_text(metadata.read_text(encoding="utf-8"),
                                                       str(metadata))
                if parsed.last_update_time_detection:
                    return
            except (OSError, UnicodeDecodeError, LandingZoneError):
                pass  # the engine reports a bad _metadata.json itself
        sequence = mirroring.parse_sequence(name)
        if sequence is None:
            self.add("not-sequence-name", "warning", place.ws_path,
                     "not a 20-digit sequence name (e.g. 00000000000000000001.parquet): Fabric "
                     "applies such a file only under LastUpdateTimeFileDetection")
            return
        processed = _sequences(folder / mirroring.PROCESSED_FOLDER)
        others = _sequences(folder) - {sequence}
        applied = max(processed, default=0)
        if sequence <= applied:
            self.add("before-processed", "error", place.ws_path,
                     f"sequence {sequence} but the table already processed {applied}: "
                     "it is never applied")
            return
        expected = max(others | processed, default=0) + 1
        if sequence > expected:
            self.add("sequence-gap", "warning", place.ws_path,
                     f"the table's next file is {mirroring.sequence_file_name(expected)}: "
                     "the table waits for it before applying this one")

    # --- report ------------------------------------------------------------------------------
    def summary(self) -> dict:
        with self._lock:
            findings = [asdict(f) for f in self.findings]
        counts: dict[str, int] = {}
        for f in findings:
            counts[f["kind"]] = counts.get(f["kind"], 0) + 1
        item = {"item": self.item} if self.item is not None else {}
        return {**item, "requests": self.requests,
                "errors": sum(f["severity"] == "error" for f in findings),
                "warnings": sum(f["severity"] == "warning" for f in findings),
                "counts": counts, "findings": findings}

    def write_report(self) -> None:
        if self.report is None:
            return
        text = json.dumps(self.summary(), indent=2) + "\n"
        temp = self.report.with_name(f".{self.report.name}.{threading.get_ident()}.tmp")
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, self.report)


def _sequences(folder: Path) -> set[int]:
    try:
        names = os.listdir(folder)
    except OSError:
        return set()
    return {s for s in (mirroring.parse_sequence(n) for n in names) if s is not None}
