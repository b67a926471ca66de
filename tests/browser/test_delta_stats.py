"""delta_stats.summarize: row counts of real Delta tables (written with the deltalake package, and
one written by delta-spark with a deletion vector)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mirrorspec.docsite.delta_stats import summarize

deltalake = pytest.importorskip("deltalake")
pa = pytest.importorskip("pyarrow")


def write(path: Path, ids: list[int], mode: str = "append") -> None:
    data = pa.table({"id": pa.array(ids, pa.int64()), "name": [f"n{i}" for i in ids]})
    deltalake.write_deltalake(str(path), data, mode=mode)


def test_no_table(tmp_path):
    assert summarize(tmp_path / "missing") is None
    (tmp_path / "empty" / "_delta_log").mkdir(parents=True)
    assert summarize(tmp_path / "empty") is None


def test_appends_deletes_and_overwrite(tmp_path):
    table = tmp_path / "t"
    write(table, [1, 2, 3])
    write(table, [4, 5])
    summary = summarize(table)
    assert (summary.version, summary.rows, summary.files) == (1, 5, 2)
    assert summary.size_bytes > 0 and summary.last_commit.endswith("Z")
    deltalake.DeltaTable(str(table)).delete("id = 2")
    summary = summarize(table)
    assert (summary.version, summary.rows) == (2, 4)
    assert summary.last_operation == "DELETE"
    write(table, [7], mode="overwrite")
    assert summarize(table).rows == 1


def test_reads_through_a_checkpoint(tmp_path):
    table = tmp_path / "t"
    write(table, [1, 2, 3])
    write(table, [4])
    deltalake.DeltaTable(str(table)).create_checkpoint()
    write(table, [5, 6])
    assert any(p.name.endswith(".checkpoint.parquet") for p in (table / "_delta_log").iterdir())
    # the commits before the checkpoint may be gone: the checkpoint alone must suffice
    (table / "_delta_log" / f"{0:020d}.json").unlink()
    summary = summarize(table)
    assert (summary.version, summary.rows, summary.files) == (2, 6, 3)


def test_missing_statistics_make_the_count_unknown(tmp_path):
    table = tmp_path / "t"
    write(table, [1])
    log = table / "_delta_log" / f"{0:020d}.json"
    actions = [json.loads(line) for line in log.read_text().splitlines()]
    for action in actions:
        if "add" in action:
            action["add"].pop("stats", None)
    log.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    summary = summarize(table)
    assert summary.rows is None and summary.files == 1


def test_a_gap_in_the_log_is_not_guessed(tmp_path):
    table = tmp_path / "t"
    write(table, [1])
    write(table, [2])
    write(table, [3])
    (table / "_delta_log" / f"{1:020d}.json").unlink()
    assert summarize(table) is None


def test_docs_site_shows_delta_rows(tmp_path):
    """End to end: a Delta table in the project's warehouse shows up with its row count."""
    import sys

    from click.testing import CliRunner

    sys.path.insert(0, str(Path(__file__).parent))
    from _site import write_project

    from mirrorspec.cli import cli

    project = write_project(tmp_path / "shop", delta=False)
    write(project / "warehouse" / "sales" / "orders", list(range(1, 13)))
    result = CliRunner().invoke(cli, ["docs", "generate", "--project-dir", str(project)],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.output
    site = project / "target" / "docs"
    page = (site / "tables" / "sales.orders.html").read_text()
    assert "<dt>rows</dt><dd>12</dd>" in page and "<dt>version</dt><dd>0</dd>" in page
    assert "No Delta table at" in (site / "tables" / "crm.customers.html").read_text()
    catalog = json.loads((site / "catalog.json").read_text())
    orders = next(t for t in catalog["tables"] if t["unique_id"] == "sales.orders")
    assert orders["delta"]["rows"] == 12
    shutil.rmtree(project / "warehouse" / "sales")


def test_log_written_by_delta_spark_merge_with_deletion_vectors():
    """A table delta-spark wrote (fixtures/make_spark_merge_dv.py): 3 rows in one file, then a
    MERGE (update one key, delete another) that put a deletion vector on that file."""
    fixture = Path(__file__).parent / "fixtures" / "spark_merge_dv"
    summary = summarize(fixture)
    assert (summary.version, summary.rows, summary.files) == (1, 2, 2)
    assert summary.last_operation == "MERGE"


def test_schema_and_history_from_the_log(tmp_path):
    """The columns (after a schema merge) and the newest commits, newest first."""
    table = tmp_path / "t"
    write(table, [1, 2])
    data = pa.table({"id": pa.array([3], pa.int64()), "name": ["n3"], "email": ["e"]})
    deltalake.write_deltalake(str(table), data, mode="append", schema_mode="merge")
    summary = summarize(table)
    assert [(c.name, c.type, c.nullable) for c in summary.columns] == [
        ("id", "bigint", True), ("name", "string", True), ("email", "string", True)]
    assert [h.version for h in summary.history] == [1, 0]
    assert summary.history[0].operation == "WRITE" and summary.history[0].timestamp.endswith("Z")


def test_history_of_a_spark_table_names_files_and_rows():
    summary = summarize(Path(__file__).parent / "fixtures" / "spark_merge_dv")
    merge, write_ = summary.history
    assert (merge.version, merge.operation, merge.files_applied) == \
        (1, "MERGE", ["00000000000000000003.parquet"])
    assert (merge.rows_inserted, merge.rows_updated, merge.rows_deleted) == (0, 1, 1)
    assert write_.files_applied == ["00000000000000000001.parquet",
                                    "00000000000000000002.parquet"]
    assert write_.rows_inserted == 3
