"""An Avro debezium table in a project: validate accepts the avro block, compile resolves the
.avsc paths against the project and infers the columns from the value schema (no JVM)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mirrorspec.compile import compile_project
from mirrorspec.base.errors import MirrorspecError
from tests.support.project_files import write

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "avro"


def project(tmp_path: Path, avro: dict) -> Path:
    root = write(tmp_path / "proj", {
        "mirrorspec_project.yml": {"name": "a"},
        "profiles.yml": {"a": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/t.yml": {"tables": [{"name": "customers", "key_columns": ["id"], "source": {
            "type": "debezium", "path": "feed", "options": {"avro": avro}}}]}})
    (root / "feed").mkdir()
    (root / "avro").mkdir()
    shutil.copy(FIXTURES / "customers-value.avsc", root / "avro")
    return root


def test_compile_resolves_schema_files_and_infers_columns(tmp_path):
    root = project(tmp_path, {"encoding": "confluent", "value_schema": "avro/customers-value.avsc",
                              "schemas": {7: "avro/customers-value.avsc"},
                              "schema_registry_url": "http://127.0.0.1:1",
                              "schema_registry_timeout_seconds": 3})
    plan = compile_project(root).plan
    table = plan.table("dbo.customers")
    avro = table.source.options["avro"]
    expected = str((root / "avro" / "customers-value.avsc").resolve())
    assert avro["value_schema"] == expected and list(avro["schemas"].values()) == [expected]
    assert [(c.name, c.type) for c in table.columns] == [
        ("id", "Int32"), ("name", "String"), ("balance", "Double"), ("created_at", "DateTime"),
        ("birth_date", "IDate"), ("rating", "Int16")]


def test_an_unknown_avro_key_is_a_located_validate_error(tmp_path):
    root = project(tmp_path, {"encoding": "confluent", "registry": "http://x"})
    with pytest.raises(MirrorspecError) as err:
        compile_project(root)
    assert "registry" in err.value.render() and "t.yml" in err.value.render()


@pytest.mark.parametrize("encoding", ["json", "container", None])
def test_a_kafka_topic_takes_only_the_wire_format(tmp_path, encoding):
    """Topics carry Confluent's wire format; the JSON encoding (the default) and container
    files are for feed files: compile says so at the encoding, located."""
    avro = {"value_schema": "avro/customers-value.avsc"}
    if encoding is not None:
        avro["encoding"] = encoding
    root = write(tmp_path / "proj", {
        "mirrorspec_project.yml": {"name": "a"},
        "tables/t.yml": {"tables": [{
            "name": "customers", "key_columns": ["id"],
            "columns": [{"name": "id", "type": "Int32"}, {"name": "name", "type": "String"}],
            "source": {"type": "debezium", "options": {"avro": avro}, "kafka": {
                "bootstrap_servers": "127.0.0.1:9092", "topics": ["dbserver1.inventory.customers"]}}}]}})
    (root / "avro").mkdir()
    shutil.copy(FIXTURES / "customers-value.avsc", root / "avro")
    with pytest.raises(MirrorspecError) as err:
        compile_project(root)
    text = err.value.render()
    assert "t.yml:" in text and "source.options.avro.encoding" in text
    assert f"avro encoding {encoding or 'json'} is for feed files" in text


def test_a_kafka_topic_in_the_wire_format_compiles(tmp_path):
    root = write(tmp_path / "proj", {
        "mirrorspec_project.yml": {"name": "a"},
        "tables/t.yml": {"tables": [{
            "name": "customers", "key_columns": ["id"],
            "columns": [{"name": "id", "type": "Int32"}, {"name": "name", "type": "String"}],
            "source": {"type": "debezium", "options": {"avro": {"encoding": "confluent"}},
                       "kafka": {"bootstrap_servers": "127.0.0.1:9092",
                                 "topics": ["dbserver1.inventory.customers"]}}}]}})
    assert compile_project(root).plan.table("dbo.customers").source.kafka is not None
