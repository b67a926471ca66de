"""The run's log file: where details that don't belong on the screen go (full tracebacks, the
Java stack trace of a Spark error), so an error line can stay one line and name this file.

One file per process, created on first use in `MIRRORSPEC_LOG_DIR` (default: the system's
temporary folder), named `mirrorspec-<UTC time>-<pid>.log`, readable by its owner only (0600):
a traceback can hold what a message never shows (a URL, a path, a server's answer).
"""

from __future__ import annotations

import os
import tempfile
import threading
import time
import traceback
from typing import Callable

from mirrorspec.base.errors import MirrorspecError

_lock = threading.Lock()
_path: str | None = None


def log_folder() -> str:
    """`$MIRRORSPEC_LOG_DIR` (created when missing), else the temporary folder; a one-line
    MirrorspecError when that folder can't be created or written."""
    folder = os.environ.get("MIRRORSPEC_LOG_DIR") or tempfile.gettempdir()
    try:
        os.makedirs(folder, exist_ok=True)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(13, "not writable")
    except OSError as exc:
        raise MirrorspecError(
            f"MIRRORSPEC_LOG_DIR={folder} can't hold log files: {exc.strerror or exc}",
            hint="point MIRRORSPEC_LOG_DIR at a writable folder, or unset it to use "
                 f"{tempfile.gettempdir()}") from None
    return folder


def log_path() -> str:
    """The path of this process's log file (created, empty, on first call)."""
    global _path
    with _lock:
        if _path is None or not os.path.exists(_path):
            folder = log_folder()
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
            _path = os.path.join(folder, f"mirrorspec-{stamp}-{os.getpid()}.log")
            os.close(open_private(_path))
        return _path


def open_private(path: str | os.PathLike[str], truncate: bool = False) -> int:
    """A descriptor for appending to `path` (emptied first with `truncate`), created 0600 (an
    existing file of this user narrowed to 0600); never through a symbolic link (the
    temporary folder is shared). Every file that may hold what a message never shows is
    opened here: this log, the JVM's log, the warm Spark server's files."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags | (os.O_TRUNC if truncate else 0), 0o600)
    if os.fstat(fd).st_uid == os.geteuid():
        os.fchmod(fd, 0o600)
    return fd


def log_exception(context: str, exc: BaseException,
                  scrub: Callable[[str], str] | None = None) -> str:
    """Append `exc`'s traceback (and the Java stack trace of a Py4J error, with its causes)
    under a `context` heading, each line passed through `scrub` (credentials hidden); returns
    the log file's path for the error message."""
    path = log_path()
    lines = [f"--- {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {context}\n"]
    lines += traceback.format_exception(type(exc), exc, exc.__traceback__)
    java = getattr(exc, "java_exception", None)
    causes = 0
    while java is not None and causes < 10:
        try:
            lines.append(("Caused by: " if causes else "") + str(java.toString()) + "\n")
            lines += [f"    at {frame.toString()}\n" for frame in java.getStackTrace()]
            java = java.getCause()
        except Exception as java_gone:  # noqa: BLE001 - the JVM may be gone; the Python part is logged
            lines.append(f"(no Java stack trace: {java_gone!r})\n")
            break
        causes += 1
    if scrub is not None:
        lines = [scrub(line) for line in lines]
    with _lock, os.fdopen(open_private(path), "a", encoding="utf-8") as handle:
        handle.writelines(lines)
    return path
