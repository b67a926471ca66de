"""The shared progress of every long command (mirrorspec/spark/platform/live.py): stage tasks of
a (fake) status tracker move the description, rows/s is above 0 once rows are announced, steps
print an opening and a closing line (timestamped in a pipe, typed events under JSON), and a
progress that waits for work (`mirror --watch`) stays silent until a table has files to apply.
No sleeping: `poll_once` is the poller's tick."""

from __future__ import annotations

import io
import json
import re

from tests.support.fake_tracker import Stage, Tracker

from mirrorspec.base.console import Console
from mirrorspec.spark.platform.live import LiveProgress, begin, table_line


def test_stage_tasks_move_the_description_and_rows_count_as_announced():
    tracker = Tracker({})
    stream = io.StringIO()
    progress = LiveProgress(Console(stream=stream), 3, tracker=tracker, interval=0)
    progress.started("sales.orders")
    progress.poll_once()
    assert progress.description() == "0 of 3 done, 1 running, 0 failed, 0 rows/s"
    tracker.stages[4] = Stage(2, 8)
    tracker.stages[5] = Stage(1, 2)
    progress.poll_once()
    assert "stage tasks 3/10" in progress.description()
    assert progress.rows_per_second() == 0
    progress.counting(Console(stream=io.StringIO())).info(
        "sales.orders: applying 1 file(s), 500 change row(s)", table="sales.orders", files=1,
        rows=500)
    assert progress.rows_seen == 500 and progress.rows_per_second() > 0
    tracker.stages.clear()
    progress.poll_once()
    assert "stage tasks" not in progress.description()
    # not a terminal: each tick past the interval wrote a plain timestamped line, no ANSI
    lines = stream.getvalue().splitlines()
    assert len(lines) == 3 and "\x1b" not in stream.getvalue()
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] 0 of 3 done, 1 running, 0 failed, stage tasks "
                        r"3/10, 0 rows/s", lines[1]), lines


def test_a_finished_table_counts_and_its_line_reads_like_dbt():
    progress = LiveProgress(Console(stream=io.StringIO()), 2, rates=False)
    progress.started("a.t")
    index, rate = progress.finish("a.t", failed=True, rows=10)
    assert index == 1 and rate > 0 and progress.rows == 10
    assert progress.description() == "1 of 2 done, 0 running, 1 failed"
    assert table_line(1, 2, "not_started", "a.t", "0 file(s) applied", 0.04) == \
        "1 of 2 NOT STARTED a.t: 0 file(s) applied in 0.0s"


def test_steps_say_when_they_start_and_what_they_did():
    stream = io.StringIO()
    progress = LiveProgress(Console(stream=stream), 2, steps=True, rates=False, interval=0)
    reading = progress.begin("dbo.t", "history", "reading its history")
    assert progress.description() == "reading its history (0 of 2 steps done)"
    reading.done("read its history: 3 applied file(s)", files=3)
    reading.done("said twice")  # a step closes once
    begin(None, "dbo.t", "count", "counting").done("nobody hears this")
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] dbo\.t: reading its history…", lines[0])
    assert re.fullmatch(r"\[\d\d:\d\d:\d\d\] dbo\.t: read its history: 3 applied file\(s\) "
                        r"\(\d+\.\ds\)", lines[1])
    assert progress.done == 1 and not progress.poll_once()  # nothing running: no line


def test_steps_under_json_are_typed_events():
    stream = io.StringIO()
    progress = LiveProgress(Console(log_format="json", stream=stream), 1, steps=True)
    progress.begin("dbo.t", "count", "counting rows").done("counted rows: 4", mirror_rows=4)
    started, finished = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert (started["event"], started["step"], started["table"]) == ("step_started", "count",
                                                                     "dbo.t")
    assert finished["event"] == "step_finished" and finished["mirror_rows"] == 4
    assert isinstance(finished["seconds"], float) and finished["level"] == "info"


def test_a_progress_waiting_for_work_stays_silent_until_files_are_announced():
    stream = io.StringIO()
    progress = LiveProgress(Console(stream=stream), 1, interval=0, wait_for_work=True)
    progress.started("dbo.t")
    tables = progress.counting(Console(stream=io.StringIO()))
    tables.info("1 table(s) in /lz", tables=1)
    assert not progress.poll_once() and stream.getvalue() == ""
    tables.info("dbo.t: 2 file(s) pending", table="dbo.t", files=2)
    assert progress.working and progress.poll_once()
    assert "0 of 1 done, 1 running" in stream.getvalue()


def test_quiet_skips_the_timed_lines():
    stream = io.StringIO()
    progress = LiveProgress(Console(stream=stream, quiet=True), 1, steps=True, interval=0)
    progress.begin("dbo.t", "count", "counting").done()
    progress.started("x")
    progress.poll_once()
    assert stream.getvalue() == ""
