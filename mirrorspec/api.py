"""The Python API: mirrorspec from an orchestrator (Airflow, Dagster), a notebook or a script.

    from mirrorspec.api import Project

    project = Project("projects/shop", target="prod", on_event=print)
    results = project.run(select="tag:nightly", fail_fast=True)
    results.raise_if_failed()          # FailedRun (a MirrorspecError) when a table failed
    orders = project.show("sales.orders", limit=None)   # a pyarrow.Table

Stable: the names in `__all__`, their parameters and the result objects' fields follow semver
(the fields of `RunResults.to_dict()` are the `run_results.json` of mirrorspec/schemas/). Every
call returns a result object or raises a `MirrorspecError` subclass: bad
arguments `UsageError`, a bad project `ProjectError`, a bad selector `SelectionError`, an
unreadable table `InspectError`, a missing landing zone `LandingZoneError`, a broken install
`SetupError`. Nothing here calls `sys.exit` or prints: progress and log lines go to `on_event`,
each a dict like a `--log-format json` line (`time`, `level`, `event`, `message`,
`invocation_id`, fields), or without it to Python's logging (logger `mirrorspec`, each at its
level). A selection matching no table is a warning and an empty result, as on the command line.
Spark starts only in `run`, `test` and `mirror_landing_zone` (and in
`show` or `changes` for a table delta-rs can't read); the session is reused by later calls
in the process.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, cast

from mirrorspec.base.console import CallbackConsole
from mirrorspec.base.origin import Given
from mirrorspec.base.errors import (FailedRun, InspectError, LandingZoneError, MirrorspecError,
                               ProjectError, SelectionError, SetupError, StaleMirror, UsageError)
from mirrorspec.operate.health import Health, assess, parse_duration
from mirrorspec.artifacts.run_results import RunResults, TableRunResult, safe_args

if TYPE_CHECKING:
    import pyarrow

    from mirrorspec.compile import CompileResult, PlanContext
    from mirrorspec.artifacts.data_test_results import TestResults

__all__ = ["Project", "mirror_landing_zone", "artifact_schema", "ARTIFACT_SCHEMAS", "Status",
           "EventCallback", "RunResults",
           "TableRunResult", "MirrorspecError", "UsageError", "ProjectError", "SelectionError",
           "InspectError", "LandingZoneError", "SetupError", "FailedRun", "StaleMirror"]

EventCallback = Callable[[dict[str, Any]], None]
"""Gets every progress and log event as a dict (the `--log-format json` object)."""

ARTIFACT_SCHEMAS = {
    "plan": "plan.schema.json",                        # target/plan.json
    "run_results": "run_results.schema.json",          # target/run_results.json
    "test_results": "test_results.schema.json",        # target/test_results.json
    "tables": "monitoring_tables.schema.json",         # WAREHOUSE/tables.json
    "replicator": "monitoring_replicator.schema.json",  # WAREHOUSE/replicator.json
}
"""The published JSON Schemas (mirrorspec/schemas/, also `schemas/` in the repository)."""


def artifact_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of an artifact mirrorspec writes: one of ARTIFACT_SCHEMAS' names."""
    import json
    from importlib import resources

    if not isinstance(name, str) or name not in ARTIFACT_SCHEMAS:
        raise UsageError(f"artifact_schema(name={name!r}): no such artifact",
                         hint=f"one of {', '.join(ARTIFACT_SCHEMAS)}")
    folder = resources.files("mirrorspec").joinpath("schemas")
    text = folder.joinpath(ARTIFACT_SCHEMAS[name]).read_text(encoding="utf-8")
    return cast("dict[str, Any]", json.loads(text))


def _selectors(value: Any, name: str) -> tuple[str, ...]:
    """`select`/`exclude`: a string ("tag:a sales.*") or a sequence of strings."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise UsageError(f"{name}={value!r}: give a selector string or a list of them",
                     hint=f"e.g. {name}='sales.*' or {name}=['tag:nightly', 'orders']")


def _positive(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name}={value!r}: give a whole number of at least 1")
    return int(value)


def _flag(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{name}={value!r}: give True or False")
    return value


def _path(value: Any, name: str, optional: bool = False) -> str | None:
    """A path argument (str or os.PathLike) as a str; None stays None when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise UsageError(f"{name}={value!r}: give a path (a str or pathlib.Path)")
    return str(os.fspath(value))


