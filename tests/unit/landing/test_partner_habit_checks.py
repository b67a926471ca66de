"""Partner writers' habits, the parts that need no JVM: marker-column rules (one home in
`mirroring`), BOM headers, and lint and the engine's schema check deciding alike — with and
without `--strict` — on the very files (tests/spark/test_partner_habits.py mirrors them)."""

from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.files import LocalFS
from mirrorspec.landing import checks
from mirrorspec.landing.layout import LandingFile
from mirrorspec.landing.lint import lint_landing_zone
from mirrorspec.spark.mirror import batch

M = mirroring.ROW_MARKER_COLUMN
SEQ1 = mirroring.sequence_file_name(1)
KEYED = {"keyColumns": ["id"]}


def table(root, rel, metadata, name, data):
    path = os.path.join(root, *rel.split("/"))
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "_metadata.json"), "w") as handle:
        json.dump(metadata, handle)
    file = os.path.join(path, name)
    if isinstance(data, pa.Table):
        pq.write_table(data, file)
    else:
        with open(file, "wb") as handle:
            handle.write(data)
    return file


def marker_table(marker, position, marker_type=pa.int32(), required=False):
    columns = [pa.field("id", pa.int64()), pa.field("v", pa.string())]
    columns.insert(position, pa.field(M, marker_type, nullable=not required))
    values = {"id": [1], "v": ["a"], M: [marker]}
    return pa.table({f.name: pa.array(values[f.name], f.type) for f in columns},
                    schema=pa.schema(columns))


# Each: (folder, metadata, file name, bytes or table, lint rule when not strict (warning) or
# None, whether --strict stops the file)
HABITS = [
    ("string_marker_first", KEYED, SEQ1, marker_table("1", 0, pa.string()),
     {"content/marker-type", "content/marker-position"}, True),
    ("string_marker_last", KEYED, SEQ1, marker_table("4", 2, pa.string()),
     {"content/marker-type"}, True),
    ("int32_required_first", KEYED, SEQ1, marker_table(0, 0, required=True),
     {"content/marker-position"}, True),
    ("int32_last", KEYED, SEQ1, marker_table(0, 2), set(), False),
    ("csv_marker_first", KEYED, mirroring.sequence_file_name(1, "csv"),
     b'__rowMarker__,id,v\r\n"1",1,a\r\n', {"content/marker-position"}, True),
    ("csv_marker_last", KEYED, mirroring.sequence_file_name(1, "csv"),
     b"id,v,__rowMarker__\r\n1,a,1\r\n", set(), False),
    ("rowid_key", {"keyColumns": ["__rowid__"]}, SEQ1,
     pa.table({"__rowid__": pa.array([1], pa.int64()), "__source__": ["bc"],
               M: pa.array([4], pa.int32())}), set(), False),
    ("My Schema.schema/My Table", KEYED, SEQ1, marker_table(0, 2), set(), False),
    ("bom_csv", KEYED, mirroring.sequence_file_name(1, "csv"),
     b'\xef\xbb\xbf"id",v,__rowMarker__\r\n1,a,0\r\n', set(), False),
    ("header_only_csv", KEYED, mirroring.sequence_file_name(1, "csv"),
     b"id,v,__rowMarker__\r\n", set(), False),
]


@pytest.fixture(scope="module")
def habits(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("habits"))
    files = {rel: table(root, rel, metadata, name, data)
             for rel, metadata, name, data, _, _ in HABITS}
    return root, files


def test_marker_problems_have_one_home():
    assert mirroring.marker_column_problems(True) == []
    assert mirroring.strict_marker_problem(True) is None
    last, = mirroring.marker_column_problems(False)
    assert last.startswith(mirroring.MARKER_NOT_LAST)
    kind, = mirroring.marker_column_problems(True, "string")
    assert "string" in kind and mirroring.MARKER_NOT_INTEGER in kind and "int32" in kind
    assert mirroring.strict_marker_problem(False, "string") == last + " (--strict)"
    assert mirroring.strict_marker_problem(True, "string") == kind + " (--strict)"


