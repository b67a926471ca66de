"""`mirrorspec run`, `publish` and `build`: execute the compiled plan on Spark.

The command bodies stay thin: get the plan (compile the project, or read `--plan`), hand it to
`mirrorspec.spark.run.run_plan`, print the summary, exit 1 when a table failed. pyspark is
imported only inside the commands, never at module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from mirrorspec.commands.params import (get_console, lineage_options, metrics_host, metrics_port,
                                        plan_options, resolve_table_threads, run_options,
                                        start_lineage, watch_options, selection_options,
                                        stop_on_signals)
from mirrorspec.compile import PlanContext, load_plan_context
from mirrorspec.base.console import Console
from mirrorspec.base.errors import FailedRun
from mirrorspec.load.project import parse_vars
from mirrorspec.artifacts.run_results import RunResults, safe_args


def execute_run(console: Console, command: str, publish_only: bool, params: dict[str, Any],
                warmer=None) -> tuple[PlanContext, RunResults]:
    """Compile or read the plan, run it, print the summary (shared by run, publish, build)."""
    from mirrorspec.operate.preflight import require_planned_landing_zone

    ctx = load_plan_context(params["project_dir"], params["target"], params["vars_text"],
                            params["profiles_dir"], params["plan_path"], console)
    require_planned_landing_zone(ctx.plan, console)  # a mistyped landing_zone, before Spark
    from mirrorspec.spark.run import run_plan

    # resolved once, in place: `build` tests with the same number of threads
    params["threads"] = resolve_table_threads(params.get("threads"), ctx.plan.threads)
    args = safe_args(project_dir=params["project_dir"], target=params["target"],
                     vars=parse_vars(params["vars_text"]) or None, plan=params["plan_path"],
                     select=params["select"], exclude=params["exclude"],
                     state=params["state_path"], threads=params["threads"],
                     full_refresh=params.get("full_refresh", False),
                     fail_fast=params.get("fail_fast", False))
    results = run_plan(ctx.plan, select=params["select"], exclude=params["exclude"],
                       threads=params["threads"], full_refresh=params.get("full_refresh", False),
                       publish_only=publish_only, state_path=params["state_path"],
                       console=console, target_dir=ctx.target_dir, args=args, command=command,
                       warmer=warmer, fail_fast=params.get("fail_fast", False),
                       warm_server=True)
    print_summary(console, results, ctx.target_dir)
    return ctx, results


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


def _refresh_site(console: Console, ctx: PlanContext) -> None:
    from mirrorspec.docsite.build import refresh_site

    refresh_site(console, ctx.plan, ctx.target_dir)


def _raise_if_failed(results: RunResults) -> None:
    if results.failed:
        failed = [r.unique_id for r in results.results if r.failed]
        raise FailedRun(f"{len(failed)} table(s) failed: {', '.join(failed)}",
                        hint="see the errors above; the other tables ran")


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
    from mirrorspec.operate.metrics import check_metrics_option

    check_metrics_option(metrics_port, watch)
    console = get_console()
    lineage = start_lineage(console, params)
    try:
        if watch is None:
            ctx, results = execute_run(console, "run", False, params)
            _send_lineage(lineage, ctx, results)
            _refresh_site(console, ctx)
        else:
            results = _watch(console, watch, params, metrics_port, lineage, metrics_host,
                             heartbeat_every, heartbeat_file)
    finally:
        if lineage is not None:
            lineage.close()
    _raise_if_failed(results)


def _send_lineage(lineage, ctx: PlanContext, results: RunResults) -> None:
    """OpenLineage run events of one pass (mirrorspec/observe/lineage.py)."""
    if lineage is not None:
        from mirrorspec.observe.samples import samples_from_run

        lineage.emit_pass(samples_from_run(ctx.plan, results))


def _watch(console: Console, seconds: float, params: dict[str, Any],
           port: int | None = None, lineage=None, host: str = "127.0.0.1",
           heartbeat_every: int = 10, heartbeat_file: str | None = None) -> RunResults:
    """`run --watch`: passes until a signal; --full-refresh applies to the first pass only.
    A heartbeat file is rewritten after every pass and an 'alive' line printed every
    `heartbeat_every` idle passes (mirrorspec/operate/heartbeat.py)."""
    import time

    from mirrorspec.operate.heartbeat import Heartbeat
    from mirrorspec.operate.metrics import WatchMetrics
    from mirrorspec.progress.publish import kafka_offset_rows
    from mirrorspec.artifacts.run_results import fabric_status
    from mirrorspec.spark.mirror.warm import SnapshotWarmer

    stop = stop_on_signals(console, "the current pass")
    passes = 0
    heartbeat = None
    # the next pass finds the new versions' state ready (mirrorspec/spark/mirror/warm.py)
    warmer = SnapshotWarmer()
    metrics = WatchMetrics(port, console, host) if port is not None else None
    try:
        while True:
            started = time.monotonic()
            ctx, results = execute_run(console, "run", False, params, warmer=warmer)
            _send_lineage(lineage, ctx, results)
            if metrics is not None:
                folders = {t.unique_id: t for t in ctx.plan.tables}
                for r in results.results:
                    table = folders.get(r.unique_id)
                    metrics.observe(r.unique_id, fabric_status(r), len(r.files_applied),
                                    r.rows_inserted, r.rows_updated, r.rows_deleted,
                                    table and table.landing_path, table and table.delta_path)
                metrics.observe_kafka(kafka_offset_rows(ctx.plan))
                metrics.end_pass(time.monotonic() - started)
            params = {**params, "full_refresh": False}
            passes += 1
            if heartbeat is None:
                heartbeat = Heartbeat(heartbeat_file or str(ctx.target_dir / "heartbeat.json"),
                                      heartbeat_every)
            applied = sum(len(r.files_applied) for r in results.results)
            alive = heartbeat.after_pass(passes, applied, time.time())
            if applied or passes == 1:
                console.info(f"pass {passes} done; next in {seconds:g}s", passes=passes)
            elif alive:
                console.info(alive, passes=passes, heartbeat=heartbeat.path)
            if stop.wait(seconds):
                return results
    finally:
        warmer.close()
        if metrics is not None:
            metrics.close()


@click.command("publish")
@plan_options
@selection_options
@run_options
def publish(**params: Any) -> None:
    """Only publish the feeds into the landing zone (Fabric's mirroring service takes it on)."""
    console = get_console()
    ctx, results = execute_run(console, "publish", True, params)
    _refresh_site(console, ctx)
    _raise_if_failed(results)


@click.command("build")
@plan_options
@selection_options
@run_options
def build(**params: Any) -> None:
    """`run`, then `test` the tables that ran (tables that failed are not tested)."""
    from mirrorspec.spark.ops.datatests import execute_tests

    console = get_console()
    ctx, results = execute_run(console, "build", False, params)
    skip = results.tests_to_skip()
    ran = [r.unique_id for r in results.results]
    test_results = (execute_tests(console, ctx, ran, skip=skip, threads=params["threads"])
                    if ran else None)
    _refresh_site(console, ctx)
    problems = []
    if results.failed:
        problems.append(f"{sum(r.failed for r in results.results)} table(s) failed to run")
    if test_results is not None and test_results.failed:
        problems.append(test_results.verdict())
    if problems:
        raise FailedRun("; ".join(problems), hint="see the errors above")


@click.command("retry")
@plan_options
@click.option("--threads", type=click.IntRange(min=1), default=None,
              help="Tables processed concurrently (default: as the last run).")
def retry(threads: int | None, **params: Any) -> None:
    """Run again the tables that ended ERROR or SKIPPED in the last run_results.json, with
    the options of that run (`run`, `publish` or `build`)."""
    from mirrorspec.operate.retry import retry_selection

    console = get_console()
    ctx = load_plan_context(params["project_dir"], params["target"], params["vars_text"],
                            params["profiles_dir"], params["plan_path"])
    last = retry_selection(ctx.target_dir)
    if not last.select:
        console.result(last.nothing_to_do, retried=0)
        return
    console.info(f"retrying `{last.command}` for {len(last.select)} table(s): "
                 + ", ".join(s.removeprefix("id:") for s in last.select))
    params = {**params, "select": last.select, "exclude": (), "state_path": None,
              "threads": threads or last.threads, "full_refresh": last.full_refresh,
              "fail_fast": last.fail_fast}
    if last.command == "build":
        build.callback(**params)
        return
    ctx, results = execute_run(console, last.command, last.command == "publish", params)
    _refresh_site(console, ctx)
    _raise_if_failed(results)


COMMANDS = [run, publish, build, retry]
