"""What the GoldenGate, Canal and Maxwell readers share: registry and schema entries, options,
Kafka staging, compile-time checks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrorspec.sources import canal, goldengate, maxwell
from mirrorspec.sources.debezium import TableShape
from mirrorspec.sources.kafka import config_problems, message_line
from mirrorspec.sources.row_images import parse_options

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
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


def _compile_problems(root_dir: Path, source: dict, **table) -> list[str]:
    from mirrorspec.compile import compile_project
    from mirrorspec.errors import ProjectError
    from project_files import write

    root = write(root_dir, {
        "mirrorspec_project.yml": {"name": "k"},
        "profiles.yml": {"k": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/t.yml": {"tables": [{"name": "t", **table, "source": source}]}})
    try:
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
