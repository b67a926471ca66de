"""`target/run_results.json`: what a `run`, `publish` or `build` did to each table (pure Python).

Shaped after dbt's run_results artifact: a `metadata` block, the invocation `args` (never secret
values: `--vars` values are left out, only their names are kept), `elapsed_time`, and one entry
per selected table. Statuses: `success`, `error` (the table failed; the run exits 1), `waiting`
(a gap: the engine awaits a landing file; not a failure), `not_started` (nothing has landed
yet, so there is no Delta table; not a failure), `skipped` (not run because an earlier step of
the same table failed, or `--fail-fast` after another table failed; `skip_reason` says which).
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

from mirrorspec import __version__
from mirrorspec.base.errors import FailedRun, MirrorspecError
from mirrorspec.openmirroring.mirroring import dumps_json

RUN_RESULTS_FILE = "run_results.json"
RUN_RESULTS_SCHEMA = "mirrorspec/run-results/v1"
STATUSES = ("success", "error", "waiting", "not_started", "skipped")
# a table's status as the engine (and Fabric's tables.json) says it -> its run result's status
STATUS_OF_MIRROR = {"Replicating": "success", "Failed": "error", "Waiting": "waiting",
                    "NotStarted": "not_started"}
# ... and back: the table status a run result shows when the engine left none (publish only)
_MIRROR_OF_STATUS = {status: mirror for mirror, status in STATUS_OF_MIRROR.items()}


def fabric_status(result: "TableRunResult") -> str | None:
    """The table's status in tables.json after this result — Fabric's TableMirroringStatus
    (`Replicating`, `Failed`) or mirrorspec's own (`Waiting`, `NotStarted`, `Dropped`) — read
    the same by `status`, the OpenLineage events and the metrics endpoint. `Failed` for an
    error in any step; None for a `skipped` table: it did not run, so it keeps the status it
    had (Fabric has no "skipped" table state, and it did not replicate)."""
    if result.failed:
        return "Failed"
    if result.status == "skipped":
        return None
    return result.mirror_status or _MIRROR_OF_STATUS.get(result.status, "Replicating")


def utc_now() -> str:
    """ISO 8601 UTC timestamp with a `Z`."""
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


@dataclass
class StepTiming:
    """One step of a table (publish, mirror) with its start and end."""

    name: str
    started_at: str
    completed_at: str
    seconds: float


@dataclass
class TableRunResult:
    """What happened to one table."""

    unique_id: str
    status: str = "success"
    mirror_status: str | None = None  # the engine's Fabric-style status (Replicating, Failed, …)
    execution_time: float = 0.0
    timing: list[StepTiming] = field(default_factory=list)
    files_published: list[str] = field(default_factory=list)
    rows_published: int = 0
    held_back: list[str] = field(default_factory=list)
    messages_skipped: dict[str, int] = field(default_factory=dict)  # feed messages changing no row
    files_applied: list[str] = field(default_factory=list)
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    delta_version: int | None = None
    awaiting: str | None = None
    warnings: list[str] = field(default_factory=list)  # files and keys the engine ignored
    error: str | None = None
    error_code: str | None = None
    skip_reason: str | None = None  # why a `skipped` table did not run (e.g. --fail-fast)

    @property
    def failed(self) -> bool:
        return self.status == "error"

    def fail(self, message: str, code: str | None = None) -> None:
        """Mark the table failed (the first error is kept: it is the cause)."""
        if self.status != "error":
            self.status = "error"
            self.error = message
            self.error_code = code

    @property
    def rows_changed(self) -> int:
        return self.rows_inserted + self.rows_updated + self.rows_deleted


@dataclass
class RunResults:
    """The whole invocation."""

    command: str
    args: dict[str, Any]
    results: list[TableRunResult] = field(default_factory=list)
    elapsed_time: float = 0.0
    started_at: str = field(default_factory=utc_now)
    invocation_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def failed(self) -> bool:
        """True when any table failed."""
        return any(r.failed for r in self.results)

    def raise_if_failed(self) -> "RunResults":
        """FailedRun (a MirrorspecError) naming the failed tables; else self."""
        failed = [r.unique_id for r in self.results if r.failed]
        if failed:
            raise FailedRun(f"{len(failed)} table(s) failed: {', '.join(failed)}",
                            hint="see each table's error in run_results.json")
        return self

    def counts(self) -> dict[str, int]:
        """How many tables ended in each status."""
        out = {status: 0 for status in STATUSES}
        for result in self.results:
            out[result.status] = out.get(result.status, 0) + 1
        return out

    def tests_to_skip(self) -> dict[str, str]:
        """unique_id → why `build` skips the table's data tests: it failed, or has not started."""
        reasons = {"error": "the table failed to run",
                   "not_started": "the table has not started: nothing has landed yet"}
        return {r.unique_id: reasons[r.status] for r in self.results if r.status in reasons}

    def to_dict(self) -> dict[str, Any]:
        return {
            "metadata": {
                "schema": RUN_RESULTS_SCHEMA,
                "mirrorspec_version": __version__,
                "generated_at": utc_now(),
                "invocation_id": self.invocation_id,
            },
            "command": self.command,
            "args": self.args,
            "started_at": self.started_at,
            "elapsed_time": round(self.elapsed_time, 3),
            "counts": self.counts(),
            "results": [_result_dict(r) for r in self.results],
        }

    def write(self, target_dir: str | os.PathLike) -> Path:
        """Write `<target_dir>/run_results.json` (temp file + rename) and return its path."""
        folder = Path(target_dir)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / RUN_RESULTS_FILE
        tmp = folder / f".{RUN_RESULTS_FILE}.tmp"
        tmp.write_text(dumps_json(self.to_dict()), encoding="utf-8")
        os.replace(tmp, path)
        return path


