"""Writing compile artifacts into the target folder: atomic, byte-stable, no stale leftovers."""

from __future__ import annotations

import json
import os
from pathlib import Path

from mirrorspec import mirroring
from mirrorspec.errors import MirrorspecError

PLAN_FILE = "plan.json"
LANDING_FOLDER = "landing_zone"


def write_artifacts(target: Path, files: dict[str, str]) -> list[Path]:
    """Write `files` (relative path → text) under `target`; return the paths written.

    Files another compile wrote for tables that are gone (per the previous plan.json) are removed,
    so the target never shows a table the project no longer has. Files whose text is unchanged are
    left alone.
    """
    try:
        return _write(target, files)
    except OSError as exc:
        raise MirrorspecError(f"cannot write {exc.filename or target}: {exc.strerror}",
                              hint="check the permissions of the target folder (target-path)") from None


def _write(target: Path, files: dict[str, str]) -> list[Path]:
    target.mkdir(parents=True, exist_ok=True)
    _remove_stale(target, set(files))
    written = []
    made: set[Path] = set()
    for relative in sorted(files):
        path = target / relative
        parent = path.parent
        if parent not in made:
            parent.mkdir(parents=True, exist_ok=True)
            made.add(parent)
        text = files[relative]
        if _same_text(path, text):
            written.append(path)
            continue
        tmp = parent / f".{path.name}.{os.getpid()}.tmp"  # concurrent compiles don't collide
        with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, path)
        written.append(path)
    return written


def _same_text(path: Path, text: str) -> bool:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read() == text
    except (OSError, UnicodeDecodeError):
        return False


def _remove_stale(target: Path, keep: set[str]) -> None:
    """Remove the `_metadata.json`/`_partnerEvents.json` files an earlier compile wrote and the
    current one doesn't (only files named in the previous plan.json: nothing else is touched)."""
    try:
        previous = json.loads((target / PLAN_FILE).read_text(encoding="utf-8"))
        tables = previous.get("tables") or []
    except (OSError, ValueError, AttributeError):
        return
    stale = []
    for table in tables:
        try:
            folder = mirroring.table_folder(table["name"], table.get("schema"))
        except (KeyError, TypeError):
            continue
        relative = f"{LANDING_FOLDER}/{folder}/{mirroring.METADATA_FILE}"
        if relative not in keep:
            stale.append(relative)
    partner = f"{LANDING_FOLDER}/{mirroring.PARTNER_EVENTS_FILE}"
    if previous.get("partner_events") is not None and partner not in keep:
        stale.append(partner)
    landing = (target / LANDING_FOLDER).resolve()
    for relative in stale:
        path = (target / relative).resolve()
        if landing not in path.parents:
            continue  # a hand-edited plan must not make compile delete outside target/landing_zone
        try:
            path.unlink()
        except OSError:
            continue
        parent = path.parent
        while parent != landing and landing in parent.parents:
            try:
                parent.rmdir()  # only succeeds when empty
            except OSError:
                break
            parent = parent.parent
