"""The two front doors over one layer, for the commands that need no JVM: `lint`, `diff`,
`history`, `export` and `docs generate` give the same result (and the same error) from the
command line and from `mirrorspec.api` for the same arguments. The tables are written with
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
from mirrorspec.cli import cli
from mirrorspec.landing.lint import to_json
from mirrorspec.project.diff import report_json
from tests.support.project_files import write

deltalake = pytest.importorskip("deltalake")

TABLES = {"tables": [
    {"name": "orders", "schema": "sales", "key_columns": ["id"], "tags": ["nightly"],
     "columns": [{"name": "id", "type": "Int64"}, {"name": "note", "type": "String"}]},
    {"name": "customers", "schema": "sales", "key_columns": ["id"],
     "columns": [{"name": "id", "type": "Int64"}]}]}


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    """A compiled project (target/ kept as the diff's state), a landing zone with one bad
    file, and sales.orders mirrored in two versions."""
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
