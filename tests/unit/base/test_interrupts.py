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
