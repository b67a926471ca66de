"""Ctrl-C's building blocks (mirrorspec/base/interrupts.py); the real SIGINT cases are in
tests/functional/test_ctrl_c.py."""

from __future__ import annotations

import signal
import threading

import pytest

from mirrorspec.base import interrupts


def test_a_worker_pool_ended_by_an_exception_does_not_wait_for_running_work():
    started, release = threading.Event(), threading.Event()
    with pytest.raises(KeyboardInterrupt):
        with interrupts.worker_pool(1, "test") as pool:
            running = pool.submit(lambda: (started.set(), release.wait(60)))
            queued = pool.submit(lambda: "never")
            assert started.wait(60)
            raise KeyboardInterrupt
    # here while the running task still waits: `with ThreadPoolExecutor()` would have blocked
    assert not release.is_set() and not running.done() and queued.cancelled()
    release.set()


def test_outside_the_command_line_pyspark_keeps_its_own_handler():
    """`kept_handler` restores the CLI's handler only where the CLI installed it: a notebook's
    SparkContext keeps the SIGINT handler that cancels its jobs."""
    before = signal.getsignal(signal.SIGINT)
    assert not interrupts.installed()

    def pyspark_like(_signum, _frame):
        pass
    try:
        with interrupts.kept_handler():
            signal.signal(signal.SIGINT, pyspark_like)
        assert signal.getsignal(signal.SIGINT) is pyspark_like
    finally:
        signal.signal(signal.SIGINT, before)


def test_a_ctrl_c_swallowed_where_python_ignores_exceptions_is_raised_again(monkeypatch):
    """A SIGINT that lands in an at-fork hook while the JVM is launched (filelock registers
    one) is printed as "Exception ignored" and lost; the flag brings it back after the start."""
    import logging
    import os

    monkeypatch.setattr(interrupts, "_interrupted", threading.Event())
    monkeypatch.setattr(threading, "excepthook", threading.excepthook)
    interrupts.raise_if_interrupted()  # no Ctrl-C yet: nothing
    hook_ran = []

    def swallowed_by_a_hook():
        if hook_ran:  # at-fork hooks can't be removed: later forks of this process skip it
            return
        hook_ran.append(True)
        interrupts.on_sigint(signal.SIGINT, None)

    os.register_at_fork(after_in_parent=swallowed_by_a_hook)
    try:
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    finally:
        logging.disable(logging.NOTSET)
    assert hook_ran  # the KeyboardInterrupt it raised went nowhere
    with pytest.raises(KeyboardInterrupt):
        interrupts.raise_if_interrupted()
