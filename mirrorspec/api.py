"""The Python API: mirrorspec from an orchestrator (Airflow, Dagster), a notebook or a script.

    from mirrorspec.api import Project

    project = Project("projects/shop", target="prod", on_event=print)
    results = project.run(select="tag:nightly", fail_fast=True)
    results.raise_if_failed()          # FailedRun (a MirrorspecError) when a table failed
    orders = project.show("sales.orders", limit=None)   # a pyarrow.Table

Every type a call returns is importable from here (`CompileResult`, `Plan`, `TablePlan`,
`RunResults`, `TableRunResult`, `TestResults`, `DataTestResult`, `Status`, `Health`,
`HistoryEntry`, `Exported`, `LintResult`, `TableReport`, `Finding`, `PlanDiff`,
`MaintainResult`, `TableMaintained`, `Reconciliation`, `Replay`, `DocsSite`), and the package
ships `py.typed`, so type checkers read these annotations.

The calls are the command line's own: both stand on `mirrorspec/context/` (the project's plan,
threads, selection and Spark session), so `Project.run()` does what `mirrorspec run` does.

Stable: the names in `__all__`, their parameters and the result objects' fields follow semver
(the fields of `RunResults.to_dict()` are the `run_results.json` of mirrorspec/schemas/). Every
call returns a result object or raises a `MirrorspecError` subclass: bad
arguments `UsageError`, a bad project `ProjectError`, a bad selector `SelectionError`, an
unreadable table `InspectError`, a missing landing zone `LandingZoneError`, a broken install
`SetupError`. Nothing here calls `sys.exit` or prints: progress and log lines go to `on_event`,
each a dict like a `--log-format json` line (`time`, `level`, `event`, `message`,
`invocation_id`, fields), or without it to Python's logging (logger `mirrorspec`, each at its
level). A selection matching no table is a warning and an empty result, as on the command line.
Spark starts only in `run`, `test`, `maintain`, `reconcile`, `replay` and
`mirror_landing_zone` (and in `show`, `changes` or `history` for a table delta-rs can't read,
or for every table when the environment sets `MIRRORSPEC_READ_WITH=spark`, as on the command
line); the session is reused by later calls in the process. A check that finds something (a lint
finding, a breaking change, a difference, a failed table) is a result, not an exception:
`LintResult.failed()`, `PlanDiff.blocking`, `Reconciliation.equal`, `Replay.equal`,
`MaintainResult.failed`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from mirrorspec.artifacts.data_test_results import DataTestResult, TestResults
from mirrorspec.artifacts.plan import Plan, TablePlan
from mirrorspec.artifacts.run_results import RunResults, TableRunResult, safe_args
from mirrorspec.base.console import CallbackConsole
from mirrorspec.base.errors import (FailedRun, InspectError, LandingZoneError, MirrorspecError,
                                    ProjectError, SelectionError, SetupError, StaleMirror,
                                    UsageError)
from mirrorspec.base.origin import Given
from mirrorspec.context import arguments as check
from mirrorspec.context.arguments import EventCallback
from mirrorspec.context.project import ProjectContext
from mirrorspec.context.reading import Status
from mirrorspec.compile import CompileResult
from mirrorspec.landing.lint import Finding, LintResult, TableReport
from mirrorspec.artifacts.reconciliation import Reconciliation, Replay
from mirrorspec.context.operations import MaintainResult, TableMaintained
from mirrorspec.context.site import DocsSite
from mirrorspec.project.diff import PlanDiff
from mirrorspec.readers.export import Exported
from mirrorspec.readers.history import HistoryEntry
from mirrorspec.context.threads import DEFAULT_THREADS
from mirrorspec.operate.health import Health

if TYPE_CHECKING:
    import pyarrow

__all__ = ["Project", "mirror_landing_zone", "lint_landing_zone", "artifact_schema",
           "ARTIFACT_SCHEMAS", "Status", "Health", "EventCallback", "RunResults",
           "TableRunResult", "TestResults", "DataTestResult", "CompileResult", "Plan",
           "TablePlan", "LintResult", "TableReport", "Finding", "PlanDiff",
           "HistoryEntry", "Exported", "MaintainResult", "TableMaintained", "Reconciliation",
           "Replay", "DocsSite",
           "MirrorspecError", "UsageError", "ProjectError", "SelectionError",
           "InspectError", "LandingZoneError", "SetupError", "FailedRun", "StaleMirror"]

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
        check.path(profiles_dir, "profiles_dir", optional=True)
        if target is not None and (not isinstance(target, str) or not target.strip()):
            raise UsageError(f"Project(target={target!r}): give the name of a profile output")
        check.string_mapping(vars, f"Project(vars={vars!r}): give a mapping of names to values",
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
        self.on_event = check.callback(on_event)
        self.warm_server = check.flag(warm_server, "warm_server")

    def __repr__(self) -> str:
        return f"Project({str(self.path)!r}, target={self.target!r})"

    def _project(self) -> ProjectContext:
        """The layer under the CLI's commands, with this project's settings and a console that
        hands events to `on_event`."""
        return ProjectContext(str(self.path), self.target, self.vars or None, self.profiles_dir,
                              console=CallbackConsole(self.on_event),
                              warm_server=self.warm_server, door_args={"api": True})

    # --- commands -------------------------------------------------------------------------------
    def compile(self) -> CompileResult:
        """Validate and compile into the target folder (plan.json, _metadata.json files); no
        Spark. Returns the CompileResult (`.plan`, `.plan_path`, `.target_dir`)."""
        return self._project().compile()

    def run(self, select: str | Sequence[str] | None = None,
            exclude: str | Sequence[str] | None = None, full_refresh: bool = False,
            fail_fast: bool = False, threads: int | None = None, publish_only: bool = False,
            state: str | os.PathLike[str] | None = None) -> RunResults:
        """`mirrorspec run` (or `publish` with `publish_only=True`): publish the feeds and
        mirror the selected tables; writes target/run_results.json and the monitoring JSON.
        `threads`: tables at once (default: the profile output's `threads`, else twice the CPU
        cores, 2 to 8 — as `--threads` on the command line).

        A failed table does not raise: check `.failed` or call `.raise_if_failed()`."""
        select_, exclude_ = check.selectors(select, "select"), check.selectors(exclude, "exclude")
        threads = check.optional_positive(threads, "threads")
        full_refresh = check.flag(full_refresh, "full_refresh")
        fail_fast = check.flag(fail_fast, "fail_fast")
        command = "publish" if check.flag(publish_only, "publish_only") else "run"
        state_path = check.state_folder(state)
        _ctx, results = self._project().run(select_, exclude_, state_path, threads,
                                            full_refresh, fail_fast, command=command)
        return results

    def retry(self, threads: int | None = None) -> RunResults:
        """Run again the tables that ended `error` or `skipped` in the last
        target/run_results.json, with its options and command (`mirrorspec retry`; a `build`
        tests the tables that ran again)."""
        threads = check.optional_positive(threads, "threads")
        done = self._project().retry(threads)
        if done.results is None:
            return RunResults(command="retry", args={"nothing_to_retry": True})
        return done.results

    def test(self, select: str | Sequence[str] | None = None,
             exclude: str | Sequence[str] | None = None, threads: int = DEFAULT_THREADS,
             state: str | os.PathLike[str] | None = None) -> TestResults:
        """`mirrorspec test`: run the data tests of the selected tables; writes
        target/test_results.json. Check `.failed` (FAIL or ERROR) on the result."""
        select_, exclude_ = check.selectors(select, "select"), check.selectors(exclude, "exclude")
        threads = check.positive(threads, "threads")
        state_path = check.state_folder(state)
        _ctx, results = self._project().test(select_, exclude_, state_path, threads)
        return results

    def status(self, stale_after: str | timedelta | None = None) -> Status:
        """The monitoring JSON of the project's warehouse, with its health: Failed tables, and
        with `stale_after` ("15m", a timedelta) what has not synced for longer. No Spark."""
        from mirrorspec.context.reading import status_report

        bound = check.duration(stale_after)
        return status_report(self._project(), None, bound, required=False).status

    def show(self, table: str, limit: int | None = 20, where: str | None = None,
             version: int | None = None, timestamp: str | datetime | None = None
             ) -> "pyarrow.Table":
        """Rows of a mirrored table as a pyarrow.Table, sorted by its key columns: at most
        `limit` (None: all), filtered by `where` (Spark SQL), as of `version` or `timestamp`."""
        from mirrorspec.context import inspection, reading

        check.whole(limit, "show", "limit", "a whole number >= 0, or None for all")
        check.whole(version, "show", "version", "a Delta version (>= 0)")
        check.exclusive(version, timestamp, ("version", "timestamp"), "show(): ")
        if where is not None and not isinstance(where, str):
            raise UsageError(f"show(where={where!r}): give a Spark SQL condition as a str")
        check.text(table, "table", "a table's unique id or name")
        as_of = check.as_of(timestamp)
        project = self._project()
        read = reading.read_rows(inspection.resolve(table, project, None), limit, where,
                                 version, as_of, project.console)
        return read.to_arrow()

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
        from mirrorspec.context import inspection, reading

        for value, what in ((from_version, "from_version"), (to_version, "to_version")):
            check.whole(value, "changes", what, "a Delta version (>= 0)")
        check.whole(limit, "changes", "limit", "a whole number >= 0, or None for all")
        check.exclusive(from_version, from_timestamp, ("from_version", "from_timestamp"),
                        "changes(): ")
        check.exclusive(to_version, to_timestamp, ("to_version", "to_timestamp"), "changes(): ")
        check.text(table, "table", "a table's unique id or name")
        start = check.as_of(from_timestamp, "changes", "from_timestamp")
        end = check.as_of(to_timestamp, "changes", "to_timestamp")
        project = self._project()
        read = reading.read_changes(inspection.resolve(table, project, None), from_version,
                                    start, to_version, end, limit, project.console)
        return read.to_arrow()

    def history(self, table: str, limit: int | None = None) -> list[HistoryEntry]:
        """`mirrorspec history`: the Delta commits of a mirrored table, newest first (only the
        latest `limit`), each with the landing files it applied and the rows it inserted,
        updated and deleted. No Spark unless delta-rs can't read the table."""
        from mirrorspec.context import inspection, reading

        check.text(table, "table", "a table's unique id or name")
        if limit is not None:
            check.positive(limit, "limit")
        project = self._project()
        return reading.read_history(inspection.resolve(table, project, None), limit,
                                    project.console)

    def export(self, table: str, to: str | os.PathLike[str], version: int | None = None,
               force: bool = False) -> Exported:
        """`mirrorspec export`: write a mirrored table (as of `version`, default the latest) to
        one file, `to` (FILE.parquet or FILE.csv: the suffix says the format), deletion
        vectors applied; never inside the warehouse or landing zone, and an existing file only
        with `force`. No Spark."""
        from mirrorspec.context.inspection import export_table

        check.text(table, "table", "a table's unique id or name")
        dest = str(check.path(to, "to"))
        check.whole(version, "export", "version", "a Delta version (>= 0)")
        force = check.flag(force, "force")
        return export_table(self._project(), table, dest, version, force)

    def maintain(self, tables: str | Sequence[str] | None = None,
                 select: str | Sequence[str] | None = None,
                 exclude: str | Sequence[str] | None = None,
                 state: str | os.PathLike[str] | None = None, purge: bool = True,
                 optimize: bool = True, vacuum: bool = True, retain_hours: float | None = None,
                 allow_short_retention: bool = False,
                 threads: int = DEFAULT_THREADS) -> MaintainResult:
        """`mirrorspec maintain`: apply each table's `deletion_vectors` switch, then purge
        deletion vectors, OPTIMIZE and VACUUM (each unless False) the tables named in `tables`
        and chosen by `select`/`exclude` (all by default), `threads` at once. A `retain_hours`
        below a table's retention raises UsageError unless `allow_short_retention`. Starts
        Spark. A failed table does not raise: check `.failed` or call `.raise_if_failed()`."""
        from mirrorspec.context.operations import maintain

        named = check.selectors(tables, "tables")
        select_, exclude_ = check.selectors(select, "select"), check.selectors(exclude, "exclude")
        state_path = check.state_folder(state)
        purge, optimize = check.flag(purge, "purge"), check.flag(optimize, "optimize")
        vacuum = check.flag(vacuum, "vacuum")
        allow_short = check.flag(allow_short_retention, "allow_short_retention")
        hours = check.hours(retain_hours, "retain_hours")
        threads = check.positive(threads, "threads")
        return maintain(self._project(), named, select_, exclude_, state_path, purge, optimize,
                        vacuum, hours, allow_short, threads)

    def reconcile(self, table: str, against: str | os.PathLike[str],
                  key: str | Sequence[str] | None = None, version: int | None = None,
                  timestamp: str | None = None, dbtable: str | None = None,
                  user_secret: str | None = None, password_secret: str | None = None,
                  source_format: str | None = None) -> Reconciliation:
        """`mirrorspec reconcile`: compare the mirrored `table` (a name in the project or a
        Delta folder) by key with `against`, a trusted snapshot of its source (a
        Delta/Parquet/CSV path, `source_format` when the path doesn't tell, or a jdbc: URL
        with `dbtable` and the names of the MIRRORSPEC_SECRET_* variables holding the user and
        password), as of `version` or `timestamp`. `key`: the key columns (default: those the
        engine recorded). Starts Spark. A difference does not raise: check `.equal`."""
        from mirrorspec.context.operations import reconcile

        check.text(table, "table", "a table's unique id or name, or a Delta folder")
        source = str(check.path(against, "against"))
        keys = check.key_columns(key)
        check.whole(version, "reconcile", "version", "a Delta version (>= 0)")
        check.text(timestamp, "timestamp", "a time (ISO 8601)", optional=True)
        for value, name in ((dbtable, "dbtable"), (user_secret, "user_secret"),
                            (password_secret, "password_secret")):
            check.text(value, name, "a name", optional=True)
        check.choice(source_format, "source_format", ("delta", "parquet", "csv"))
        project = self._project()
        return reconcile(lambda: project.load(say_inferred=False).plan, table, source,
                         key=keys, version=version, timestamp=timestamp, dbtable=dbtable,
                         user_secret=user_secret, password_secret=password_secret,
                         source_format=source_format, console=project.console,
                         warm_server=self.warm_server, api=True)

    def replay(self, table: str, landing_path: str | os.PathLike[str] | None = None,
               key: str | Sequence[str] | None = None,
               scratch: str | os.PathLike[str] | None = None) -> Replay:
        """`mirrorspec replay`: rebuild the mirrored `table` (a name in the project or a Delta
        folder) from the landing files it applied (in `landing_path` when they moved) and
        compare it by key with the live table; the rebuild goes to `scratch` (kept; empty or
        new) or a temporary folder (removed). Starts Spark. A difference does not raise: check
        `.equal`."""
        from mirrorspec.context.operations import replay

        check.text(table, "table", "a table's unique id or name, or a Delta folder")
        folder = check.path(landing_path, "landing_path", optional=True)
        keys = check.key_columns(key)
        work = check.path(scratch, "scratch", optional=True)
        project = self._project()
        return replay(project.load(say_inferred=False).plan, table, landing_path=folder,
                      key=keys, scratch=work, console=project.console,
                      warm_server=self.warm_server, api=True)

    def docs(self, select: str | Sequence[str] | None = None,
             exclude: str | Sequence[str] | None = None,
             state: str | os.PathLike[str] | None = None) -> DocsSite:
        """`mirrorspec docs generate`: compile the project and write the static site of its
        mirrored tables to target/docs/ (only the pages of the tables `select`/`exclude`
        choose, when given). No Spark. Returns the DocsSite (`.path`, `.index`, `.tables`)."""
        from mirrorspec.context.site import generate

        select_, exclude_ = check.selectors(select, "select"), check.selectors(exclude, "exclude")
        state_path = check.state_folder(state)
        return generate(self._project(), select_, exclude_, state_path)

    def lint(self, tables: str | Sequence[str] | None = None, strict: bool = False,
             with_warehouse: bool = True) -> LintResult:
        """`mirrorspec lint` of the project's landing zone (only `tables` when given:
        schema.table, names or globs), with the checks against its warehouse unless
        `with_warehouse=False`. No Spark. Findings do not raise: `result.failed(strict)` says
        whether the command line would exit 1."""
        from mirrorspec.context.lint import lint_project

        selected = check.selectors(tables, "tables")
        strict = check.flag(strict, "strict")
        with_warehouse = check.flag(with_warehouse, "with_warehouse")
        return lint_project(self._project().load(say_inferred=False).plan, selected,
                            with_warehouse, strict)

    def diff(self, state: str | os.PathLike[str] | None = None, base: str | None = None,
             allow_breaking: bool = False) -> PlanDiff:
        """`mirrorspec diff`: what the project's changes do to the mirrored tables, from
        `state` (a previous target/ or its plan.json) or `base` (a git revision, compiled in a
        temporary worktree), exactly one of them, to a fresh compile. No Spark. A breaking
        change does not raise: check `.blocking` (the command line exits 1 on it)."""
        from mirrorspec.context.diff import diff_project

        state_path = check.path(state, "state", optional=True)
        base_ref = check.text(base, "base", "a git revision", optional=True)
        allow_breaking = check.flag(allow_breaking, "allow_breaking")
        profiles = None if self.profiles_dir is None else Path(self.profiles_dir)
        return diff_project(self.path, None if state_path is None else Path(state_path),
                            base_ref, self.target, self.vars or None, profiles,
                            allow_breaking=allow_breaking, names=("state=…", "base=…"))


