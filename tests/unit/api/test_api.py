"""mirrorspec.api without a JVM: argument checks (typed errors naming the argument), status and
show on a warehouse written by delta-rs, the event callback, the artifact schemas."""

from __future__ import annotations

import json
from datetime import timedelta

import pyarrow as pa
import pytest

from mirrorspec.api import (InspectError, Project, ProjectError, SelectionError, UsageError,
                            mirror_landing_zone)
from tests.support.project_files import write

deltalake = pytest.importorskip("deltalake")


@pytest.fixture()
def project(tmp_path):
    root = write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/shop.yml": {"tables": [
            {"name": "orders", "schema": "sales", "key_columns": ["id"],
             "columns": [{"name": "id", "type": "Int64"}, {"name": "note", "type": "String"}]}]},
    })
    deltalake.write_deltalake(str(root / "warehouse" / "sales" / "orders"), pa.table({
        "id": pa.array([2, 1, 3], pa.int64()), "note": pa.array(["b", None, ""])}))
    (root / "warehouse" / "tables.json").write_text(json.dumps({"tables": [{
        "sourceSchemaName": "sales", "sourceTableName": "orders", "status": "Failed",
        "metrics": {"lastSyncDateTime": "2026-01-01T00:00:00Z"},
        "error": {"errorCode": "BadFile", "message": "x"}}]}))
    return root


@pytest.mark.parametrize("kwargs, message", [
    ({"path": 42}, "Project(path=42)"),
    ({"target": ""}, "Project(target='')"),
    ({"vars": ["env"]}, "Project(vars=['env']): give a mapping"),
    ({"on_event": "print"}, "on_event='print'"),
    ({"warm_server": "yes"}, "warm_server='yes': give True or False"),
])
def test_project_arguments_are_checked(project, kwargs, message):
    args = {"path": project, **kwargs}
    with pytest.raises(UsageError) as info:
        Project(**args)
    assert message in str(info.value)


def test_a_folder_without_a_project_is_a_project_error(tmp_path):
    with pytest.raises(ProjectError, match="no mirrorspec_project.yml in"):
        Project(tmp_path)


@pytest.mark.parametrize("call, message", [
    (lambda p: p.run(threads=0), "threads=0: give a whole number of at least 1"),
    (lambda p: p.run(select=5), "select=5: give a selector string or a list of them"),
    (lambda p: p.run(full_refresh="yes"), "full_refresh='yes': give True or False"),
    (lambda p: p.run(state="/nowhere/target"), "state='/nowhere/target'"),
    (lambda p: p.test(exclude=[1]), "exclude=[1]"),
    (lambda p: p.show("orders", limit=-1), "show(limit=-1)"),
    (lambda p: p.show("orders", version=1, timestamp="2026-01-01"), "version or timestamp"),
    (lambda p: p.status(stale_after="soon"), "stale_after 'soon' is not a duration"),
    (lambda p: p.status(stale_after=timedelta(0)), "must be longer than 0"),
])
def test_call_arguments_are_checked_before_any_work(project, call, message):
    with pytest.raises(UsageError) as info:
        call(Project(project))
    assert message in str(info.value)
    assert not (project / "target").exists()  # nothing compiled, nothing run


def test_show_is_a_pyarrow_table_sorted_by_key_and_status_has_the_health(project):
    events = []
    p = Project(project, on_event=events.append)
    table = p.show("orders", limit=None)
    assert table.to_pylist() == [{"id": 1, "note": None}, {"id": 2, "note": "b"},
                                 {"id": 3, "note": ""}]
    assert p.show("sales.orders", where="id >= 2", limit=1).column("id").to_pylist() == [2]
    with pytest.raises(SelectionError, match="no table 'nosuch'"):
        p.show("nosuch")
    with pytest.raises(InspectError, match="has no version 5"):
        p.show("orders", version=5)
    status = p.status()
    assert status.failed and status.health.failed == ["sales.orders"]
    assert status.to_dict()["tables"][0]["error"]["errorCode"] == "BadFile"
    assert not status.health.stale
    assert p.status(stale_after="1h").health.stale == [
        "sales.orders (last sync 2026-01-01T00:00:00Z)"]


def test_mirror_landing_zone_checks_before_spark(tmp_path):
    with pytest.raises(UsageError, match="threads=0"):
        mirror_landing_zone(tmp_path, tmp_path / "wh", threads=0)
    with pytest.raises(UsageError, match="conf="):
        mirror_landing_zone(tmp_path, tmp_path / "wh", conf={1: "x"})



