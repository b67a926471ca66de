"""`mirror`: a landing zone applied to Delta tables, once or watching — for `mirrorspec mirror`
and `mirrorspec.api.mirror_landing_zone`.

`prepare_mirror` resolves where (the given folders over the project's), how many tables at once
(`threads.resolve_table_threads`) and each table's change data feed switch, and checks a local
landing zone before Spark starts. `MirrorJob.session` picks the Spark session, `once` runs one
pass, `watch` runs the one --watch loop (mirrorspec/context/watch.py) with backoff of failing
tables and once-only messages (mirrorspec/operate/watch.py).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Sequence

from mirrorspec.context.threads import resolve_table_threads
from mirrorspec.context.watch import PassReport, WatchOptions, watch
from mirrorspec.openmirroring.mirroring import PROCESSED_RETENTION_DAYS


@dataclass
class MirrorJob:
    """Where and how to mirror; `options` is the engine's MirrorOptions."""

    landing_zone: str
    warehouse: str
    plan: Any           # the project's plan, or None
    options: Any

    def session(self, master: str | None, conf: dict[str, str], console: Any):
        """The Spark session: the project's settings (with --master/--conf over them) or a
        local one; the warm Spark server (Spark Connect) only for local folders, which are all
        it can reach."""
        from mirrorspec.base.files import is_remote
        from mirrorspec.context.sessions import start_spark

        return start_spark(self.plan, master, conf, console,
                           warm=not (is_remote(self.landing_zone) or is_remote(self.warehouse)))

    def once(self, spark: Any, console: Any, lineage: Any = None):
        """One pass; table_started/finished and progress events; the engine's MirrorResult."""
        from mirrorspec.context.lineage import send_mirror_pass
        from mirrorspec.spark.mirror.engine import mirror_landing_zone

        result = mirror_landing_zone(spark, self.landing_zone, self.warehouse, self.options,
                                     console, progress=True)
        send_mirror_pass(lineage, result)
        return result

    def watch(self, spark: Any, console: Any, options: WatchOptions, stop: threading.Event,
              lineage: Any = None):
        """Pass after pass until `stop`: a failed table backs off (retried at once when its
        folder changes), each message is printed once while nothing about its table changes,
        and a pass line appears only when a pass applied files or a table's outcome changed."""
        return watch(_MirrorPass(self, spark, console, stop, lineage, options.interval),
                     options, stop, console)


def prepare_mirror(landing_zone: str | None, warehouse: str | None, plan: Any, *,
                   select: Sequence[str] = (), threads: int | None = None, strict: bool = False,
                   retention_days: float = PROCESSED_RETENTION_DAYS, settle_seconds: float = 0,
                   change_data_feed: bool | None = None,
                   landing_zone_name: str = "--landing-zone") -> MirrorJob:
    """The job for the given folders (else the plan's), the landing zone checked before Spark
    (`landing_zone_name` is how the door calls it). `threads` None: the profile output's
    `threads`, else the default; `change_data_feed` None: the project's per-table switches."""
    from mirrorspec.operate.preflight import require_landing_zone

    landing_zone = landing_zone or plan.landing_zone
    warehouse = warehouse or plan.warehouse
    require_landing_zone(landing_zone, landing_zone_name)
    from mirrorspec.spark.mirror.engine import MirrorOptions

    threads = resolve_table_threads(threads, plan.threads if plan is not None else None)
    # the flag wins over the project's switches, which the plan holds per table
    feeds = () if plan is None or change_data_feed is not None else tuple(
        (t.unique_id, t.change_data_feed) for t in plan.tables)
    options = MirrorOptions(threads=threads, strict=strict, retention_days=retention_days,
                            select=tuple(select), settle_seconds=settle_seconds,
                            change_data_feed=change_data_feed, feeds=feeds)
    return MirrorJob(landing_zone, warehouse, plan, options)


def table_results(outcome: Any) -> list[Any]:
    """A pass's tables as run_results.json's entries (`mirror_landing_zone`'s RunResults)."""
    from mirrorspec.artifacts.run_results import TableRunResult
    from mirrorspec.spark.run import apply_outcome

    results = []
    for table in outcome.tables:
        result = TableRunResult(table.unique_id, execution_time=float(table.seconds or 0.0))
        apply_outcome(result, table)
        results.append(result)
    return results


def outcome_key(t) -> tuple:
    """What `--watch` compares pass to pass: (status, error text, files applied)."""
    return t.status, (t.error or {}).get("message"), tuple(t.files_applied)


class _MirrorPass:
    """One `mirror --watch` pass, with what it keeps between passes (backoff, once-only
    messages, the landing zone's filesystem)."""

    def __init__(self, job: MirrorJob, spark: Any, console: Any, stop: threading.Event,
                 lineage: Any, interval: float):
        from mirrorspec.operate.watch import Backoff, QuietConsole
        from mirrorspec.spark.platform import hadoop_fs

        self.job, self.spark, self.stop, self.lineage = job, spark, stop, lineage
        self.backoff = Backoff(interval)
        self.quiet = QuietConsole(console)
        self.lfs = hadoop_fs.filesystem_for(job.landing_zone, spark)

    def __call__(self, passes: int, now: float, warmer: Any, metrics: Any) -> PassReport:
        from mirrorspec.context.lineage import send_mirror_pass
        from mirrorspec.landing.layout import folder_signature
        from mirrorspec.spark.mirror.engine import mirror_landing_zone

        backoff, quiet, lfs = self.backoff, self.quiet, self.lfs
        signatures: dict[str, tuple] = {}

        def skip(target) -> bool:
            if target.unique_id not in backoff.failing:
                return False
            signatures[target.unique_id] = folder_signature(lfs, target.landing_path)
            return not backoff.due(target.unique_id, now, signatures[target.unique_id])

        warmer.before_pass()  # warming waits while files are applied
        result = mirror_landing_zone(
            self.spark, self.job.landing_zone, self.job.warehouse, self.job.options, quiet,
            stop=self.stop, skip=skip, progress=True,
            news=lambda t: quiet.news(t.unique_id, outcome_key(t)))
        if metrics is not None:
            for t in result.tables:
                metrics.observe(t.unique_id, t.status, len(t.files_applied), t.rows_inserted,
                                t.rows_updated, t.rows_deleted, t.landing_path, t.delta_path)
        send_mirror_pass(self.lineage, result)
        # the next pass finds the new versions' state ready (mirrorspec/spark/mirror/warm.py)
        warmer.after_pass(self.spark, (t.delta_path for t in result.tables if t.files_applied))
        changed = self._record_outcomes(result, signatures, now)
        applied = sum(len(t.files_applied) for t in result.tables)
        if not (applied or changed):
            return PassReport(result, applied)
        failed = sorted(backoff.failing)
        return PassReport(result, applied,
                          f"pass {passes}: {applied} file(s) applied"
                          + (f"; failing (backing off): {', '.join(failed)}" if failed else ""),
                          {"passes": passes, "applied": applied, "failed": failed})

    def _record_outcomes(self, result, signatures, now) -> bool:
        """Feed a pass's outcomes to the backoff and the quiet console; True if one changed."""
        from mirrorspec.landing.layout import folder_signature

        outcomes = {}
        for t in result.tables:
            if t.status == "Failed":
                signature = (signatures.get(t.unique_id)
                             or folder_signature(self.lfs, t.landing_path))
                self.backoff.record(t.unique_id, True, now, signature)
            else:
                self.backoff.record(t.unique_id, False, now, None)
            outcomes[t.unique_id] = outcome_key(t)
        return self.quiet.end_pass(outcomes)
