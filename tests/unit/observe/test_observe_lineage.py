"""OpenLineage run events (mirrorspec/observe/lineage.py) sent by the real openlineage-python
client to a tiny HTTP collector on 127.0.0.1, and checked against the spec's run event: START
then COMPLETE/FAIL per table, the feed or landing folder in, the Delta table out with the schema
and outputStatistics facets, errorMessage on failure; an unreachable collector is one warning."""

from __future__ import annotations

import io
import json
import socket
import sys

import pyarrow as pa
import pytest

from tests.support.observe_helpers import Collector, check_run_event
from mirrorspec.base.console import Console
from mirrorspec.base.errors import SetupError
from mirrorspec.observe.lineage import LineageEmitter
from mirrorspec.observe.samples import Dataset, TableSample, dataset_for_path, samples_from_run
from mirrorspec.artifacts.plan import Plan, SourceSpec, SparkSpec, TablePlan, TableStep
from mirrorspec.artifacts.run_results import RunResults, TableRunResult

pytest.importorskip("openlineage.client")


@pytest.fixture
def collector():
    c = Collector()
    yield c
    c.close()


def json_console() -> tuple[Console, io.StringIO]:
    stream = io.StringIO()
    return Console(log_format="json", stream=stream), stream


def delta_table(path) -> None:
    from deltalake import write_deltalake

    write_deltalake(str(path), pa.table({"id": pa.array([1, 2], pa.int64()),
                                         "name": pa.array(["a", None], pa.string())}))


def sample(tmp_path, status="Replicating", **kw) -> TableSample:
    fields = dict(table="sales.orders", status=status, delta_path=str(tmp_path / "wh/orders"),
                  seconds=2.0,
                  inputs=(dataset_for_path(str(tmp_path / "lz/orders")),))
    fields.update(kw)
    return TableSample(**fields)


def test_a_pass_sends_start_and_complete_with_the_schema_and_row_count(tmp_path, collector):
    delta_table(tmp_path / "wh/orders")
    console, stream = json_console()
    emitter = LineageEmitter(collector.url, "prod", console)
    sent = emitter.emit_pass([sample(tmp_path, files_applied=2, rows_inserted=3,
                                     rows_updated=1)])
    emitter.close()  # waits for the queued events
    assert sent == 2 and [e["eventType"] for e in collector.events] == ["START", "COMPLETE"]
    assert collector.paths == ["/api/v1/lineage"] * 2
    for event in collector.events:
        check_run_event(event)
    start, complete = collector.events
    assert start["run"]["runId"] == complete["run"]["runId"]
    assert start["eventTime"] < complete["eventTime"]
    assert complete["job"] == {**complete["job"], "namespace": "prod", "name": "sales.orders"}
    assert complete["inputs"] == [{"namespace": "file", "name": str(tmp_path / "lz/orders"),
                                   "facets": {}, "inputFacets": {}}]
    [out] = complete["outputs"]
    assert (out["namespace"], out["name"]) == ("file", str(tmp_path / "wh/orders"))
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == 4
    assert out["outputFacets"]["outputStatistics"]["fileCount"] == 2
    fields = out["facets"]["schema"]["fields"]
    assert [(f["name"], f["type"]) for f in fields] == [("id", "long"), ("name", "string")]
    assert "errorMessage" not in complete["run"]["facets"]
    assert complete["run"]["facets"]["processing_engine"]["name"] == "mirrorspec"
    assert not [e for e in map(json.loads, stream.getvalue().splitlines())
                if e["event"] == "warning"]


def test_a_failed_table_sends_fail_with_the_error_facet(tmp_path, collector):
    console, _ = json_console()
    emitter = LineageEmitter(collector.url, "mirrorspec", console)
    emitter.emit_pass([sample(tmp_path, "Failed", error="00000000000000000003.parquet, row 2: "
                                                       "__rowMarker__ 7 is not a row marker")])
    assert emitter.flush()
    start, fail = collector.events
    check_run_event(fail)
    assert fail["eventType"] == "FAIL"
    facet = fail["run"]["facets"]["errorMessage"]
    assert "__rowMarker__ 7" in facet["message"]
    assert facet["programmingLanguage"] == "python"
    assert "schema" not in fail["outputs"][0]["facets"]  # no Delta table to read: left out


def test_an_idle_pass_sends_nothing_and_a_change_sends_again(tmp_path, collector):
    console, _ = json_console()
    emitter = LineageEmitter(collector.url, "mirrorspec", console)
    assert emitter.emit_pass([sample(tmp_path, "Waiting")]) == 2
    assert emitter.emit_pass([sample(tmp_path, "Waiting")]) == 0  # nothing new
    assert emitter.emit_pass([sample(tmp_path, "Failed", error="boom")]) == 2
    assert emitter.emit_pass([sample(tmp_path, "Failed", error="boom")]) == 0
    assert emitter.flush() and len(collector.events) == 4


