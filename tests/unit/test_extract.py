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

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "extract"


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
