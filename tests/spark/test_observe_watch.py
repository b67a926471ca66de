"""`mirror --watch` watched from outside, as a real process: its OpenLineage events received by
a local collector (one run per table that changed, none for idle passes, counted on /metrics,
whose files pending leave out the applied file that stays in the folder);
and a taken metrics port with an unreachable collector costs one warning each, never the run.
"""

from __future__ import annotations

import json
import signal
import socket
import sys
from pathlib import Path

import pytest

from tests.support.observe_helpers import Collector, check_run_event, free_port, scrape
from tests.support.mirror_cli import mirror_command
from tests.support.reference_model import LandingFile, sequence_name, write_metadata, write_parquet
from tests.spark.test_watch_and_concurrency import finish, kill, start, wait_for

parser = pytest.importorskip("prometheus_client.parser")
pytest.importorskip("openlineage.client")
pytestmark = [pytest.mark.slow, pytest.mark.extra]  # `make test-extras`  # a CLI subprocess with its own JVM

COLS, TYPES = ("id", "v", "__rowMarker__"), ("int64", "string", "int32")


def landing_zone(tmp_path: Path) -> Path:
    """`good` with one file of 2 inserts; `bad` whose only file is not Parquet."""
    landing = tmp_path / "landing"
    write_metadata(str(landing / "good"), ("id",))
    write_parquet(LandingFile(sequence_name(1), COLS, ((1, "a", 0), (2, "b", 0)), TYPES),
                  str(landing / "good"))
    write_metadata(str(landing / "bad"), ("id",))
    (landing / "bad" / sequence_name(1)).write_bytes(b"not parquet")
    return landing


def test_watch_serves_metrics_and_sends_lineage(tmp_path):
    landing, warehouse, log = landing_zone(tmp_path), tmp_path / "wh", tmp_path / "watch.log"
    collector, port = Collector(), free_port()
    process = start(mirror_command(landing, warehouse, "--watch", "0.5", "--metrics-port",
                                   str(port), "--openlineage-url", collector.url,
                                   "--openlineage-namespace", "test"), log)
    try:
        def three_passes():
            got = scrape(port)
            return got if got.get(("mirrorspec_passes_total", ())) >= 3 else None
        got = wait_for(three_passes, "three passes on /metrics", process, log)
        process.send_signal(signal.SIGTERM)
        # 1 when `bad` was tried in the last pass, 0 when the backoff skipped it: never a crash
        assert finish(process) in (0, 1)
    finally:
        kill(process)
        collector.close()

    # the applied file 1 stays in `good`'s folder, as Fabric leaves it: not pending
    assert got[("mirrorspec_table_files_pending", (("table", "dbo.good"),))] == 0
    assert got[("mirrorspec_table_files_pending", (("table", "dbo.bad"),))] == 1
    events = collector.events
    for event in events:
        check_run_event(event)
    by_table = {}
    for event in events:
        by_table.setdefault(event["job"]["name"], []).append(event["eventType"])
    # one run per table: the passes after it (idle, or `bad` failing the same way) send nothing
    assert by_table == {"dbo.good": ["START", "COMPLETE"], "dbo.bad": ["START", "FAIL"]}, by_table
    [complete] = [e for e in events if e["eventType"] == "COMPLETE"]
    assert complete["job"]["namespace"] == "test"
    assert complete["inputs"][0]["name"] == str(landing / "good")
    [out] = complete["outputs"]
    assert out["name"] == str(warehouse / "dbo" / "good")
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == 2
    assert [f["name"] for f in out["facets"]["schema"]["fields"]] == ["id", "v"]
    [fail] = [e for e in events if e["eventType"] == "FAIL"]
    assert sequence_name(1) in fail["run"]["facets"]["errorMessage"]["message"]


def test_a_taken_port_and_a_dead_collector_never_stop_the_watch(tmp_path):
    landing, warehouse, log = landing_zone(tmp_path), tmp_path / "wh", tmp_path / "watch.log"
    with socket.socket() as taken, socket.socket() as dead:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        dead.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        process = start(mirror_command(
            landing, warehouse, "--watch", "0.5", "--log-format", "json",
            "--metrics-port", str(taken.getsockname()[1]),
            "--openlineage-url", f"http://127.0.0.1:{dead.getsockname()[1]}"), log)
        try:
            def three_passes():
                text = log.read_text(errors="replace")
                return text.count('"event": "warning"') >= 2 and (warehouse / "dbo" / "good"
                                                                    / "_delta_log").exists()
            wait_for(three_passes, "the table mirrored despite both", process, log)
            process.send_signal(signal.SIGTERM)
            assert finish(process) in (0, 1)  # the observers' trouble is never the exit code
        finally:
            kill(process)
    lines = [json.loads(line) for line in log.read_text().splitlines()
             if line.startswith("{")]
    warnings = [e["message"] for e in lines if e["event"] == "warning"]
    assert len([w for w in warnings if w.startswith("metrics:")]) == 1, warnings
    assert len([w for w in warnings if w.startswith("OpenLineage:")]) == 1, warnings


def test_run_watch_serves_metrics_and_sends_lineage_from_the_project(tmp_path):
    """`run --watch` on a project: the same /metrics (files pending read against the Delta log)
    and one OpenLineage run for the table, its landing folder in and its Delta table out."""
    from tests.support.project_files import write, write_changes

    root = write(tmp_path / "proj", {
        "mirrorspec_project.yml": {"name": "obs", "version": "1"},
        "profiles.yml": {"obs": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing_zone", "warehouse": "warehouse",
            "spark": {"master": "local[1]", "conf": {"spark.sql.shuffle.partitions": 1}}}}}},
        "tables/shop.yml": {"tables": [
            {"name": "orders", "schema": "shop", "key_columns": ["id"],
             "columns": [{"name": "id", "type": "Int32"}, {"name": "v", "type": "String"}]}]}})
    write_changes(root / "landing_zone" / "shop.schema" / "orders", 1, [(1, "a", 0), (2, "b", 0)])
    collector, port, log = Collector(), free_port(), tmp_path / "run.log"
    script = Path(sys.executable).parent / "mirrorspec"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "mirrorspec"]
    process = start([*base, "run", "--watch", "0.5", "--project-dir", str(root),
                     "--metrics-port", str(port), "--openlineage-url", collector.url], log)
    try:
        def two_passes():
            got = scrape(port)
            return got if got.get(("mirrorspec_passes_total", ())) >= 2 else None
        got = wait_for(two_passes, "two passes on /metrics", process, log)
        process.send_signal(signal.SIGTERM)
        assert finish(process) == 0
    finally:
        kill(process)
        collector.close()
    assert got[("mirrorspec_table_rows_applied_total",
                (("change", "inserted"), ("table", "shop.orders")))] == 2
    assert got[("mirrorspec_table_files_pending", (("table", "shop.orders"),))] == 0
    assert [e["eventType"] for e in collector.events] == ["START", "COMPLETE"]
    complete = collector.events[1]
    check_run_event(complete)
    assert complete["inputs"][0]["name"] == str(root / "landing_zone" / "shop.schema" / "orders")
    assert complete["outputs"][0]["name"] == str(root / "warehouse" / "shop" / "orders")
    assert complete["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 2
