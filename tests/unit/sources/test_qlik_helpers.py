"""The reader helpers in mirrorspec.sources.base that the Qlik and Arcion readers share."""

from __future__ import annotations

import datetime as dt

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import iter_json_documents, list_feed_files, value_converter


def test_json_documents_in_every_layout():
    text = '{"a": 1}\n{"b":\n  2}\n[{"c": 3},\n {"d": 4}] {"e": 5}'
    assert list(iter_json_documents(text, "f")) == [
        (1, {"a": 1}), (2, {"b": 2}), (4, {"c": 3}), (5, {"d": 4}), (5, {"e": 5})]


def test_json_documents_error_names_the_line():
    with pytest.raises(SourceError) as err:
        list(iter_json_documents('{"a": 1}\n\n{"b" 2}', "feed.json"))
    assert err.value.file == "feed.json" and err.value.line == 3
    with pytest.raises(SourceError, match="unterminated JSON array"):
        list(iter_json_documents('[{"a": 1},', "feed.json"))


@pytest.mark.parametrize("data_type, raw, expected", [
    ("Int16", "12", 12), ("Int32", 7.0, 7), ("Int64", "9000000000", 9000000000),
    ("Int32", "+7", 7), ("Int32", "-12", -12), ("Int32", "007", 7), ("Int64", 1e3, 1000),
    ("Int64", float(2 ** 53), 2 ** 53), ("Int64", -(2 ** 63), -(2 ** 63)),
    ("Double", "1.5", 1.5), ("Single", 2, 2.0), ("Double", "1e3", 1000.0),
    ("Double", "-.5", -0.5), ("Double", "-Infinity", float("-inf")),
    ("Boolean", "true", True), ("Boolean", 0, False), ("String", 1.5, "1.5"),
    ("String", {"x": 1}, '{"x":1}'), ("ByteArray", "0AFF", b"\n\xff"),
    ("IDate", "2024-02-29", dt.date(2024, 2, 29)),
    ("DateTime", "2024-05-02 10:01:00.123456", dt.datetime(2024, 5, 2, 10, 1, 0, 123456)),
    ("DateTime", "2024-05-02T10:01:00.1234567", dt.datetime(2024, 5, 2, 10, 1, 0, 123456)),
    ("DateTime", "2024-05-02T12:01:00+02:00", dt.datetime(2024, 5, 2, 10, 1)),
    ("ITime", "14:30:00", dt.datetime(1970, 1, 1, 14, 30)),
])
def test_value_converters(data_type, raw, expected):
    assert value_converter(data_type)(raw) == expected


@pytest.mark.parametrize("data_type, raw", [
    ("Int16", "40000"), ("Int32", "1.5"), ("Int64", True), ("Double", "abc"),
    # integers: JSON integers, integral JSON numbers a double holds exactly, and text of
    # ASCII digits with an optional sign — nothing Python's int() would also take
    ("Int32", "1_000"), ("Int32", "\u0661\u0662\u0663"), ("Int32", "\uff11"), ("Int32", False),
    ("Int32", "1e3"), ("Int64", "12.000"), ("Int32", " 12"), ("Int32", "12\n"), ("Int32", ""),
    ("Int32", "0x10"), ("Int64", 1.5), ("Int64", float(2 ** 53 + 2)), ("Int64", float("inf")),
    ("Int64", 2 ** 63), ("Int32", [1]), ("Int32", {"v": 1}),
    # numbers: JSON numbers or their ASCII text (NaN/Infinity words too), nothing else
    ("Double", "1_000.5"), ("Double", "\u0661.5"), ("Double", True), ("Double", " 1.5"),
    ("Double", "1.5f"), ("Single", [1.5]),
    ("Boolean", "maybe"), ("ByteArray", "XYZ"), ("IDate", "2024-13-01"), ("DateTime", "yesterday"),
])
def test_value_converters_reject_bad_values(data_type, raw):
    with pytest.raises(ValueError):
        value_converter(data_type)(raw)


def test_list_feed_files_skips_temporary_and_hidden(tmp_path):
    (tmp_path / "sub").mkdir()
    for name in ("b.json", "a.json", "_tmp.json", ".hidden", "sub/c.json"):
        (tmp_path / name).write_text("{}")
    (tmp_path / "_staging").mkdir()
    (tmp_path / "_staging" / "d.json").write_text("{}")
    assert [p[len(str(tmp_path)) + 1:] for p in list_feed_files(str(tmp_path))] == [
        "a.json", "b.json", "sub/c.json"]
    assert list_feed_files(str(tmp_path / "*.json")) == [str(tmp_path / "a.json"),
                                                         str(tmp_path / "b.json")]
    assert list_feed_files(str(tmp_path / "missing")) == []
    with pytest.raises(SourceError, match="is a URI, readable only when publishing"):
        list_feed_files("s3://bucket/feed")
