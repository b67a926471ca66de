"""`mirror --watch` watched from outside, as a real process: its /metrics endpoint scraped over
HTTP and parsed with prometheus_client's parser, its OpenLineage events received by a local
collector; and a taken port with an unreachable collector costs one warning each, never the run.
"""

from __future__ import annotations

import json
import signal
import socket
from pathlib import Path

import pytest

from observe_helpers import Collector, check_run_event, free_port, scrape
from mirror_cli import mirror_command
from reference_model import LandingFile, sequence_name, write_metadata, write_parquet
from test_watch_and_concurrency import finish, kill, start, wait_for

parser = pytest.importorskip("prometheus_client.parser")
pytest.importorskip("openlineage.client")
pytestmark = pytest.mark.slow  # a CLI subprocess with its own JVM

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
                                   str(port), "--metrics-host", "127.0.0.1",
                                   "--openlineage-url", collector.url,
                                   "--openlineage-namespace", "test"), log)
    try:
        def two_passes():
            got = scrape(port)
            return got if got.get(("mirrorspec_passes_total", ())) >= 2 else None
        got = wait_for(two_passes, "two passes on /metrics", process, log)
        process.send_signal(signal.SIGTERM)
        assert finish(process) == 1  # `bad` failed: the watch's verdict, not the observers'
    finally:
        kill(process)
        collector.close()

    def value(name, **labels):
        return got[(name, tuple(sorted(labels.items())))]
    assert value("mirrorspec_table_status", table="dbo.good", status="Replicating") == 1
    assert value("mirrorspec_table_status", table="dbo.bad", status="Failed") == 1
    assert value("mirrorspec_table_rows_applied_total", table="dbo.good", change="inserted") == 2
    assert value("mirrorspec_table_files_pending", table="dbo.good") == 0
    assert value("mirrorspec_table_files_pending", table="dbo.bad") == 1
    assert value("mirrorspec_table_consecutive_failures", table="dbo.good") == 0
    assert value("mirrorspec_table_consecutive_failures", table="dbo.bad") >= 1
    assert value("mirrorspec_pass_duration_seconds") > 0

    events = collector.events
    for event in events:
        check_run_event(event)
    by_table = {}
    for event in events:
        by_table.setdefault(event["job"]["name"], []).append(event["eventType"])
    # one run per table: the idle passes after it send nothing
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
            "--metrics-port", str(taken.getsockname()[1]), "--metrics-host", "127.0.0.1",
            "--openlineage-url", f"http://127.0.0.1:{dead.getsockname()[1]}"), log)
        try:
            def three_passes():
                text = log.read_text(errors="replace")
                return text.count('"event": "warning"') >= 2 and (warehouse / "dbo" / "good"
                                                                    / "_delta_log").exists()
            wait_for(three_passes, "the table mirrored despite both", process, log)
            process.send_signal(signal.SIGTERM)
            assert finish(process) == 1
        finally:
            kill(process)
    lines = [json.loads(line) for line in log.read_text().splitlines()
             if line.startswith("{")]
    warnings = [e["message"] for e in lines if e["event"] == "warning"]
    assert len([w for w in warnings if w.startswith("metrics:")]) == 1, warnings
    assert len([w for w in warnings if w.startswith("OpenLineage:")]) == 1, warnings
