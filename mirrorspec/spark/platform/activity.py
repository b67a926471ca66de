"""What Spark is doing right now, from its status tracker: the tasks of the active stages.

Drives the progress bar between the per-table lines (a MERGE is minutes of one stage after
another). A Spark Connect session has no tracker in this process: None.
"""

from __future__ import annotations

from typing import Any


def stage_tracker(spark: Any) -> Any:
    """The SparkContext's status tracker, or None (Spark Connect, no session)."""
    try:
        return spark.sparkContext.statusTracker()
    except Exception:  # noqa: BLE001 - Connect sessions raise on sparkContext: no tracker there
        return None


def stage_tasks(tracker: Any) -> tuple[int, int]:
    """(completed, total) tasks of the stages running now; (0, 0) when none or no tracker."""
    if tracker is None:
        return 0, 0
    done = total = 0
    try:
        for stage_id in tracker.getActiveStageIds():
            info = tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
    except Exception:  # noqa: BLE001 - a stopping JVM: no figure this time
        return 0, 0
    return done, total
