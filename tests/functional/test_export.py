"""`mirrorspec export` without a JVM: a table written by delta-rs, exported to Parquet and CSV
(binary as hex, NULLs kept, --version, bad suffix and missing folder refused, nothing half
written). Deletion vectors: tests/spark/test_table_readers.py (only Spark writes them here)."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from mirrorspec.cli import cli

deltalake = pytest.importorskip("deltalake")


@pytest.fixture
def warehouse(tmp_path):
    path = tmp_path / "wh" / "sales" / "orders"
    first = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["a", None],
                      "raw": pa.array([b"\x00\xff", None], pa.binary())})
    deltalake.write_deltalake(str(path), first)
    deltalake.write_deltalake(str(path), pa.table({"id": pa.array([3], pa.int64()), "name": [""],
                                                   "raw": pa.array([b"A"], pa.binary())}),
                              mode="append")
    return tmp_path / "wh"


def _export(warehouse, *args):
    return CliRunner().invoke(cli, ["--log-format", "json", "export", "sales.orders",
                                    "--warehouse", str(warehouse), *args])


def test_parquet_keeps_types_and_nulls(warehouse, tmp_path):
    dest = tmp_path / "orders.parquet"
    result = _export(warehouse, "--to", str(dest))
    assert result.exit_code == 0, result.output
    event = json.loads(result.output.strip().splitlines()[-1])
    assert (event["rows"], event["version"], event["format"]) == (3, 1, "parquet")
    table = pq.read_table(dest).sort_by("id")
    assert table.schema.field("name").type == pa.string()  # not DataFusion's string_view
    assert table.column("name").to_pylist() == ["a", None, ""]
    assert table.column("raw").to_pylist() == [b"\x00\xff", None, b"A"]
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".export-")] == []


def test_csv_writes_binary_as_hex_and_version_travels(warehouse, tmp_path):
    dest = tmp_path / "orders.csv"
    result = _export(warehouse, "--to", str(dest), "--version", "0")
    assert result.exit_code == 0, result.output
    # NULL is an empty field, '' a quoted empty string: a reader can tell them apart
    options = pcsv.ConvertOptions(strings_can_be_null=True, quoted_strings_can_be_null=False)
    table = pcsv.read_csv(dest, convert_options=options).sort_by("id")
    assert table.column("id").to_pylist() == [1, 2]
    assert table.column("raw").to_pylist() == ["00ff", None]
    assert table.column("name").to_pylist() == ["a", None]
    latest = tmp_path / "latest.csv"
    assert _export(warehouse, "--to", str(latest)).exit_code == 0
    assert pcsv.read_csv(latest, convert_options=options).sort_by("id").column(
        "name").to_pylist() == ["a", None, ""]


@pytest.mark.parametrize("name,message", [("orders.xlsx", "can't tell the format from '.xlsx'"),
                                          ("missing/orders.csv", "does not exist")])
def test_bad_destinations_are_refused_with_exit_1(warehouse, tmp_path, name, message):
    result = _export(warehouse, "--to", str(tmp_path / name))
    assert result.exit_code == 1 and message in result.output


def test_a_version_that_does_not_exist_is_refused(warehouse, tmp_path):
    result = _export(warehouse, "--to", str(tmp_path / "o.parquet"), "--version", "7")
    assert result.exit_code == 1 and "has no version 7 (the latest is 1)" in result.output
    assert not (tmp_path / "o.parquet").exists()


def test_show_prints_binary_values_as_hex(warehouse):
    result = CliRunner().invoke(cli, ["--log-format", "json", "show", "sales.orders",
                                      "--warehouse", str(warehouse)])
    assert result.exit_code == 0, result.output
    rows = next(json.loads(line)["rows"] for line in result.output.splitlines()
                if '"event": "rows"' in line)
    assert [r["raw"] for r in sorted(rows, key=lambda r: r["id"])] == ["00ff", None, "41"]
