"""The registry of `serve --root` (mirrorspec/serve/items.py): a started mirroring is restarted
by the next serve and a stopped one is not; each item has its own conformance report. The
engine is a stand-in process here (the real one is in tests/spark/test_serve_fabric_mirroring.py
and `make test-clients`)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mirrorspec.serve import supervise
from mirrorspec.serve.conformance import Conformance
from mirrorspec.serve.items import EngineSettings, FabricError, Registry
from mirrorspec.serve.names import Names, Place, split_name
from mirrorspec.serve.store import Store


class _Started(list):
    """(landing zone, process) of every engine started; `feeds`: each one's feed switch."""

    def __init__(self):
        super().__init__()
        self.feeds: list[bool | None] = []


@pytest.fixture
def engines(monkeypatch):
    """Every engine started, as (landing zone, process); each a process that waits for SIGTERM."""
    started = _Started()

    def fake(landing, warehouse, every, log_format, conf=(), feed=None):
        process = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
        started.append((landing, process))
        started.feeds.append(feed)
        return process


    monkeypatch.setattr(supervise, "start_mirror", fake)
    yield started
    for _landing, process in started:
        if process.poll() is None:
            process.kill()
            process.wait()


def open_registry(root, report=None, log=None, limit=4):
    """A registry as `serve --root root [--report report] [--max-engines limit]` opens it,
    adopted item `first`."""
    registry = Registry(root, EngineSettings(1, "text", limit=limit), "visible",
                        log or (lambda *_a, **_f: None))
    registry.load()
    landing, warehouse = registry.folders_of(*_ids())
    for folder in (landing, warehouse):
        folder.mkdir(parents=True, exist_ok=True)
    names = Names("ws", _ids()[0], "first", _ids()[1])
    store = Store(names, landing, warehouse, root / ".staging", lambda: {})
    conformance = Conformance(landing, report, lambda *_a, **_f: None)
    registry.adopt(f"ws={names.workspace_id}", f"first={names.item_id}", landing, warehouse,
                   store, conformance)
    registry.open_all()
    registry.resume()
    return registry


def _ids() -> tuple[str, str]:
    return "6d6b8c3e-1111-4222-8333-944445555666", "7e7c9d4f-1111-4222-8333-944445555666"


def test_a_started_mirroring_is_restarted_by_the_next_serve_and_a_stopped_one_is_not(
        tmp_path, engines):
    root = tmp_path / "root"
    first = open_registry(root)
    ws = first.workspace("ws")
    running = first.create_item(ws, "running", "", None)
    stopped = first.create_item(ws, "stopped", "", None)
    idle = first.create_item(ws, "idle", "", None)
    first.start(running)
    first.start(stopped)
    first.stop(stopped)
    assert [landing for landing, _p in engines] == [running.landing, stopped.landing]
    first.close()
    assert all(p.poll() is not None for _l, p in engines)  # serve's stop ends every engine

    engines.clear()
    again = open_registry(root)
    try:
        assert [landing for landing, _p in engines] == [running.landing]
        assert engines[0][1].poll() is None
        assert again.status(again.items[running.id]) == "Running"
        assert again.status(again.items[stopped.id]) == "Stopped"
        assert again.status(again.items[idle.id]) == "Initialized"
        again.stop(again.items[running.id])
    finally:
        again.close()
    engines.clear()
    third = open_registry(root)
    third.close()
    assert engines == []  # stopMirroring is kept too


def test_a_mirroring_that_cannot_restart_is_logged_and_stopped(tmp_path, engines):
    root = tmp_path / "root"
    first = open_registry(root)
    item = first.create_item(first.workspace("ws"), "gone", "", None)
    first.start(item)
    first.close()
    for path in sorted(item.landing.rglob("*"), reverse=True):
        path.rmdir()
    item.landing.rmdir()
    logged: list[tuple[str, str]] = []
    engines.clear()
    again = open_registry(root, log=lambda level, message, **_f: logged.append((level, message)))
    try:
        assert engines == []
        assert again.status(again.items[item.id]) == "Stopped"
        assert [level for level, m in logged if "was not restarted" in m] == ["warning"]
    finally:
        again.close()


