"""Progress you can see while Spark works, one class for every long command.

Items done / running / failed (tables for `run`, `mirror` and `maintain`; phases for `replay` and
`reconcile`), the tasks of Spark's running stages (`activity.py`, its status tracker) and rows/s:
a rich bar on a terminal; in a pipe or a log file a plain `[12:00:05] …` line every `interval`
seconds while work runs; a `progress` event under --log-format json. Steps (a table's phases)
print a line when they start and one when they end, with what they did and their seconds.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from mirrorspec.base.console import Console, WrappingConsole
from mirrorspec.spark.platform import activity

# an outcome's word in the per-table line, and the console event kind that colours it
LABELS = {"success": "OK", "error": "ERROR", "waiting": "WAITING", "not_started": "NOT STARTED",
          "skipped": "SKIP"}
KINDS = {"error": "error", "waiting": "warning", "not_started": "info"}


def table_line(index: int, total: int, status: str, unique_id: str, details: str,
               seconds: float) -> str:
    """`3 of 4 OK sales.orders: <details> in 1.2s`: the line of a finished table (dbt style)."""
    label = LABELS.get(status, status.upper())
    return f"{index} of {total} {label} {unique_id}: {details} in {seconds:.1f}s"


class Step:
    """A running step: what it did (said in its closing line) and its figures (JSON fields)."""

    def __init__(self, did: str, progress: "LiveProgress | None" = None,
                 item: str | None = None, step: str = "", doing: str = ""):
        self.did = did
        self.fields: dict[str, Any] = {}
        self._progress, self._item, self._step, self._doing = progress, item, step, doing
        self._began = time.monotonic()
        self._closed = False

    def says(self, did: str, **fields: Any) -> None:
        """What the step did (`read its history: 3 applied file(s)`), with typed figures."""
        self.did = did
        self.fields.update(fields)

    def done(self, did: str | None = None, **fields: Any) -> None:
        """Close the step: its line with what it did and its seconds (once)."""
        if did is not None:
            self.says(did, **fields)
        if self._progress is None or self._closed:
            return
        self._closed = True
        self._progress.step_finished(self._item, self._step, self._doing, self.did,
                                     time.monotonic() - self._began, **self.fields)


class LiveProgress:
    """Items done / running / failed, stage tasks and rows/s, refreshed every second from
    Spark's status tracker; see the module docstring.

    `rates`: show rows/s (commands that move rows). `steps`: the items are the command's own
    phases (`step` counts them), not tables. `wait_for_work`: no bar and no periodic line until
    a table announces files to apply (`mirror --watch`: an idle pass stays silent).
    `tracker`: Spark's status tracker when no session is given (tests pass a fake one)."""

    def __init__(self, console: Console, total: int, spark: Any = None, interval: float = 10.0,
                 rates: bool = True, steps: bool = False, wait_for_work: bool = False,
                 tracker: Any = None):
        self.console = console
        self.total = total
        self.done = 0
        self.failed = 0
        self.running: set[str] = set()
        self.rows = 0       # rows of finished items (changed + published)
        self.rows_seen = 0  # rows announced while items work (read for a MERGE, published)
        self.tasks = (0, 0)
        self.t0 = time.monotonic()
        self.lock = threading.RLock()
        self.interval = interval
        self.rates = rates
        self.steps = steps
        self.working = not wait_for_work
        self._task = None
        self._progress = None
        self._tracker = tracker if tracker is not None else self._tracker_of(spark)
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._last_line = time.monotonic()

    @staticmethod
    def _tracker_of(spark: Any) -> Any:
        return activity.stage_tracker(spark) if spark is not None else None

    def attach(self, spark: Any) -> None:
        """Follow `spark`'s stages from now on (a session started after the progress)."""
        self._tracker = self._tracker_of(spark)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def start(self) -> None:
        """Show the bar (unless waiting for work) and start refreshing it every second."""
        if self._poller is not None:
            return
        self._stop.clear()
        self._last_line = time.monotonic()
        if self.working:
            self._show_bar()
        self._poller = threading.Thread(target=self._poll, name="mirrorspec-progress",
                                        daemon=True)
        self._poller.start()

    def stop(self) -> None:
        """Stop refreshing and take the bar away (again: nothing)."""
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
            self._poller = None
        with self.lock:
            if self._progress is not None:
                self._progress.stop()
                self._progress = None

    def add_total(self, more: int) -> None:
        """`more` items than announced (a step only some runs need)."""
        with self.lock:
            self.total += more
            if self._progress is not None:
                self._progress.update(self._task, total=self.total)

    def _show_bar(self) -> None:
        with self.lock:
            if self._progress is None and self.console.is_terminal() and not self._stop.is_set():
                self._progress = self.console.progress()
                if self._progress is not None:
                    self._progress.start()
                    self._task = self._progress.add_task(self.description(), total=self.total)

    # --- counting ------------------------------------------------------------------------------
    def counting(self, console: Console) -> Console:
        """`console`, also counting the rows the publisher and the engine announce."""
        return CountingConsole(console, self)

    def saw_rows(self, rows: int) -> None:
        with self.lock:
            self.rows_seen += rows

    def saw_work(self) -> None:
        """A table announced files to apply: from now on the bar and the periodic lines show."""
        if not self.working:
            self.working = True
            self._last_line = time.monotonic()
            self._show_bar()

    def rows_per_second(self) -> float:
        elapsed = time.monotonic() - self.t0
        return max(self.rows, self.rows_seen) / elapsed if elapsed > 0 else 0.0

    def description(self) -> str:
        """The bar's text (and the periodic line's)."""
        done, total = self.tasks
        tasks = f", stage tasks {done}/{total}" if total else ""
        rate = f", {self.rows_per_second():,.0f} rows/s" if self.rates else ""
        if self.steps:
            now = ", ".join(sorted(self.running)) or "between steps"
            return f"{now} ({self.done} of {self.total} steps done{tasks}{rate})"
        return (f"{self.done} of {self.total} done, {len(self.running)} running, "
                f"{self.failed} failed{tasks}{rate}")

    def counts(self) -> dict[str, Any]:
        """The figures of a `progress` event (typed)."""
        fields: dict[str, Any] = {"done": self.done, "running": len(self.running),
                                  "failed": self.failed, "total": self.total,
                                  "tasks_done": self.tasks[0], "tasks_total": self.tasks[1]}
        if self.rates:
            fields["rows_per_second"] = round(self.rows_per_second(), 1)
        if self.steps:
            fields["steps"] = sorted(self.running)
        return fields

    def _refresh(self) -> None:
        if self._progress is not None:
            self._progress.update(self._task, completed=self.done,
                                  description=self.description())

    def poll_once(self) -> bool:
        """One tick of the poller: the stage tasks into the bar, and the plain line when one is
        due (no bar, work running, `interval` seconds since the last); True if it printed."""
        self.tasks = activity.stage_tasks(self._tracker)
        with self.lock:
            self._refresh()
            due = (self._progress is None and self.working and bool(self.running)
                   and time.monotonic() - self._last_line >= self.interval)
            if due:
                self._last_line = time.monotonic()
                message, fields = self.description(), self.counts()
        if due:
            self.console.progress_line(message, **fields)
        return due

    def _poll(self) -> None:
        while not self._stop.wait(1.0):
            self.poll_once()

    # --- items -------------------------------------------------------------------------------
    def started(self, unique_id: str) -> None:
        """A table starts (a `table_started` event under JSON)."""
        with self.lock:
            self.running.add(unique_id)
            self._refresh()
        if self.console.log_format == "json":
            self.console.event("table_started", f"START {unique_id}", table=unique_id,
                               running=len(self.running), done=self.done, failed=self.failed,
                               total=self.total)

    def finish(self, unique_id: str, failed: bool = False, rows: int = 0) -> tuple[int, float]:
        """Count an item done: (its number among the finished, rows/s now)."""
        with self.lock:
            self.running.discard(unique_id)
            self.done += 1
            self.failed += int(failed)
            self.rows += rows
            index, rate = self.done, self.rows_per_second()
            self._refresh()
        return index, rate

    def table_finished(self, text: str, status: str, unique_id: str, **fields: Any) -> None:
        """The line of a finished table: coloured by `status` for people, a `table_finished`
        event with the counts under JSON."""
        kind = KINDS.get(status, "success") if self.console.log_format == "text" \
            else "table_finished"
        self.console.event(kind, text, table=unique_id, status=status, done=self.done,
                           running=len(self.running), failed=self.failed, total=self.total,
                           **fields)

    # --- steps ---------------------------------------------------------------------------------
    def step_started(self, item: str | None, step: str, doing: str) -> None:
        """`item: doing…` (a `step_started` event under JSON)."""
        label = f"{item}: {doing}" if item else doing
        if self.steps:
            with self.lock:
                self.running.add(doing)
                self._refresh()
        self._say("step_started", f"{label}…", table=item, step=step)

    def step_finished(self, item: str | None, step: str, doing: str, did: str, seconds: float,
                      **fields: Any) -> None:
        """`item: did (1.2s)` (a `step_finished` event with `seconds` and the figures)."""
        if self.steps:
            self.finish(doing)
        label = f"{item}: {did}" if item else did
        self._say("step_finished", f"{label} ({seconds:.1f}s)", table=item, step=step,
                  seconds=round(seconds, 3), **fields)

    def begin(self, item: str | None, step: str, doing: str) -> "Step":
        """A step starts now (its opening line); `Step.done(...)` closes it."""
        self.step_started(item, step, doing)
        return Step(f"{doing}: done", self, item, step, doing)

    def _say(self, kind: str, message: str, **fields: Any) -> None:
        """A step's line: an event under JSON; on a terminal a line above the bar; in a pipe a
        timestamped line (nothing with --quiet). The next periodic line comes `interval`
        seconds after it: that line is for silences."""
        self._last_line = time.monotonic()
        if self.console.log_format == "json":
            self.console.event(kind, message, **{k: v for k, v in fields.items()
                                                 if v is not None})
        elif self.console.is_terminal():
            self.console.info(message)
        else:
            self.console.progress_line(message)


def begin(progress: LiveProgress | None, item: str | None, name: str, doing: str) -> Step:
    """`progress.begin(...)`, or a silent step when there is no progress to report to."""
    return progress.begin(item, name, doing) if progress is not None else Step(doing)


class CountingConsole(WrappingConsole):
    """The console the tables report through, counting the rows announced by the publisher
    (`rows` with `sequence`) and by the engine (`rows` with `files`) for rows/s; a table that
    announces files to apply (`files`) wakes a progress that waits for work."""

    def __init__(self, console: Console, progress: LiveProgress):
        super().__init__(console)
        self._live = progress

    def event(self, kind: str, message: str, **fields: Any) -> None:
        rows, files = fields.get("rows"), fields.get("files")
        if isinstance(rows, int) and ("files" in fields or "sequence" in fields):
            self._live.saw_rows(rows)
        if isinstance(files, int) and files > 0:
            self._live.saw_work()
        self._console.event(kind, message, **fields)
