"""One publisher per table at a time. Two real `mirrorspec run` processes on
one project: the first holds at `before_publish_rename` (its batch written under
`_publishing_<seq>`, not yet renamed; `MIRRORSPEC_PAUSE_AT`, mirrorspec/base/faults.py) while the
second runs; the second says another run is publishing the table and publishes nothing, then
the first finishes. No sleeps: the pause point orders the two."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import filelock
import pytest

from mirrorspec.artifacts.plan import Plan, SourceSpec, SparkSpec, TablePlan
from mirrorspec.base.console import Console
from mirrorspec.openmirroring.mirroring import sequence_file_name
from mirrorspec.spark.publish import publisher

from tests.spark.test_watch_and_concurrency import finish, kill, start, wait_for

pytestmark = pytest.mark.extra  # a slow end-to-end extra: `make test-extras`

PROJECT = Path(__file__).resolve().parents[2] / "projects" / "csv_extract"


def test_a_held_lock_makes_the_publish_busy_without_touching_anything(tmp_path):
    table = TablePlan("dbo.t", "t", None, "dbo", str(tmp_path / "lz" / "t"),
                      str(tmp_path / "wh" / "dbo" / "t"), {}, source=SourceSpec("csv", "feed"))
    plan = Plan(1, "p", "1", "p", "dev", str(tmp_path / "lz"), str(tmp_path / "wh"),
                str(tmp_path / "state"), SparkSpec(), None, [table])
    warnings = []

    class Recorder(Console):
        def warning(self, message, **fields):
            warnings.append(message)

    (tmp_path / "state" / "publish").mkdir(parents=True)
    other = filelock.FileLock(publisher.lock_file(plan, table), thread_local=False)
    with other.acquire(timeout=0):
        result = publisher.publish_table(None, table, plan, Recorder(quiet=True))
    assert result.status == "Busy" and result.files_written == []
    assert warnings == [publisher.busy_message("dbo.t")]
    assert "another run is publishing dbo.t" in warnings[0]
    assert not (tmp_path / "lz").exists()


@pytest.mark.slow
def test_two_runs_publish_one_table_one_at_a_time(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("landing_zone", "warehouse",
                                                                    "target"))
    command = [sys.executable, "-m", "mirrorspec", "run", "--project-dir", str(project),
               "--select", "customers", "--threads", "1"]
    gate = tmp_path / "gate"
    gate.mkdir()
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    first = start(command, logs[0], {"MIRRORSPEC_PAUSE_AT": "before_publish_rename",
                                     "MIRRORSPEC_PAUSE_DIR": str(gate)})
    second = None
    try:
        wait_for((gate / "before_publish_rename.reached").exists,
                 "the first run holding its batch before the rename", first, logs[0])
        second = start(command, logs[1])
        second_code = finish(second)
        (gate / "before_publish_rename.go").touch()
        first_code = finish(first)
    finally:
        (gate / "before_publish_rename.go").touch()
        for process in (first, second):
            if process is not None:
                kill(process)
    outputs = [log.read_text(errors="replace") for log in logs]
    report = "\n\n".join(f"{log.name}:\n{text[-3000:]}" for log, text in zip(logs, outputs))
    assert (first_code, second_code) == (0, 0), report
    assert "another run is publishing dbo.customers" in outputs[1], report
    assert "published" in outputs[0] and "another run is publishing" not in outputs[0], report
    for text in outputs:
        assert "Traceback" not in text and "FileNotFoundError" not in text, report
        assert "expected one Parquet part" not in text, report
    table = project / "landing_zone" / "customers"
    processed = table / "_ProcessedFiles"
    names = sorted(p.name for p in table.iterdir()) + (
        sorted(p.name for p in processed.iterdir()) if processed.exists() else [])
    assert [n for n in names if n[:1].isdigit()] == [sequence_file_name(1)], names
    assert not [n for n in names if n.startswith(publisher.TEMP_PREFIX)], names