def _text(value: Any, name: str, what: str, optional: bool = False) -> str | None:
    """A string argument (`what` says what it names); None stays None when `optional`."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{name}={value!r}: give {what} as a str")
    return value


def _callback(value: Any) -> EventCallback | None:
    if value is not None and not callable(value):
        raise UsageError(f"on_event={value!r}: give a function taking one dict, or None")
    return cast("EventCallback | None", value)


@dataclass(frozen=True)
class Status:
    """The monitoring JSON of a warehouse (`replicator.json`, `tables.json`) and its verdict."""

    replicator: dict[str, Any]
    tables: list[dict[str, Any]]
    health: Health = field(default_factory=Health)

    @property
    def failed(self) -> bool:
        """True when a table is `Failed`."""
        return bool(self.health.failed)

    def raise_if_unhealthy(self) -> "Status":
        """FailedRun for a Failed table, StaleMirror when stale (`stale_after`); else self."""
        if self.health.failed:
            raise FailedRun(self.health.verdict())
        if self.health.stale:
            raise StaleMirror(self.health.verdict())
        return self

    def to_dict(self) -> dict[str, Any]:
        """`{"replicator": …, "tables": […]}` as `mirrorspec status --json` prints it."""
        return {"replicator": self.replicator, "tables": self.tables}


class Project:
    """A mirrorspec project: the folder holding `mirrorspec_project.yml`.

    Args:
        path: the project folder.
        target: the profile output to use (default: the profile's `target`).
        vars: values for `var()` in the YAML.
        profiles_dir: the folder holding profiles.yml (default: the project, then ~/.mirrorspec).
        on_event: gets every progress and log event as a dict (default: Python's logging,
            logger `mirrorspec`).
        warm_server: `run`, `retry` and `test` connect to the warm Spark server started for
            this profile output (`mirrorspec spark start`) when one runs, instead of starting
            Spark in this process. Off by default: once connected, pyspark makes the process's
            later sessions Spark Connect ones, which a notebook with its own Spark may not want.

    Raises:
        UsageError: an argument of the wrong type.
        ProjectError: `path` is not a project folder.
    """

    def __init__(self, path: str | os.PathLike[str] = ".", target: str | None = None,
                 vars: Mapping[str, Any] | None = None, *,
                 profiles_dir: str | os.PathLike[str] | None = None,
                 on_event: EventCallback | None = None, warm_server: bool = False):
        if not isinstance(path, (str, os.PathLike)):
            raise UsageError(f"Project(path={path!r}): give the project folder as a str or Path")
        _path(profiles_dir, "profiles_dir", optional=True)
        if target is not None and (not isinstance(target, str) or not target.strip()):
            raise UsageError(f"Project(target={target!r}): give the name of a profile output")
        if vars is not None and not (isinstance(vars, Mapping)
                                     and all(isinstance(k, str) for k in vars)):
            raise UsageError(f"Project(vars={vars!r}): give a mapping of names to values",
                             hint="e.g. vars={'env': 'prod'}")
        folder = Path(path).expanduser().resolve()
        from mirrorspec.load.project import PROJECT_FILE

        if not (folder / PROJECT_FILE).is_file():
            raise ProjectError(f"no {PROJECT_FILE} in {folder}",
                               hint="give Project() the folder holding mirrorspec_project.yml")
        self.path = folder
        self.target = target
        self.vars = dict(vars or {})
        # a Given: a folder without profiles.yml is said to come from this argument
        self.profiles_dir = Given(str(Path(profiles_dir).expanduser().resolve()),
                                  "Project(profiles_dir=…)") if profiles_dir else None
        self.on_event = _callback(on_event)
        self.warm_server = _flag(warm_server, "warm_server")

    def __repr__(self) -> str:
        return f"Project({str(self.path)!r}, target={self.target!r})"

    # --- building blocks ------------------------------------------------------------------------
    def _console(self) -> CallbackConsole:
        return CallbackConsole(self.on_event)

    def _context(self, console: CallbackConsole) -> "PlanContext":
        from mirrorspec.compile import load_plan_context

        return load_plan_context(self.path, self.target, self.vars or None,
                                 self.profiles_dir, None, console)

    # --- commands -------------------------------------------------------------------------------
    def compile(self) -> "CompileResult":
        """Validate and compile into the target folder (plan.json, _metadata.json files); no
        Spark. Returns the CompileResult (`.plan`, `.plan_path`, `.target_dir`)."""
        from mirrorspec.compile import compile_project

        return compile_project(self.path, self.target, self.vars or None, self.profiles_dir)

    def run(self, select: str | Sequence[str] | None = None,
            exclude: str | Sequence[str] | None = None, full_refresh: bool = False,
            fail_fast: bool = False, threads: int = 4, publish_only: bool = False,
            state: str | os.PathLike[str] | None = None) -> RunResults:
        """`mirrorspec run` (or `publish` with `publish_only=True`): publish the feeds and
        mirror the selected tables; writes target/run_results.json and the monitoring JSON.

        A failed table does not raise: check `.failed` or call `.raise_if_failed()`."""
        select_, exclude_ = _selectors(select, "select"), _selectors(exclude, "exclude")
        threads = _positive(threads, "threads")
        full_refresh = _flag(full_refresh, "full_refresh")
        fail_fast = _flag(fail_fast, "fail_fast")
        publish_only = _flag(publish_only, "publish_only")
        state_path = self._state(state)
        console = self._console()
        ctx = self._context(console)
        from mirrorspec.operate.preflight import require_planned_landing_zone

        require_planned_landing_zone(ctx.plan, console)  # a mistyped landing_zone, before Spark
        from mirrorspec.spark.run import run_plan

        command = "publish" if publish_only else "run"
        args = safe_args(project_dir=str(self.path), target=self.target, vars=self.vars or None,
                         select=select_, exclude=exclude_, state=state_path, threads=threads,
                         full_refresh=full_refresh, fail_fast=fail_fast, api=True)
        return run_plan(ctx.plan, select=select_, exclude=exclude_, threads=threads,
                        full_refresh=full_refresh, publish_only=publish_only,
                        state_path=state_path, console=console, target_dir=ctx.target_dir,
                        args=args, command=command, fail_fast=fail_fast,
                        warm_server=self.warm_server)

    def retry(self, threads: int | None = None) -> RunResults:
        """Run again the tables that ended `error` or `skipped` in the last
        target/run_results.json, with its options (`mirrorspec retry`)."""
        from mirrorspec.operate.retry import retry_selection

        threads = _positive(threads, "threads") if threads is not None else None
        console = self._console()
        last = retry_selection(self._context(console).target_dir)
        if not last.select:
            console.result(last.nothing_to_do, retried=0)
            return RunResults(command="retry", args={"nothing_to_retry": True})
        results = self.run(select=last.select, full_refresh=last.full_refresh,
                           fail_fast=last.fail_fast, threads=threads or last.threads,
                           publish_only=last.command == "publish")
        ran = [f"id:{r.unique_id}" for r in results.results if r.status == "success"]
        if last.command == "build" and ran:  # build tests what ran
            self.test(select=ran, threads=threads or last.threads)
        return results

    def test(self, select: str | Sequence[str] | None = None,
             exclude: str | Sequence[str] | None = None, threads: int = 4,
             state: str | os.PathLike[str] | None = None) -> "TestResults":
        """`mirrorspec test`: run the data tests of the selected tables; writes
        target/test_results.json. Check `.failed` (FAIL or ERROR) on the result."""
        select_, exclude_ = _selectors(select, "select"), _selectors(exclude, "exclude")
        threads = _positive(threads, "threads")
        state_path = self._state(state)
        console = self._console()
        ctx = self._context(console)
        from mirrorspec.project.selection import select_with_warnings
        from mirrorspec.spark.ops.datatests import execute_tests

        tables = select_with_warnings(ctx.plan, select_, exclude_, state_path=state_path,
                                      console=console, results_dir=ctx.target_dir)
        return cast("TestResults",
                    execute_tests(console, ctx, [t.unique_id for t in tables], threads=threads,
                                  warm=self.warm_server))

    def status(self, stale_after: str | timedelta | None = None) -> Status:
        """The monitoring JSON of the project's warehouse, with its health: Failed tables, and
        with `stale_after` ("15m", a timedelta) what has not synced for longer. No Spark."""
        bound = self._duration(stale_after)
        ctx = self._context(self._console())
        from mirrorspec.artifacts.status import read_status

        doc = read_status(ctx.plan.warehouse) or {}
        return Status(doc.get("replicator") or {}, list(doc.get("tables") or []),
                      assess(doc, bound))

    def show(self, table: str, limit: int | None = 20, where: str | None = None,
             version: int | None = None, timestamp: str | datetime | None = None
             ) -> "pyarrow.Table":
        """Rows of a mirrored table as a pyarrow.Table, sorted by its key columns: at most
        `limit` (None: all), filtered by `where` (Spark SQL), as of `version` or `timestamp`."""
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise UsageError(f"show(limit={limit!r}): give a whole number >= 0, or None for all")
        if version is not None and (isinstance(version, bool) or not isinstance(version, int)
                                    or version < 0):
            raise UsageError(f"show(version={version!r}): give a Delta version (>= 0)")
        if version is not None and timestamp is not None:
            raise UsageError("show(): give version or timestamp, not both")
        if where is not None and not isinstance(where, str):
            raise UsageError(f"show(where={where!r}): give a Spark SQL condition as a str")
        _text(table, "table", "a table's unique id or name")
        as_of = _as_of(timestamp)
        console = self._console()
        plan = self._context(console).plan
        from mirrorspec.project.selection import resolve_table

        target = resolve_table(plan, table)
        return _read_arrow(plan, target.delta_path, target.unique_id, limit, where, version,
                           as_of, list(target.key_columns), console)

    def changes(self, table: str, from_version: int | None = None,
                from_timestamp: str | datetime | None = None, to_version: int | None = None,
                to_timestamp: str | datetime | None = None, limit: int | None = None
                ) -> "pyarrow.Table":
        """The change data feed of a mirrored table (`mirrorspec changes`) as a pyarrow.Table:
        the table's columns plus `_change_type`, `_commit_version` and `_commit_timestamp`, by
        version, key and change; versions `from_version` (or the first committed at or after
        `from_timestamp`; default: where the latest stretch of versions with a feed starts)
        to `to_version` (or the last at or before `to_timestamp`; default: the latest), at
        most `limit` rows (None: all). No Spark unless delta-rs can't read the table."""
        for value, what in ((from_version, "from_version"), (to_version, "to_version")):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 0):
                raise UsageError(f"changes({what}={value!r}): give a Delta version (>= 0)")
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)
                                  or limit < 0):
            raise UsageError(f"changes(limit={limit!r}): give a whole number >= 0, or None "
                             "for all")
        if from_version is not None and from_timestamp is not None:
            raise UsageError("changes(): give from_version or from_timestamp, not both")
        if to_version is not None and to_timestamp is not None:
            raise UsageError("changes(): give to_version or to_timestamp, not both")
        _text(table, "table", "a table's unique id or name")
        start = _as_of(from_timestamp, "changes", "from_timestamp")
        end = _as_of(to_timestamp, "changes", "to_timestamp")
        console = self._console()
        plan = self._context(console).plan
        from mirrorspec.project.selection import resolve_table
        from mirrorspec.readers.changes import read_changes
        from mirrorspec.readers.errors import DeltaRsUnsupported

        target = resolve_table(plan, table)
        keys = list(target.key_columns)
        try:
            return read_changes(target.delta_path, target.unique_id, from_version, start,
                                to_version, end, limit, keys, _storage(plan)).data
        except DeltaRsUnsupported as exc:
            console.warning(f"{target.unique_id}: reading with Spark instead of delta-rs: {exc}",
                            table=target.unique_id)
        import pyarrow as pa

        from mirrorspec.spark.ops.inspect import changes as spark_changes
        from mirrorspec.spark.platform.session import start_session

        columns, rows, _first, _last, _total = spark_changes(
            start_session(plan), target.delta_path, target.unique_id, from_version, start,
            to_version, end, limit, keys)
        return pa.Table.from_pylist([dict(zip(columns, row)) for row in rows])

    # --- helpers --------------------------------------------------------------------------------
    @staticmethod
    def _state(state: Any) -> str | None:
        if state is None:
            return None
        if not isinstance(state, (str, os.PathLike)) or not Path(state).exists():
            raise UsageError(f"state={state!r}: give a previous target/ folder that exists")
        plan = Path(state) / "plan.json" if Path(state).is_dir() else Path(state)
        if not plan.is_file():
            raise UsageError(f"state={state!r}: no plan.json there",
                             hint="give a previous target/ folder (with plan.json)")
        return str(Path(state).resolve())

    @staticmethod
    def _duration(value: Any) -> timedelta | None:
        if value is None or isinstance(value, timedelta):
            if isinstance(value, timedelta) and value.total_seconds() <= 0:
                raise UsageError(f"stale_after={value!r} must be longer than 0")
            return value
        if isinstance(value, str):
            return parse_duration(value, "stale_after")
        raise UsageError(f"stale_after={value!r}: give a duration such as '15m' or a timedelta")


