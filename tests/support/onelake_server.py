"""`mirrorspec serve` in a child process whose imports refuse pyspark/py4j/delta (the no-JVM
check), started on 127.0.0.1:0 and waited for through its --ready-file (never a sleep)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.support.no_jvm import BLOCK_PYSPARK, REPO


class OneLakeServe:
    """`serve ARGS --ready-file …`; `ready` is the ready file's JSON; `stop()` sends SIGTERM."""

    def __init__(self, tmp: Path, *args: str, project: Path | None = None,
                 env: dict[str, str] | None = None, root: Path | None = None):
        """Serves `tmp/landing_zone` and `tmp/warehouse`, `project`'s (with --project-dir), or
        the items under `root` (with --root)."""
        base = project or tmp
        self.landing, self.warehouse = base / "landing_zone", base / "warehouse"
        self.ready_file = tmp / "ready.json"
        self.ready_file.unlink(missing_ok=True)  # a killed serve's file is not this one's
        self.log_path = tmp / "serve.log"
        self._log = open(self.log_path, "wb")
        folders = (["--project-dir", str(project)] if project else ["--root", str(root)] if root
                   else ["--landing-zone", str(self.landing), "--warehouse", str(self.warehouse)])
        command = [sys.executable, "-c", BLOCK_PYSPARK, "serve", *folders, "--ready-file",
                   str(self.ready_file), "--log-format", "json", *args]
        self.process = subprocess.Popen(
            command, stdout=self._log, stderr=subprocess.STDOUT, cwd=tmp,
            env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})})
        try:
            self.ready = self._wait_ready()
        except BaseException:
            self.stop()
            raise

    def _wait_ready(self, limit: float = 60.0) -> dict:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self.ready_file.exists():
                return json.loads(self.ready_file.read_text())
            if self.process.poll() is not None:
                raise RuntimeError(f"serve exited with {self.process.returncode}:\n{self.log()}")
            time.sleep(0.05)  # polling the ready file, not timing the server
        raise RuntimeError(f"serve wrote no ready file within {limit:.0f}s:\n{self.log()}")

    def log(self) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(errors="replace")

    def events(self) -> list[dict]:
        """The JSON log lines so far."""
        out = []
        for line in self.log().splitlines():
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
        return out

    def stop(self, timeout: float = 30.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()
        return self.process.returncode
