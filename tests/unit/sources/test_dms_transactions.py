"""AWS DMS PreserveTransactions/CdcPath transaction files (no JVM). Fixture:
tests/fixtures/aws_dms/transactions (the DMS User Guide's example; README.md there)."""

from __future__ import annotations

from pathlib import Path

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.aws_dms import (belongs_to_table, file_format, parse_csv, parse_options,
                                        with_default_source_table)
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_UPDATE, list_feed_files
from mirrorspec.sources.debezium import TableShape

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "aws_dms" / "transactions"
SHAPE = TableShape((("id", "Int32"), ("name", "String")), ("id",))


def changes(table_name: str, **options):
    opts = with_default_source_table(parse_options(options), table_name)
    files = [f for f in list_feed_files(str(ROOT)) if belongs_to_table(f, parse_options(options))]
    rows = [r for f in files for r in parse_csv(Path(f).read_text(), f, SHAPE, opts)]
    rows.sort(key=lambda r: r[3])  # the _order the publisher sorts by
    return [(r[0], r[1], r[2], Path(r[5]).name) for r in rows]


def test_rows_are_routed_to_their_table_in_transaction_order_after_the_full_load():
    assert changes("x", table="rdsTempsdb.Names_03cdcad11a") == [
        (11, "Ann", OP_INSERT, "LOAD00000001.csv"), (13, "Cathy", OP_INSERT, "LOAD00000001.csv"),
        (23, "Kate", OP_INSERT, "LOAD00000001.csv"),
        (13, "Daniel", OP_INSERT, "CDC_TXN-20201117153046033.csv"),
        (23, "Kathy", OP_UPDATE, "CDC_TXN-20201117153046033.csv"),
        (13, "Cathy", OP_DELETE, "CDC_TXN-20201117153046033.csv"),
        (16, "Mike", OP_INSERT, "CDC_TXN-20201117153046033.csv"),
        (16, "Michael", OP_UPDATE, "CDC_TXN-20201117153146033.csv")]  # not otherdb's row 99


def test_the_other_table_and_the_default_source_table_name():
    assert [(i, op) for i, _, op, _ in changes("x", table="Names_6d152ce62d")] == [
        (15, OP_INSERT), (15, OP_INSERT), (24, OP_INSERT), (24, OP_DELETE)]
    # without the option, transaction rows go by the mirrored table's name (any schema) and
    # no file is skipped by folder
    rows = changes("names_03cdcad11a")
    assert (99, "Not mine", OP_INSERT, "CDC_TXN-20201117153146033.csv") in rows
    assert (15, "Jane", OP_INSERT, "LOAD00000001.csv") in rows


def test_files_of_other_tables_are_skipped_by_folder():
    opts = parse_options({"table": "hr.employee"})
    assert belongs_to_table("bucket/hr/employee/LOAD00000001.csv", opts)
    assert belongs_to_table("bucket/HR/Employee/2023/11/14/20231114-101200000.csv", opts)
    assert not belongs_to_table("bucket/hr/dept/LOAD00000001.csv", opts)
    assert not belongs_to_table("bucket/sales/employee/LOAD00000001.csv", opts)
    assert belongs_to_table("bucket/cdc/CDC_TXN-20201117153046033.csv", opts)
    assert belongs_to_table("bucket/hr/dept/LOAD00000001.csv", parse_options({}))


def test_transaction_files_are_csv_and_bad_rows_are_located():
    opts = parse_options({"format": "parquet", "table": "s.t"})
    assert file_format("cdc/CDC_TXN-20201117153046033.csv", opts) == "csv"
    with pytest.raises(SourceError) as err:
        list(parse_csv("I,t,s,1,a\nI,t,s,2\n", "cdc/CDC_TXN-1.csv", SHAPE, opts))
    assert err.value.line == 2 and "transaction row of s.t has 4 fields; expected 5" in \
        err.value.message
    with pytest.raises(SourceError) as err:
        list(parse_csv("I,t\n", "cdc/CDC_TXN-1.csv", SHAPE, opts))
    assert err.value.line == 1 and "Op,table_name,schema_name" in err.value.message
    with pytest.raises(SourceError) as err:
        list(parse_csv("X,t,s,1,a\n", "cdc/CDC_TXN-1.csv", SHAPE, opts))
    assert "unknown DMS operation 'X'" in err.value.message