@pytest.mark.parametrize("text", ["\ufeffid,v\r\n", '\ufeff"id","v"\r\n', "id,v\r\n"])
def test_a_bom_never_stays_in_the_first_column_name(text):
    file = LandingFile(SEQ1, "x.csv", 0, 0.0, "csv", 1)
    assert checks.parse_header(text, file, mirroring.DelimitedOptions()) == ["id", "v"]


@pytest.mark.parametrize("habit", HABITS, ids=lambda h: h[0])
def test_lint_warns_and_strict_lint_stops(habits, habit):
    root, _ = habits
    rel, _, _, _, rules, strict_stops = habit
    unique_id = ("My Schema.My Table" if rel.startswith("My Schema") else f"dbo.{rel}")
    lenient = {t.unique_id: t for t in lint_landing_zone(root).tables}[unique_id]
    assert lenient.stops_at is None, lenient.stops_at
    assert {f.rule for f in lenient.findings} == rules
    assert all(f.level == "warning" for f in lenient.findings)
    strict = {t.unique_id: t for t in lint_landing_zone(root, strict=True).tables}[unique_id]
    assert (strict.stops_at is not None) == strict_stops
    if strict_stops:
        assert strict.stops_at.rule in rules and "(--strict)" in strict.stops_at.message


@pytest.mark.parametrize("habit", HABITS, ids=lambda h: h[0])
def test_engine_schema_check_decides_as_lint(habits, habit):
    """The engine's per-file check (`batch.file_schema` + `check_schema`, no JVM for local
    files) gives lint's strict message, word for word, and accepts every habit otherwise."""
    root, files = habits
    rel, metadata, name, _, _, strict_stops = habit
    parsed = mirroring.parse_metadata(metadata, "_metadata.json")
    path = files[rel]
    kind = mirroring.data_file_format(name)
    file = LandingFile(name, path, os.path.getsize(path), 0.0, kind, 1)
    schema = batch.file_schema(None, LocalFS(), file, parsed)
    assert M not in [f.name for f in schema.fields]
    assert batch.check_schema(schema, [], parsed.key_columns, False) is None
    reason = batch.check_schema(schema, [], parsed.key_columns, True)
    assert (reason is not None) == strict_stops
    if strict_stops:
        unique_id = ("My Schema.My Table" if rel.startswith("My Schema") else f"dbo.{rel}")
        strict = {t.unique_id: t for t in lint_landing_zone(root, strict=True).tables}
        assert strict[unique_id].stops_at.message == reason



def test_a_file_replaced_since_its_listing_is_never_moved_to_processed(tmp_path):
    """A publisher that deletes the folder and re-uploads from file 1 while a pass runs: the
    pass moves only the files it listed (same size and time), never the new ones."""
    from mirrorspec.landing.processed import ledger_path, move_to_processed

    folder = tmp_path / "t"
    folder.mkdir()
    listed = []
    for n in (1, 2):
        path = folder / mirroring.sequence_file_name(n)
        path.write_bytes(b"old")
        listed.append(LandingFile(path.name, str(path), 3, path.stat().st_mtime, "parquet", n))
    replaced = folder / listed[1].name
    replaced.write_bytes(b"new file 2")
    move_to_processed(LocalFS(), str(folder), listed, "dbo.t")
    assert os.listdir(folder / mirroring.PROCESSED_FOLDER) == [listed[0].name]
    assert replaced.read_bytes() == b"new file 2"
    assert open(ledger_path(str(folder))).read().split() == [listed[0].name]