def lint_landing_zone(landing_zone: str | os.PathLike[str],
                      tables: str | Sequence[str] | None = None,
                      warehouse: str | os.PathLike[str] | None = None,
                      strict: bool = False) -> LintResult:
    """`mirrorspec lint`: check a local landing zone against Microsoft's open-mirroring
    landing-zone rules (only `tables` when given), and against the mirrored tables in
    `warehouse` when given. No Spark. A missing folder raises LandingZoneError; findings do
    not raise: `result.failed(strict)` says whether the command line would exit 1."""
    from mirrorspec.context.lint import lint

    folder = check.path(landing_zone, "landing_zone")
    selected = check.selectors(tables, "tables")
    return lint(str(folder), selected, check.path(warehouse, "warehouse", optional=True),
                check.flag(strict, "strict"))


def mirror_landing_zone(landing_zone: str | os.PathLike[str], warehouse: str | os.PathLike[str],
                        select: str | Sequence[str] | None = None, threads: int | None = None,
                        strict: bool = False, conf: Mapping[str, str] | None = None,
                        master: str = "local[*]",
                        on_event: EventCallback | None = None,
                        change_data_feed: bool | None = None) -> RunResults:
    """`mirrorspec mirror`: one pass applying a landing zone to Delta tables in `warehouse`
    (WAREHOUSE/<schema>/<table>), writing the monitoring JSON. Returns the same RunResults as
    `Project.run` (command "mirror"); a missing local landing zone raises LandingZoneError
    before Spark starts. `change_data_feed` switches Delta's change data feed on (or off)
    for every table (`mirror --change-data-feed`); None leaves each table as it is.
    `threads`: tables at once (default: twice the CPU cores, 2 to 8, as `mirror`)."""
    import time

    from mirrorspec.base.files import normalize
    from mirrorspec.context.mirror import prepare_mirror, table_results

    check.path(landing_zone, "landing_zone")
    check.path(warehouse, "warehouse")
    check.text(master, "master", "a Spark master URL such as 'local[*]'")
    select_ = check.selectors(select, "select")
    threads = check.optional_positive(threads, "threads")
    strict = check.flag(strict, "strict")
    feed = check.optional_flag(change_data_feed, "change_data_feed")
    spark_conf = check.string_mapping(conf, f"conf={conf!r}: give a mapping of Spark settings "
                                            "to values")
    console = CallbackConsole(check.callback(on_event))
    landing, wh = normalize(os.fspath(landing_zone)), normalize(os.fspath(warehouse))
    job = prepare_mirror(landing, wh, None, select=select_, threads=threads, strict=strict,
                         change_data_feed=feed, landing_zone_name="landing_zone")
    started = time.monotonic()
    results = RunResults(command="mirror", invocation_id=console.invocation_id,
                         args=safe_args(landing_zone=landing, warehouse=wh, select=select_,
                                        threads=job.options.threads, strict=strict,
                                        change_data_feed=feed, api=True))
    outcome = job.once(job.session(master, {str(k): str(v) for k, v in spark_conf.items()},
                                   console), console)
    results.results.extend(table_results(outcome))
    results.elapsed_time = time.monotonic() - started
    return results
