"""Publisher conformance: what real Fabric would punish, noticed per request.

Each finding is logged when it happens and kept in the JSON report (`serve --report FILE`) so a
publisher's CI can fail on it. The report is valid JSON after every write: the findings come
first, one a line, and each new one is written over the closing summary, which is written again
after it (a finding costs the same few hundred bytes however many came before); stop rewrites
the whole file atomically. Nothing here changes a client's answer: a check that fails or a
report that can't be written is a warning in the log, once.
Kinds (docs/onelake.md "Conformance findings"):

- `zero-byte-visible`: a data file was visible under its final name with 0 bytes (create before
  flush); Fabric may read it in that window and stop the table.
- `empty-data-file`: a data file published with 0 bytes (an empty temporary file renamed, a
  0-byte Put Blob or flush): the engine stops the table on it, as Fabric does.
- `not-sequence-name`: a data file whose name is not a 20-digit sequence number.
- `sequence-gap`: a 20-digit name that is not the table's next number (the table waits for it).
- `before-processed`: a sequence at or below one already processed: it is never applied.
- `key-columns-changed`: a `_metadata.json` rewritten with other keyColumns (in place, or
  deleted and uploaded again; deleting the table folder first is the way to re-key).
- `rename-source-not-found`: a rename whose source does not exist, with the client bug it matches.
- `item-type`: an item addressed as `.MirroredDatabase` (real OneLake paths use
  `.MountedRelationalDatabase`).
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, TypeVar, cast

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.errors import LandingZoneError, MirrorspecError
from mirrorspec.security.redact import redact_text
from mirrorspec.serve.names import Place

_HEAD = b'{"findings": ['
Hook = TypeVar("Hook", bound=Callable[..., None])


def _never_fails(hook: Hook) -> Hook:
    """A hook the handlers call mid-request: its failure is a warning, never the answer."""
    @functools.wraps(hook)
    def guarded(self: "Conformance", *args: Any, **kwargs: Any) -> None:
        try:
            hook(self, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a check must not turn a done operation into a 500
            self.warn_once("check", f"a conformance check failed ({type(exc).__name__}: {exc}); "
                           "the request was answered as usual")
    return cast(Hook, guarded)


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
        """A report that can't be written now is a MirrorspecError (serve does not start)."""
        self.landing = landing
        self.report = report
        self.item = item  # the mirrored database the report is about (in its summary)
        self.log = log
        self.findings: list[Finding] = []
        self.requests = 0
        self._visible_empty: dict[tuple[str, ...], float] = {}
        self._keys: dict[tuple[str, ...], tuple[str, ...]] = {}  # last keyColumns seen per file
        self._lock = threading.Lock()
        self._item_types_seen: set[str] = set()
        self._warned: set[str] = set()
        self._counts: dict[str, int] = {}
        self._errors = 0
        self._fd: int | None = None  # the open report; None: rewrite it whole at the next write
        self._end = 0  # where the next finding goes (the summary follows it)
        if report is not None:
            try:
                self._rewrite()
            except OSError as exc:
                raise MirrorspecError(f"--report {report}: can't write it: {exc.strerror or exc}",
                                      hint="give a --report path in a folder you can write") from None

    def add(self, kind: str, severity: str, path: str, message: str) -> None:
        finding = Finding(kind, severity, redact_text(path), redact_text(message), _now())
        self.log(severity, f"conformance {kind}: {finding.path}: {finding.message}",
                 finding=asdict(finding))
        with self._lock:
            self.findings.append(finding)
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._errors += severity == "error"
            if self.report is not None:
                self._guard(lambda: self._write_finding(finding))

    def warn_once(self, what: str, message: str) -> None:
        """Log `message` the first time a `what` goes wrong."""
        if what not in self._warned:
            self._warned.add(what)
            self.log("warning", message)

    # --- hooks the handlers call ----------------------------------------------------------
    @_never_fails
    def item_segment(self, item: str) -> None:
        suffix = item.rpartition(".")[2].lower() if "." in item else ""
        if suffix == "mirroreddatabase" and item not in self._item_types_seen:
            self._item_types_seen.add(item)
            self.add("item-type", "warning", item, "real OneLake paths name a mirrored database "
                     "`<name>.MountedRelationalDatabase`; `.MirroredDatabase` did not resolve there")

    @_never_fails
    def created(self, place: Place, visible: bool) -> None:
        """A file was created (0 bytes, uncommitted)."""
        if visible and self._data_file(place):
            self._visible_empty[place.rel] = time.monotonic()

    @_never_fails
    def before_publish(self, place: Place) -> None:
        """Remember the keyColumns a `_metadata.json` has before it is created (truncated) or
        replaced (an empty or invalid file leaves what was known)."""
        if self._metadata_file(place):
            self._remember_keys(place)

    @_never_fails
    def before_delete(self, place: Place) -> None:
        """Before a delete: a `_metadata.json` deleted alone keeps its keyColumns (a re-key by
        delete and upload is still one); a deleted folder forgets the tables under it."""
        if place.area != "landing":
            return
        if self._metadata_file(place):
            self._remember_keys(place)
            return
        with self._lock:
            for rel in [r for r in self._keys if r[:len(place.rel)] == place.rel]:
                del self._keys[rel]

    def _metadata_file(self, place: Place) -> bool:
        return (place.area == "landing" and bool(place.rel)
                and place.rel[-1] == mirroring.METADATA_FILE)

    def _remember_keys(self, place: Place) -> None:
        keys = _key_columns(self.landing.joinpath(*place.rel))
        if keys is not None:
            with self._lock:
                self._keys[place.rel] = keys

    @_never_fails
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
            if size == 0:
                self.add("empty-data-file", "error", place.ws_path,
                         "published with 0 bytes: the engine stops the table on it, as Fabric "
                         "does ('Parquet file size is 0 bytes'); publish a file only once it "
                         "holds its data")
            self._sequence(place)

    @_never_fails
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
        after = _key_columns(self.landing.joinpath(*place.rel))
        if after is None:
            return
        with self._lock:
            before = self._keys.get(place.rel)
            self._keys[place.rel] = after
        if before is not None and before != after:
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
    def write_report(self) -> None:
        """The whole report, atomically (at stop); a failure is a warning."""
        if self.report is not None:
            with self._lock:
                self._guard(self._rewrite)

    def close(self) -> None:
        """The final report, then the file is let go."""
        self.write_report()
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _guard(self, write: Callable[[], None]) -> None:
        try:
            write()
        except OSError as exc:
            if self._fd is not None:
                os.close(self._fd)
            self._fd = None  # the file's state is unknown: rewrite it whole next time
            self.warn_once("report", f"can't write the conformance report {self.report}: "
                           f"{exc.strerror or exc}; findings are still logged, and the report "
                           "is written again at the next finding and at stop")

    def _write_finding(self, finding: Finding) -> None:
        if self._fd is None:
            self._rewrite()  # holds every finding, this one too
            return
        item = b",\n" if len(self.findings) > 1 else b"\n"
        item += json.dumps(asdict(finding)).encode()
        os.pwrite(self._fd, item + self._tail(), self._end)
        self._end += len(item)

    def _rewrite(self) -> None:
        """Every finding so far, written to a temporary file that replaces the report."""
        assert self.report is not None
        body = b",\n".join(json.dumps(asdict(f)).encode() for f in self.findings)
        head = _HEAD + (b"\n" + body if body else b"")
        temp = self.report.with_name(f".{self.report.name}.{os.getpid()}.tmp")
        temp.write_bytes(head + self._tail())
        os.replace(temp, self.report)
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._fd = os.open(self.report, os.O_WRONLY)
        self._end = len(head)

    def _tail(self) -> bytes:
        """The closing summary: counts by severity and kind, after the findings."""
        item = {"item": self.item} if self.item is not None else {}
        summary = {**item, "requests": self.requests, "errors": self._errors,
                   "warnings": len(self.findings) - self._errors, "counts": self._counts}
        return b"\n],\n" + json.dumps(summary).encode()[1:] + b"\n"


def _sequences(folder: Path) -> set[int]:
    try:
        names = os.listdir(folder)
    except OSError:
        return set()
    return {s for s in (mirroring.parse_sequence(n) for n in names) if s is not None}
