"""The runner's pure parts: _metadata.json deployment, progress events, the summary rows.

(mirrorspec.spark.run imports pyspark only inside the functions that run Spark.)
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mirrorspec.openmirroring import mirroring
from mirrorspec.artifacts.plan import SourceSpec, TablePlan, TableStep
from mirrorspec.base.console import Console
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.artifacts.run_results import RunResults, TableRunResult
from mirrorspec.landing.deploy import deploy_metadata
from mirrorspec.spark.run import RunProgress, summary_rows


def table(tmp_path: Path, keys=("id",), feed=False) -> TablePlan:
    steps = [TableStep("PublishFeed"), TableStep("MirrorTable")] if feed else [
        TableStep("MirrorTable")]
    return TablePlan(unique_id="sales.orders", name="orders", schema="sales",
                     warehouse_schema="sales", landing_path=str(tmp_path / "sales.schema/orders"),
                     delta_path=str(tmp_path / "wh/sales/orders"),
                     metadata=mirroring.render_metadata(key_columns=list(keys)),
                     key_columns=list(keys),
                     source=SourceSpec(type="qlik_replicate" if feed else "landing_zone"),
                     steps=steps)


def test_metadata_is_written_when_absent_and_left_alone_when_equal(tmp_path):
    t = table(tmp_path)
    assert deploy_metadata(t) is True
    path = Path(t.landing_path) / "_metadata.json"
    assert json.loads(path.read_text()) == {"keyColumns": ["id"]}
    # same keys, other spelling of the property name: left as the publisher wrote it
    path.write_text('{"KeyColumns": ["id"], "isUpsertDefaultRowMarker": true}')
    assert deploy_metadata(t) is False
    assert "isUpsertDefaultRowMarker" in path.read_text()


def test_a_published_folder_gets_the_projects_other_properties(tmp_path):
    t = table(tmp_path, feed=True)
    assert deploy_metadata(t) is True
    path = Path(t.landing_path) / "_metadata.json"
    path.write_text('{"keyColumns": ["id"], "isUpsertDefaultRowMarker": true}')
    assert deploy_metadata(t) is True  # same keys, another property: the project wins
    assert json.loads(path.read_text()) == {"keyColumns": ["id"]}
    assert deploy_metadata(t) is False  # now equal: left alone


def test_keyless_metadata_in_an_empty_folder_is_replaced(tmp_path):
    t = table(tmp_path)
    Path(t.landing_path).mkdir(parents=True)
    (Path(t.landing_path) / "_metadata.json").write_text("{}")
    assert deploy_metadata(t) is True
    assert json.loads((Path(t.landing_path) / "_metadata.json").read_text())["keyColumns"] == ["id"]


@pytest.mark.parametrize("feed, hint", [(True, "--full-refresh --select sales.orders"),
                                        (False, "delete its landing folder")])
def test_other_key_columns_are_an_error_saying_to_recreate_the_folder(tmp_path, feed, hint):
    t = table(tmp_path, feed=feed)
    folder = Path(t.landing_path)
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text('{"keyColumns": ["order_id"]}')
    (folder / "00000000000000000001.parquet").write_bytes(b"PAR1")
    with pytest.raises(LandingZoneError) as info:
        deploy_metadata(t)
    text = info.value.render()
    assert "recreate the table folder" in text and "['order_id']" in text and hint in text
    assert str(folder / "_metadata.json") in text
    assert info.value.code == "KeyColumnsChanged"


@pytest.mark.parametrize("feed", [True, False])
def test_the_same_keys_in_another_case_or_order_are_kept_as_written(tmp_path, feed):
    """As the engine, lint and compile decide (mirroring.keys_differ): no KeyColumnsChanged,
    and the folder's keyColumns stay as first written; a folder we publish still gets the
    project's other properties."""
    t = table(tmp_path, keys=("id", "line"), feed=feed)
    folder = Path(t.landing_path)
    folder.mkdir(parents=True)
    path = folder / "_metadata.json"
    path.write_text('{"keyColumns": ["LINE", "ID"], "isUpsertDefaultRowMarker": true}')
    (folder / "00000000000000000001.parquet").write_bytes(b"PAR1")
    assert deploy_metadata(t) is feed
    written = json.loads(path.read_text())
    assert written["keyColumns"] == ["LINE", "ID"]
    assert ("isUpsertDefaultRowMarker" in written) is not feed
    assert deploy_metadata(t) is False  # now as the project wants it: left alone


def test_invalid_metadata_names_the_file(tmp_path):
    t = table(tmp_path)
    Path(t.landing_path).mkdir(parents=True)
    (Path(t.landing_path) / "_metadata.json").write_text("{oops")
    with pytest.raises(LandingZoneError, match="_metadata.json.*invalid JSON"):
        deploy_metadata(t)


