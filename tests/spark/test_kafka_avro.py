"""An Avro (Confluent wire format) Debezium topic on a real KRaft broker (marker `kafka`),
schemas from a registry stub: the same rows as the same messages read from files; a registry
that doesn't know a schema id stops the table at that message's offset."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from tests.support.avro_feed import KEY_ID, KEY_SCHEMA, VALUE_ID, VALUE_SCHEMA, Registry, envelope, wire_line
from tests.support.reference_model import read_delta_rs

from mirrorspec.compile import compile_project
from mirrorspec.spark.run import run_plan
from tests.support.project_files import write

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.kafka

COLUMNS = [{"name": "id", "type": "Int32"}, {"name": "name", "type": "String"},
           {"name": "balance", "type": "Double"}]


def row(i: int, name: str, balance: str) -> dict:
    import decimal
    return {"id": i, "name": name, "balance": decimal.Decimal(balance), "created_at": None,
            "birth_date": None, "rating": None}


LINES = [wire_line(envelope("r", row(1, "Sally", "1.50"), None, 100, 0, "last"), 1),
         wire_line(envelope("c", row(2, "George", "2.00"), None, 200, 190), 2),
         wire_line(envelope("u", row(1, "Sal", "3.25"), row(1, "Sally", "1.50"), 300, 290), 1),
         wire_line(envelope("d", None, row(2, "George", "2.00"), 400, 390), 2),
         wire_line(None, 2)]


def messages():
    for line in LINES:
        key, _, value = line.partition("\t")
        yield base64.b64decode(key), (base64.b64decode(value) if value else None)


def plan_for(tmp_path: Path, broker, registry_url: str, topic: str):
    feed = tmp_path / "feed"
    feed.mkdir(exist_ok=True)
    (feed / "customers.txt").write_text("\n".join(LINES) + "\n")
    avro = {"encoding": "confluent", "schema_registry_url": registry_url}
    root = write(tmp_path / "proj", {
        "mirrorspec_project.yml": {"name": "k"},
        "profiles.yml": {"k": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/t.yml": {"tables": [
            {"name": "from_kafka", "key_columns": ["id"], "columns": COLUMNS,
             "source": {"type": "debezium", "options": {"avro": avro},
                        "kafka": {"topics": [topic], "bootstrap_servers": broker.bootstrap}}},
            {"name": "from_files", "key_columns": ["id"], "columns": COLUMNS,
             "source": {"type": "debezium", "path": str(feed), "options": {"avro": avro}}}]}})
    return compile_project(root).plan


def test_avro_topic_mirrors_like_the_same_messages_in_files(spark, broker, tmp_path):
    broker.create_topic("avro.inventory.customers")
    broker.produce("avro.inventory.customers", list(messages()))
    with Registry({VALUE_ID: VALUE_SCHEMA, KEY_ID: KEY_SCHEMA}) as registry:
        plan = plan_for(tmp_path, broker, registry.url, "avro.inventory.customers")
        results = {r.unique_id: r for r in run_plan(plan, spark=spark, threads=1).results}
    for unique_id, outcome in results.items():
        assert outcome.status == "success", (unique_id, outcome.error)
    tables = {}
    for name in ("from_kafka", "from_files"):
        _, got = read_delta_rs(plan.table(f"dbo.{name}").delta_path)
        tables[name] = sorted((r["id"], r["name"], r["balance"]) for r in got)
    assert tables["from_kafka"] == [(1, "Sal", 3.25)]
    assert tables["from_kafka"] == tables["from_files"]


def test_unknown_schema_id_on_a_topic_names_the_offset(spark, broker, tmp_path):
    broker.create_topic("avro.unknown")
    broker.produce("avro.unknown", list(messages())[:2])
    with Registry({KEY_ID: KEY_SCHEMA}) as registry:
        plan = plan_for(tmp_path, broker, registry.url, "avro.unknown")
        results = {r.unique_id: r for r in run_plan(plan, spark=spark, threads=1).results}
    error = str(results["dbo.from_kafka"].error)
    assert results["dbo.from_kafka"].status != "success"
    assert f"schema id {VALUE_ID} is unknown" in error and "offset 0" in error, error
