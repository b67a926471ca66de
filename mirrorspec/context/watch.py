"""`--watch`: the one loop of `run --watch` and `mirror --watch`.

Pass after pass until `stop` is set: each pass is the command's own (`run`: compile, publish,
mirror; `mirror`: one engine pass with backoff), then the loop does what every watch does: the
/metrics pass time, the heartbeat file and 'alive' line (mirrorspec/operate/heartbeat.py), the
pass line when the pass says it has news, the warm snapshot reader
(mirrorspec/spark/mirror/warm.py) closed at the end.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class PassReport:
    """What one pass did, as the loop needs it."""

    result: Any                     # the pass's own result (RunResults, MirrorResult)
    applied: int                    # landing files applied
    line: str | None = None         # the pass line to print (None: quiet unless alive)
    fields: dict[str, Any] = field(default_factory=dict)  # the pass line's event fields
    heartbeat_path: str | None = None  # the heartbeat file when the command gave none


@dataclass
class WatchOptions:
    """--watch SECONDS and the options that go with it."""

    interval: float
    heartbeat_every: int = 10
    heartbeat_file: str | None = None
    metrics_port: int | None = None
    metrics_host: str = "127.0.0.1"


def stop_on_signals(console: Any, what: str) -> threading.Event:
    """A threading.Event set by SIGINT/SIGTERM (for --watch loops and `serve`); `what` says
    what finishes before the command stops."""
    import signal

    stop = threading.Event()

    def request_stop(signum, _frame):
        console.info(f"signal {signum}: stopping after {what}")
        stop.set()
    signal.signal(signal.SIGINT, request_stop)
    signal.signal(signal.SIGTERM, request_stop)
    return stop


def watch(one_pass: Callable[[int, float, Any, Any], PassReport], options: WatchOptions,
          stop: threading.Event, console: Any) -> Any:
    """Run `one_pass(pass number, start time, warmer, metrics)` every `options.interval`
    seconds until `stop`; returns the last pass's result. The pass observes its tables on
    `metrics` (None without --metrics-port) and hands `warmer` the tables it committed."""
    from mirrorspec.operate.heartbeat import Heartbeat
    from mirrorspec.operate.metrics import WatchMetrics
    from mirrorspec.spark.mirror.warm import SnapshotWarmer

    metrics = (WatchMetrics(options.metrics_port, console, options.metrics_host)
               if options.metrics_port is not None else None)
    warmer = SnapshotWarmer()
    heartbeat = None
    passes = 0
    try:
        while True:
            started = time.monotonic()
            report = one_pass(passes + 1, started, warmer, metrics)
            passes += 1
            if metrics is not None:
                metrics.end_pass(time.monotonic() - started)
            if heartbeat is None:
                heartbeat = Heartbeat(options.heartbeat_file or report.heartbeat_path,
                                      options.heartbeat_every)
            alive = heartbeat.after_pass(passes, report.applied, time.time())
            if report.line is not None:
                console.info(report.line, **report.fields)
            elif alive:
                console.info(alive, passes=passes, heartbeat=heartbeat.path)
            if stop.wait(options.interval):
                return report.result
    finally:
        warmer.close()
        if metrics is not None:
            metrics.close()
