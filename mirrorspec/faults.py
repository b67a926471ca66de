"""Named crash points, used by the crash tests to kill a run at an exact place.

Set MIRRORSPEC_CRASH_AT=<point>[,<point>...] (and optionally MIRRORSPEC_CRASH_TABLE=<table id>)
and the process SIGKILLs itself when it reaches that point. Unset, this costs one dict lookup.
"""

from __future__ import annotations

import os
import signal

CRASH_POINTS = (
    "before_commit",        # data files written, Delta commit not yet made
    "after_commit",         # Delta commit made, no landing file moved yet
    "during_moves",         # after the first processed file moved to _ProcessedFiles
    "before_publish_rename",  # publisher wrote the temporary file, not yet renamed
    "after_publish_rename",   # publisher renamed the file, state not yet recorded
    "before_offsets_recorded",  # Kafka messages staged, their end offsets not yet recorded
    "after_offsets_recorded",   # Kafka offsets recorded, nothing of them published yet
)


def crash_point(name: str, table: str | None = None) -> None:
    """Kill this process with SIGKILL if the crash tests asked for it at `name`."""
    wanted = os.environ.get("MIRRORSPEC_CRASH_AT")
    if not wanted or name not in wanted.split(","):
        return
    only = os.environ.get("MIRRORSPEC_CRASH_TABLE")
    if only and table is not None and only != table:
        return
    os.kill(os.getpid(), signal.SIGKILL)
