"""Pure tests of the open-mirroring rules (mirrorspec.openmirroring.mirroring)."""

from __future__ import annotations

import pytest

from mirrorspec.openmirroring import mirroring as m
from mirrorspec.base.errors import LandingZoneError


def test_default_marker_follows_is_upsert_default_row_marker():
    assert m.default_marker(True) == 4
    assert m.default_marker(False) == 0


def test_sequence_names():
    assert m.sequence_file_name(1) == "00000000000000000001.parquet"
    assert m.sequence_file_name(12, "csv") == "00000000000000000012.csv"
    assert m.parse_sequence("00000000000000000012.csv") == 12
    assert m.parse_sequence("0000000000000000012.csv") is None  # 19 digits
    assert m.parse_sequence("data.parquet") is None
    with pytest.raises(ValueError):
        m.sequence_file_name(0)


@pytest.mark.parametrize("name, ext, fmt", [
    ("00000000000000000001.parquet", None, "parquet"),
    ("x.snappy.parquet", None, "parquet"),
    ("x.csv", None, "csv"),
    ("x.csv.gz", None, "csv"),
    ("x.tsv", "tsv", "csv"),
    ("x.tsv", None, None),
    ("_00000000000000000001.parquet", None, None),
    ("_metadata.json", None, None),
    ("notes.txt", None, None),
])
def test_data_file_format(name, ext, fmt):
    assert m.data_file_format(name, ext) == fmt


def test_folders_and_ids():
    assert m.schema_from_folder("sales.schema") == "sales"
    assert m.schema_from_folder("sales") is None
    assert m.schema_from_folder(".schema") is None
    assert m.table_folder("orders", "sales") == "sales.schema/orders"
    assert m.warehouse_schema(None) == "dbo"
    assert m.mirror_id(None, "t") == "mirrorspec:dbo.t"
    assert m.mirror_id("s", "t") == "mirrorspec:s.t"


def test_metadata_keys_are_case_insensitive():
    meta = m.parse_metadata_text('{"KeyColumns": ["id"], "FileDetectionStrategy": '
                                 '"LastUpdateTimeFileDetection", "IsUpsertDefaultRowMarker": true}',
                                 "_metadata.json")
    assert meta.key_columns == ("id",)
    assert meta.last_update_time_detection and meta.upsert_default
    assert meta.default_marker == 4


def test_metadata_defaults():
    meta = m.parse_metadata_text("{}", "_metadata.json")
    assert meta.key_columns == () and not meta.keyed
    assert meta.file_format == "CSV" and meta.default_marker == 0
    assert meta.delimited == m.DelimitedOptions()
    assert meta.delimited.row_separator == "\r\n" and meta.delimited.escape_character == "\\"


def test_seed_tsv_metadata():
    text = r'''{"KeyColumns": ["id"], "SchemaDefinition": {"Columns": [
      {"Name": "id", "DataType": "Int32"}, {"Name": "seqNum", "DataType": "Int64",
      "IsNullable": false}]}, "FileFormat": "DelimitedText", "FileExtension": "tsv",
      "FileFormatTypeProperties": {"FirstRowAsHeader": true, "RowSeparator": "\r\n",
      "ColumnSeparator": ",", "QuoteCharacter": "'", "EscapeCharacter": "\\",
      "NullValue": "N/A", "Encoding": "UTF-8"}}'''
    meta = m.parse_metadata_text(text, "_metadata.json")
    assert meta.file_format == "DelimitedText" and meta.file_extension == "tsv"
    assert meta.delimited.quote_character == "'" and meta.delimited.null_value == "N/A"
    assert [(c.name, c.data_type, c.nullable) for c in meta.columns] == [
        ("id", "Int32", True), ("seqNum", "Int64", False)]
    assert m.spark_type_for("Int64") == "bigint"
    assert m.spark_type_for("idate") == "date"


