"""`serve --mirror-every N`: the real engine (`mirrorspec mirror --watch N`) as a child process,
so the serving process never imports pyspark. The child gets SIGTERM when `serve` stops (and,
on Linux, when `serve` dies: PR_SET_PDEATHSIG)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

STOP_TIMEOUT = 20.0


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: serve's own stop still ends the child


def mirror_command(landing: Path, warehouse: Path, every: float, log_format: str,
                   conf: tuple[str, ...] = ()) -> list[str]:
    command = [sys.executable, "-m", "mirrorspec", "mirror", "--landing-zone", str(landing),
               "--warehouse", str(warehouse), "--watch", f"{every:g}", "--log-format", log_format]
    for pair in conf:
        command += ["--conf", pair]
    return command


def start_mirror(landing: Path, warehouse: Path, every: float, log_format: str,
                 conf: tuple[str, ...] = ()) -> subprocess.Popen:
    """Start the engine; call before any thread starts (preexec_fn is not thread-safe)."""
    return subprocess.Popen(mirror_command(landing, warehouse, every, log_format, conf),
                            preexec_fn=_die_with_parent if sys.platform == "linux" else None)


def stop_mirror(process: subprocess.Popen, timeout: float = STOP_TIMEOUT) -> int | None:
    """SIGTERM (the engine finishes the tables in progress), then SIGKILL after `timeout`."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode
