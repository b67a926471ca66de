"""How the command line's process ends: on Ctrl-C (the one SIGINT handler, and the flag every
layer can ask) and after a command (`exit_after_cleanup`).

The CLI installs `on_sigint` (`install`); it records the interrupt and raises KeyboardInterrupt
in the main thread. From then on output stops (`interrupted()` silences the console) and the
CLI ends the process at once with exit code 130 and one line (`exit_now`): tables mid-commit
are safe as after any crash (a Delta commit is atomic; the publisher re-writes or records its
batch). PySpark replaces the SIGINT handler when it starts a SparkContext; `kept_handler`
puts it back.

A command that finished ends through `exit_after_cleanup`: Python's exit handlers and logging's
flush run, then `os._exit`, because delta-rs's runtime threads can abort a process at its normal
exit ("terminate called without an active exception", delta-io/delta-rs#2184). Both ends of the
process go through `os._exit` here, in one place.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import signal
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Iterator

EXIT_CODE = 130
_interrupted = threading.Event()
_installed = False


def interrupted() -> bool:
    """True once Ctrl-C (SIGINT) reached the command line's handler."""
    return _interrupted.is_set()


def on_sigint(_signum: int, _frame: object) -> None:
    """Record the interrupt, silence what libraries would print about calls it cuts short
    (Py4J logs a cut connection with a traceback through the root logger; a worker thread's
    exception would print its own), then stop the main thread where it is."""
    _interrupted.set()
    logging.disable(logging.CRITICAL)
    threading.excepthook = _silent
    raise KeyboardInterrupt


def raise_if_interrupted() -> None:
    """Raise KeyboardInterrupt, in the main thread, when a Ctrl-C came whose exception was
    swallowed where Python ignores exceptions (an at-fork hook while the JVM is launched, a
    finalizer, a weakref callback): the flag `on_sigint` set says it came."""
    if _interrupted.is_set() and threading.current_thread() is threading.main_thread():
        raise KeyboardInterrupt


def _silent(_args: object) -> None:
    """A worker thread's exception after Ctrl-C: nothing to say."""


def install() -> None:
    """Make `on_sigint` the SIGINT handler (the console script's entry point calls it)."""
    global _installed
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, on_sigint)
        _installed = True


def installed() -> bool:
    """True in a process whose entry point installed the handler (not in a test's CliRunner):
    only there may `exit_now` end the process."""
    return _installed


@contextlib.contextmanager
def kept_handler() -> Iterator[None]:
    """Keep the SIGINT handler the block found (PySpark's SparkContext installs its own), in
    the command line only: a notebook or the Python API keeps PySpark's (it cancels jobs)."""
    if not _installed or threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        if handler is not None:
            signal.signal(signal.SIGINT, handler)


@contextlib.contextmanager
def worker_pool(max_workers: int, thread_name_prefix: str) -> Iterator[ThreadPoolExecutor]:
    """A ThreadPoolExecutor that, when the block ends with an exception (Ctrl-C's
    KeyboardInterrupt), doesn't wait for the work in progress: it cancels what hasn't started
    and lets the exception go on (`with ThreadPoolExecutor()` would wait for every running
    task first: a table mid-MERGE for minutes)."""
    pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix=thread_name_prefix)
    try:
        yield pool
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    pool.shutdown(wait=True)


def exit_after_cleanup(code: object) -> None:
    """End a command that finished: Python's exit handlers and logging's flush run as at a
    normal exit, then the process ends without the native libraries' static destructors. delta-rs
    and pyarrow keep runtime threads that, torn down at exit, can abort an otherwise successful
    process with "terminate called without an active exception" (exit -6; delta-io/delta-rs#2184)."""
    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:
        print(code, file=sys.stderr)
        status = 1
    atexit._run_exitfuncs()
    logging.shutdown()
    exit_now(status)


def exit_now(code: int = EXIT_CODE) -> None:
    """End the process at once: no waiting for worker threads still inside Spark calls (their
    JVM ends with the process: it exits when its stdin closes)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
