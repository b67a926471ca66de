"""`mirrorspec changes`, `history`'s feed column, `Project.changes` and the docs site's feed
answer without a JVM: the CLI runs in a subprocess that refuses pyspark/py4j/delta imports, on
Delta tables written by delta-rs with a change data feed (a MERGE and an append) and one whose
feed was switched on after its first version. (The engine's own feed, row by row against the
landing files: tests/spark/test_change_data_feed.py.)"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pyarrow as pa
import pytest

from tests.support.no_jvm import run_without_jvm
from tests.support.project_files import write

deltalake = pytest.importorskip("deltalake")
FEED = {"delta.enableChangeDataFeed": "true"}


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    """sales.orders: v0 load of 1-3 (feed on), v1 a MERGE (1 updated, 2 deleted, 4 inserted),
    v2 an append of 5. sales.later: v0 without a feed, v1 the property, v2 an append."""
    root = tmp_path_factory.mktemp("changes") / "warehouse"
    orders = str(root / "sales" / "orders")
    deltalake.write_deltalake(orders, pa.table({"order_id": [3, 1, 2],
                                                "status": ["closed", "open", "open"]}),
                              configuration=FEED)
    changes = pa.table({"order_id": [1, 2, 4], "status": ["shipped", None, "open"],
                        "op": ["u", "d", "i"]})
    (deltalake.DeltaTable(orders).merge(changes, "t.order_id = s.order_id", source_alias="s",
                                        target_alias="t")
     .when_matched_delete(predicate="s.op = 'd'")
     .when_matched_update(updates={"status": "s.status"})
     .when_not_matched_insert(updates={"order_id": "s.order_id", "status": "s.status"})
     .execute())
    deltalake.write_deltalake(orders, pa.table({"order_id": [5], "status": ["open"]}),
                              mode="append")
    later = str(root / "sales" / "later")
    deltalake.write_deltalake(later, pa.table({"id": [1], "v": ["a"]}))
    deltalake.DeltaTable(later).alter.set_table_properties(FEED)
    deltalake.write_deltalake(later, pa.table({"id": [2], "v": ["b"]}), mode="append")
    return root


def changes(warehouse, cwd, table, *args):
    done = run_without_jvm("changes", table, "--warehouse", str(warehouse), "--format", "json",
                           *args, cwd=cwd, log_format="text")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_changes_by_version_with_change_type_and_commit_version(warehouse, tmp_path):
    doc = changes(warehouse, tmp_path, "sales.orders", "--limit", "100")
    assert doc["from_version"] == 0 and doc["to_version"] == 2 and doc["total"] == 8
    assert doc["columns"] == ["order_id", "status", "_change_type", "_commit_version",
                              "_commit_timestamp"]
    rows = [(r["_commit_version"], r["_change_type"], r["order_id"], r["status"])
            for r in doc["rows"]]
    assert [v for v, *_ in rows] == sorted(v for v, *_ in rows)
    assert sorted(rows[:3]) == [(0, "insert", 1, "open"), (0, "insert", 2, "open"),
                                (0, "insert", 3, "closed")]
    # within a version: the delete and the pre-image before the post-image and the insert
    assert [t for _v, t, *_ in rows[3:7]] == ["delete", "update_preimage", "update_postimage",
                                              "insert"]
    assert rows[3:7] == [(1, "delete", 2, "open"), (1, "update_preimage", 1, "open"),
                         (1, "update_postimage", 1, "shipped"), (1, "insert", 4, "open")]
    assert rows[7] == (2, "insert", 5, "open")
    assert doc["rows"][0]["_commit_timestamp"].startswith(str(datetime.now(timezone.utc).year))


def test_ranges_limits_and_formats(warehouse, tmp_path):
    one = changes(warehouse, tmp_path, "sales.orders", "--from-version", "1", "--to-version", "1")
    assert one["total"] == 4 and {r["_commit_version"] for r in one["rows"]} == {1}
    count = changes(warehouse, tmp_path, "sales.orders", "--limit", "0")
    assert count["total"] == 8 and count["rows"] == []
    nothing_new = changes(warehouse, tmp_path, "sales.orders", "--from-version", "3")
    assert nothing_new["total"] == 0 and nothing_new["to_version"] == 2
    history = deltalake.DeltaTable(str(warehouse / "sales" / "orders")).history()
    at = {c["version"]: c["timestamp"] for c in history}[2]
    stamp = datetime.fromtimestamp(at / 1000, tz=timezone.utc).isoformat()
    since = changes(warehouse, tmp_path, "sales.orders", "--from-timestamp", stamp)
    assert since["from_version"] == 2 and since["total"] == 1
    csv = run_without_jvm("changes", "sales.orders", "--warehouse", str(warehouse), "--format",
                          "csv", "--from-version", "2", cwd=tmp_path, log_format="text")
    assert csv.stdout.splitlines()[0] == \
        "order_id,status,_change_type,_commit_version,_commit_timestamp"
    assert csv.stdout.splitlines()[1].startswith("5,open,insert,2,")


@pytest.mark.parametrize("args,message", [
    (["--from-version", "0"], "version 0 carries no change data feed; the versions with one: 1-2"),
    (["--from-version", "9"], "has no version 9 (the latest is 2)"),
    (["--from-version", "2", "--to-version", "1"], "version 2 comes after version 1"),
    (["--from-version", "1", "--from-timestamp", "2026-01-01"], "not both"),
])
def test_bad_ranges_are_user_errors(warehouse, tmp_path, args, message):
    done = run_without_jvm("changes", "sales.later", "--warehouse", str(warehouse), *args,
                           cwd=tmp_path, log_format="text")
    assert done.returncode == 1, done.stdout + done.stderr
    assert message in done.stderr


def test_the_default_range_starts_where_the_feed_does(warehouse, tmp_path):
    doc = changes(warehouse, tmp_path, "sales.later")
    assert (doc["from_version"], doc["to_version"], doc["total"]) == (1, 2, 1)


def test_history_says_which_versions_carry_a_feed(warehouse, tmp_path):
    done = run_without_jvm("history", "sales.later", "--warehouse", str(warehouse), "--format",
                           "json", cwd=tmp_path, log_format="text")
    assert done.returncode == 0, done.stderr
    assert [(r["version"], r["feed"]) for r in json.loads(done.stdout)["rows"]] == [
        (2, True), (1, True), (0, False)]
    text = run_without_jvm("history", "sales.later", "--warehouse", str(warehouse),
                           cwd=tmp_path, log_format="text")
    header, *lines = [line for line in text.stdout.splitlines() if line.strip()][1:]
    assert header.split()[-1] == "feed"
    assert [line.split()[-1] for line in lines] == ["yes", "yes", "no"]


def test_project_changes_and_the_docs_site(warehouse, tmp_path):
    from mirrorspec.api import Project
    from mirrorspec.docsite.build import write_site

    root = write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1", "change_data_feed": True},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": str(warehouse)}}}},
        "tables/orders.yml": {"tables": [{"name": "orders", "schema": "sales",
                                          "key_columns": ["order_id"]}]}})
    project = Project(root)
    data = project.changes("sales.orders", from_version=1, to_version=1)
    # by key (the project's key_columns), then change
    assert list(zip(data.column("order_id").to_pylist(),
                    data.column("_change_type").to_pylist())) == [
        (1, "update_preimage"), (1, "update_postimage"), (2, "delete"), (4, "insert")]
    assert project.changes("sales.orders", limit=2).num_rows == 2
    assert project.changes("sales.orders", from_version=3).num_rows == 0
    result = project.compile()
    assert result.plan.tables[0].change_data_feed is True
    site, _found = write_site(result.plan, result.target_dir)
    page = next(site.rglob("*orders*.html")).read_text()
    assert "change data feed" in page and "since version 0" in page
    assert 'id="changes"' in page and "The change data feed of version 2" in page


def test_change_files_vacuum_removed_are_a_user_error(tmp_path):
    """A version whose change files are gone (VACUUM past the retention) is refused with what
    happened, not read with Spark or shown as a crash."""
    path = tmp_path / "warehouse" / "dbo" / "t"
    deltalake.write_deltalake(str(path), pa.table({"id": [1, 2], "v": ["a", "b"]}),
                              configuration=FEED)
    (deltalake.DeltaTable(str(path)).merge(pa.table({"id": [1], "v": ["A"]}), "t.id = s.id",
                                           source_alias="s", target_alias="t")
     .when_matched_update(updates={"v": "s.v"}).execute())
    for change_file in (path / "_change_data").iterdir():
        change_file.unlink()
    done = run_without_jvm("changes", "dbo.t", "--warehouse", str(tmp_path / "warehouse"),
                           cwd=tmp_path, log_format="text")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the change data of versions 0-1 can't be read" in done.stderr
    assert "VACUUM removes the change files" in done.stderr
    assert "reading with Spark" not in done.stderr
