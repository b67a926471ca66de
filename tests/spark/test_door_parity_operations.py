"""The two front doors over one layer, for the commands that operate on mirrored tables with
Spark: `maintain`, `reconcile` and `replay` give the same result (and the same error) from the
command line and from `mirrorspec.api.Project` for the same arguments. One mirrored project
serves the module; `maintain` works on two copies of its warehouse, one per door."""

from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from mirrorspec import api
from mirrorspec.cli import cli
from mirrorspec.spark.mirror import engine
from tests.support.project_files import write

M = "__rowMarker__"


def changes(rows):
    ids, names, markers = zip(*rows)
    return pa.table({"id": pa.array(ids, pa.int64()), "name": pa.array(names),
                     M: pa.array(markers, pa.int32())})


def project(root, warehouse):
    return write(root, {
        "mirrorspec_project.yml": {"name": "shop", "profile": "shop"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": str(warehouse),
            "spark": {"master": "local[2]"}}}}},
        "tables/shop.yml": {"tables": [{"name": "orders", "schema": "sales",
                                        "key_columns": ["id"], "deletion_vectors": False}]}})


@pytest.fixture(scope="module")
def shop(spark, tmp_path_factory):
    """sales.orders mirrored from one landing file, in a project."""
    root = tmp_path_factory.mktemp("operations") / "shop"
    folder = root / "landing" / "sales.schema" / "orders"
    folder.mkdir(parents=True)
    (folder / "_metadata.json").write_text(json.dumps({"keyColumns": ["id"]}))
    pq.write_table(changes([(1, "Alice", 0), (2, "Bob", 0), (3, "Carol", 0)]),
                   folder / f"{1:020d}.parquet")
    assert not engine.mirror_landing_zone(spark, str(root / "landing"), str(root / "warehouse"),
                                          engine.MirrorOptions(threads=1)).failed
    return project(root, root / "warehouse")


def invoke(root, *args: str):
    return CliRunner().invoke(cli, [*args, "--project-dir", str(root)])


def test_reconcile_finds_the_same_differences(shop, tmp_path):
    snapshot = tmp_path / "snapshot.parquet"
    pq.write_table(pa.table({"id": pa.array([1, 3, 4], pa.int64()),
                             "name": ["Alice", "Carl", "Dan"]}), snapshot)
    by_cli = invoke(shop, "reconcile", "sales.orders", "--against", str(snapshot),
                    "--output", str(tmp_path / "cli.json"))
    found = api.Project(shop).reconcile("sales.orders", snapshot)
    assert by_cli.exit_code == 1, by_cli.output
    assert json.loads((tmp_path / "cli.json").read_text()) == found.to_json()
    assert not found.equal
    assert (len(found.missing), len(found.extra), len(found.changed)) == (1, 1, 1)
    # a snapshot that isn't there: the same error, before Spark
    missing = invoke(shop, "reconcile", "sales.orders", "--against", str(tmp_path / "none"))
    with pytest.raises(api.UsageError, match="the source snapshot does not exist"):
        api.Project(shop).reconcile("sales.orders", tmp_path / "none")
    assert missing.exit_code == 1 and "the source snapshot does not exist" in missing.output


def test_replay_rebuilds_the_same_table(shop, tmp_path):
    by_cli = invoke(shop, "replay", "sales.orders", "--output", str(tmp_path / "cli.json"))
    assert by_cli.exit_code == 0, by_cli.output
    replayed = api.Project(shop).replay("sales.orders", key="id")
    assert json.loads((tmp_path / "cli.json").read_text()) == replayed.to_json()
    assert replayed.equal and len(replayed.replayed_files) == 1
    (tmp_path / "scratch").mkdir()
    (tmp_path / "scratch" / "x").write_text("")
    busy = invoke(shop, "replay", "sales.orders", "--scratch", str(tmp_path / "scratch"))
    with pytest.raises(api.MirrorspecError, match="is not empty"):
        api.Project(shop).replay("sales.orders", scratch=tmp_path / "scratch")
    assert busy.exit_code == 1 and "is not empty" in busy.output


def test_maintain_does_the_same_steps(shop, tmp_path):
    roots = {}
    for door in ("cli", "api"):
        shutil.copytree(shop / "warehouse", tmp_path / door / "warehouse")
        shutil.copytree(shop / "landing", tmp_path / door / "landing")
        roots[door] = project(tmp_path / door, tmp_path / door / "warehouse")
    by_cli = invoke(roots["cli"], "maintain", "--no-vacuum", "--log-format", "json")
    assert by_cli.exit_code == 0, by_cli.output
    events = [json.loads(line) for line in by_cli.stdout.splitlines() if line.startswith("{")]
    done_by_cli = [e["done"] for e in events if isinstance(e.get("done"), list)]
    result = api.Project(roots["api"]).maintain(vacuum=False)
    assert [t.done for t in result.tables] == done_by_cli and not result.failed
    assert len(done_by_cli) == 1 and any("optimized" in step for step in done_by_cli[0])
    # a retention below the table's: refused the same way, before Spark
    short = invoke(roots["cli"], "maintain", "--retain-hours", "1")
    with pytest.raises(api.MirrorspecError) as raised:
        api.Project(roots["api"]).maintain(retain_hours=1)
    assert short.exit_code == 1 and raised.value.message in short.output
