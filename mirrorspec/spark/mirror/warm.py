"""Keep a watched table's Delta snapshot warm between `--watch` passes.

Delta rebuilds a table's state (its list of files) from the log the first time a new version is
used: three Spark jobs, ~1 s on a laptop, which the next MERGE would otherwise pay while a new
file waits to become visible. Right after a pass commits, a background thread asks for the new
version's details (`DESCRIBE DETAIL`, which needs that state), so Delta's log cache holds it
ready when the next file lands. Public SQL only, so it also works over Spark Connect.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor
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
    """One background thread that warms the tables a pass committed to, in commit order (used
    by `mirror --watch` and `run --watch`)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="warm")

    def after_pass(self, spark: Any, delta_paths: Iterable[str]) -> None:
        """Warm each of `delta_paths` (the tables that got a new version) in the background."""
        for path in delta_paths:
            self._pool.submit(warm_snapshot, spark, path)

    def close(self) -> None:
        """Wait for the warming in flight (it holds the JVM) and stop the thread."""
        self._pool.shutdown(wait=True)
