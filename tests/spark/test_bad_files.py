"""Bad landing files: a clear error naming the file (and row), only that table stops.

One landing zone holds a table per kind of bad file, each receiving file 1 (good), file 2 (bad)
and file 3 (good), next to good tables. The first pass must apply file 1 only, report the table
Failed with the file, row and reason, and mirror the good tables fully; once file 2 is rewritten
under the same name (or `_metadata.json` fixed), the next pass applies files 2 and 3.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.support.landing_cases import (
    CASES, assert_lint_agrees, FILE1, GOOD2, GOOD_TABLES, KEYED, T_KEYED, Case, csv_file, metadata_for,
    table_files, write_case, write_good, write_good_tables)
from tests.support.reference_model import (
    LandingFile, ModelTable, as_multiset, landing_data_files, read_delta_rs, write_parquet)

from mirrorspec.landing.lint import lint_landing_zone

engine = pytest.importorskip("mirrorspec.spark.mirror.engine")


@pytest.fixture(scope="module")
def zone(spark, tmp_path_factory):
    """Runs the two passes once; returns what each pass left, captured right after it (the
    tables read by delta-rs: ~50 tables twice, a Spark job each would cost a minute)."""
    root = tmp_path_factory.mktemp("bad_files")
    landing, warehouse = str(root / "landing"), str(root / "warehouse")
    by_name = {c.name: c for c in CASES}

    # pass 0: only type_change_vs_table exists, so its file 1 is already in Delta
    vs_table = os.path.join(landing, "type_change_vs_table")
    metadata_for(vs_table, ("id",), False)
    write_parquet(FILE1, vs_table)
    first = engine.mirror_landing_zone(spark, landing, warehouse, engine.MirrorOptions())
    assert not first.failed, first.tables

    for case in CASES:
        write_case(landing, case, with_file1=case.name != "type_change_vs_table")
    write_good_tables(landing)

    def snapshot(result):
        tables = {}
        for name in [c.name for c in CASES] + list(GOOD_TABLES):
            path = os.path.join(warehouse, "dbo", name)
            tables[name] = read_delta_rs(path) if os.path.isdir(
                os.path.join(path, "_delta_log")) else None
        files = {name: landing_data_files(os.path.join(landing, name)) for name in tables}
        with open(os.path.join(warehouse, "tables.json")) as handle:
            status = json.load(handle)
        return {"outcomes": {o.name: o for o in result.tables}, "tables": tables,
                "files": files, "status": status, "result": result}

    linted = lint_landing_zone(landing, warehouse=warehouse)  # before the engine sees them
    failed_pass = snapshot(engine.mirror_landing_zone(spark, landing, warehouse,
                                                      engine.MirrorOptions(threads=2)))
    failed_pass["lint"] = {t.table: t for t in linted.tables}

    for case in CASES:  # rewrite the bad file under the same name (or fix _metadata.json)
        table_dir = os.path.join(landing, case.name)
        metadata_for(table_dir, case.keys, case.csv)
        bad_name = case.bad.name
        good = csv_file(GOOD2) if case.csv else GOOD2
        if case.name == "keyless_update":
            good = LandingFile(GOOD2.name, KEYED, ((4, "d", 0), (5, "e", 0)), T_KEYED)
        if bad_name != good.name and os.path.exists(os.path.join(table_dir, bad_name)):
            os.remove(os.path.join(table_dir, bad_name))
        write_good(good, table_dir)
    fixed_pass = snapshot(engine.mirror_landing_zone(spark, landing, warehouse,
                                                     engine.MirrorOptions(threads=2)))
    return {"first": failed_pass, "fixed": fixed_pass, "cases": by_name}


def expected_model(case: Case, fixed: bool) -> ModelTable:
    model = ModelTable(case.keys)
    one, three = table_files(case)
    if case.bad_metadata is not None and not fixed:
        return model
    second = case.bad
    if fixed:
        second = GOOD2 if case.name != "keyless_update" else LandingFile(
            GOOD2.name, KEYED, ((4, "d", 0), (5, "e", 0)), T_KEYED)
    error = model.apply([one, second, three])
    assert (error is None) == fixed
    return model


def assert_rows(snapshot, name, model):
    table = snapshot["tables"][name]
    if not model.rows and table is None:
        return
    assert table is not None, f"{name}: no Delta table"
    columns, rows = table
    assert as_multiset(model.columns, rows) == model.multiset(), name


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_bad_file_stops_only_its_table_with_a_clear_error(zone, case):
    first = zone["first"]
    outcome = first["outcomes"][case.name]
    assert outcome.status == "Failed"
    error = outcome.error
    assert error and error.get("errorCode") and error.get("message")
    named = "_metadata.json" if case.bad_metadata is not None else case.bad.name
    assert named in (error.get("file") or "") or named in error["message"], error
    if case.row is not None:
        assert error.get("row") == case.row, error
    for word in case.words:
        assert word in error["message"].lower(), error
    assert_rows(first, case.name, expected_model(case, fixed=False))
    # the bad file and the file after it stay where they are, to be retried
    assert case.bad.name in first["files"][case.name]


def test_status_json_reports_each_failed_table(zone):
    status = zone["first"]["status"]
    by_name = {t["sourceTableName"]: t for t in status["tables"]}
    for case in CASES:
        entry = by_name[case.name]
        assert entry["status"] == "Failed"
        assert entry["error"]["errorCode"] and entry["error"]["message"]
    for name in GOOD_TABLES:
        assert by_name[name]["status"] == "Replicating"
        assert not by_name[name].get("error")


def test_other_tables_go_on(zone):
    first = zone["first"]
    assert first["result"].failed
    for name in GOOD_TABLES:
        assert first["outcomes"][name].status == "Replicating"
        model = ModelTable(("id",))
        one, three = table_files(name)
        assert model.apply([one, csv_file(GOOD2) if name == "good_csv" else GOOD2, three]) is None
        assert_rows(first, name, model)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_rewriting_the_bad_file_lets_the_next_run_go_on(zone, case):
    fixed = zone["fixed"]
    outcome = fixed["outcomes"][case.name]
    assert outcome.status == "Replicating", outcome.error
    assert_rows(fixed, case.name, expected_model(case, fixed=True))
    assert fixed["files"][case.name] == [table_files(case)[1].name]
    assert not fixed["result"].failed


def test_lint_predicted_where_the_engine_stopped(zone):
    """The same landing zone, linted before the pass: lint's `stops_at` is the engine's error
    (file and row) for every table, and no stop for the tables the engine mirrored."""
    assert_lint_agrees(zone["first"]["outcomes"], zone["first"]["lint"])