def _result_dict(result: TableRunResult) -> dict[str, Any]:
    doc = asdict(result)
    doc["execution_time"] = round(result.execution_time, 3)
    for step in doc["timing"]:
        step["seconds"] = round(step["seconds"], 3)
    return doc


def safe_args(**args: Any) -> dict[str, Any]:
    """Invocation args for the artifact: `vars` reduced to their names (values may be secret)."""
    out: dict[str, Any] = {}
    for key, value in args.items():
        if key == "vars":
            out["vars"] = sorted(value) if isinstance(value, dict) else (None if value is None
                                                                           else "<given>")
        elif isinstance(value, tuple):
            out[key] = list(value)
        elif isinstance(value, os.PathLike):
            out[key] = os.fspath(value)
        else:
            out[key] = value
    return out


def read_run_results(path: str | os.PathLike, validate: bool = False) -> dict[str, Any]:
    """Load a run_results.json (a target folder or the file itself) as a dict; with `validate`,
    checked against its JSON Schema (`invalid_run_results` names the first bad field)."""
    path = Path(path)
    if path.is_dir():
        path = path / RUN_RESULTS_FILE
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MirrorspecError(f"{path}: no run results", hint="run `mirrorspec run` first") from None
    except json.JSONDecodeError as exc:
        raise MirrorspecError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise MirrorspecError(f"{path}: can't be read: {getattr(exc, 'strerror', None) or exc}"
                              ) from None
    if validate:
        problem = invalid_run_results(doc)
        if problem is not None:
            raise MirrorspecError(f"invalid run_results.json: {path}: {problem}",
                                  hint="it is not what `mirrorspec run` writes (schemas/"
                                       "run_results.schema.json); run again to rewrite it")
    return cast("dict[str, Any]", doc)


def invalid_run_results(doc: Any) -> str | None:
    """The first field of `doc` that breaks mirrorspec/schemas/run_results.schema.json, as
    `$.json.path: what is wrong`; None when it is valid."""
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(_schema()).iter_errors(doc),
                    key=lambda e: (len(e.absolute_path), [str(p) for p in e.absolute_path]))
    if not errors:
        return None
    error = errors[0]
    where = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}"
                          for p in error.absolute_path)
    message = error.message if len(error.message) <= 200 else error.message[:200] + "…"
    return f"{where}: {message}"


def _schema() -> dict[str, Any]:
    from importlib import resources

    text = resources.files("mirrorspec").joinpath("schemas").joinpath("run_results.schema.json")
    return cast("dict[str, Any]", json.loads(text.read_text(encoding="utf-8")))
