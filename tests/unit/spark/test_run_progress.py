"""Progress you can see: while tables work, rows/s counts the rows the publisher and
the engine announce, the bar/lines carry the tasks of Spark's running stages (status tracker),
and without a terminal a plain timestamped line comes every `interval` seconds."""

from __future__ import annotations

import io
import json
import re
import time

from tests.support.fake_tracker import Stage, Tracker

from mirrorspec.base.console import Console
from mirrorspec.spark.platform.activity import stage_tasks
from mirrorspec.spark.run import RunProgress


class _Spark:
    def __init__(self, tracker):
        self.sparkContext = type("SC", (), {"statusTracker": lambda _self: tracker})()


def test_stage_tasks_add_up_the_running_stages():
    assert stage_tasks(Tracker({3: Stage(5, 8), 4: Stage(0, 2)})) == (5, 10)
    assert stage_tasks(None) == (0, 0)


def _wait_for(predicate, seconds=10.0):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(0.05)
    return False


def test_rows_per_second_moves_while_a_table_works_and_lines_are_timestamped():
    stream = io.StringIO()  # not a terminal: plain lines instead of a bar
    console = Console(stream=stream)
    tracker = Tracker({7: Stage(3, 12)})
    with RunProgress(console, 2, _Spark(tracker), interval=0.5) as progress:
        progress.started("sales.orders")
        tables = progress.counting(console)
        tables.info("sales.orders: applying 2 file(s), 5000 change row(s)",
                    table="sales.orders", files=2, rows=5000)
        tables.info("sales.orders: 1 file(s) pending", table="sales.orders", files=1)
        assert progress.rows_seen == 5000  # a message without `rows` counts nothing
        assert progress.rows_per_second() > 0  # before any table finished
        assert _wait_for(lambda: "stage tasks 3/12" in stream.getvalue())
    lines = [line for line in stream.getvalue().splitlines() if "stage tasks" in line]
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] 0 of 2 done, 1 running, 0 failed, stage tasks 3/12, "
                        r"[\d,]+ rows/s", lines[0]), lines[0]
    assert "applying 2 file(s), 5000 change row(s)" in stream.getvalue()


def test_json_progress_events_carry_the_counts():
    stream = io.StringIO()
    console = Console(log_format="json", stream=stream)
    with RunProgress(console, 1, _Spark(Tracker({1: Stage(1, 4)})), interval=0.2) as progress:
        progress.started("dbo.t")
        progress.counting(console).info("dbo.t: published 10 change(s)", table="dbo.t", rows=10,
                                        sequence=1)
        assert _wait_for(lambda: '"event": "progress"' in stream.getvalue())
    event = next(json.loads(line) for line in stream.getvalue().splitlines()
                 if '"event": "progress"' in line)
    assert (event["tasks_done"], event["tasks_total"], event["running"]) == (1, 4, 1)
    assert event["rows_per_second"] > 0
