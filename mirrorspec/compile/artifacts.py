"""Writing compile artifacts into the target folder: atomic, byte-stable, no stale leftovers."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, cast

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.errors import MirrorspecError

PLAN_FILE = "plan.json"
LANDING_FOLDER = "landing_zone"


def write_artifacts(target: Path, files: dict[str, str], project_name: str | None = None
                    ) -> list[Path]:
    """Write `files` (relative path → text) under `target`; return the paths written.

    The target must be this project's: its plan.json (when there is one) is a plan of
    `project_name`, and without one no file compile would write exists there with other text.
    Files the previous compile wrote for tables that are gone are removed when they are unchanged
    since (their text is what that plan writes), so the target never shows a table the project no
    longer has and nobody else's file is deleted. Files whose text is unchanged are left alone.
    """
    try:
        return _write(target, files, project_name)
    except OSError as exc:
        raise MirrorspecError(f"cannot write {exc.filename or target}: {exc.strerror}",
                              hint="check the permissions of the target folder (target-path)") from None


def _write(target: Path, files: dict[str, str], project_name: str | None) -> list[Path]:
    previous = previous_files(target, project_name, files)
    target.mkdir(parents=True, exist_ok=True)
    _remove_stale(target, previous, set(files))
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


def read_text(path: Path) -> str | None:
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read()
    except (OSError, UnicodeDecodeError):
        return None


def _same_text(path: Path, text: str) -> bool:
    return read_text(path) == text


def own_plan(target: Path, project_name: str | None) -> dict[str, Any] | None:
    """The target's plan.json when it is a plan of `project_name` (any project's when None);
    None when there is none. Raises when it is another project's or not a mirrorspec plan:
    compile and clean touch no target holding one."""
    plan_path = target / PLAN_FILE
    text = read_text(plan_path)
    if text is None:
        if plan_path.exists():
            raise _foreign(plan_path, "can't be read as text")
        return None
    try:
        doc = json.loads(text)
        name = doc.get("project_name")
    except (ValueError, AttributeError):
        raise _foreign(plan_path, "is not a mirrorspec plan") from None
    if project_name is not None and name != project_name:
        raise _foreign(plan_path, f"is the plan of project {name!r}, not {project_name!r}")
    return cast("dict[str, Any]", doc)


def previous_files(target: Path, project_name: str | None, files: dict[str, str]
                    ) -> dict[str, object]:
    """The files the previous compile of this project wrote (relative path → the JSON object
    it wrote there); raises when the target holds another project's plan.json or files
    compile didn't write."""
    doc = own_plan(target, project_name)
    if doc is None:
        for relative in sorted(files):
            path = target / relative
            if path.exists() and not _same_text(path, files[relative]):
                raise _foreign(path, "exists and no plan.json says compile wrote it")
        return {}
    previous: dict[str, object] = {}
    for table in doc.get("tables") or []:
        try:
            folder = mirroring.table_folder(table["name"], table.get("schema"))
            previous[f"{LANDING_FOLDER}/{folder}/{mirroring.METADATA_FILE}"] = table["metadata"]
        except (KeyError, TypeError):
            continue
    if doc.get("partner_events") is not None:
        previous[f"{LANDING_FOLDER}/{mirroring.PARTNER_EVENTS_FILE}"] = doc["partner_events"]
    return previous


def _foreign(path: Path, why: str) -> MirrorspecError:
    return MirrorspecError(
        f"{path} {why}; mirrorspec won't overwrite or delete files it didn't write",
        hint="point target-path at a folder of its own (or empty this one)")


def _remove_stale(target: Path, previous: dict[str, object], keep: set[str]) -> None:
    """Remove the files the previous compile wrote that the current one doesn't, when their
    text is still what it wrote (a file changed or replaced since is someone else's)."""
    landing = (target / LANDING_FOLDER).resolve()
    for relative in sorted(set(previous) - keep):
        path = (target / relative).resolve()
        if landing not in path.parents:
            continue  # a hand-edited plan must not make compile delete outside target/landing_zone
        if path.is_symlink() or not _same_text(path, mirroring.dumps_json(previous[relative])):
            continue
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