def test_an_unreachable_collector_is_one_warning_and_the_pass_goes_on(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    console, stream = json_console()
    emitter = LineageEmitter(f"http://user:secret@127.0.0.1:{port}", "mirrorspec", console,
                             timeout=2.0)
    for _ in range(3):
        assert emitter.emit_pass([sample(tmp_path, files_applied=1)]) == 2  # queued
        assert emitter.flush()
    assert emitter.sender.delivered == 0
    warnings = [e for e in map(json.loads, stream.getvalue().splitlines())
                if e["event"] == "warning"]
    assert len(warnings) == 1
    assert f"127.0.0.1:{port}" in warnings[0]["message"]
    assert "secret" not in stream.getvalue()


def test_the_api_key_goes_as_a_bearer_token(tmp_path, collector, monkeypatch):
    monkeypatch.setenv("OPENLINEAGE_API_KEY", "k-123")
    console, stream = json_console()
    emitter = LineageEmitter(collector.url, "mirrorspec", console)
    emitter.emit_pass([sample(tmp_path, files_applied=1)])
    emitter.close()
    assert collector.headers[0]["Authorization"] == "Bearer k-123"
    assert "k-123" not in stream.getvalue()


def test_without_the_client_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "openlineage.client", None)
    console, _ = json_console()
    with pytest.raises(SetupError) as info:
        LineageEmitter("http://127.0.0.1:1", "mirrorspec", console)
    assert "pip install 'mirrorspec[openlineage]'" in info.value.render()


# --- samples: what the observers are fed from a run --------------------------------------------

def plan_of(tmp_path, tables) -> Plan:
    return Plan(plan_version=1, project_name="p", project_version="1", profile="p",
                target="dev", landing_zone=str(tmp_path / "lz"), warehouse=str(tmp_path / "wh"),
                state_path=str(tmp_path / "state"), spark=SparkSpec(), partner_events=None,
                tables=tables)


def test_run_samples_name_the_feed_or_the_landing_folder_as_input(tmp_path):
    kafka = TablePlan(unique_id="sales.events", name="events", schema="sales",
                      warehouse_schema="sales", landing_path=str(tmp_path / "lz/events"),
                      delta_path=str(tmp_path / "wh/events"), metadata={},
                      source=SourceSpec(type="debezium", kafka={
                          "bootstrap_servers": "broker:9092,b2:9092", "topics": ["db.events"]}),
                      steps=[TableStep("PublishFeed"), TableStep("MirrorTable")])
    feed = TablePlan(unique_id="sales.items", name="items", schema="sales",
                     warehouse_schema="sales", landing_path=str(tmp_path / "lz/items"),
                     delta_path=str(tmp_path / "wh/items"), metadata={},
                     source=SourceSpec(type="qlik_replicate", path="s3a://feeds/qlik/items"),
                     steps=[TableStep("PublishFeed"), TableStep("MirrorTable")])
    landing = TablePlan(unique_id="sales.orders", name="orders", schema="sales",
                        warehouse_schema="sales", landing_path=str(tmp_path / "lz/orders"),
                        delta_path=str(tmp_path / "wh/orders"), metadata={})
    plan = plan_of(tmp_path, [kafka, feed, landing])
    results = RunResults(command="run", args={}, results=[
        TableRunResult("sales.events", mirror_status="Replicating", rows_inserted=3),
        TableRunResult("sales.items", status="skipped"),
        TableRunResult("sales.orders", status="error", error="bad file")])
    events, orders = samples_from_run(plan, results)  # skipped: no run to report
    assert events.inputs == (Dataset("kafka://broker:9092", "db.events"),)  # a topic, no slash
    assert events.status == "Replicating" and events.rows_applied == 3
    assert orders.status == "Failed" and orders.error == "bad file"
    assert orders.inputs == (Dataset("file", str(tmp_path / "lz/orders")),)
    [items] = samples_from_run(plan, RunResults(command="run", args={},
                                                results=[TableRunResult("sales.items")]))
    assert items.inputs == (Dataset("s3a://feeds", "qlik/items"),)


def test_uris_are_named_as_the_openlineage_naming_spec_does():
    assert dataset_for_path("s3a://bucket/wh/sales/orders/") == Dataset("s3a://bucket",
                                                                       "wh/sales/orders")
    assert dataset_for_path("hdfs://nn:8020/wh/t") == Dataset("hdfs://nn:8020", "/wh/t")
    assert dataset_for_path("/data/wh/t") == dataset_for_path("file:///data/wh/t")




def test_the_run_command_sends_each_pass(tmp_path, collector):
    from mirrorspec.context.lineage import send_run_pass

    orders = TablePlan(unique_id="sales.orders", name="orders", schema="sales",
                       warehouse_schema="sales", landing_path=str(tmp_path / "lz/orders"),
                       delta_path=str(tmp_path / "wh/orders"), metadata={})
    results = RunResults(command="run", args={}, results=[
        TableRunResult("sales.orders", files_applied=["00000000000000000001.parquet"])])
    console, _ = json_console()
    emitter = LineageEmitter(collector.url, "mirrorspec", console)
    send_run_pass(emitter, plan_of(tmp_path, [orders]), results)
    send_run_pass(None, plan_of(tmp_path, [orders]), results)  # off
    assert emitter.flush()
    assert [e["eventType"] for e in collector.events] == ["START", "COMPLETE"]
    assert collector.events[1]["outputs"][0]["outputFacets"]["outputStatistics"][
        "fileCount"] == 1
