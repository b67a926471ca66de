"""The two front doors over one layer, for the commands that need no JVM: `lint`, `diff`,
`show`, `changes`, `history`, `status`, `export` and `docs generate` give the same result (and
the same error) from the command line and from `mirrorspec.api` for the same arguments, and
`MIRRORSPEC_READ_WITH=spark` sends both doors' reads to Spark. The tables are written with
delta-rs; one project serves the whole module."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from click.testing import CliRunner

from mirrorspec import api
from mirrorspec.api import Project
from mirrorspec.artifacts.status import STALE_MARKER
from mirrorspec.cli import cli
from mirrorspec.landing.lint import to_json
from mirrorspec.project.diff import report_json
from tests.support.project_files import write

deltalake = pytest.importorskip("deltalake")
FEED = {"delta.enableChangeDataFeed": "true"}

TABLES = {"tables": [
    {"name": "orders", "schema": "sales", "key_columns": ["id"], "tags": ["nightly"],
     "columns": [{"name": "id", "type": "Int64"}, {"name": "note", "type": "String"}]},
    {"name": "customers", "schema": "sales", "key_columns": ["id"],
     "columns": [{"name": "id", "type": "Int64"}]}]}


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """A compiled project (target/ kept as the diff's state), a landing zone with one bad
    file, sales.orders mirrored in two versions and sales.customers in two versions with a
    change data feed."""
    root = write(tmp_path_factory.mktemp("parity") / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "profile": "shop"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/shop.yml": TABLES})
    result = CliRunner().invoke(cli, ["compile", "--project-dir", str(root)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (root / "state").mkdir()
    (root / "target" / "plan.json").rename(root / "state" / "plan.json")
    shutil.copytree(root / "target" / "landing_zone", root / "landing")
    (root / "landing" / "sales.schema" / "orders" / "not-a-sequence.parquet").write_bytes(b"x")
    table = root / "warehouse" / "sales" / "orders"
    deltalake.write_deltalake(str(table), pa.table({
        "id": pa.array([2, 1], pa.int64()), "note": pa.array(["b", None])}))
    deltalake.write_deltalake(str(table), pa.table({
        "id": pa.array([3], pa.int64()), "note": pa.array([""])}), mode="append")
    customers = str(root / "warehouse" / "sales" / "customers")
    deltalake.write_deltalake(customers, pa.table({"id": pa.array([3, 1], pa.int64())}),
                              configuration=FEED)
    deltalake.write_deltalake(customers, pa.table({"id": pa.array([2], pa.int64())}),
                              mode="append")
    return root


def invoke(root, *args: str):
    return CliRunner().invoke(cli, [*args, "--project-dir", str(root)], catch_exceptions=False)


def test_lint_gives_the_same_findings_and_verdict(shop):
    landing = str(shop / "landing")
    by_cli = CliRunner().invoke(cli, ["lint", landing, "--format", "json"],
                                catch_exceptions=False)
    by_api = api.lint_landing_zone(landing)
    assert json.loads(by_cli.stdout) == to_json(by_api)
    assert by_api.count("error") + by_api.count("warning") > 0
    assert (by_cli.exit_code == 1) == by_api.failed()
    strict = CliRunner().invoke(cli, ["lint", landing, "--strict"])
    assert (strict.exit_code == 1) == by_api.failed(strict=True) is True
    # the project's landing zone, without its warehouse: the same report
    assert to_json(Project(shop).lint(with_warehouse=False)) == to_json(by_api)
    # a missing folder: the same error from both doors
    missing = CliRunner().invoke(cli, ["lint", str(shop / "nowhere")])
    with pytest.raises(api.LandingZoneError) as raised:
        api.lint_landing_zone(shop / "nowhere")
    assert missing.exit_code == 1 and raised.value.message in missing.output


def test_diff_gives_the_same_changes_and_verdict(shop, tmp_path):
    changed = json.loads(json.dumps(TABLES))
    changed["tables"][0]["key_columns"] = ["id", "note"]     # breaking: a key change
    project = write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "profile": "shop"},
        "profiles.yml": yaml.safe_load((shop / "profiles.yml").read_text()),
        "tables/shop.yml": changed})
    state = str(shop / "state")
    by_cli = invoke(project, "diff", "--state", state, "--format", "json")
    by_api = Project(project).diff(state=state)
    assert json.loads(by_cli.stdout) == json.loads(report_json(by_api))
    assert by_cli.exit_code == 1 and by_api.blocking
    allowed = invoke(project, "diff", "--state", state, "--allow-breaking")
    assert allowed.exit_code == 0 and not Project(project).diff(state=state,
                                                                allow_breaking=True).blocking
    neither = invoke(project, "diff")
    with pytest.raises(api.MirrorspecError, match="give exactly one of state=… or base=…"):
        Project(project).diff()
    assert neither.exit_code == 1 and "give exactly one of --state PATH or --base" in \
        neither.output


def test_history_gives_the_same_commits(shop):
    by_cli = json.loads(invoke(shop, "history", "sales.orders", "--format", "json").stdout)
    entries = Project(shop).history("sales.orders")
    assert [(e.version, e.operation, e.rows_inserted) for e in entries] == \
        [(r["version"], r["operation"], r["inserted"]) for r in by_cli["rows"]]
    assert [e.version for e in entries] == [1, 0]
    latest = json.loads(invoke(shop, "history", "sales.orders", "-n", "1",
                               "--format", "json").stdout)
    assert [e.version for e in Project(shop).history("sales.orders", limit=1)] == \
        [r["version"] for r in latest["rows"]] == [1]
    unknown = invoke(shop, "history", "sales.nothing")
    with pytest.raises(api.SelectionError) as raised:
        Project(shop).history("sales.nothing")
    assert unknown.exit_code == 1 and raised.value.message in unknown.output


def test_export_writes_the_same_file(shop, tmp_path):
    by_cli = invoke(shop, "export", "sales.orders", "--to", str(tmp_path / "cli.parquet"),
                    "--version", "0", "--log-format", "json")
    assert by_cli.exit_code == 0, by_cli.output
    said = json.loads(by_cli.stdout.strip().splitlines()[-1])
    done = Project(shop).export("sales.orders", tmp_path / "api.parquet", version=0)
    assert (done.table, done.version, done.rows, done.format) == \
        (said["table"], said["version"], said["rows"], said["format"]) == \
        ("sales.orders", 0, 2, "parquet")
    assert pq.read_table(tmp_path / "cli.parquet") == pq.read_table(done.path)
    # into the warehouse: refused the same way before anything is read
    inside = str(shop / "warehouse" / "out.csv")
    refused = invoke(shop, "export", "sales.orders", "--to", inside)
    with pytest.raises(api.MirrorspecError) as raised:
        Project(shop).export("sales.orders", inside)
    assert refused.exit_code == 1 and raised.value.message in refused.output


def test_docs_writes_the_same_site(shop):
    by_cli = invoke(shop, "docs", "generate", "--select", "sales.orders", "--log-format",
                    "json")
    assert by_cli.exit_code == 0, by_cli.output
    said = json.loads(by_cli.stdout.strip().splitlines()[-1])
    index = (shop / "target" / "docs" / "index.html").read_bytes()
    site = Project(shop).docs(select="sales.orders")
    assert (str(site.path), site.tables, site.delta_tables) == \
        (said["path"], said["tables"], said["delta_tables"]) == \
        (str(shop / "target" / "docs"), 1, said["delta_tables"])
    assert site.index.read_bytes() == index
    unknown = invoke(shop, "docs", "generate", "--select", "tag:nothing")
    assert unknown.exit_code == 0 and Project(shop).docs(select="tag:nothing").tables == 0


def _json(result) -> dict:
    """The JSON document a command printed (after any warning line)."""
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_show_gives_the_same_rows(shop):
    for args, kwargs in (((), {}), (("--where", "id >= 2", "-n", "1"), {"where": "id >= 2",
                                                                         "limit": 1}),
                         (("--version", "0"), {"version": 0})):
        by_cli = _json(invoke(shop, "show", "sales.orders", "--format", "json", *args))
        by_api = Project(shop).show("sales.orders", **kwargs)
        assert by_cli["columns"] == by_api.column_names == ["id", "note"]
        assert by_cli["rows"] == by_api.to_pylist(), args
    assert [r["id"] for r in by_cli["rows"]] == [1, 2]    # version 0, sorted by the key
    for args, kwargs, error in ((("sales.nothing",), {"table": "sales.nothing"},
                                 api.SelectionError),
                                (("sales.orders", "--version", "9"),
                                 {"table": "sales.orders", "version": 9}, api.InspectError)):
        refused = invoke(shop, "show", *args)
        with pytest.raises(error) as raised:
            Project(shop).show(**kwargs)
        assert refused.exit_code == 1 and raised.value.message in refused.output


def test_changes_gives_the_same_change_rows(shop):
    def same(by_cli, by_api):
        # the CLI prints _commit_timestamp as text; the rest is the same value
        stamps = by_api.column("_commit_timestamp").to_pylist()
        assert [r.pop("_commit_timestamp") for r in by_cli["rows"]] == \
            [s.isoformat().replace("+00:00", "") for s in stamps]
        assert by_cli["rows"] == by_api.drop_columns(["_commit_timestamp"]).to_pylist()

    every = _json(invoke(shop, "changes", "sales.customers", "--format", "json"))
    by_api = Project(shop).changes("sales.customers", limit=20)
    assert (every["from_version"], every["to_version"], every["total"]) == (0, 1, 3)
    assert [(r["_commit_version"], r["id"]) for r in every["rows"]] == [(0, 1), (0, 3), (1, 2)]
    same(every, by_api)
    later = _json(invoke(shop, "changes", "sales.customers", "--from-version", "1",
                         "--format", "json"))
    same(later, Project(shop).changes("sales.customers", from_version=1, limit=20))
    beyond = invoke(shop, "changes", "sales.customers", "--to-version", "5")
    with pytest.raises(api.InspectError) as raised:
        Project(shop).changes("sales.customers", to_version=5)
    assert beyond.exit_code == 1 and raised.value.message in beyond.output
    without_feed = invoke(shop, "changes", "sales.orders")
    with pytest.raises(api.InspectError) as raised:
        Project(shop).changes("sales.orders")
    assert without_feed.exit_code == 1 and raised.value.message in without_feed.output


def test_status_gives_the_same_document_and_verdict(shop):
    warehouse = shop / "warehouse"
    missing = invoke(shop, "status")
    assert missing.exit_code == 1 and f"no monitoring JSON in {warehouse}" in missing.output
    empty = Project(shop).status()     # the API's answer: an empty Status, not an error
    assert (empty.replicator, empty.tables, empty.failed) == ({}, [], False)
    (warehouse / "tables.json").write_text(json.dumps({"tables": [{
        "sourceSchemaName": "sales", "sourceTableName": "orders", "status": "Failed",
        "metrics": {"lastSyncDateTime": "2026-01-01T00:00:00Z"},
        "error": {"errorCode": "BadFile", "message": "x"}}]}))
    try:
        by_cli = invoke(shop, "status", "--json")
        status = Project(shop).status()
        assert json.loads(by_cli.stdout) == status.to_dict()
        assert by_cli.exit_code == 1 and status.failed
        with pytest.raises(api.FailedRun) as raised:
            status.raise_if_unhealthy()
        assert raised.value.message in by_cli.output
        # the table for people: the entries, and the warning when the last write failed
        (warehouse / STALE_MARKER).write_text("")
        table = invoke(shop, "status", "--log-format", "json")
        events = [json.loads(line) for line in table.stdout.splitlines()]
        assert [(r["table"], r["status"], r["error"]) for r in next(
            e for e in events if e["event"] == "status")["rows"]] == \
            [("orders", "Failed", "BadFile: x")]
        assert any(e["level"] == "warning" and STALE_MARKER in e["message"] for e in events)
    finally:
        (warehouse / "tables.json").unlink()
        (warehouse / STALE_MARKER).unlink(missing_ok=True)


def test_read_with_spark_sends_both_doors_to_spark(shop, monkeypatch):
    """MIRRORSPEC_READ_WITH=spark: the CLI and the API both read show and changes through
    Spark and say so (Spark itself stood in for: its readers are tested in tests/spark/)."""
    from mirrorspec.context import sessions
    from mirrorspec.spark.ops import inspect as spark_inspect

    asked = []
    monkeypatch.setenv("MIRRORSPEC_READ_WITH", "spark")
    monkeypatch.setattr(sessions, "session_for", lambda plan: "session")
    monkeypatch.setattr(spark_inspect, "preview", lambda spark, path, name, limit, *args,
                        **kwargs: asked.append(("preview", name, limit))
                        or (["id", "note"], [[7, "from spark"]][:limit]))
    monkeypatch.setattr(spark_inspect, "changes", lambda spark, path, name, *args:
                        asked.append(("changes", name, args[-2]))
                        or (["id", "_change_type"], [[7, "insert"]], 4, 4, 1))
    events = []
    project = Project(shop, on_event=events.append)
    by_cli = invoke(shop, "show", "sales.orders", "--format", "json")
    assert _json(by_cli)["rows"] == project.show("sales.orders").to_pylist() == \
        [{"id": 7, "note": "from spark"}]
    changed = _json(invoke(shop, "changes", "sales.customers", "--format", "json"))
    assert (changed["from_version"], changed["to_version"], changed["total"]) == (4, 4, 1)
    assert changed["rows"] == project.changes("sales.customers").to_pylist() == \
        [{"id": 7, "_change_type": "insert"}]
    assert asked == [("preview", "sales.orders", 20), ("preview", "sales.orders", 20),
                     ("changes", "sales.customers", 20), ("changes", "sales.customers", None)]
    said = "reading with Spark instead of delta-rs (slower: starts a JVM): " \
           "MIRRORSPEC_READ_WITH=spark asks for it"
    assert said in by_cli.output
    assert [e["message"] for e in events if e["level"] == "warning"] == \
        [f"sales.orders: {said}", f"sales.customers: {said}"]
