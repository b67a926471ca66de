"""The Prometheus endpoint (mirrorspec/observe/metrics.py), scraped over HTTP on 127.0.0.1 and
parsed with prometheus_client's own parser; a taken port or a missing library never takes a
watch down silently or wrongly."""

from __future__ import annotations

import io
import json
import socket
import sys

import pytest

from observe_helpers import free_port, scrape
from mirrorspec.console import Console
from mirrorspec.errors import SetupError
from mirrorspec.observe import start_observers
from mirrorspec.observe.metrics import Metrics, MetricsServer
from mirrorspec.observe.samples import KafkaLag, TableSample

parser = pytest.importorskip("prometheus_client.parser")


def json_console() -> tuple[Console, io.StringIO]:
    stream = io.StringIO()
    return Console(log_format="json", stream=stream), stream


def events(stream: io.StringIO) -> list[dict]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def sample(table: str, status: str = "Replicating", **kw) -> TableSample:
    return TableSample(table=table, status=status, delta_path=f"/wh/{table}",
                       landing_path=f"/lz/{table}", **kw)


def test_a_scrape_reads_every_table_metric_after_each_pass():
    console, _ = json_console()
    port = free_port()
    server = MetricsServer(port, "127.0.0.1", console)
    try:
        assert server.serving
        lag = (KafkaLag("orders", 0, 7), KafkaLag("orders", 1, 0))
        server.observe_pass([sample("sales.orders", files_applied=2, rows_inserted=5,
                                    rows_updated=1, seconds=1.5, files_pending=0,
                                    kafka_lag=lag),
                             sample("sales.bad", "Failed", error="x", files_pending=3)], 2.25)
        server.observe_pass([sample("sales.orders", rows_deleted=2, files_pending=1,
                                    kafka_lag=lag),
                             sample("sales.bad", "Failed", error="x", files_pending=3)], 0.5)
        got = scrape(port)
    finally:
        server.close()

    def value(name, **labels):
        return got[(name, tuple(sorted(labels.items())))]

    assert value("mirrorspec_table_status", table="sales.bad", status="Failed") == 1
    assert value("mirrorspec_table_status", table="sales.bad", status="Replicating") == 0
    assert value("mirrorspec_table_status", table="sales.orders", status="Replicating") == 1
    assert value("mirrorspec_table_consecutive_failures", table="sales.bad") == 2
    assert value("mirrorspec_table_consecutive_failures", table="sales.orders") == 0
    # counters add up across passes; gauges hold the last pass
    assert value("mirrorspec_table_rows_applied_total", table="sales.orders",
                 change="inserted") == 5
    assert value("mirrorspec_table_rows_applied_total", table="sales.orders",
                 change="deleted") == 2
    assert value("mirrorspec_table_files_applied_total", table="sales.orders") == 2
    assert value("mirrorspec_table_files_pending", table="sales.orders") == 1
    assert value("mirrorspec_table_files_pending", table="sales.bad") == 3
    assert value("mirrorspec_kafka_lag_messages", table="sales.orders", topic="orders",
                 partition="0") == 7
    assert not [k for k in got if k[0] == "mirrorspec_kafka_lag_messages"
                and ("table", "sales.bad") in k[1]]  # no Kafka feed: no lag series
    assert value("mirrorspec_pass_duration_seconds") == 0.5
    assert value("mirrorspec_passes_total") == 2
    assert value("mirrorspec_table_last_sync_timestamp_seconds", table="sales.orders") > 0
    assert ("mirrorspec_table_last_sync_timestamp_seconds",
            (("table", "sales.bad"),)) not in got  # never synced


def test_a_recovered_table_resets_its_consecutive_failures():
    metrics = Metrics()
    metrics.observe_pass([sample("t", "Failed")], 1)
    metrics.observe_pass([sample("t", "Failed")], 1)
    metrics.observe_pass([sample("t")], 1)
    families = {f.name: f for f in parser.text_string_to_metric_families(
        metrics.exposition().decode())}
    [failures] = families["mirrorspec_table_consecutive_failures"].samples
    assert failures.value == 0


def test_a_taken_port_is_a_warning_once_and_the_watch_goes_on():
    console, stream = json_console()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = MetricsServer(port, "127.0.0.1", console)
        server.observe_pass([sample("t")], 1.0)
        server.observe_pass([sample("t")], 1.0)
        server.close()
    warnings = [e for e in events(stream) if e["event"] == "warning"]
    assert len(warnings) == 1
    assert f"127.0.0.1:{port}" in warnings[0]["message"]
    assert not server.serving


def test_without_prometheus_client_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    console, _ = json_console()
    with pytest.raises(SetupError) as info:
        start_observers(console, metrics_port=free_port(), metrics_host="127.0.0.1")
    assert "pip install 'mirrorspec[metrics]'" in info.value.render()


def test_no_options_no_observers():
    console, stream = json_console()
    observers = start_observers(console)
    assert not observers.active
    observers.after_pass([sample("t")], 1.0)
    observers.close()
    assert stream.getvalue() == ""


# --- the options, as the commands take them --------------------------------------------------

def _cli():
    from mirrorspec.cli import cli

    return cli


def test_metrics_port_without_watch_is_a_usage_error(tmp_path):
    from click.testing import CliRunner

    for command in (["run", "--project-dir", str(tmp_path)],
                    ["mirror", "--landing-zone", str(tmp_path), "--warehouse", str(tmp_path)]):
        result = CliRunner().invoke(_cli(), [*command, "--metrics-port", "9464"])
        assert result.exit_code == 2, result.output
        assert "--metrics-port serves metrics between passes: use it with --watch" \
            in result.output


def test_a_url_that_is_not_http_is_refused_before_anything_runs(tmp_path):
    from click.testing import CliRunner

    result = CliRunner().invoke(_cli(), ["run", "--project-dir", str(tmp_path),
                                         "--openlineage-url", "marquez:5000"])
    assert result.exit_code == 2
    assert "is not an http(s) URL" in result.output
