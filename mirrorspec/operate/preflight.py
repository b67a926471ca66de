"""Checks a command makes on its paths before it starts Spark (pure Python): a missing local
folder is said at once, not after a JVM start. URIs (s3a://, abfss://) are left to the
filesystem they need.

A project's landing zone that does not exist is new, or mistyped: `landing_zone: landing_zon`
would have `run` create an empty landing zone beside the real one and publish into it. When
the warehouse already holds the project's mirrored tables, the zone they came from should be
there, so `run` refuses (`require_planned_landing_zone`); a folder of a similar name that looks
like a landing zone is named as a did-you-mean (`compile` and `debug` say the same). A new
project's first run, with an empty warehouse, is not held up.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mirrorspec.base.errors import LandingZoneError, UsageError
from mirrorspec.base.suggest import suggest
from mirrorspec.openmirroring.mirroring import METADATA_FILE, PARTNER_EVENTS_FILE


def local_path(path: str | os.PathLike[str]) -> str | None:
    """The local path of `path` (`file:` URIs included), or None for a remote URI."""
    text = os.fspath(path)
    if text.startswith("file:"):
        return text[len("file:"):].replace("///", "/", 1) if text.startswith("file:///") \
            else text[len("file:"):]
    return None if "://" in text else text


def require_landing_zone(path: str | os.PathLike[str], option: str = "--landing-zone") -> None:
    """LandingZoneError (code LandingZoneNotFound) when a local landing zone is not a folder."""
    local = local_path(path)
    if local is not None and not os.path.isdir(local):
        raise LandingZoneError("the landing zone folder does not exist", file=os.fspath(path),
                               code="LandingZoneNotFound",
                               hint=f"check {option}; nothing was started, dropped or applied")


def require_folder(path: str | os.PathLike[str], option: str, what: str) -> None:
    """UsageError when a local folder an option names is not there."""
    local = local_path(path)
    if local is not None and not os.path.isdir(local):
        raise UsageError(f"{option} {os.fspath(path)}: no such folder ({what})",
                         hint=f"check {option}")


@dataclass(frozen=True)
class MissingLandingZone:
    """A plan's local landing zone that is not there, and what says it should be."""

    path: str
    warehouse: str
    target: str
    suggestion: str  # " (did you mean 'landing_zone'?)" or ""
    mirrored: tuple[str, ...]  # the plan's tables that already have a Delta table

    @property
    def refused(self) -> bool:
        """True when `run` must not create it: the warehouse already mirrors from a zone."""
        return bool(self.mirrored)

    def message(self, with_path: bool = True) -> str:
        """What is wrong, in one line (`with_path=False`: for an error located at the path)."""
        zone = f"the landing zone {self.path}" if with_path else "the landing zone"
        if not self.mirrored:
            return f"{zone} does not exist yet{self.suggestion}"
        shown = ", ".join(self.mirrored[:3]) + (f" and {len(self.mirrored) - 3} more"
                                                if len(self.mirrored) > 3 else "")
        return (f"{zone} does not exist, but the warehouse "
                f"{self.warehouse} already holds {len(self.mirrored)} mirrored table(s) of "
                f"this project ({shown}){self.suggestion}")

    def hint(self) -> str:
        """What to do about it."""
        fix = f"check landing_zone of output '{self.target}' in profiles.yml"
        if not self.mirrored:
            return f"{fix}; the first `run` creates the folder"
        return (f"{fix}; to start a new landing zone for these tables on purpose, create the "
                f"folder first (mkdir -p {self.path}); nothing was published or mirrored")


def missing_landing_zone(plan: Any) -> MissingLandingZone | None:
    """The plan's landing zone when it is a local folder that does not exist, with a folder of a
    similar name beside it that holds a landing zone, and the plan's tables already in a local
    warehouse; None when it exists or is a URI."""
    path = local_path(plan.landing_zone)
    if path is None or os.path.isdir(path):
        return None
    parent, name = os.path.split(os.path.abspath(path))
    try:
        siblings = sorted(e.name for e in os.scandir(parent)
                          if e.is_dir() and _holds_landing_zone(e.path))
    except OSError:
        siblings = []
    mirrored = tuple(t.unique_id for t in plan.tables
                     if (delta := local_path(t.delta_path)) is not None
                     and os.path.isdir(os.path.join(delta, "_delta_log")))
    return MissingLandingZone(path, plan.warehouse, plan.target, suggest(name, siblings),
                              mirrored)


def require_planned_landing_zone(plan: Any, console: Any = None) -> None:
    """Before `run`/`publish`/`build` create anything: LandingZoneError (LandingZoneNotFound)
    when the landing zone is missing but the warehouse already mirrors the project's tables; a
    warning through `console` when it is missing and a similar folder looks like the one meant."""
    missing = missing_landing_zone(plan)
    if missing is None:
        return
    if missing.refused:
        raise LandingZoneError(missing.message(with_path=False), file=missing.path,
                               code="LandingZoneNotFound", hint=missing.hint())
    if missing.suggestion and console is not None:
        console.warning(f"{missing.message()}: this run creates it", landing_zone=missing.path)


def _holds_landing_zone(folder: str) -> bool:
    """True when `folder` looks like a landing zone: `_partnerEvents.json`, or a table folder
    (`T/` or `S.schema/T/`) with a `_metadata.json`."""
    if os.path.isfile(os.path.join(folder, PARTNER_EVENTS_FILE)):
        return True
    try:
        entries = [e for e in os.scandir(folder) if e.is_dir()]
    except OSError:
        return False
    for entry in entries[:200]:
        if os.path.isfile(os.path.join(entry.path, METADATA_FILE)):
            return True
        if entry.name.endswith(".schema"):
            try:
                if any(os.path.isfile(os.path.join(t.path, METADATA_FILE))
                       for t in os.scandir(entry.path) if t.is_dir()):
                    return True
            except OSError:
                continue
    return False