def test_lint_warns_of_delete_rows_the_service_is_reported_to_fail(tmp_path):
    """bc2adls' delete rows leave non-key columns empty: applied (no stop), but lint warns
    once per file where a column is declared IsNullable: false."""
    schema = {"keyColumns": ["systemId"], "SchemaDefinition": {"Columns": [
        {"Name": "systemId", "DataType": "String", "IsNullable": False},
        {"Name": "Description", "DataType": "String", "IsNullable": False},
        {"Name": "SystemModifiedAt", "DataType": "DateTime"}]}}
    head = b"systemId,Description,SystemModifiedAt,__rowMarker__\r\n"
    table(str(tmp_path), "deletes", schema, mirroring.sequence_file_name(1, "csv"),
          head + b"s1,one,,0\r\ns1,,,2\r\ns2,,,2\r\n")
    table(str(tmp_path), "nullable", {**schema, "SchemaDefinition": {"Columns": [
        {"Name": "systemId", "DataType": "String", "IsNullable": False},
        {"Name": "Description", "DataType": "String"}]}},
        mirroring.sequence_file_name(1, "csv"), head + b"s1,one,,0\r\ns1,,,2\r\n")
    linted = {t.unique_id: t for t in lint_landing_zone(str(tmp_path)).tables}
    deletes = linted["dbo.deletes"]
    assert deletes.stops_at is None
    assert [(f.rule, f.level, f.line, f.column) for f in deletes.findings] == [
        ("content/delete-not-nullable", "warning", 3, "Description")]
    assert deletes.findings[0].message == mirroring.delete_not_nullable("Description")
    assert linted["dbo.nullable"].findings == []


def test_every_working_column_of_the_engine_is_refused_in_landing_files():
    """The names the engine's code gives its own columns (string literals starting with '__'
    in mirrorspec/spark/mirror) are all in `mirroring.ENGINE_COLUMNS` (or its prefixes): a
    landing column of that name would be overwritten by the engine's value."""
    import re
    from pathlib import Path

    import mirrorspec.spark.mirror as package

    names = set()
    for source in Path(package.__file__).parent.glob("*.py"):
        names |= set(re.findall(r"[\"'](__[A-Za-z_]+)", source.read_text()))
    names -= {M}
    assert names and all(mirroring.engine_column_clash(n) for n in names), sorted(
        n for n in names if not mirroring.engine_column_clash(n))
    assert mirroring.engine_column_clash("__rowid__") is None
    assert mirroring.engine_column_clash("__op") is None  # Debezium's unwrapped op column
    assert "'__P'" in mirroring.engine_column_clash("__P")
    assert mirroring.engine_column_clash("_METADATA") is not None


def test_lint_and_engine_stop_a_file_with_an_engine_column(tmp_path):
    file = table(str(tmp_path), "t", KEYED, SEQ1,
                 pa.table({"id": pa.array([1], pa.int64()), "__p": [1],
                           M: pa.array([0], pa.int32())}))
    stop = lint_landing_zone(str(tmp_path)).tables[0].stops_at
    assert stop.rule == "content/engine-column"
    parsed = mirroring.parse_metadata(KEYED, "_metadata.json")
    schema = batch.file_schema(None, LocalFS(), LandingFile(SEQ1, file, 1, 0.0, "parquet", 1),
                               parsed)
    assert batch.check_schema(schema, [], parsed.key_columns, False) == stop.message


def test_a_root_table_and_the_same_table_under_dbo_schema_are_one_table(tmp_path):
    """A root folder is schema dbo: `orders/` beside `dbo.schema/orders/` is the same table."""
    rows = pa.table({"id": pa.array([1], pa.int64()), M: pa.array([0], pa.int32())})
    table(str(tmp_path), "orders", KEYED, SEQ1, rows)
    table(str(tmp_path), "dbo.schema/orders", KEYED, SEQ1, rows)
    table(str(tmp_path), "sales.schema/orders", KEYED, SEQ1, rows)
    result = lint_landing_zone(str(tmp_path))
    same = [f for f in result.findings if f.rule == "layout/same-table"]
    assert [(f.level, f.table) for f in same] == [("error", "dbo.schema/orders")]
    assert "dbo.schema/orders and orders are one table" in same[0].message
    assert sorted(t.unique_id for t in result.tables) == ["dbo.orders", "dbo.orders",
                                                           "sales.orders"]
