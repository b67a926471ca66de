"""The --metrics-port endpoint: real prometheus_client, scraped over HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from mirrorspec.base.console import Console
from mirrorspec.base.errors import UsageError
from mirrorspec.operate.metrics import WatchMetrics, check_metrics_option, pending_files

parser = pytest.importorskip("prometheus_client.parser")


class Recorder(Console):
    def __init__(self):
        super().__init__(log_format="json")
        self.events: list[tuple[str, str]] = []

    def event(self, kind, message, **fields):
        self.events.append((kind, message))


def scrape(port: int) -> dict:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in parser.text_string_to_metric_families(text) for s in family.samples}


def test_a_scrape_shows_each_tables_status_rows_failures_and_pending_files(tmp_path):
    folder = tmp_path / "landing" / "t"
    folder.mkdir(parents=True)
    (folder / "00000000000000000003.parquet").write_bytes(b"")
    (folder / "_metadata.json").write_text("{}")
    console = Recorder()
    metrics = WatchMetrics(0, console)
    try:
        metrics.observe("dbo.t", "Waiting", 2, inserted=5, updated=1, landing_path=str(folder))
        metrics.observe("dbo.bad", "Failed")
        metrics.end_pass(1.25)
        metrics.observe("dbo.bad", "Failed")
        metrics.observe("dbo.t", "Replicating", 1, inserted=2, landing_path=str(folder))
        metrics.observe_kafka([["dbo.k", "orders", 0, 3, 5, 2, "2026-01-01T00:00:00Z"],
                               ["dbo.k", "orders", 1, 3, None, None, ""]])
        metrics.end_pass(0.5)
        seen = scrape(metrics.port)
    finally:
        metrics.close()
    assert seen[("mirrorspec_table_status", (("status", "Replicating"), ("table", "dbo.t")))] == 1
    assert seen[("mirrorspec_table_status", (("status", "Waiting"), ("table", "dbo.t")))] == 0
    assert seen[("mirrorspec_table_rows_applied_total",
                 (("change", "inserted"), ("table", "dbo.t")))] == 7
    assert seen[("mirrorspec_table_files_applied_total", (("table", "dbo.t"),))] == 3
    assert seen[("mirrorspec_table_files_pending", (("table", "dbo.t"),))] == 1
    assert seen[("mirrorspec_table_consecutive_failures", (("table", "dbo.bad"),))] == 2
    assert seen[("mirrorspec_table_consecutive_failures", (("table", "dbo.t"),))] == 0
    assert ("mirrorspec_table_last_sync_timestamp_seconds", (("table", "dbo.bad"),)) not in seen
    assert seen[("mirrorspec_kafka_lag", (("partition", "0"), ("table", "dbo.k"),
                                          ("topic", "orders")))] == 2
    assert not any(name == "mirrorspec_kafka_lag" and ("partition", "1") in labels
                   for name, labels in seen)
    assert seen[("mirrorspec_pass_duration_seconds", ())] == 0.5
    assert seen[("mirrorspec_passes_total", ())] == 2
    assert console.events[0][1] == f"metrics: http://127.0.0.1:{metrics.port}/metrics"


def test_a_port_in_use_is_one_warning_and_the_passes_go_on():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        console = Recorder()
        metrics = WatchMetrics(taken.getsockname()[1], console)
        metrics.observe("dbo.t", "Replicating", 1)
        metrics.end_pass(0.1)
        metrics.close()
    assert metrics.port is None
    assert [kind for kind, _ in console.events] == ["warning"]
    assert "going on without a /metrics endpoint" in console.events[0][1]


def test_metrics_port_needs_watch_and_pending_files_of_a_uri_are_unknown():
    check_metrics_option(None, None)
    check_metrics_option(9100, 5.0)
    with pytest.raises(UsageError, match="--metrics-port 9100 needs --watch"):
        check_metrics_option(9100, None)
    assert pending_files("s3a://bucket/landing/t") is None


def _commit(delta, version: int, state: dict) -> None:
    """A Delta JSON commit as the engine writes it: its progress in userMetadata."""
    log = delta / "_delta_log"
    log.mkdir(parents=True, exist_ok=True)
    info = {"commitInfo": {"operation": "MERGE",
                           "userMetadata": json.dumps({"mirrorspec": state})}}
    (log / f"{version:020d}.json").write_text(json.dumps(info) + "\n")


def test_the_last_applied_file_left_in_the_folder_is_not_pending(tmp_path):
    folder, delta = tmp_path / "landing" / "t", tmp_path / "wh" / "dbo" / "t"
    folder.mkdir(parents=True)
    for n in (2, 3, 5):  # 2 applied and left in place (as Fabric does); 3 new; 5 behind a gap
        (folder / f"{n:020d}.parquet").write_bytes(b"")
    (folder / "_metadata.json").write_text("{}")
    assert pending_files(str(folder)) == 3  # no progress given: every numbered file
    assert pending_files(str(folder), str(delta), "dbo.t") == 3  # no Delta table yet
    _commit(delta, 0, {"sequence": 2, "files": [f"{2:020d}.parquet"]})
    assert pending_files(str(folder), str(delta), "dbo.t") == 2
    _commit(delta, 1, {"sequence": 3, "files": [f"{3:020d}.parquet"]})
    assert pending_files(str(folder), str(delta), "dbo.t") == 1


def test_with_time_detection_the_files_applied_are_not_pending(tmp_path):
    folder, delta = tmp_path / "landing" / "t", tmp_path / "wh" / "dbo" / "t"
    folder.mkdir(parents=True)
    for name in ("a.parquet", "b.parquet", "_tmp.parquet"):
        (folder / name).write_bytes(b"")
    _commit(delta, 0, {"mode": "time", "batch": 1, "files": ["a.parquet"]})
    assert pending_files(str(folder), str(delta), "dbo.t") == 1  # b (_tmp is never read)