def test_progress_emits_json_events_per_table():
    stream = io.StringIO()
    console = Console(log_format="json", stream=stream)
    ok = TableRunResult("a.t", rows_inserted=5, files_applied=["00000000000000000001.parquet"])
    bad = TableRunResult("a.u")
    bad.fail("boom", "BadFile")
    with RunProgress(console, 2) as progress:
        progress.started("a.t")
        progress.started("a.u")
        progress.finished(ok)
        progress.finished(bad)
    events = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [e["event"] for e in events] == ["table_started", "table_started", "table_finished",
                                            "table_finished"]
    assert events[1]["running"] == 2
    last = events[-1]
    assert (last["done"], last["failed"], last["running"], last["total"]) == (2, 1, 0, 2)
    assert last["status"] == "error" and last["error"] == "boom"
    assert "rows_per_second" in events[2] and "1 of 2 OK a.t" in events[2]["message"]


def test_progress_for_people_prints_one_line_per_table():
    stream = io.StringIO()
    console = Console(log_format="text", stream=stream)
    waiting = TableRunResult("a.t", status="waiting", awaiting="00000000000000000003.parquet")
    with RunProgress(console, 1) as progress:
        progress.started("a.t")
        progress.finished(waiting)
    text = stream.getvalue()
    assert "1 of 1 WAITING a.t" in text and "awaiting 00000000000000000003.parquet" in text


def test_summary_rows():
    result = TableRunResult("a.t", mirror_status="Replicating", rows_inserted=1, rows_updated=2,
                            rows_deleted=3, files_published=["x"], files_applied=["x", "y"],
                            execution_time=1.26)
    assert summary_rows(RunResults("run", {}, [result])) == [
        ["a.t", "success", "Replicating", 1, 2, 1, 2, 3, "1.3s"]]


def test_engine_warnings_reach_run_results(tmp_path, monkeypatch):
    import sys
    import types

    from mirrorspec.spark import run as runner

    outcome = types.SimpleNamespace(status="Replicating", files_applied=[], rows_inserted=0,
                                    rows_updated=0, rows_deleted=0, delta_version=1,
                                    awaiting=None, error=None,
                                    warnings=["lz/t/2.parquet: not a 20-digit sequence name"])
    fake = types.ModuleType("mirrorspec.spark.mirror.engine")
    fake.MirrorOptions = lambda **kw: kw
    fake.MirrorTarget = lambda *a: a
    fake.mirror_tables = lambda *a, **kw: types.SimpleNamespace(tables=[outcome])
    monkeypatch.setitem(sys.modules, "mirrorspec.spark.mirror.engine", fake)
    job = runner._TableJob(table(tmp_path), TableRunResult("sales.orders"))
    plan = types.SimpleNamespace(warehouse=str(tmp_path / "wh"), landing_zone=str(tmp_path))
    runner._mirror(None, plan, job, Console(stream=io.StringIO()), "MirrorTable")
    runner._mirror(None, plan, job, Console(stream=io.StringIO()), "MirrorTable")
    assert job.result.warnings == ["lz/t/2.parquet: not a 20-digit sequence name"]
    results = RunResults(command="run", args={}, results=[job.result])
    results.write(tmp_path)
    doc = json.loads((tmp_path / "run_results.json").read_text())
    assert doc["results"][0]["warnings"] == ["lz/t/2.parquet: not a 20-digit sequence name"]


def test_secret_source_options_are_resolved_only_when_the_feed_is_read(tmp_path, monkeypatch):
    from dataclasses import replace

    from mirrorspec.artifacts.plan import secret_placeholder
    from mirrorspec.spark.publish import publisher

    seen = []

    class Reader:
        def read(self, spark, table, files, prior):
            seen.append(table.source.options)
            raise LandingZoneError("stop here")

    monkeypatch.setattr(publisher, "get_reader", lambda kind: Reader())
    monkeypatch.setenv("MIRRORSPEC_SECRET_TOKEN", "s3cr3t")
    planned = table(tmp_path, feed=True)
    options = {"null_value": secret_placeholder("MIRRORSPEC_SECRET_TOKEN"), "header": True}
    planned = replace(planned, source=replace(planned.source, options=options))
    class Conf(dict):  # the session conf the publisher scopes its settings in
        def set(self, key, value):
            self[key] = value

        def unset(self, key):
            self.pop(key, None)

    class Session:
        conf = Conf()

    with pytest.raises(LandingZoneError):
        publisher._publish_batch(Session(), None, planned, None, {}, [], 1,
                                 Console(stream=io.StringIO()), None)
    assert Session.conf == {}  # put back after the failed read
    assert seen == [{"null_value": "s3cr3t", "header": True}]
    assert planned.source.options["null_value"] == secret_placeholder("MIRRORSPEC_SECRET_TOKEN")
