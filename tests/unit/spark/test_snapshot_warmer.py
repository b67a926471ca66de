"""The `--watch` snapshot warmer schedules its work between passes (no JVM: warming is faked)."""

from __future__ import annotations

import threading

from mirrorspec.spark.mirror import warm


def test_a_pass_holds_warming_back_and_its_tables_go_first(monkeypatch):
    warmed: list[str] = []
    release_x, x_done, all_done = threading.Event(), threading.Event(), threading.Event()
    warmer = warm.SnapshotWarmer()

    def fake(spark, path):
        warmed.append(path)
        if path == "x":
            release_x.wait(10)
            warmer.before_pass()  # a pass starts while x is being warmed
            x_done.set()
        if len(warmed) == 4:
            all_done.set()

    monkeypatch.setattr(warm, "warm_snapshot", fake)
    try:
        warmer.after_pass(None, ["x", "y", "z"])  # warmed in this order
        release_x.set()
        assert x_done.wait(10)
        # y and z wait while the pass runs; the table the pass committed to goes before them
        warmer.after_pass(None, ["w"])
        assert all_done.wait(10)
    finally:
        warmer.close()
    assert warmed == ["x", "w", "y", "z"]


def test_close_drops_what_waits_and_returns(monkeypatch):
    warmed: list[str] = []
    monkeypatch.setattr(warm, "warm_snapshot", lambda spark, path: warmed.append(path))
    warmer = warm.SnapshotWarmer()
    warmer.before_pass()
    warmer.after_pass(None, [])
    warmer.before_pass()
    warmer.close()
    assert warmed == [] and not warmer._thread.is_alive()
