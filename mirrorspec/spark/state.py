"""A mirrored table's progress as the engine records it in its Delta log (no JVM: the log's JSON
is read directly), so that `lint` and `replay` can read it without Spark."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

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


def read_state(filesystem, delta_path: str) -> TableState:
    """The latest mirrorspec commit of a Delta table (its `userMetadata` and metrics), reading the
    `_delta_log` JSON from the newest commit backwards (no Spark job)."""
    log = fsmod.join(delta_path, "_delta_log")
    entries = filesystem.list(log)
    commits = sorted((e for e in entries if _LOG_FILE.match(e.name)), key=lambda e: e.name,
                     reverse=True)
    state = TableState(exists=bool(commits) or any(".checkpoint" in e.name for e in entries))
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
                state.meta = user[STATE_KEY]
                state.version = int(entry.name.split(".")[0])
                state.metrics = info.get("operationMetrics") or {}
                state.operation = info.get("operation")
                return state
    return state