def test_events_reach_the_callback_and_a_callback_that_raises_is_dropped_with_one_warning():
    from mirrorspec.base.console import CallbackConsole

    seen = []
    console = CallbackConsole(seen.append)
    console.table("t", ["id", "at"], [[1, None]], kind="rows")
    [event] = seen
    assert (event["event"], event["level"], event["rows"]) == ("rows", "info",
                                                               [{"id": 1, "at": None}])
    assert event["invocation_id"] == console.invocation_id and event["time"].endswith("Z")

    calls = []

    def broken(event):
        calls.append(event)
        raise ValueError("oops")

    console = CallbackConsole(broken)
    with pytest.warns(RuntimeWarning, match="raised ValueError"):
        console.info("first")
    console.warning("second")  # not sent, no second warning, no exception
    assert [e["message"] for e in calls] == ["first"]


def test_without_a_callback_events_go_to_python_logging(caplog):
    """Project(on_event=None): a notebook or an orchestrator that shows logging shows mirrorspec's
    progress, warnings and tables (logger `mirrorspec`, each event's own level)."""
    import logging

    from mirrorspec.base.console import CallbackConsole

    console = CallbackConsole(None)
    with caplog.at_level(logging.DEBUG, logger="mirrorspec"):
        console.info("sales.orders: started", table="sales.orders")
        console.warning("selector 'x' matched no table")
        console.error("sales.orders: BadFile")
        console.event("debug", "detail")
        console.table("results", ["table", "rows"], [["sales.orders", 3], ["sales.items", None]])
    records = [r for r in caplog.records if r.name == "mirrorspec"]
    assert [(r.levelno, r.getMessage().splitlines()[0]) for r in records] == [
        (logging.INFO, "sales.orders: started"), (logging.WARNING, "selector 'x' matched no table"),
        (logging.ERROR, "sales.orders: BadFile"), (logging.DEBUG, "detail"),
        (logging.INFO, "results")]
    assert records[0].mirrorspec["table"] == "sales.orders"
    assert records[0].mirrorspec["invocation_id"] == console.invocation_id
    assert records[-1].getMessage().splitlines()[1:] == [
        "table         rows", "sales.orders  3", "sales.items"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="mirrorspec"):
        console.info("not shown")  # below the level: not even formatted
        CallbackConsole(lambda _e: None).warning("to the callback only")
    assert caplog.records == []


@pytest.mark.parametrize("warm", [False, True])
def test_run_and_test_use_the_warm_server_only_when_asked(project, monkeypatch, warm):
    import mirrorspec.spark.ops.datatests as datatests
    import mirrorspec.spark.run as runner

    asked = {}
    monkeypatch.setattr(runner, "run_plan", lambda plan, **kw: asked.setdefault("run", kw))
    monkeypatch.setattr(datatests, "execute_tests",
                        lambda console, ctx, ids, **kw: asked.setdefault("test", kw))
    (project / "landing").mkdir()  # the fixture's warehouse was mirrored from it
    p = Project(project, warm_server=warm) if warm else Project(project)
    p.run()
    p.test()
    assert asked["run"]["warm_server"] is warm and asked["test"]["warm"] is warm


def test_every_type_the_api_returns_is_exported_and_the_package_is_typed():
    import inspect
    import tomllib
    import typing
    from pathlib import Path

    from mirrorspec import api

    returned = set()
    for function in [api.mirror_landing_zone, api.artifact_schema] + [
            f for _, f in inspect.getmembers(api.Project, inspect.isfunction)
            if not f.__name__.startswith("_")]:
        hint = typing.get_type_hints(function, vars(api) | {"pyarrow": pa}).get("return")
        for kind in typing.get_args(hint) or (hint,):
            if isinstance(kind, type) and kind.__module__.startswith("mirrorspec"):
                returned.add(kind)
    assert {t.__name__ for t in returned} >= {"CompileResult", "RunResults", "TestResults",
                                              "Status"}
    for kind in returned | {api.Health, api.TableRunResult, api.DataTestResult, api.Plan}:
        assert kind.__name__ in api.__all__ and getattr(api, kind.__name__) is kind
    root = Path(api.__file__).parent
    assert (root / "py.typed").is_file()
    config = tomllib.loads((root.parent / "pyproject.toml").read_text(encoding="utf-8"))
    assert "py.typed" in config["tool"]["setuptools"]["package-data"]["mirrorspec"]