def test_each_item_has_its_own_conformance_report(tmp_path):
    report = tmp_path / "reports" / "conformance.json"
    report.parent.mkdir()
    registry = open_registry(tmp_path / "root", report=report)
    try:
        other = registry.create_item(registry.workspace("ws"), "other", "", None)
        (other.landing / "s.schema" / "t").mkdir(parents=True)
        (other.landing / "s.schema" / "t" / "f.parquet").write_bytes(b"x")
        place = Place("landing", "ws", "other.MountedRelationalDatabase", ("s.schema", "t",
                                                                           "f.parquet"))
        assert other.conformance is not None
        other.conformance.published(place, 1)
    finally:
        registry.close()
    own = json.loads((report.parent / f"conformance.{other.id}.json").read_text())
    assert own["item"]["id"] == other.id and own["item"]["displayName"] == "other"
    assert [f["kind"] for f in own["findings"]] == ["not-sequence-name"]
    adopted = json.loads(report.read_text())
    assert adopted["item"]["displayName"] == "first" and adopted["findings"] == []


def _definition(feed):
    """A definition whose mirroring.json has `enableDeltaChangeDataFeed: feed` (absent: None)."""
    from mirrorspec.serve.items import DEFAULT_DEFINITION, definition_part

    doc = json.loads(json.dumps(DEFAULT_DEFINITION))
    if feed is not None:
        doc["properties"]["target"]["typeProperties"]["enableDeltaChangeDataFeed"] = feed
    return {"parts": [definition_part("mirroring.json", doc)]}


def test_the_change_data_feed_switch_of_the_definition_reaches_the_engine(tmp_path, engines):
    from mirrorspec.serve.items import FabricError

    registry = open_registry(tmp_path / "root")
    try:
        item = registry.create_item(registry.workspace("ws"), "cdf", "", _definition(True))
        registry.start(item)
        assert engines.feeds == [True]
        registry.set_definition(item, _definition(True))  # unchanged: the engine keeps running
        assert engines.feeds == [True] and engines[0][1].poll() is None
        registry.set_definition(item, _definition(False))  # changed: restarted with it
        assert engines.feeds == [True, False]
        assert engines[0][1].poll() is not None and engines[1][1].poll() is None
        assert registry.status(item) == "Running"
        registry.set_definition(item, _definition(None))
        assert engines.feeds == [True, False, None]
        with pytest.raises(FabricError) as refused:
            registry.set_definition(item, _definition("yes"))
        assert refused.value.status == 400 and "enableDeltaChangeDataFeed" in refused.value.message
        assert engines.feeds == [True, False, None]
    finally:
        registry.close()


def test_ids_are_looked_up_before_names(tmp_path):
    """An item whose display name is another item's GUID (a registry an older serve wrote)
    never takes that item's requests: GUIDs match first, for items and workspaces alike."""
    root = tmp_path / "root"
    registry = open_registry(root)
    ws = registry.workspace("ws")
    victim = registry.create_item(ws, "victim", "", None)
    registry.close()
    doc = json.loads((root / "fabric-items.json").read_text())
    first = next(i for i in doc["items"] if i["displayName"] == "first")
    first["displayName"] = victim.id  # as `create` with that name used to allow
    doc["workspaces"].append({"id": "aaaaaaaa-1111-4222-8333-944445555666",
                              "displayName": ws.id, "description": ""})
    (root / "fabric-items.json").write_text(json.dumps(doc))
    again = open_registry(root)
    try:
        found = again.workspace(ws.id)
        assert found.id == ws.id and found.name == "ws"
        assert again.item(found, victim.id).name == "victim"
        assert again.item(found, victim.id.upper()).name == "victim"
    finally:
        again.close()


