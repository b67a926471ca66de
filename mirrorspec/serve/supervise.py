"""`serve --mirror-every N`: the real engine (`mirrorspec mirror --watch N`) as a child process,
so the serving process never imports pyspark. The child gets SIGTERM when `serve` stops (and,
on Linux, when `serve` dies: PR_SET_PDEATHSIG).

Linux sends PR_SET_PDEATHSIG's signal when the *thread* that forked the child ends, so engines
started while serving (Fabric's startMirroring) are forked by `Launcher`'s one long-lived
thread, never by a request's thread."""

from __future__ import annotations

import signal
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

STOP_TIMEOUT = 20.0


def _libc_prctl() -> Any:
    # resolved once, in the parent: the child between fork and exec must not import or load
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):
        return None  # not Linux (glibc): serve's own stop still ends the child


_PRCTL = _libc_prctl() if sys.platform == "linux" else None


def _die_with_parent() -> None:  # runs in the child between fork and exec
    if _PRCTL is not None:
        _PRCTL(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def mirror_command(landing: Path, warehouse: Path, every: float, log_format: str,
                   conf: tuple[str, ...] = (), feed: bool | None = None) -> list[str]:
    """The engine's command line; `feed`: the mirrored database's change data feed switch
    (None: each table stays as it is)."""
    command = [sys.executable, "-m", "mirrorspec", "mirror", "--landing-zone", str(landing),
               "--warehouse", str(warehouse), "--watch", f"{every:g}", "--log-format", log_format]
    for pair in conf:
        command += ["--conf", pair]
    if feed is not None:
        command.append("--change-data-feed" if feed else "--no-change-data-feed")
    return command


def start_mirror(landing: Path, warehouse: Path, every: float, log_format: str,
                 conf: tuple[str, ...] = (), feed: bool | None = None) -> subprocess.Popen:
    """Start the engine. The preexec_fn makes one C call resolved beforehand (no import, no
    lock), which is safe with threads running; call it from a thread that outlives the engine."""
    return subprocess.Popen(mirror_command(landing, warehouse, every, log_format, conf, feed),
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


class Launcher:
    """Starts engines from one thread that lives until `close()` (see the module docstring)."""

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engine-launcher")

    def start(self, landing: Path, warehouse: Path, every: float, log_format: str,
              conf: tuple[str, ...] = (), feed: bool | None = None) -> subprocess.Popen:
        return self._pool.submit(start_mirror, landing, warehouse, every, log_format,
                                 conf, feed).result()

    def close(self) -> None:
        self._pool.shutdown(wait=True)
