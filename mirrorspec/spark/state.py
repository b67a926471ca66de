"""A mirrored table's progress as the engine records it in its Delta log (no JVM: the log's JSON
is read directly), so that `lint` and `replay` can read it without Spark."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from mirrorspec.errors import MirrorspecError
from mirrorspec.spark import fs as fsmod

STATE_KEY = "mirrorspec"
_LOG_FILE = re.compile(r"^\d{20}\.json$")


@dataclass
class TableState:
    """What the Delta table says about the table's progress."""

    exists: bool = False
    meta: dict = field(default_factory=dict)   # userMetadata[STATE_KEY] of our latest commit
    version: int | None = None                 # Delta version of that commit
    metrics: dict = field(default_factory=dict)  # its operationMetrics
    operation: str | None = None


def engine_commits(filesystem, delta_path: str, newest_first: bool = True):
    """(version, engine state, commitInfo) of each commit of a Delta table that the engine made
    (its `userMetadata[STATE_KEY]`), reading the `_delta_log` JSON (no Spark job)."""
    log = fsmod.join(delta_path, "_delta_log")
    commits = sorted((e for e in filesystem.list(log) if _LOG_FILE.match(e.name)),
                     key=lambda e: e.name, reverse=newest_first)
    for entry in commits:
        try:
            text = filesystem.read_bytes(entry.path).decode("utf-8")
        except OSError:
            continue
        for line in text.splitlines():
            if '"commitInfo"' not in line:
                continue
            info = json.loads(line).get("commitInfo") or {}
            try:
                user = json.loads(info.get("userMetadata") or "null")
            except ValueError:
                user = None
            if isinstance(user, dict) and isinstance(user.get(STATE_KEY), dict):
                yield int(entry.name.split(".")[0]), user[STATE_KEY], info


def log_versions(filesystem, delta_path: str) -> list[int]:
    """The versions of the commit files in a Delta table's `_delta_log`, oldest first."""
    log = fsmod.join(delta_path, "_delta_log")
    return sorted(int(e.name.split(".")[0]) for e in filesystem.list(log)
                  if _LOG_FILE.match(e.name))


def read_state(filesystem, delta_path: str) -> TableState:
    """The latest mirrorspec commit of a Delta table (its `userMetadata` and metrics), reading the
    `_delta_log` JSON from the newest commit backwards (no Spark job)."""
    entries = filesystem.list(fsmod.join(delta_path, "_delta_log"))
    state = TableState(exists=any(_LOG_FILE.match(e.name) or ".checkpoint" in e.name
                                  for e in entries))
    for version, meta, info in engine_commits(filesystem, delta_path):
        state.meta = meta
        state.version = version
        state.metrics = info.get("operationMetrics") or {}
        state.operation = info.get("operation")
        break
    return state


def resolve_table(table: str, warehouse: str | None) -> tuple[str, str]:
    """(unique id, Delta path) of TABLE: a Delta folder, or schema.table / table (dbo) in the
    warehouse."""
    if os.path.isdir(os.path.join(table, "_delta_log")):
        path = os.path.abspath(table)
        parts = path.rstrip(os.sep).split(os.sep)
        return f"{parts[-2]}.{parts[-1]}", path
    if not warehouse:
        raise MirrorspecError(f"{table} is not a Delta table folder; pass --warehouse to find "
                              "schema.table in a warehouse")
    schema, _, name = table.rpartition(".")
    schema = schema or "dbo"
    path = os.path.join(warehouse, schema, name)
    if not os.path.isdir(os.path.join(path, "_delta_log")):
        raise MirrorspecError(f"no mirrored table {schema}.{name} in {warehouse}",
                              hint="run `mirrorspec mirror` first, or check the name")
    return f"{schema}.{name}", os.path.abspath(path)


def table_keys(path: str, key: str | None) -> list[str]:
    """--key, else the keyColumns the engine recorded when it last committed the table (an
    empty list for a keyless table: rows are then compared as a multiset)."""
    if key:
        return [k.strip() for k in key.split(",") if k.strip()]
    keys = read_state(fsmod.LocalFS(), path).meta.get("keys")
    if keys is None:
        raise MirrorspecError("the table's key columns are not recorded (it was mirrored by an "
                              "older version)", hint="pass --key col1,col2")
    return list(keys)
