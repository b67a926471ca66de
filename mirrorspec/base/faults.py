"""Named fault points, used by the crash and concurrency tests to act at an exact place.

Set MIRRORSPEC_CRASH_AT=<point>[,<point>...] (and optionally MIRRORSPEC_CRASH_TABLE=<table id>)
and the process SIGKILLs itself when it reaches that point.

Set MIRRORSPEC_PAUSE_AT=<point>[,...] and MIRRORSPEC_PAUSE_DIR=<folder> and the process pauses
the first time it reaches each point: it creates `<folder>/<point>.reached`, then waits until a
test creates `<folder>/<point>.go` (at most 10 minutes). Two processes are ordered this way
without sleeps. Unset, each point costs two dict lookups.
"""

from __future__ import annotations

import os
import signal
import threading
import time

CRASH_POINTS = (
    "before_commit",        # data files written, Delta commit not yet made
    "after_commit",         # Delta commit made, no landing file moved yet
    "during_moves",         # after the first processed file moved to _ProcessedFiles
    "before_publish_rename",  # publisher wrote the temporary file, not yet renamed
    "after_publish_rename",   # publisher renamed the file, state not yet recorded
    "after_listing",        # the table folder listed, no file read yet
    "before_offsets_recorded",  # Kafka messages staged, their end offsets not yet recorded
    "after_offsets_recorded",   # Kafka offsets recorded, nothing of them published yet
    "before_spark_start",   # a command is about to start (or connect to) Spark
)
_paused: set[str] = set()
_pause_lock = threading.Lock()


def crash_point(name: str, table: str | None = None) -> None:
    """Pause (MIRRORSPEC_PAUSE_AT) or kill this process with SIGKILL (MIRRORSPEC_CRASH_AT) if a
    test asked for it at `name`."""
    if _asked("MIRRORSPEC_PAUSE_AT", name, table):
        _pause(name)
    if _asked("MIRRORSPEC_CRASH_AT", name, table):
        os.kill(os.getpid(), signal.SIGKILL)


def _asked(variable: str, name: str, table: str | None) -> bool:
    wanted = os.environ.get(variable)
    if not wanted or name not in wanted.split(","):
        return False
    only = os.environ.get("MIRRORSPEC_CRASH_TABLE")
    return not (only and table is not None and only != table)


def _pause(name: str) -> None:
    with _pause_lock:
        if name in _paused:
            return
        _paused.add(name)
    folder = os.environ.get("MIRRORSPEC_PAUSE_DIR") or "."
    with open(os.path.join(folder, f"{name}.reached"), "w"):
        pass
    go = os.path.join(folder, f"{name}.go")
    end = time.monotonic() + 600
    while not os.path.exists(go) and time.monotonic() < end:
        time.sleep(0.05)