def _as_of(timestamp: Any, call: str = "show", name: str = "timestamp") -> datetime | None:
    """show(timestamp=…): a datetime, or an ISO 8601 str read as `mirrorspec show --timestamp`
    reads it (its error names the argument, not the flag)."""
    if timestamp is None or isinstance(timestamp, datetime):
        return timestamp
    if not isinstance(timestamp, str):
        raise UsageError(f"{call}({name}={timestamp!r}): give a datetime or an ISO 8601 str")
    from mirrorspec.readers.delta import parse_timestamp

    try:
        return parse_timestamp(timestamp)
    except InspectError:
        raise UsageError(f"{call}({name}={timestamp!r}): not a date or time",
                         hint="e.g. '2026-01-31' or '2026-01-31T12:00:00Z' (UTC unless it has "
                              "an offset), or a datetime") from None


def _storage(plan: Any) -> dict[str, str]:
    """delta-rs storage options from the plan's Spark conf, for a warehouse at a URI."""
    if "://" not in plan.warehouse:
        return {}
    from mirrorspec.artifacts.plan import resolve_secrets
    from mirrorspec.readers.storage import storage_options

    return storage_options(resolve_secrets(dict(plan.spark.conf)))


def _read_arrow(plan: Any, path: str, name: str, limit: int | None, where: str | None,
                version: int | None, as_of: datetime | None, keys: list[str],
                console: CallbackConsole) -> "pyarrow.Table":
    """delta-rs first; Spark (with the plan's settings) for what delta-rs can't read."""
    from mirrorspec.readers import delta as delta_rs
    from mirrorspec.readers.errors import DeltaRsUnsupported

    try:
        data, _version = delta_rs.preview_arrow(path, name, limit, where, version, as_of,
                                                keys, _storage(plan))
        return data
    except DeltaRsUnsupported as exc:
        console.warning(f"{name}: reading with Spark instead of delta-rs: {exc}", table=name)
    import pyarrow as pa

    from mirrorspec.spark.ops.inspect import preview
    from mirrorspec.spark.platform.session import start_session

    columns, rows = preview(start_session(plan), path, name,
                            limit if limit is not None else 2**31 - 1, where, version,
                            as_of.isoformat() if as_of else None, order_by=keys)
    return pa.Table.from_pylist([dict(zip(columns, row)) for row in rows])


