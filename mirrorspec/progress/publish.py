"""How far the publisher got: its state file per table (files and batches published, Kafka
offsets, the batch being written) and the Kafka staging folder. JSON, versioned by STATE_VERSION;
written by `spark.publish`, read by `status`/`show` and `run --full-refresh` without a JVM.

Feed paths inside the project are stored relative to it (`./feeds/orders/x.csv`), so a project
that is moved or copied keeps its state; in memory they are absolute, as the feed is listed.
URIs and paths outside the project stay as they are. A state written with absolute paths
(before this) is read as well: when its paths name the project's feed under another folder, the
project was moved, and they are read as if under the project's folder now.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.base.files import Files, join
from mirrorspec.artifacts.plan import Plan, TablePlan
from mirrorspec.sources.kafka import STAGING_FOLDER

STATE_VERSION = 1


def state_file(plan: Plan, table: TablePlan) -> str:
    """Where the publisher keeps what it published for `table`."""
    return join(plan.state_path, "publish", f"{table.unique_id}.json")


def new_state(table: TablePlan) -> dict[str, Any]:
    return {"version": STATE_VERSION, "unique_id": table.unique_id,
            "source_type": table.source.type, "files": {}, "batches": [], "held_back": [],
            "reader": {}, "pending": None}


def load_state(fs: Files, plan: Plan, table: TablePlan) -> dict[str, Any]:
    """The table's publisher state (a fresh one when there is none)."""
    path = state_file(plan, table)
    text = fs.read_text(path)
    if text is None:
        return new_state(table)
    try:
        state = json.loads(text)
    except json.JSONDecodeError as exc:
        raise MirrorspecError(f"{path}:{exc.lineno}: publisher state is not valid JSON ({exc.msg})",
                              hint="restore it, or delete it together with the landing folder "
                                   "and run with --full-refresh") from None
    if state.get("version") != STATE_VERSION:
        raise MirrorspecError(f"{path}: publisher state version {state.get('version')!r} is not "
                              f"supported (expects {STATE_VERSION})")
    base = new_state(table)
    base.update(_in_memory(state, plan, table))
    return base


def save_state(fs: Files, plan: Plan, table: TablePlan, state: dict[str, Any]) -> None:
    """Write the table's publisher state (atomically: `Files.write_text`), feed paths inside
    the project relative to it."""
    stored = _stored(state, plan)
    fs.write_text(state_file(plan, table), json.dumps(stored, indent=1, sort_keys=True) + "\n")


# --- feed files a producer writes again under the same name ----------------------------------------

STAMPS = "stamps"  # state key: {feed file: its stamp when published} (rewritable files only)
REWRITTEN = "rewritten"  # state key: the batch's files taken again because their stamp changed


def file_stamps(fs: Files, files: list[str]) -> dict[str, list[Any]]:
    """Each file's stamp: [size, modification time, the object store's version tag or None],
    one listing per folder; a file gone is left out."""
    folders: dict[str, dict[str, str]] = {}
    for file in files:
        folder, _, name = file.rstrip("/").rpartition("/")
        folders.setdefault(folder or "/", {})[name] = file
    stamps: dict[str, list[Any]] = {}
    for folder, names in folders.items():
        for entry in fs.fs(folder).list(folder):
            if entry.name in names and not entry.is_dir:
                stamps[names[entry.name]] = [entry.size, entry.mtime, entry.etag]
    return stamps


def rewritten_files(state: dict[str, Any], current: dict[str, list[Any]]) -> list[str]:
    """Published files whose stamp now differs from the one recorded when they were
    published (the producer wrote them again under their name), sorted."""
    recorded = state.get(STAMPS) or {}
    return sorted(file for file, stamp in current.items()
                  if file in recorded and list(recorded[file]) != list(stamp))


# --- feed paths relative to the project ---------------------------------------------------------

RELATIVE = "./"  # how a stored path relative to the project starts


def _project(plan: Plan) -> str | None:
    folder = plan.project_dir
    if not folder or "://" in folder or folder.startswith("file:"):
        return None
    return os.path.normpath(folder)


def _stored(state: Any, plan: Plan) -> Any:
    project = _project(plan)
    if project is None:
        return state
    prefix = project.rstrip("/") + "/"

    def store(text: str) -> str:
        return RELATIVE + text[len(prefix):] if text.startswith(prefix) else text
    return map_strings(state, store)


def _in_memory(state: Any, plan: Plan, table: TablePlan) -> Any:
    project = _project(plan)
    if project is None:
        return state
    moved_from = _moved_from(state, project, table)
    old = moved_from.rstrip("/") + "/" if moved_from else None

    def load(text: str) -> str:
        if text.startswith(RELATIVE):
            return os.path.join(project, text[len(RELATIVE):])
        if old is not None and text.startswith(old):
            return os.path.join(project, text[len(old):])
        return text
    return map_strings(state, load)


def _moved_from(state: Any, project: str, table: TablePlan) -> str | None:
    """The folder an absolute-path state's project was in, when it was somewhere else: found
    by the table's feed folder (relative to the project) inside a stored path."""
    source = table.source.path
    if not source or "://" in source or not source.startswith(project.rstrip("/") + "/"):
        return None
    feed = "/" + os.path.relpath(source, project).strip("/") + "/"
    found: list[str] = []

    def look(text: str) -> str:
        if not found and text.startswith("/") and not text.startswith(project + "/"):
            index = text.find(feed)
            if index > 0:
                found.append(text[:index])
        return text
    map_strings(state, look)
    return found[0] if found else None


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """`value` with every string in it (dict keys too) passed through `change`."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {change(k) if isinstance(k, str) else k: map_strings(v, change)
                for k, v in value.items()}
    if isinstance(value, list):
        return [map_strings(v, change) for v in value]
    return value


def staging_folder(plan: Plan, table: TablePlan) -> str:
    """Where `table`'s fetched messages wait to be published."""
    return "/".join([plan.state_path.rstrip("/"), STAGING_FOLDER, table.unique_id])


def kafka_offset_rows(plan: Plan) -> list[list[Any]]:
    """Per Kafka table and partition: the next offset to read, the end offset and the lag at
    the last fetch, from the publisher state (pure Python; local state folders only)."""
    from pathlib import Path

    from mirrorspec.sources.kafka import lag_rows

    rows = []
    for table in plan.tables:
        if not table.source.kafka:
            continue
        path = Path(state_file(plan, table).removeprefix("file:"))
        if "://" in plan.state_path or not path.is_file():
            continue
        try:
            kafka = json.loads(path.read_text(encoding="utf-8")).get("kafka") or {}
        except (OSError, ValueError):
            continue
        for row in lag_rows(kafka):
            rows.append([table.unique_id, row["topic"], row["partition"], row["consumed"],
                         row["end"], row["lag"], kafka.get("fetched_at", "")])
    return rows
