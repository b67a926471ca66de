"""`source.kafka` without a broker: schema, model, plan, diff, secrets, offsets and staging names."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mirrorspec.compile import compile_project
from mirrorspec.artifacts.plan import SourceSpec, resolve_secrets
from mirrorspec.project.diff import diff_tables
from mirrorspec.base.errors import ProjectError
from mirrorspec.sources.kafka import (KafkaSource, config_problems, lag_rows, located_offset,
                                      message_line, offsets_json, parse_staged_name, staged_name)
from tests.support.project_files import write

SERVERS = "b1:9092,b2:9092"


def make(tmp_path: Path, source: dict, name: str = "orders") -> Path:
    return write(tmp_path / "proj", {"mirrorspec_project.yml": {"name": "p"},
                                     "tables/t.yml": {"tables": [{"name": name, "schema": "s",
                                                                  "source": source}]}})


def kafka(**extra) -> dict:
    return {"type": "qlik_replicate", "kafka": {"bootstrap_servers": SERVERS,
                                                "topics": ["t.orders"], **extra}}


def problems(tmp_path, source) -> list[str]:
    with pytest.raises(ProjectError) as err:
        compile_project(make(tmp_path, source), infer=lambda *a: None)
    return [p.render() for p in err.value.problems]


def test_a_kafka_source_compiles_into_the_plan_without_a_path(tmp_path):
    plan = compile_project(make(tmp_path, kafka(metadata_topic="t.meta", max_offsets_per_run=10)),
                           infer=lambda *a: None).plan
    source = plan.tables[0].source
    assert source.path is None and source.kafka["topics"] == ["t.orders"]
    assert source.kafka["metadata_topic"] == "t.meta" and source.kafka["max_offsets_per_run"] == 10
    assert [s.step for s in plan.tables[0].steps] == ["PublishFeed", "MirrorTable"]


def test_path_and_kafka_are_exclusive_in_the_schema(tmp_path):
    source = kafka()
    source["path"] = "feed"
    found = problems(tmp_path, source)
    assert any("source.path and source.kafka are exclusive" in p for p in found), found


@pytest.mark.parametrize("change, expected", [
    ({"topic_pattern": "t\\..*"}, "exactly one of topics and topic_pattern"),
    ({"starting_offsets": "newest"}, "is not earliest, latest"),
    ({"starting_offsets": {"t.orders": {"0": "x"}}}, "is not an offset"),
    ({"topic_pattern": "(", "topics": None}, "not a regular expression"),
    ({"options": {"group.id": "g"}}, "set by mirrorspec"),
])
def test_bad_kafka_settings_are_located_problems(tmp_path, change, expected):
    source = kafka(**change)
    source["kafka"] = {k: v for k, v in source["kafka"].items() if v is not None}
    found = problems(tmp_path, source)
    assert any(expected in p and "t.yml" in p for p in found), found


def test_a_debezium_table_from_kafka_needs_yaml_columns(tmp_path):
    source = {"type": "debezium", "kafka": {"bootstrap_servers": SERVERS, "topics": ["db.t"]}}
    assert any("needs its columns in the YAML" in p for p in problems(tmp_path, source))


def test_only_qlik_and_debezium_read_from_kafka():
    assert config_problems("arcion", {"bootstrap_servers": "b", "topics": ["t"]})[0][1] == \
        "source type arcion can't be read from Kafka"
    assert not config_problems("debezium", {"bootstrap_servers": "b", "topic_pattern": "db\\..*"})


def test_secret_options_stay_placeholders_in_target_and_resolve_at_run_time(tmp_path):
    source = kafka(options={"security.protocol": "SASL_SSL",
                            "sasl.jaas.config": "{{ env_var('MIRRORSPEC_SECRET_KAFKA_JAAS') }}"})
    root = make(tmp_path, source)
    result = compile_project(root, environ={"MIRRORSPEC_SECRET_KAFKA_JAAS": "s3cret"},
                             infer=lambda *a: None)
    for path in (root / "target").rglob("*"):
        if path.is_file():
            assert b"s3cret" not in path.read_bytes()
    options = result.plan.tables[0].source.kafka["options"]
    resolved = resolve_secrets(options, {"MIRRORSPEC_SECRET_KAFKA_JAAS": "s3cret"})
    assert resolved["sasl.jaas.config"] == "s3cret"


def test_diff_sees_another_topic_or_server_as_another_source(tmp_path):
    plan = compile_project(make(tmp_path, kafka()), infer=lambda *a: None).plan
    before = plan.tables[0]
    from dataclasses import replace

    def with_kafka(**change):
        return replace(before, source=SourceSpec(before.source.type, None, before.source.options,
                                                 {**before.source.kafka, **change}))
    assert not diff_tables(before, with_kafka(max_offsets_per_run=5))
    for change in ({"topics": ["t.orders2"]}, {"bootstrap_servers": "other:9092"}):
        changes = diff_tables(before, with_kafka(**change))
        assert [c.kind for c in changes] == ["source_changed"]
        assert "Kafka" in str(changes[0].after)


def test_offsets_json_and_lag_rows():
    assert offsets_json({"b": {"1": 5, "0": 3}, "a": {"0": 0}}) == '{"a":{"0":0},"b":{"0":3,"1":5}}'
    rows = lag_rows({"offsets": {"t": {"0": 4, "1": 10}}, "end_offsets": {"t": {"0": 9, "1": 10}}})
    assert [(r["partition"], r["consumed"], r["end"], r["lag"]) for r in rows] == [
        (0, 4, 9, 5), (1, 10, 10, 0)]


def test_staging_names_round_trip_and_metadata_sorts_first():
    name = staged_name("replicate.crm-orders_1", 12, 345)
    assert parse_staged_name("/x/" + name) == ("replicate.crm-orders_1", 12, 345)
    assert staged_name("z", 0, 0, metadata=True) < staged_name("a", 0, 0)
    assert parse_staged_name("00000000000000000001.parquet") is None
    assert located_offset([7, 9, 15], 3) == 15 and located_offset([7], 2) is None


def test_message_lines_keep_one_message_per_line():
    pretty = json.dumps({"a": 1, "b": [1, 2]}, indent=2)
    line = message_line("qlik_replicate", "ignored-key", pretty)
    assert "\n" not in line and json.loads(line) == {"a": 1, "b": [1, 2]}
    assert message_line("qlik_replicate", "k", None) is None
    assert message_line("debezium", '{"id":1}', None) == '{"id":1}\t'  # tombstone
    assert message_line("debezium", None, '{"op":"c"}') == 'null\t{"op":"c"}'


def test_starting_offsets_json_text_is_parsed():
    config = KafkaSource.from_dict({"bootstrap_servers": "b", "topics": ["t"],
                                    "starting_offsets": '{"t": {"0": 5}}'})
    assert config.starting_offsets == {"t": {"0": 5}}
