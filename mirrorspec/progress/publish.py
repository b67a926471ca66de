"""How far the publisher got: its state file per table (files and batches published, Kafka
offsets, the batch being written) and the Kafka staging folder. JSON, versioned by STATE_VERSION;
written by `spark.publish`, read by `status`/`show` and `run --full-refresh` without a JVM."""

from __future__ import annotations

import json
from typing import Any

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
    base.update(state)
    return base


def save_state(fs: Files, plan: Plan, table: TablePlan, state: dict[str, Any]) -> None:
    """Write the table's publisher state (atomically: `Files.write_text`)."""
    fs.write_text(state_file(plan, table), json.dumps(state, indent=1, sort_keys=True) + "\n")


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
