"""Fabric-shaped monitoring JSON beside the mirrored tables (pure Python, no pyspark).

`WAREHOUSE/replicator.json` holds the overall status, `WAREHOUSE/tables.json` one entry per
table. Each pass merges its outcomes into the previous `tables.json`, so a pass over a subset of
tables (or the runner) keeps the status of the others.
"""

from __future__ import annotations

import json
import os
import socket
from datetime import datetime, timezone
from typing import Any, Iterable

from mirrorspec.base.files import LocalFS, join

REPLICATOR_FILE = "replicator.json"
TABLES_FILE = "tables.json"
# left when writing the two files failed (disk full): the next write that succeeds removes it
# and says the files were stale until then. Empty, so it can be created on a full disk.
STALE_MARKER = "_mirrorspec_status_stale"


def _now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _get(outcome: Any, name: str, default: Any = None) -> Any:
    if isinstance(outcome, dict):
        return outcome.get(name, default)
    return getattr(outcome, name, default)


def table_entry(outcome: Any, synced_at: str | None = None) -> dict[str, Any]:
    """The tables.json entry of one TableOutcome (or an equivalent dict)."""
    error = _get(outcome, "error")
    status = _get(outcome, "status")
    entry: dict[str, Any] = {
        "sourceSchemaName": _get(outcome, "schema") or "dbo",
        "sourceTableName": _get(outcome, "name"),
        "status": status,
        "metrics": {
            "processedRows": int(_get(outcome, "processed_rows", 0) or 0),
            "processedBytes": int(_get(outcome, "processed_bytes", 0) or 0),
            "lastSyncDateTime": synced_at or _now_iso(),
            "lastSyncLatencyInSeconds": round(float(_get(outcome, "seconds", 0.0) or 0.0), 3),
        },
        "error": ({"errorCode": error.get("errorCode"), "message": error.get("message")}
                  if error else None),
    }
    awaiting = _get(outcome, "awaiting")
    if awaiting:
        entry["awaitingFile"] = awaiting
    warnings = _get(outcome, "warnings")
    if warnings:
        entry["warnings"] = list(warnings)
    return entry


def _read_json(files: Any, path: str) -> dict:
    try:
        data = json.loads(files.read_text(path))
        return data if isinstance(data, dict) else {}
    except Exception:  # noqa: BLE001 - a missing or torn status file just starts afresh
        return {}


def _key(entry: dict) -> tuple[str, str]:
    return (str(entry.get("sourceSchemaName") or "dbo"), str(entry.get("sourceTableName")))


def write_status(warehouse: str, outcomes: Iterable[Any], status: str | None = None,
                 files: Any = None) -> dict:
    """Merge `outcomes` into WAREHOUSE/tables.json and rewrite WAREHOUSE/replicator.json.

    Tables not in `outcomes` keep their previous entry. The overall status is `status` when
    given, else "Failed" when any table is Failed and "Running" otherwise. `files` is an object
    with read_text/write_text (the engine passes its filesystem for URI warehouses); plain local
    files by default. Returns `{"replicator": …, "tables": …}`.
    """
    files = files or LocalFS()
    now = _now_iso()
    previous = _read_json(files, join(warehouse, TABLES_FILE)).get("tables") or []
    merged: dict[tuple[str, str], dict] = {}
    for entry in previous:
        if isinstance(entry, dict):
            merged[_key(entry)] = entry
    for outcome in outcomes:
        entry = table_entry(outcome, now)
        merged[_key(entry)] = entry
    tables = sorted(merged.values(), key=_key)
    failed = sum(1 for entry in tables if entry.get("status") == "Failed")
    overall = status or ("Failed" if failed else "Running")
    replicator = {
        "status": overall,
        "lastUpdated": now,
        "tables": {"total": len(tables), "failed": failed},
        # who wrote it: a reader tells a live replicator from one that has finished
        "process": {"pid": os.getpid(), "host": socket.gethostname()},
    }
    tables_doc = {"tables": tables}
    marker = join(warehouse, STALE_MARKER)
    try:
        files.write_text(join(warehouse, TABLES_FILE),
                         json.dumps(tables_doc, indent=2, ensure_ascii=False) + "\n")
        files.write_text(join(warehouse, REPLICATOR_FILE),
                         json.dumps(replicator, indent=2, ensure_ascii=False) + "\n")
    except Exception:
        try:
            files.write_text(marker, "")
        except Exception:  # noqa: BLE001, S110 - the write's own error is the one raised
            pass
        raise
    corrected = files.exists(marker)
    if corrected:
        files.delete(marker)
    return {"replicator": replicator, "tables": tables_doc, "corrected": corrected}


CORRECTED_MESSAGE = (f"{TABLES_FILE} and {REPLICATOR_FILE} rewritten: an earlier pass could not "
                     "write them, so they were stale until now")
WRITE_FAILED = f"could not write the monitoring JSON ({TABLES_FILE}, {REPLICATOR_FILE})"
STALE_UNTIL = "they are stale until a pass writes them again (it says so)"


def is_stale(warehouse: str, files: Any = None) -> bool:
    """Whether the last write of the monitoring JSON failed (it may not hold the last pass)."""
    files = files or LocalFS()
    return bool(files.exists(join(warehouse, STALE_MARKER)))


def read_status(warehouse: str, files: Any = None) -> dict:
    """`{"replicator": {...}, "tables": [...]}` from a warehouse; empty parts when never written."""
    files = files or LocalFS()
    replicator = live_replicator(_read_json(files, join(warehouse, REPLICATOR_FILE)))
    tables = _read_json(files, join(warehouse, TABLES_FILE)).get("tables") or []
    return {"replicator": replicator, "tables": [t for t in tables if isinstance(t, dict)]}


def live_replicator(replicator: dict) -> dict:
    """`replicator` with "Running" turned into "Stopped" when nothing runs: no writer process
    recorded, or its process (on this host) has ended. A writer on another host is trusted."""
    if replicator.get("status") != "Running":
        return replicator
    process = replicator.get("process") if isinstance(replicator.get("process"), dict) else {}
    pid, host = process.get("pid"), process.get("host")
    if host and host != socket.gethostname():
        return replicator
    if isinstance(pid, int) and process_alive(pid):
        return replicator
    return {**replicator, "status": "Stopped"}


def process_alive(pid: int) -> bool:
    """True when a process `pid` exists (this one, or another user's too)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    except OSError:
        return False
    return True
