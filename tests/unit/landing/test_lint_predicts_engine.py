"""`mirrorspec lint` predicts the file (and row) where the engine stops each bad-file table of
the engine tests (the shared fixtures of tests/support/landing_cases.py), without a JVM.
tests/spark/test_bad_files.py runs the engine on the same landing zone and compares
(`test_lint_predicted_where_the_engine_stopped`)."""

from __future__ import annotations

import json
import os

import pytest

from tests.support.landing_cases import CASES, FILE1, PRODUCER_CASES, write_case, write_good_tables, \
    write_producer_case
from tests.support.reference_model import write_parquet
from mirrorspec.landing.lint import lint_landing_zone


def fake_mirrored(warehouse: str, table: str, columns: dict[str, str], keys, sequence: int):
    """A Delta log as the engine leaves it after applying files up to `sequence`."""
    log = os.path.join(warehouse, "dbo", table, "_delta_log")
    os.makedirs(log)
    schema = {"type": "struct", "fields": [
        {"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in columns.items()]}
    state = {"mirrorspec": {"sequence": sequence, "keys": list(keys),
                            "files": [f"{sequence:020d}.parquet"]}}
    with open(os.path.join(log, f"{0:020d}.json"), "w") as handle:
        handle.write(json.dumps({"commitInfo": {"userMetadata": json.dumps(state)}}) + "\n")
        handle.write(json.dumps({"metaData": {"schemaString": json.dumps(schema)}}) + "\n")


@pytest.fixture(scope="module")
def linted(tmp_path_factory):
    root = tmp_path_factory.mktemp("lint_cases")
    landing, warehouse = str(root / "landing"), str(root / "warehouse")
    for case in CASES:
        write_case(landing, case)
    write_good_tables(landing)
    for case in PRODUCER_CASES:
        write_producer_case(landing, case)
    # type_change_vs_table: file 1 was applied (and stays, as the last processed file)
    fake_mirrored(warehouse, "type_change_vs_table", {"id": "long", "v": "string"}, ("id",), 1)
    result = lint_landing_zone(landing, warehouse=warehouse)
    return {t.table: t for t in result.tables}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_lint_stops_where_the_engine_stops(linted, case):
    report = linted[case.name]
    assert report.stops_at is not None, report.findings
    named = "_metadata.json" if case.bad_metadata is not None else case.bad.name
    assert report.stops_at.file == f"{case.name}/{named}"
    assert report.stops_at.level == "error"
    if case.row is not None:
        assert report.stops_at.row == case.row
    for word in case.words:
        if word != "unreadable":  # lint names the codec instead
            assert word in report.stops_at.message.lower()


@pytest.mark.parametrize("case", PRODUCER_CASES, ids=lambda c: c.name)
def test_lint_stops_where_the_engine_stops_producer_files(linted, case):
    stop = linted[case.name].stops_at
    assert stop is not None and stop.file == f"{case.name}/{case.stop_file}"
    assert stop.line == case.line and stop.row is None


def test_good_tables_lint_clean(linted):
    for name in ("good", "good_csv"):
        assert linted[name].findings == []
        assert linted[name].stops_at is None


def test_nothing_stops_a_table_whose_bad_file_was_rewritten(tmp_path):
    case = next(c for c in CASES if c.name == "marker3")
    table_dir = write_case(str(tmp_path), case)
    write_parquet(case.bad.__class__(case.bad.name, case.bad.columns,
                                     ((4, "d", 0), (5, "e", 4)), case.bad.types), table_dir)
    report = lint_landing_zone(str(tmp_path)).tables[0]
    assert report.stops_at is None and report.findings == []
    assert report.files == 3 and FILE1.name in os.listdir(table_dir)
