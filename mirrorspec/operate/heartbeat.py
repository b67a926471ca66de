"""`--watch`'s heartbeat: a line every N idle passes, and a file touched after every pass.

A pass that applies nothing prints nothing (watch.py), so a log alone can't tell a quiet service
from a hung one. Every `every` idle passes in a row, one line says the service is alive; after
every pass, busy or idle, the heartbeat file is rewritten (a small JSON object: pass number, UTC
time, files applied), so a liveness probe can check its age:

    test $(( $(date +%s) - $(stat -c %Y target/heartbeat.json) )) -lt 300

Pure Python; the clock is passed in.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone

DEFAULT_EVERY = 10


class Heartbeat:
    """Counts idle passes and writes the heartbeat file (None: no file)."""

    def __init__(self, path: str | None, every: int = DEFAULT_EVERY):
        self.path = path
        self.every = max(1, every)
        self.idle = 0

    def after_pass(self, passes: int, applied: int, now: float) -> str | None:
        """Record a pass; the line to print when it completes `every` idle passes in a row."""
        self.idle = 0 if applied else self.idle + 1
        if self.path:
            self._touch(self.path, passes, applied, now)
        if applied or self.idle % self.every:
            return None
        return (f"alive: pass {passes}, {self.idle} idle pass(es) in a row, nothing new to "
                "apply" + (f" (heartbeat: {self.path})" if self.path else ""))

    @staticmethod
    def _touch(path: str, passes: int, applied: int, now: float) -> None:
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        stamp = datetime.fromtimestamp(now, tz=timezone.utc).isoformat(timespec="seconds")
        fd, temp = tempfile.mkstemp(prefix=".heartbeat-", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"pass": passes, "time": stamp.replace("+00:00", "Z"),
                       "files_applied": applied, "pid": os.getpid()}, handle)
            handle.write("\n")
        os.replace(temp, path)
