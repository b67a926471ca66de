"""What the GoldenGate, Canal and Maxwell readers share: registry and schema entries, options,
Kafka staging, compile-time checks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import canal, goldengate, maxwell
from mirrorspec.sources.debezium import TableShape
from mirrorspec.sources.kafka import config_problems, message_line
from mirrorspec.sources.row_images import parse_options

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
SHAPE = TableShape((("id", "Int32"), ("name", "String"), ("description", "String"),
                    ("weight", "Double")), ("id",))
FORMATS = [("goldengate", goldengate, "goldengate/flink-ogg-data.json"),
           ("canal", canal, "canal/flink-canal-data.json"),
           ("maxwell", maxwell, "maxwell/flink-maxwell-data.json")]


@pytest.mark.parametrize("name", ["goldengate", "canal", "maxwell"])
def test_each_reads_from_kafka(name):
    assert config_problems(name, {"bootstrap_servers": "b:9092", "topics": ["t"]}) == []


@pytest.mark.parametrize("name,module,fixture", FORMATS)
def test_a_staged_topic_parses_like_the_file(name, module, fixture):
    """Kafka staging writes each record value on its own line (keys dropped, tombstones
    skipped): the staged file gives the rows the producer's file gives."""
    text = (FIXTURES / fixture).read_text()
    records = [(json.dumps({"id": 1}), line) for line in text.splitlines()] + [("k", None)]
    lines = [message_line(name, key, value) for key, value in records]
    staged = "\n".join(line for line in lines if line is not None) + "\n"
    assert lines[-1] is None
    options = parse_options({})
    from_file = [r[:-2] for r in module.parse_text(text, "f", SHAPE, options)]
    from_topic = [r[:-2] for r in module.parse_text(staged, "f", SHAPE, options)]
    assert from_topic == from_file and from_file


def test_options_accept_one_key_as_text():
    assert parse_options({"key_columns": "ID", "table": "HR.ITEMS"}).key_columns == ("ID",)


def _compile_problems(root_dir: Path, source: dict, infer: bool = False, **table) -> list[str]:
    from mirrorspec.compile import compile_project
    from mirrorspec.base.errors import ProjectError
    from tests.support.project_files import write

    root = write(root_dir, {
        "mirrorspec_project.yml": {"name": "k"},
        "profiles.yml": {"k": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/t.yml": {"tables": [{"name": "t", **table, "source": source}]}})
    try:
        if infer:
            compile_project(root)
        else:
            compile_project(root, infer=lambda *a: None)
    except ProjectError as err:
        return [p.render() for p in err.problems]
    return []


def test_a_kafka_table_of_these_formats_needs_yaml_columns(tmp_path):
    found = _compile_problems(tmp_path / "p", {
        "type": "maxwell", "kafka": {"bootstrap_servers": "b:9092", "topics": ["m"]}})
    assert any("a maxwell table read from Kafka needs its columns" in p for p in found), found


def test_the_schema_accepts_the_options_and_refuses_others(tmp_path):
    table = {"key_columns": ["id"], "columns": [{"name": "id", "type": "Int32"}]}
    good = {"type": "canal", "path": "feed",
            "options": {"table": "inventory.products", "key_columns": ["id"]}}
    assert _compile_problems(tmp_path / "good", good, **table) == []
    bad = {"type": "canal", "path": "feed", "options": {"decimal_handling": "string"}}
    found = _compile_problems(tmp_path / "bad", bad, **table)
    assert any("decimal_handling" in p and "t.yml" in p for p in found), found


def test_types_guessed_from_json_values_give_way_to_the_yaml(tmp_path):
    """Maxwell and GoldenGate rows carry no types: compile guesses Int64/String from the JSON,
    and a YAML declaring Int32 / DateTime for those columns is not a conflict (Canal's mysqlType
    is a declaration: a conflict with it still is)."""
    feed = tmp_path / "feed.json"
    shutil.copy(FIXTURES / "maxwell" / "flink-maxwell-data.json", feed)
    columns = [{"name": "id", "type": "Int32"}, {"name": "name", "type": "String"},
               {"name": "description", "type": "String"}, {"name": "weight", "type": "Double"}]
    source = {"type": "maxwell", "path": str(feed)}
    assert _compile_problems(tmp_path / "maxwell", source, columns=columns, infer=True) == []
    typo = [dict(c, name="nme") if c["name"] == "name" else c for c in columns]
    found = _compile_problems(tmp_path / "typo", source, columns=typo, infer=True)
    assert any("column 'nme' is not in the feed" in p for p in found), found

    canal_feed = tmp_path / "canal.json"
    shutil.copy(FIXTURES / "canal" / "flink-canal-data.json", canal_feed)
    found = _compile_problems(tmp_path / "canal", {"type": "canal", "path": str(canal_feed)},
                              columns=columns, infer=True)
    assert any("'weight' is Double here but Single in the feed" in p for p in found), found


def _one_insert(name: str, value) -> str:
    """One insert of row {id: `value`} in the format's message shape."""
    if name == "goldengate":
        message = {"table": "HR.ITEMS", "op_type": "I", "pos": "1", "after": {"id": value}}
    elif name == "canal":
        message = {"data": [{"id": value}], "database": "d", "table": "t", "type": "INSERT",
                   "isDdl": False, "pkNames": ["id"]}
    else:
        message = {"database": "d", "table": "t", "type": "insert", "data": {"id": value}}
    return json.dumps(message) + "\n"


@pytest.mark.parametrize("name,module,fixture", FORMATS)
@pytest.mark.parametrize("value", ["1_000", "\u0661\u0662\u0663", True, "1e3", "12.0", " 7",
                                   1.5, "0x10"])
def test_integer_columns_refuse_what_is_not_an_integer(name, module, fixture, value):
    """Python's int() and Decimal take `1_000`, Arabic-Indic digits and `1e3`; an integer
    column takes a JSON integer or text of ASCII digits only, and says where it stopped."""
    with pytest.raises(SourceError) as caught:
        list(module.parse_text(_one_insert(name, value), "feed.json", SHAPE, parse_options({})))
    assert (caught.value.file, caught.value.line) == ("feed.json", 1)
    assert "column 'id' (Int32)" in caught.value.message and "not an integer" in \
        caught.value.message


@pytest.mark.parametrize("name,module,fixture", FORMATS)
@pytest.mark.parametrize("value,expected", [(7, 7), ("7", 7), ("-7", -7), (7.0, 7), (1e3, 1000)])
def test_integer_columns_take_json_integers_and_digit_text(name, module, fixture, value,
                                                           expected):
    (row,) = module.parse_text(_one_insert(name, value), "feed.json", SHAPE, parse_options({}))
    assert row[0] == expected
