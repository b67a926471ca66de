"""GoldenGate, Canal and Maxwell messages on real Kafka topics (single-node KRaft broker on
127.0.0.1, marker `kafka`): fetched, staged, published and mirrored in one `run_plan`, a shared
Maxwell topic routed by `options.table`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from local_kafka import LocalBroker
from mirrorspec.compile import compile_project
from mirrorspec.spark.run import run_plan
from tests.support.project_files import write
from tests.support.reference_model import read_delta_rs

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.kafka
FIXTURES = REPO / "tests" / "fixtures"
COLUMNS = [{"name": "id", "type": "Int32"}, {"name": "name", "type": "String"},
           {"name": "description", "type": "String"}, {"name": "weight", "type": "Double"}]


def _produce(broker: LocalBroker, topic: str, lines: list[str]) -> None:
    broker.create_topic(topic)
    broker.produce(topic, [(None, line) for line in lines])


def test_goldengate_canal_and_maxwell_topics_mirror(spark, broker, tmp_path):
    def lines(fixture: str) -> list[str]:
        return (FIXTURES / fixture).read_text().splitlines()

    _produce(broker, "ogg.items", lines("goldengate/flink-ogg-data.json"))
    _produce(broker, "canal.inventory", lines("canal/flink-canal-data.json"))
    other = json.dumps({"database": "test", "table": "orders", "type": "insert",
                        "ts": 1596684890, "data": {"id": 1, "total": 9.99}})
    maxwell = lines("maxwell/flink-maxwell-data.json")
    _produce(broker, "maxwell", maxwell[:3] + [other] + maxwell[3:])

    def table(name: str, source_type: str, topic: str, options=None) -> dict:
        source = {"type": source_type, "kafka": {"bootstrap_servers": broker.bootstrap,
                                                 "topics": [topic]}}
        if options:
            source["options"] = options
        return {"name": name, "key_columns": ["id"], "columns": COLUMNS, "source": source}

    root = write(tmp_path / "proj", {
        "mirrorspec_project.yml": {"name": "k"},
        "profiles.yml": {"k": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/t.yml": {"tables": [
            table("ogg_items", "goldengate", "ogg.items"),
            table("canal_products", "canal", "canal.inventory", {"table": "products2"}),
            table("maxwell_product", "maxwell", "maxwell", {"table": "test.product"})]}})
    plan = compile_project(root).plan
    results = {r.unique_id: r for r in run_plan(plan, spark=spark, threads=2).results}
    for unique_id, outcome in results.items():
        assert outcome.status == "success", (unique_id, outcome.error)

    def mirrored(unique_id: str) -> list[tuple]:
        _, rows = read_delta_rs(plan.table(unique_id).delta_path)
        return sorted((r["id"], r["name"], r["description"], r["weight"]) for r in rows)

    assert mirrored("dbo.ogg_items") == [
        (101, "scooter", "Small 2-wheel scooter", 3.140000104904175),
        (102, "car battery", "12V car battery", 8.100000381469727),
        (106, "hammer", "18oz carpenter hammer", 1.0)]
    assert mirrored("dbo.canal_products") == [
        (101, "scooter", "Small 2-wheel scooter", 5.17),
        (102, "car battery", "12V car battery", 5.17),
        (106, "hammer", "18oz carpenter hammer", 1.0)]
    assert mirrored("dbo.maxwell_product") == [
        (101, "scooter", "Small 2-wheel scooter", 5.17),
        (106, "hammer", "18oz carpenter hammer", 1.0)]