@pytest.mark.parametrize("name", ["6d6b8c3e-1111-4222-8333-944445555666",
                                  "{6D6B8C3E-1111-4222-8333-944445555666}",
                                  "6d6b8c3e111142228333944445555666"])
def test_a_display_name_shaped_like_a_guid_is_refused(tmp_path, name):
    registry = open_registry(tmp_path / "root")
    try:
        ws = registry.workspace("ws")
        other = registry.create_item(ws, "other", "", None)
        for call in (lambda: registry.create_item(ws, name, "", None),
                     lambda: registry.update_item(other, {"displayName": name}),
                     lambda: registry.create_workspace(name, "")):
            with pytest.raises(FabricError) as info:
                call()
            assert (info.value.status, info.value.code) == (400, "InvalidInput")
            assert "shaped like a GUID" in info.value.message
        assert sorted(i.name for i in registry.items_of(ws)) == ["first", "other"]
    finally:
        registry.close()


def test_the_engine_command_carries_the_switch():
    on = supervise.mirror_command(Path("/lz"), Path("/wh"), 5, "json", (), True)
    off = supervise.mirror_command(Path("/lz"), Path("/wh"), 5, "json", (), False)
    kept = supervise.mirror_command(Path("/lz"), Path("/wh"), 5, "json")
    assert on[-1] == "--change-data-feed" and off[-1] == "--no-change-data-feed"
    assert not any("change-data-feed" in arg for arg in kept)


def test_an_item_name_ending_with_its_type_is_refused(tmp_path):
    """`db.MountedRelationalDatabase` is how paths address the item `db`: an item of that name
    could not be told from it."""
    registry = open_registry(tmp_path / "root")
    try:
        ws = registry.workspace("ws")
        for name in ("first.MountedRelationalDatabase", "x.mirroreddatabase"):
            with pytest.raises(FabricError) as info:
                registry.create_item(ws, name, "", None)
            assert (info.value.status, info.value.code) == (400, "InvalidInput")
        assert registry.item(ws, "FIRST.MountedRelationalDatabase").name == "first"
    finally:
        registry.close()


@pytest.mark.parametrize("name", ["v1", "onelake", "ONELAKE", "null"])
def test_a_workspace_named_like_the_account_or_the_api_is_refused(tmp_path, name):
    registry = open_registry(tmp_path / "root")
    try:
        with pytest.raises(FabricError) as info:
            registry.create_workspace(name, "")
        assert (info.value.status, info.value.code) == (400, "InvalidInput")
        with pytest.raises(ValueError, match="reserved"):
            split_name(name, "workspace")
    finally:
        registry.close()


def test_start_mirroring_runs_at_most_max_engines(tmp_path, engines):
    """--max-engines: one more startMirroring gets 409 and starts nothing; a stopped engine
    frees its place; a restart over the limit leaves the item Stopped, logged."""
    root = tmp_path / "root"
    registry = open_registry(root, limit=2)
    ws = registry.workspace("ws")
    a, b, c = (registry.create_item(ws, n, "", None) for n in ("a", "b", "c"))
    try:
        registry.start(a)
        registry.start(b)
        registry.start(a)  # already running: no second engine, no refusal
        with pytest.raises(FabricError) as info:
            registry.start(c)
        assert (info.value.status, info.value.code) == (409, "MirroringEngineLimitReached")
        assert "--max-engines 2" in info.value.message
        assert len(engines) == 2 and registry.status(c) == "Initialized"
        registry.stop(a)
        registry.start(c)
        assert len(engines) == 3 and registry.running_engines() == 2
    finally:
        registry.close()
    engines.clear()
    logged: list[str] = []
    again = open_registry(root, limit=1, log=lambda _level, message, **_f: logged.append(message))
    try:
        assert len(engines) == 1 and again.running_engines() == 1  # b or c, not both
        assert sum("was not restarted" in m and "--max-engines 1" in m for m in logged) == 1
    finally:
        again.close()
