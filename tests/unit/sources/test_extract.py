"""Pure parts of the plain-extract readers: snapshot grouping, options, Parquet inference."""

from __future__ import annotations

import os
from pathlib import Path


from mirrorspec.sources import get_format, infer_schema
from mirrorspec.sources.extract import (
    Snapshot,
    feed_root,
    group_snapshots,
    parse_options,
    previous_snapshot,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "extract"


def test_top_level_files_and_folders_are_snapshots(tmp_path):
    root = str(tmp_path)
    files = [f"{root}/b.csv", f"{root}/a.csv", f"{root}/day=2/part-1.parquet",
             f"{root}/day=2/part-0.parquet", f"{root}/day=1/part-0.parquet"]
    snapshots = group_snapshots(files, root)
    assert snapshots == [
        Snapshot(f"{root}/a.csv", (f"{root}/a.csv",)),
        Snapshot(f"{root}/b.csv", (f"{root}/b.csv",)),
        Snapshot(f"{root}/day=1", (f"{root}/day=1/part-0.parquet",)),
        Snapshot(f"{root}/day=2", (f"{root}/day=2/part-0.parquet", f"{root}/day=2/part-1.parquet")),
    ]


def test_modified_order_uses_file_times(tmp_path):
    older, newer = tmp_path / "z.csv", tmp_path / "a.csv"
    older.write_text("id\n1\n")
    newer.write_text("id\n1\n")
    os.utime(older, (1_000_000, 1_000_000))
    os.utime(newer, (2_000_000, 2_000_000))
    names = [s.name for s in group_snapshots([str(newer), str(older)], str(tmp_path), "modified")]
    assert names == [str(older), str(newer)]
    assert [s.name for s in group_snapshots([str(newer), str(older)], str(tmp_path))] == [
        str(newer), str(older)]


def test_feed_root_of_folder_glob_and_file(tmp_path):
    (tmp_path / "x.csv").write_text("id\n")
    assert feed_root(str(tmp_path)) == str(tmp_path)
    assert feed_root(f"{tmp_path}/exports/*/part-*.parquet") == f"{tmp_path}/exports"
    assert feed_root(str(tmp_path / "x.csv")) == str(tmp_path)


def test_previous_snapshot_comes_from_reader_state():
    assert previous_snapshot({}) is None
    assert previous_snapshot({"reader": {"snapshot": ["/f/a.csv"]}}) == ("/f/a.csv",)


def test_options_are_read():
    opts = parse_options({"delimiter": "\\t", "header": False, "allow_empty": True}, "csv")
    assert opts.delimiter == "\t" and opts.header is False and opts.allow_empty is True


def test_parquet_schema_inference_without_a_jvm():
    inferred = infer_schema("parquet", str(FIXTURES / "parquet"), {"key_columns": ["sku"]})
    assert [(c.name, c.data_type) for c in inferred.columns] == [
        ("sku", "String"), ("qty", "Int32"), ("price", "Double"), ("seen", "DateTime")]
    assert inferred.key_columns == ("sku",)
    as_text = get_format("parquet").infer_schema(str(FIXTURES / "parquet"),
                                                 {"decimal_handling": "string"})
    assert as_text.columns[2].data_type == "String"
    assert get_format("csv").infer_schema(str(FIXTURES / "csv"), {}) is None


def test_the_line_of_a_bad_csv_value_counts_the_header_and_quoted_line_breaks():
    from mirrorspec.sources.extract import csv_value_line

    data = ('id,note,quantity\r\n1,"two\nlines",3\r\n2,"say ""five""",five\r\n3,x,five\r\n'
            .encode())
    opts = parse_options({}, "csv")
    assert csv_value_line(data, "orders.csv", opts, 2, "five") == 4  # record 2 starts on line 4
    assert csv_value_line(data, "orders.csv", opts, 2, "3") == 2
    assert csv_value_line(data, "orders.csv", opts, 2, "quantity") is None  # the header is no value
    headless = parse_options({"header": False}, "csv")
    assert csv_value_line(b"a;1\nb;x\n", "t.csv", parse_options(
        {"header": False, "delimiter": ";"}, "csv"), 1, "x") == 2
    assert csv_value_line(b"id\n", "t.csv", headless, 0, "id") == 1


def test_the_line_of_a_bad_csv_value_in_a_gzip_latin1_file_with_an_escape_character():
    import gzip

    from mirrorspec.sources.extract import csv_value_line

    text = 'id|name|qty\n1|"caf\\"\xe9"|1\n2|b|zw\xf6lf\n'
    opts = parse_options({"delimiter": "|", "escape": "\\", "encoding": "ISO-8859-1"}, "csv")
    data = gzip.compress(text.encode("latin-1"))
    assert csv_value_line(data, "x.csv.gz", opts, 2, "zw\xf6lf") == 3
    assert csv_value_line(data, "x.csv.gz", opts, 1, 'caf"\xe9') == 2
    assert csv_value_line(b"\x00not gzip", "x.csv.gz", opts, 2, "zw\xf6lf") is None


def test_the_expected_type_names_the_option_that_says_how_to_read_it():
    from mirrorspec.sources.extract import expected_type

    assert expected_type("Int32", parse_options({}, "csv")) == "Int32"
    dated = parse_options({"timestamp_format": "dd/MM/yyyy HH:mm", "date_format": "dd/MM/yyyy"},
                          "csv")
    assert expected_type("DateTime", dated) == "DateTime (timestamp_format 'dd/MM/yyyy HH:mm')"
    assert expected_type("IDate", dated) == "IDate (date_format 'dd/MM/yyyy')"
    assert expected_type("ByteArray", dated) == "ByteArray (binary_encoding hex)"
