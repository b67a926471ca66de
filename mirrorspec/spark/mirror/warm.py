"""Keep a watched table's Delta snapshot warm between `--watch` passes.

Delta rebuilds a table's state (its list of files) from the log the first time a new version is
used: three Spark jobs, ~1 s on a laptop, which the next MERGE would otherwise pay while a new
file waits to become visible. Right after a pass commits, a background thread asks for the new
version's details (`DESCRIBE DETAIL`, which needs that state), so Delta's log cache holds it
ready when the next file lands. Public SQL only, so it also works over Spark Connect.

Warming is idle-time work: while a pass runs, the thread starts nothing new (a file landing in
one table must not wait behind the warming of fifty others that a first load just committed),
and the tables the latest pass committed to are warmed first.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Iterable

from mirrorspec.spark.platform import delta

_log = logging.getLogger(__name__)


def warm_snapshot(spark: Any, delta_path: str) -> None:
    """Build and cache the state of the table's latest version (errors are only logged: the
    next pass builds it itself)."""
    try:
        delta.describe(spark, delta_path)
    except Exception as exc:  # noqa: BLE001 - an optimisation; the next pass does the work anyway
        _log.debug("could not warm %s: %s", delta_path, exc)


class SnapshotWarmer:
    """One background thread that warms the tables passes committed to, between passes,
    the latest pass's tables first (used by `mirror --watch` and `run --watch`)."""

    def __init__(self) -> None:
        self._pending: dict[str, Any] = {}  # delta path -> session; the last entry goes first
        self._cv = threading.Condition()
        self._in_pass = False
        self._closed = False
        self._thread = threading.Thread(target=self._work, name="warm", daemon=True)
        self._thread.start()

    def before_pass(self) -> None:
        """A pass starts: start no new warming until `after_pass` (one in flight finishes)."""
        with self._cv:
            self._in_pass = True

    def after_pass(self, spark: Any, delta_paths: Iterable[str]) -> None:
        """Warm each of `delta_paths` (the tables that got a new version) in the background,
        ahead of those still waiting from earlier passes."""
        with self._cv:
            for path in reversed(list(delta_paths)):
                self._pending.pop(path, None)
                self._pending[path] = spark
            self._in_pass = False
            self._cv.notify()

    def close(self) -> None:
        """Drop what waits, wait for the warming in flight (it holds the JVM), stop the thread."""
        with self._cv:
            self._closed = True
            self._pending.clear()
            self._cv.notify()
        self._thread.join()

    def _work(self) -> None:
        while True:
            with self._cv:
                self._cv.wait_for(lambda: self._closed or (self._pending and not self._in_pass))
                if self._closed:
                    return
                path = next(reversed(self._pending))
                spark = self._pending.pop(path)
            warm_snapshot(spark, path)
