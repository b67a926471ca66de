"""`export --to` stays out of what it reads: a file inside the warehouse or a landing zone (the
one read and the project's, relative paths and symlinks resolved) is refused, and so is an
existing file without --force; the table stays readable."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from mirrorspec.cli import cli
from tests.support.project_files import write

deltalake = pytest.importorskip("deltalake")


@pytest.fixture
def warehouse(tmp_path):
    path = tmp_path / "wh" / "sales" / "orders"
    deltalake.write_deltalake(str(path), pa.table({"id": pa.array([1, 2], pa.int64())}))
    return tmp_path / "wh"


def _export(*args, cwd=None):
    runner = CliRunner()
    if cwd is None:
        return runner.invoke(cli, ["export", "sales.orders", *args])
    before = os.getcwd()
    os.chdir(cwd)
    try:
        return runner.invoke(cli, ["export", "sales.orders", *args])
    finally:
        os.chdir(before)


def _data_file(warehouse):
    [data] = (warehouse / "sales" / "orders").glob("*.parquet")
    return data


def _readable(warehouse):
    table = deltalake.DeltaTable(str(warehouse / "sales" / "orders"))
    return sorted(table.to_pyarrow_table().column("id").to_pylist()) == [1, 2]


def test_the_tables_own_data_file_is_refused_even_with_force(warehouse):
    data = _data_file(warehouse)
    before = data.read_bytes()
    result = _export("--warehouse", str(warehouse), "--to", str(data), "--force")
    assert result.exit_code == 1, result.output
    assert "inside the warehouse" in result.output and "Traceback" not in result.output
    assert data.read_bytes() == before and _readable(warehouse)


def test_a_relative_path_and_a_symlink_into_the_table_are_resolved(warehouse, tmp_path):
    table = warehouse / "sales" / "orders"
    result = _export("--warehouse", "../..", "--to", "copy.parquet", cwd=table)
    assert result.exit_code == 1 and "inside the warehouse" in result.output
    assert not (table / "copy.parquet").exists()
    link = tmp_path / "link.parquet"
    link.symlink_to(_data_file(warehouse))
    result = _export("--warehouse", str(warehouse), "--to", str(link), "--force")
    assert result.exit_code == 1 and "inside the warehouse" in result.output
    assert _readable(warehouse)


def test_an_existing_file_needs_force(warehouse, tmp_path):
    dest = tmp_path / "orders.parquet"
    dest.write_bytes(b"mine")
    result = _export("--warehouse", str(warehouse), "--to", str(dest))
    assert result.exit_code == 1 and "the file exists; not replaced" in result.output
    assert "--force" in result.output and dest.read_bytes() == b"mine"
    result = _export("--warehouse", str(warehouse), "--to", str(dest), "--force")
    assert result.exit_code == 0, result.output
    assert pq.read_table(dest).num_rows == 2


def test_the_projects_landing_zone_is_refused_too(warehouse, tmp_path):
    project = write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "profiles.yml": {"shop": {"target": "dev", "outputs": {
            "dev": {"landing_zone": "landing", "warehouse": str(warehouse)}}}},
        "tables/shop.yml": {"tables": [{"name": "orders", "schema": "sales",
                                        "key_columns": ["id"]}]}})
    (project / "landing" / "sales.schema" / "orders").mkdir(parents=True)
    inside = project / "landing" / "sales.schema" / "orders" / "00000000000000000001.parquet"
    for args in (["--project-dir", str(project)],
                 ["--project-dir", str(project), "--warehouse", str(tmp_path / "other")]):
        result = _export(*args, "--to", str(inside))
        assert result.exit_code == 1, result.output
        assert "inside the landing zone" in result.output
        assert not inside.exists()
