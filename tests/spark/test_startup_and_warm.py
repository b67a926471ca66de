"""The fixed cost of a pass: the JVM's class-data archive maps, `--watch` warms the next
pass's Delta snapshot, and Python workers fork from a daemon that imported the parsers.

Neither test times anything: the archive test proves the JVM that `build_session` starts can map
the archive `make` created (with MIRRORSPEC_CDS=require the JVM refuses to start otherwise), and
the warm test counts the Spark jobs a MERGE runs with and without a warmed snapshot.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO_ROOT
from mirrorspec.spark.platform import cds
from mirrorspec.spark.mirror.engine import MirrorOptions, mirror_landing_zone
from mirrorspec.spark.platform.session import PYTHON_DAEMON, driver_conf
from mirrorspec.spark.publish import python_daemon
from mirrorspec.spark.mirror import warm
from mirrorspec.spark.mirror.warm import SnapshotWarmer, warm_snapshot

COUNT = """
from mirrorspec.spark.platform.session import build_session
spark = build_session("local[1]", {}, app_name="cds-check")
conf = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions", "")
print("rows", spark.range(7).count(), "archive" if "SharedArchiveFile" in conf else "none")
"""


def test_the_jvm_maps_the_archive_make_created():
    archive = cds.archive_path(driver_conf({}))
    if archive is None or not archive.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"make should have created {archive} (python -m mirrorspec.spark.ops.cds_training)")
        pytest.skip("no class-data archive here (make creates it)")
    env = dict(os.environ, MIRRORSPEC_CDS="require", PYTHONPATH=str(REPO_ROOT),
               MIRRORSPEC_SPARK_OUTPUT="console")
    done = subprocess.run([sys.executable, "-c", COUNT], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    assert "rows 7 archive" in done.stdout


def _table(landing, sequence: int, ids: list[int], marker: int) -> None:
    folder = landing / "orders"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["id"]}\n')
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64()),
                             "v": [f"{sequence}-{i}" for i in ids],
                             "__rowMarker__": pa.array([marker] * len(ids), pa.int32())}),
                   folder / f"{sequence:020d}.parquet")


def _jobs_of_pass(spark, landing, warehouse, group: str) -> int:
    context = spark.sparkContext
    context.setJobGroup(group, group)
    try:
        result = mirror_landing_zone(spark, str(landing), str(warehouse), MirrorOptions(threads=1))
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
    assert not result.failed, result.tables[0].error
    return len(context.statusTracker().getJobIdsForGroup(group))


def test_a_warmed_snapshot_spares_the_next_merge_its_state_jobs(spark, tmp_path):
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    _table(landing, 1, list(range(50)), 0)
    mirror_landing_zone(spark, str(landing), str(warehouse), MirrorOptions(threads=1))
    delta = str(warehouse / "dbo" / "orders")
    _table(landing, 2, [1, 2, 3], 1)
    cold = _jobs_of_pass(spark, landing, warehouse, "cold-pass")  # builds version 1's state
    warm_snapshot(spark, delta)  # version 2's state, as --watch does after a commit
    _table(landing, 3, [4, 5, 6], 1)
    warm = _jobs_of_pass(spark, landing, warehouse, "warm-pass")
    assert warm < cold, (warm, cold)
    rows = {r["id"]: r["v"] for r in spark.read.format("delta").load(delta).collect()}
    assert len(rows) == 50 and rows[2] == "2-2" and rows[5] == "3-5" and rows[7] == "1-7"


def test_warming_a_missing_table_is_harmless(spark, tmp_path, caplog, monkeypatch):
    """A path without a Delta table (dropped, or not created yet): warming it raises nothing,
    creates nothing and says why in the debug log, and the warmer's thread goes on to the next
    table of the pass."""
    missing, other = str(tmp_path / "nowhere"), str(tmp_path / "gone")
    caplog.set_level(logging.DEBUG, logger=warm.__name__)
    warm_snapshot(spark, missing)
    assert any(missing in record.getMessage() for record in caplog.records), caplog.text
    assert not (tmp_path / "nowhere").exists()

    real, warmed, both = warm.warm_snapshot, [], threading.Event()

    def recording(session, path):
        real(session, path)
        warmed.append(path)
        if len(warmed) == 2:
            both.set()

    monkeypatch.setattr(warm, "warm_snapshot", recording)
    warmer = SnapshotWarmer()
    try:
        warmer.after_pass(spark, [missing, other])
        assert both.wait(timeout=300), warmed  # a guard against a dead thread, not a timing
    finally:
        warmer.close()
    assert warmed == [missing, other]
    assert any(other in record.getMessage() for record in caplog.records), caplog.text
    assert not (tmp_path / "gone").exists()


def test_python_workers_fork_from_a_daemon_that_imported_the_feed_parsers(spark):
    """A local session's Python workers are forks of mirrorspec's daemon (their `__main__`),
    which imported pyarrow and the parse tasks' modules before forking."""
    preload = python_daemon.PRELOAD

    def worker_facts(_):  # defined here: pickled by value, run in a worker
        import sys as worker_sys

        spec = getattr(worker_sys.modules["__main__"], "__spec__", None)
        return (spec.name if spec is not None else None,
                [name in worker_sys.modules for name in preload])

    assert spark.sparkContext.getConf().get("spark.python.daemon.module") == PYTHON_DAEMON
    facts = spark.sparkContext.parallelize(range(2), 2).map(worker_facts).collect()
    assert facts == [(PYTHON_DAEMON, [True] * len(python_daemon.PRELOAD))] * 2


def test_the_daemon_preloads_what_it_can():
    assert python_daemon.preload(("json", "mirrorspec_no_such_module")) == [
        "mirrorspec_no_such_module"]