@pytest.mark.parametrize("text, words", [
    ("{not json", "invalid JSON"),
    ('{"keyColumns": ["id"], "fileDetectionStrategy": "Sometimes"}', "fileDetectionStrategy"),
    ("", "_metadata.json is empty (0 bytes)"),
    ("  \n", "_metadata.json is empty"),
    ("[]", "must hold a JSON object"),
    ('"id"', "must hold a JSON object"),
    ('{"keyColumns": "id"}', 'keyColumns must be a list of column names such as ["id"], not "id"'),
    ('{"keyColumns": null}', "keyColumns must be a list"),
    ('{"keyColumns": {"id": 1}}', "keyColumns must be a list"),
    ('{"FileFormat": "DelimitedText"}', "FileExtension"),
    ('{"FileFormatTypeProperties": {"ColumnSeparator": "#"}}', "ColumnSeparator"),
    ('{"FileFormatTypeProperties": {"FirstRowAsHeader": false}}', "FirstRowAsHeader"),
    ('{"SchemaDefinition": {"Columns": [{"Name": "a", "DataType": "Decimal"}]}}', "DataType"),
    ('{"keyColumns": ["a", "a"]}', "twice"),
    ('{"isUpsertDefaultRowMarker": "maybe"}', "isUpsertDefaultRowMarker"),
])
def test_invalid_metadata_names_the_file(text, words):
    with pytest.raises(LandingZoneError) as info:
        m.parse_metadata_text(text, "lz/t/_metadata.json")
    assert info.value.file == "lz/t/_metadata.json"
    assert info.value.code == "InvalidMetadata"
    assert words in info.value.message


def test_render_metadata_round_trips():
    doc = m.render_metadata(["id"], True, True, [m.ColumnDefinition("id", "Int32", False)],
                            "DelimitedText", "tsv", {"ColumnSeparator": "\t"})
    meta = m.parse_metadata(doc, "x")
    assert meta.key_columns == ("id",) and meta.last_update_time_detection
    assert meta.delimited.column_separator == "\t" and meta.file_extension == "tsv"


def test_reserved_names():
    assert m.is_reserved_name("_ProcessedFiles") and m.is_reserved_name("_partnerEvents.json")
    assert not m.is_reserved_name("orders")
    assert m.unsafe_name_reason("__rowMarker__")
    assert m.unsafe_name_reason("a/b")
    assert m.unsafe_name_reason("ok") is None
    assert m.unsafe_name_reason(".") == "is '.' (the folder itself)"
    assert m.unsafe_name_reason("..") == "contains '..'"


def test_unknown_delimited_properties_are_ignored_with_a_warning():
    meta = m.parse_metadata_text(
        '{"keyColumns": ["id"], "FileFormatTypeProperties": '
        '{"ColumnSeparator": ";", "CompressionCodec": "gzip"}}', "lz/t/_metadata.json")
    assert meta.delimited.column_separator == ";"
    assert len(meta.warnings) == 1 and "CompressionCodec" in meta.warnings[0]
    assert meta.warnings[0].startswith("lz/t/_metadata.json")


def test_is_nullable_accepts_booleans_and_their_text():
    doc = ('{"SchemaDefinition": {"Columns": [{"Name": "a", "IsNullable": "false"}, '
           '{"Name": "b", "IsNullable": true}, {"Name": "c"}]}}')
    meta = m.parse_metadata_text(doc, "x")
    assert [c.nullable for c in meta.columns] == [False, True, True]
    with pytest.raises(LandingZoneError, match="IsNullable"):
        m.parse_metadata_text('{"SchemaDefinition": {"Columns": [{"Name": "a", '
                              '"IsNullable": "sometimes"}]}}', "x")


def test_unknown_metadata_keys_are_warned_about_with_a_suggestion():
    md = m.parse_metadata_text('{"keyColumns": ["id"], "keyColums": ["id"], "colour": 1}',
                               "lz/t/_metadata.json")
    assert md.key_columns == ("id",)
    assert md.warnings == (
        "lz/t/_metadata.json: unknown key 'keyColums' ignored (did you mean 'keyColumns'?)",
        "lz/t/_metadata.json: unknown key 'colour' ignored")
    assert m.parse_metadata_text('{"KEYCOLUMNS": ["id"]}', "f").warnings == ()


def test_dot_names_are_unsafe():
    assert "starts with '.'" in m.unsafe_name_reason(".hidden")
    assert m.unsafe_name_reason("a.b") is None


def test_keys_differ_compares_a_set_of_names_in_any_case():
    assert not m.keys_differ(["id", "Line"], ["LINE", "ID"])
    assert m.keys_differ(["id"], ["id", "line"])
    assert m.keys_differ(["id"], [])
    assert m.key_change(["id", "line"], ("Line", "Id")) is None
    assert "can't change" in m.key_change(["id"], ("v",))
