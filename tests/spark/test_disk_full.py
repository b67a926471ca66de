"""A full disk under the warehouse (engine, monitoring JSON) and under the
landing zone (the publisher) is a `StorageError` per table, exit 1, one line on the console
(the trace in the log file), and the monitoring JSON is corrected by the next pass that can
write it, which says so. A real full filesystem: a small tmpfs (skipped where mounting is not
permitted; `tests/unit/spark/test_storage_failures.py` covers the classification without one)."""

from __future__ import annotations

import errno
import io
import json
import os
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from mirrorspec.artifacts import status
from mirrorspec.cli import cli
from mirrorspec.artifacts.plan import ColumnSpec, Plan, SourceSpec, SparkSpec, TablePlan, TableStep
from mirrorspec.base.console import Console
from mirrorspec.artifacts.run_results import read_run_results
from mirrorspec.spark.run import run_plan

from tests.spark.test_engine import M, delta_rows, parquet, table_dir

FEED = Path(__file__).resolve().parents[1] / "fixtures" / "extract" / "csv"
TEST_ARGS = ["--master", "local[2]", "--threads", "1"]


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"can't mount a small tmpfs here: {exc}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the filesystem is full; returns it (delete it to free the space)."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 20, 1 << 16, 1 << 12, 1 << 9, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)
    return filler


def no_trace(text: str) -> None:
    assert "Traceback" not in text and "\tat org." not in text and "Internal error" not in text, \
        text[-3000:]


def test_a_full_warehouse_is_a_storage_error_and_the_next_pass_corrects_the_status(
        spark, tmp_path, small_disk):
    landing, warehouse = str(tmp_path / "lz"), str(small_disk / "wh")
    folder = table_dir(landing, "t", metadata={"keyColumns": ["id"]})
    parquet(folder, 1, {"id": [1], "v": ["a"], M: [0]})
    args = ["mirror", "--landing-zone", landing, "--warehouse", warehouse, *TEST_ARGS]
    first = CliRunner().invoke(cli, args)
    assert first.exit_code == 0, first.output
    parquet(folder, 2, {"id": [2], "v": ["b"], M: [0]})
    filler = fill(small_disk)

    full = CliRunner().invoke(cli, args)
    assert full.exit_code == 1, full.output
    no_trace(full.output)
    assert "StorageError" in full.output and "No space left on device" in full.output
    assert "could not write the monitoring JSON" in full.output
    assert status.is_stale(warehouse)  # tables.json still holds the first pass

    filler.unlink()
    again = CliRunner().invoke(cli, args)
    assert again.exit_code == 0, again.output
    assert status.CORRECTED_MESSAGE in again.output
    assert not status.is_stale(warehouse)
    entry = status.read_status(warehouse)["tables"][0]
    assert (entry["status"], entry["error"]) == ("Replicating", None)
    rows = delta_rows(spark, os.path.join(warehouse, "dbo", "t"), ["id", "v"])
    assert rows == Counter({(1, "a"): 1, (2, "b"): 1})


def feed_plan(root: Path, landing: Path) -> Plan:
    table = TablePlan(
        unique_id="dbo.t", name="t", schema=None, warehouse_schema="dbo",
        landing_path=str(landing / "t"), delta_path=str(root / "wh" / "dbo" / "t"),
        metadata={"keyColumns": ["id"]}, key_columns=["id"],
        columns=[ColumnSpec(n, t) for n, t in (("id", "Int64"), ("name", "String"),
                                               ("city", "String"), ("balance", "Double"),
                                               ("signup_date", "IDate"),
                                               ("updated_at", "DateTime"))],
        source=SourceSpec("csv", str(root / "feed"), {}),
        steps=[TableStep("PublishFeed"), TableStep("MirrorTable")])
    return Plan(1, "p", "1", "p", "dev", str(landing), str(root / "wh"),
                str(root / "state"), SparkSpec(), None, [table])


def test_a_full_landing_zone_fails_the_publish_as_a_storage_error(spark, tmp_path, small_disk):
    feed = tmp_path / "feed"
    feed.mkdir()
    snapshots = sorted(FEED.iterdir())
    shutil.copy(snapshots[0], feed / snapshots[0].name)
    plan = feed_plan(tmp_path, small_disk / "lz")
    target = tmp_path / "target"
    assert not run_plan(plan, spark=spark, target_dir=target).failed

    shutil.copy(snapshots[1], feed / snapshots[1].name)
    filler = fill(small_disk)
    out = io.StringIO()
    results = run_plan(plan, spark=spark, target_dir=target,
                       console=Console(log_format="json", stream=out))
    assert results.failed
    result = read_run_results(target)["results"][0]
    assert result["error_code"] == "StorageError", result
    assert "No space left on device" in result["error"] and len(result["error"]) < 1500
    assert result["mirror_status"] == "Failed"
    no_trace(result["error"])
    no_trace(out.getvalue())
    log = result["error"].rsplit("details in ", 1)[1].split()[0].rstrip(";")
    assert "No space left on device" in Path(log).read_text()
    entry = status.read_status(str(tmp_path / "wh"))["tables"][0]
    assert (entry["status"], entry["error"]["errorCode"]) == ("Failed", "StorageError")

    filler.unlink()
    retried = run_plan(plan, spark=spark, target_dir=target)
    assert not retried.failed, retried.results[0].error
    assert json.loads((tmp_path / "wh" / "tables.json").read_text())["tables"][0]["status"] == \
        "Replicating"