def mirror_landing_zone(landing_zone: str | os.PathLike[str], warehouse: str | os.PathLike[str],
                        select: str | Sequence[str] | None = None, threads: int = 2,
                        strict: bool = False, conf: Mapping[str, str] | None = None,
                        master: str = "local[*]",
                        on_event: EventCallback | None = None,
                        change_data_feed: bool | None = None) -> RunResults:
    """`mirrorspec mirror`: one pass applying a landing zone to Delta tables in `warehouse`
    (WAREHOUSE/<schema>/<table>), writing the monitoring JSON. Returns the same RunResults as
    `Project.run` (command "mirror"); a missing local landing zone raises LandingZoneError
    before Spark starts. `change_data_feed` switches Delta's change data feed on (or off)
    for every table (`mirror --change-data-feed`); None leaves each table as it is."""
    from mirrorspec.operate.preflight import require_landing_zone
    from mirrorspec.base.files import normalize

    _path(landing_zone, "landing_zone")
    _path(warehouse, "warehouse")
    _text(master, "master", "a Spark master URL such as 'local[*]'")
    select_ = _selectors(select, "select")
    threads = _positive(threads, "threads")
    strict = _flag(strict, "strict")
    feed = _flag(change_data_feed, "change_data_feed") if change_data_feed is not None else None
    if conf is not None and not (isinstance(conf, Mapping)
                                 and all(isinstance(k, str) for k in conf)):
        raise UsageError(f"conf={conf!r}: give a mapping of Spark settings to values")
    callback = _callback(on_event)
    landing, wh = normalize(os.fspath(landing_zone)), normalize(os.fspath(warehouse))
    require_landing_zone(landing, "landing_zone")
    import time

    from mirrorspec.spark.mirror.engine import MirrorOptions
    from mirrorspec.spark.mirror.engine import mirror_landing_zone as mirror_pass
    from mirrorspec.spark.platform.session import build_session
    from mirrorspec.spark.run import apply_outcome

    console = CallbackConsole(callback)
    started = time.monotonic()
    results = RunResults(command="mirror", invocation_id=console.invocation_id,
                         args=safe_args(landing_zone=landing, warehouse=wh, select=select_,
                                        threads=threads, strict=strict,
                                        change_data_feed=feed, api=True))
    spark = build_session(master, {str(k): str(v) for k, v in (conf or {}).items()})
    options = MirrorOptions(threads=threads, strict=strict, select=select_,
                            change_data_feed=feed)
    outcome = mirror_pass(spark, landing, wh, options, console,
                          progress=True)  # table_started/finished and progress events
    for table in outcome.tables:
        result = TableRunResult(table.unique_id, execution_time=float(table.seconds or 0.0))
        apply_outcome(result, table)
        results.results.append(result)
    results.elapsed_time = time.monotonic() - started
    return results
