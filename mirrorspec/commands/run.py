"""`mirrorspec run`, `publish`, `build` and `retry`: execute the compiled plan on Spark.

The command bodies stay thin: parse the options, call the project context
(mirrorspec/context/project.py: compile or read `--plan`, threads, Spark, the run), print the
summary, exit 1 when a table failed. pyspark is imported only inside the calls, never at module
level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mirrorspec.artifacts.run_results import RunResults
from mirrorspec.base.console import Console
from mirrorspec.base.errors import FailedRun
from mirrorspec.commands.params import (get_console, lineage_options, metrics_host, metrics_port,
                                        plan_options, project_context, run_options,
                                        selection_options, start_lineage, watch_options)


def _run_args(params: dict[str, Any]) -> dict[str, Any]:
    """The run options of `params` as ProjectContext.run/build take them."""
    return dict(select=params["select"], exclude=params["exclude"], state=params["state_path"],
                threads=params.get("threads"), full_refresh=params.get("full_refresh", False),
                fail_fast=params.get("fail_fast", False))


def print_summary(console: Console, results: RunResults, target_dir: Path) -> None:
    """The end-of-run table and the one-line verdict."""
    from mirrorspec.spark.run import SUMMARY_COLUMNS, summary_rows

    if results.results:
        console.table(f"{results.command} results", SUMMARY_COLUMNS, summary_rows(results),
                      kind="run_summary")
    counts = results.counts()
    parts = [f"{counts['success']} OK"]
    if counts["waiting"]:
        parts.append(f"{counts['waiting']} WAITING")
    if counts["not_started"]:
        parts.append(f"{counts['not_started']} NOT STARTED")
    parts.append(f"{counts['error']} ERROR")
    if counts["skipped"]:
        parts.append(f"{counts['skipped']} SKIPPED")
    console.result(f"Done. {', '.join(parts)} of {len(results.results)} table(s) in "
                   f"{results.elapsed_time:.1f}s; results in {target_dir / 'run_results.json'}",
                   counts=counts, elapsed_time=round(results.elapsed_time, 3))


def _raise_if_failed(results: RunResults) -> None:
    if results.failed:
        failed = [r.unique_id for r in results.results if r.failed]
        raise FailedRun(f"{len(failed)} table(s) failed: {', '.join(failed)}",
                        hint="see the errors above; the other tables ran")


def _raise_if_build_failed(results: RunResults, tests: Any) -> None:
    problems = []
    if results.failed:
        problems.append(f"{sum(r.failed for r in results.results)} table(s) failed to run")
    if tests is not None and tests.failed:
        problems.append(tests.verdict())
    if problems:
        raise FailedRun("; ".join(problems), hint="see the errors above")


@click.command("run")
@plan_options
@selection_options
@run_options
@click.option("--watch", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="Keep going: a pass (publish + mirror) every SECONDS on one warm Spark "
                   "session, until Ctrl-C or SIGTERM.")
@metrics_port
@metrics_host
@lineage_options
@watch_options
def run(watch: float | None = None, metrics_port: int | None = None,
        metrics_host: str = "127.0.0.1", heartbeat_every: int = 10,
        heartbeat_file: str | None = None, **params: Any) -> None:
    """Publish the feeds and mirror the landing zone into Delta tables."""
    from mirrorspec.context.lineage import send_run_pass
    from mirrorspec.operate.metrics import check_metrics_option

    check_metrics_option(metrics_port, watch)
    console = get_console()
    lineage = start_lineage(console, params)
    project = project_context(params, console)
    try:
        if watch is None:
            ctx, results = project.run(**_run_args(params))
            print_summary(console, results, ctx.target_dir)
            send_run_pass(lineage, ctx.plan, results)
            project.refresh_site(ctx)
        else:
            from mirrorspec.context.watch import WatchOptions, stop_on_signals

            stop = stop_on_signals(console, "the current pass")
            results = _RunPass(project, _run_args(params), lineage).watch(
                WatchOptions(watch, heartbeat_every, heartbeat_file, metrics_port,
                             metrics_host), stop)
    finally:
        if lineage is not None:
            lineage.close()
    _raise_if_failed(results)


class _RunPass:
    """One `run --watch` pass: the run, its summary, lineage and metrics; --full-refresh
    applies to the first pass only. The loop itself is mirrorspec/context/watch.py's."""

    def __init__(self, project: Any, args: dict[str, Any], lineage: Any):
        self.project, self.args, self.lineage = project, args, lineage

    def watch(self, options: Any, stop: Any) -> RunResults:
        from mirrorspec.context.watch import watch

        self.seconds = options.interval
        return watch(self, options, stop, self.project.console)

    def __call__(self, passes: int, _started: float, warmer: Any, metrics: Any) -> Any:
        from mirrorspec.artifacts.run_results import fabric_status
        from mirrorspec.context.lineage import send_run_pass
        from mirrorspec.context.watch import PassReport
        from mirrorspec.progress.publish import kafka_offset_rows

        ctx, results = self.project.run(**self.args, warmer=warmer)
        print_summary(self.project.console, results, ctx.target_dir)
        send_run_pass(self.lineage, ctx.plan, results)
        if metrics is not None:
            folders = {t.unique_id: t for t in ctx.plan.tables}
            for r in results.results:
                table = folders.get(r.unique_id)
                metrics.observe(r.unique_id, fabric_status(r), len(r.files_applied),
                                r.rows_inserted, r.rows_updated, r.rows_deleted,
                                table and table.landing_path, table and table.delta_path)
            metrics.observe_kafka(kafka_offset_rows(ctx.plan))
        self.args = {**self.args, "full_refresh": False}
        applied = sum(len(r.files_applied) for r in results.results)
        line = (f"pass {passes} done; next in {self.seconds:g}s" if applied or passes == 1
                else None)
        return PassReport(results, applied, line, {"passes": passes},
                          heartbeat_path=str(ctx.target_dir / "heartbeat.json"))


@click.command("publish")
@plan_options
@selection_options
@run_options
def publish(**params: Any) -> None:
    """Only publish the feeds into the landing zone (Fabric's mirroring service takes it on)."""
    console = get_console()
    project = project_context(params, console)
    ctx, results = project.run(**_run_args(params), command="publish")
    print_summary(console, results, ctx.target_dir)
    project.refresh_site(ctx)
    _raise_if_failed(results)


@click.command("build")
@plan_options
@selection_options
@run_options
def build(**params: Any) -> None:
    """`run`, then `test` the tables that ran (tables that failed are not tested)."""
    console = get_console()
    project = project_context(params, console)
    built = project.build(**_run_args(params), on_run=lambda ctx, results: print_summary(
        console, results, ctx.target_dir))
    project.refresh_site(built.context)
    _raise_if_build_failed(built.results, built.tests)


@click.command("retry")
@plan_options
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Tables processed concurrently (default: as the last run).")
def retry(threads: int | None, **params: Any) -> None:
    """Run again the tables that ended ERROR or SKIPPED in the last run_results.json, with
    the options of that run (`run`, `publish` or `build`)."""
    console = get_console()
    project = project_context(params, console)
    done = project.retry(threads, on_run=lambda ctx, results: print_summary(
        console, results, ctx.target_dir))
    if done.results is None:
        return
    project.refresh_site(done.context)
    if done.last.command == "build":
        _raise_if_build_failed(done.results, done.tests)
    else:
        _raise_if_failed(done.results)


COMMANDS = [run, publish, build, retry]
