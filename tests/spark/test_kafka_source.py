"""Kafka sources against a real single-node KRaft broker on 127.0.0.1 (marker `kafka`).

One broker for the module (scripts/local_kafka.py, jars from Maven Central), one topic set per
test, the shared SparkSession; runs go through `run_plan` in-process. Oracles: the same Qlik
messages read from files, and a plain Python model of the orders' transactions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from local_kafka import LocalBroker
from qlik_messages import (CUSTOMER_FEED, customer_messages, order_messages,
                           orders_metadata)
from mirrorspec.compile import compile_project
from mirrorspec.progress.publish import state_file
from mirrorspec.spark.run import run_plan
from tests.support.project_files import write
from tests.support.reference_model import read_delta_rs

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.kafka


def project(tmp_path: Path, tables: list, broker: LocalBroker):
    """Compile a project of `tables` (bootstrap servers filled in) and return its plan."""
    for table in tables:
        kafka = table["source"].get("kafka")
        if kafka is not None:
            kafka.setdefault("bootstrap_servers", broker.bootstrap)
    root = write(tmp_path / "proj", {
        "mirrorspec_project.yml": {"name": "k"},
        "profiles.yml": {"k": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/t.yml": {"tables": tables}})
    return compile_project(root).plan


def run(spark, plan, **kwargs):
    results = run_plan(plan, spark=spark, threads=2, **kwargs)
    return {r.unique_id: r for r in results.results}


def rows(plan, unique_id: str, order_by: str) -> list[tuple]:
    """The table's rows in column order, sorted by `order_by`, read by delta-rs (no Spark job
    for a check)."""
    columns, data = read_delta_rs(plan.table(unique_id).delta_path)
    return [tuple(r[c] for c in columns) for r in sorted(data, key=lambda r: r[order_by])]


def landing_bytes(plan, unique_id: str) -> dict[str, bytes]:
    folder = Path(plan.table(unique_id).landing_path)
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*.parquet"))}


def kafka_state(plan, unique_id: str) -> dict:
    return json.loads(Path(state_file(plan, plan.table(unique_id))).read_text())["kafka"]


def orders_model(messages: list[str]) -> list[tuple]:
    """The ORDERS table the messages describe (applied in changeSequence order)."""
    events = [json.loads(m)["message"] for m in messages if json.loads(m)["type"] == "DT"]
    events.sort(key=lambda e: e["headers"]["changeSequence"])
    table: dict[int, tuple] = {}
    for event in events:
        data, op = event["data"], event["headers"]["operation"]
        if op == "DELETE":
            table.pop(data["ORDER_ID"], None)
        else:
            table[data["ORDER_ID"]] = (data["ORDER_ID"], data["CUSTOMER_ID"], data["STATUS"],
                                       float(data["AMOUNT"]))
    return [table[k] for k in sorted(table)]


# --- Qlik ---------------------------------------------------------------------------------------

@pytest.mark.extra
def test_seed_messages_through_topics_equal_the_same_messages_from_files(spark, broker, tmp_path):
    """Every message kind of Qlik Replicate's JSON message format (metadata; REFRESH, INSERT, UPDATE with masks, key
    change, DELETE; transactions) on a data topic + metadata topic, in two runs, lands the
    same Delta table as the fixture files; the second run reads only the new offsets."""
    broker.create_topic("seed.meta")
    broker.create_topic("seed.customers")
    metadata, data = customer_messages()
    broker.produce("seed.meta", [(None, m) for m in metadata])
    broker.produce("seed.customers", [("key-ignored", m) for m in data[:3]])
    plan = project(tmp_path, [
        {"name": "from_kafka", "source": {"type": "qlik_replicate", "options": {"table": "CUSTOMERS"},
                                          "kafka": {"topics": ["seed.customers"],
                                                    "metadata_topic": "seed.meta"}}},
        {"name": "from_files", "source": {"type": "qlik_replicate", "path": str(CUSTOMER_FEED)}},
    ], broker)
    first = run(spark, plan)
    assert first["dbo.from_kafka"].status == "success", first["dbo.from_kafka"].error
    assert len(rows(plan, "dbo.from_kafka", "ID")) == 3
    assert kafka_state(plan, "dbo.from_kafka")["offsets"] == {"seed.customers": {"0": 3},
                                                              "seed.meta": {"0": 1}}
    broker.produce("seed.customers", [(None, m) for m in data[3:]])
    second = run(spark, plan)
    assert second["dbo.from_kafka"].status == "success", second["dbo.from_kafka"].error
    assert second["dbo.from_kafka"].rows_published > 0
    assert rows(plan, "dbo.from_kafka", "ID") == rows(plan, "dbo.from_files", "ID")
    assert kafka_state(plan, "dbo.from_kafka")["offsets"]["seed.customers"] == {"0": len(data)}
    third = run(spark, plan)  # nothing new: nothing published
    assert third["dbo.from_kafka"].files_published == []


def test_three_partitions_interleaved_transactions_wait_until_whole(spark, broker, tmp_path):
    broker.create_topic("tx.orders", partitions=3)
    messages = order_messages(30, partitions=3, refresh=6)
    head, tail = messages[:-2], messages[-2:]  # the last transaction misses two of its events
    broker.produce("tx.orders", [(None, orders_metadata())], partition=0)
    for partition, message in head:
        broker.produce("tx.orders", [(None, message)], partition=partition)
    plan = project(tmp_path, [{"name": "orders", "source": {
        "type": "qlik_replicate", "kafka": {"topic_pattern": "tx\\.ord.*"}}}], broker)
    first = run(spark, plan)
    assert first["dbo.orders"].status == "success", first["dbo.orders"].error
    complete = [m for _, m in messages[:-3]]  # whole transactions only
    assert rows(plan, "dbo.orders", "ORDER_ID") == orders_model(complete)
    assert first["dbo.orders"].held_back  # the open transaction's files wait
    for partition, message in tail:
        broker.produce("tx.orders", [(None, message)], partition=partition)
    second = run(spark, plan)
    assert second["dbo.orders"].status == "success", second["dbo.orders"].error
    assert rows(plan, "dbo.orders", "ORDER_ID") == orders_model([m for _, m in messages])
    state = kafka_state(plan, "dbo.orders")
    assert sum(state["offsets"]["tx.orders"].values()) == len(messages) + 1


def test_status_shows_consumed_end_offset_and_lag(spark, broker, tmp_path, monkeypatch, capsys):
    from mirrorspec.cli import cli

    broker.create_topic("lag.orders", partitions=2)
    broker.produce("lag.orders", [(None, orders_metadata())], partition=0)
    for partition, message in order_messages(8, partitions=2, per_txn=1):
        broker.produce("lag.orders", [(None, message)], partition=partition)
    plan = project(tmp_path, [{"name": "orders", "source": {"type": "qlik_replicate", "kafka": {
        "topics": ["lag.orders"], "max_offsets_per_run": 3}}}], broker)
    assert run(spark, plan)["dbo.orders"].status == "success"
    monkeypatch.chdir(tmp_path / "proj")
    capsys.readouterr()
    with pytest.raises(SystemExit) as done:
        cli(["--log-format", "json", "status"], prog_name="mirrorspec")
    assert done.value.code == 0
    events = [json.loads(line) for line in capsys.readouterr().out.splitlines()
              if line.startswith("{")]
    offsets = next(e for e in events if e["event"] == "kafka_offsets")["rows"]
    assert [tuple(str(r[k]) for k in ("table", "topic", "partition", "consumed", "end", "lag"))
            for r in offsets] == [("dbo.orders", "lag.orders", "0", "3", "5", "2"),
                                  ("dbo.orders", "lag.orders", "1", "3", "4", "1")]


# --- Debezium -----------------------------------------------------------------------------------

DEBEZIUM_COLUMNS = [{"name": "id", "type": "Int32"}, {"name": "first_name", "type": "String"},
                    {"name": "email", "type": "String"}]
WILD = REPO / "tests" / "fixtures" / "debezium" / "wild"


def test_debezium_key_value_and_unwrapped_from_topics_and_files(spark, broker, tmp_path):
    """The key<TAB>value fixture produced as real Kafka records (JSON converter with schemas,
    tombstones), the ExtractNewRecordState fixture (no schemas) on a topic matched by a
    pattern, and both fixture files as file feeds: the same tables."""
    broker.create_topic("dbz.inventory.customers")
    broker.create_topic("dbz.inventory.products")
    records = []
    for line in (WILD / "customers-keyvalue.txt").read_text().splitlines():
        key, _, value = line.partition("\t")
        records.append((key, None if value == "null" else value))
    broker.produce("dbz.inventory.customers", records)
    products = [line for line in (WILD / "products-unwrapped.json").read_text().splitlines()]
    broker.produce("dbz.inventory.products",
                   [(json.dumps({"id": json.loads(p)["id"]}), p) for p in products])
    product_columns = [{"name": "id", "type": "Int32"}, {"name": "name", "type": "String"},
                       {"name": "qty", "type": "Int32"}]
    plan = project(tmp_path, [
        {"name": "customers_kafka", "key_columns": ["id"], "columns": DEBEZIUM_COLUMNS,
         "source": {"type": "debezium", "kafka": {"topics": ["dbz.inventory.customers"]}}},
        {"name": "customers_files", "source": {"type": "debezium",
                                               "path": str(WILD / "customers-keyvalue.txt")}},
        {"name": "products_kafka", "key_columns": ["id"], "columns": product_columns,
         "source": {"type": "debezium", "kafka": {"topic_pattern": "dbz\\.inventory\\.prod.*"}}},
        {"name": "products_files", "key_columns": ["id"], "columns": product_columns,
         "source": {"type": "debezium", "path": str(WILD / "products-unwrapped.json")}},
    ], broker)
    result = run(spark, plan)
    for unique_id, outcome in result.items():
        assert outcome.status == "success", (unique_id, outcome.error)
    customers = rows(plan, "dbo.customers_kafka", "id")
    assert customers == [(1001, "Sally", "sally.t@example.com")]
    assert customers == rows(plan, "dbo.customers_files", "id")
    products = rows(plan, "dbo.products_kafka", "id")
    assert products == [(1, "pen", 7), (3, "pad", 1)]
    assert products == rows(plan, "dbo.products_files", "id")


@pytest.mark.extra  # a real `run --watch` process over Kafka (~50 s): `make test-extras`
def test_run_watch_fetches_new_messages_on_every_pass(broker, tmp_path):
    """`mirrorspec run --watch` as a real process: messages produced while it runs become rows;
    SIGTERM stops it after the pass (exit 0)."""
    import signal
    import subprocess
    import time

    import pyarrow as pa
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    broker.create_topic("watch.orders")
    broker.produce("watch.orders", [(None, orders_metadata())])
    broker.produce("watch.orders", [(None, m) for _, m in order_messages(2, 1, per_txn=1)])
    plan = project(tmp_path, [{"name": "orders", "source": {
        "type": "qlik_replicate", "kafka": {"topics": ["watch.orders"]}}}], broker)
    delta = plan.table("dbo.orders").delta_path
    script = Path(sys.executable).parent / "mirrorspec"
    command = [str(script), "run", "--watch", "1", "--threads", "1", "--project-dir",
               str(tmp_path / "proj"), "--metrics-port", "0"]
    log = open(tmp_path / "watch.log", "wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)

    def wait_for_rows(count: int) -> list[int]:
        deadline = time.monotonic() + 600  # a generous bound on a busy machine, not a timing
        while time.monotonic() < deadline:
            assert process.poll() is None, (tmp_path / "watch.log").read_text()
            try:
                scan = pa.RecordBatchReader.from_stream(DeltaTable(delta).scan()).read_all()
                ids = sorted(scan.column("ORDER_ID").to_pylist())
            except TableNotFoundError:  # no table yet
                ids = []
            if len(ids) >= count:
                return ids
            time.sleep(0.5)
        raise AssertionError(f"{count} rows never appeared")

    try:
        assert wait_for_rows(2) == [1, 2]
        broker.produce("watch.orders", [(None, m) for _, m in order_messages(
            1, 1, per_txn=1, first_seq=10, first_id=7)])
        assert wait_for_rows(3) == [1, 2, 7]
        # the service's /metrics (--metrics-port 0: the log names the port): lag and rows
        import re
        import urllib.request

        port = re.search(r"metrics: http://127\.0\.0\.1:(\d+)/metrics",
                         (tmp_path / "watch.log").read_text()).group(1)
        deadline = time.monotonic() + 600
        while True:
            text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read()
            text = text.decode()
            if 'mirrorspec_table_rows_applied_total{change="inserted",table="dbo.orders"} 3.0' \
                    in text or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert 'mirrorspec_table_rows_applied_total{change="inserted",table="dbo.orders"} 3.0' \
            in text, text
        assert 'mirrorspec_kafka_lag{partition="0",table="dbo.orders",topic="watch.orders"} 0.0' \
            in text, text
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=600) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        log.close()


def test_full_refresh_replays_aside_and_refuses_to_lose_what_the_table_holds(spark, broker,
                                                                              tmp_path):
    """`run --full-refresh` of a Kafka table rebuilds it from the topic and keeps the offsets
    and staged messages it fetched; a refresh that meets a bad message, or would start after
    offsets the table was built from (deleted by retention), fails naming topic and partition
    and leaves the Delta table, the landing folder and the publisher state as they were."""
    topic = "refresh.orders"
    broker.create_topic(topic)
    broker.produce(topic, [(None, orders_metadata())]
                   + [(None, m) for _, m in order_messages(2, 1, per_txn=1)])
    plan = project(tmp_path, [{"name": "orders", "source": {
        "type": "qlik_replicate", "kafka": {"topics": [topic]}}}], broker)

    def refresh():
        return run(spark, plan, select=["dbo.orders"], full_refresh=True)["dbo.orders"]

    built = refresh()  # nothing to drop yet: published aside, then swapped in
    assert built.status == "success", built.error
    assert [r[0] for r in rows(plan, "dbo.orders", "ORDER_ID")] == [1, 2]
    assert kafka_state(plan, "dbo.orders")["offsets"] == {topic: {"0": 3}}
    state = Path(state_file(plan, plan.table("dbo.orders")))
    folders = [Path(plan.table("dbo.orders").landing_path),
               Path(plan.table("dbo.orders").delta_path)]

    def untouched():  # the state, the landing folder and the Delta table, byte for byte
        return state.read_text(), {str(p): p.read_bytes() for folder in folders
                                   for p in sorted(folder.rglob("*")) if p.is_file()}
    before = untouched()

    broker.produce(topic, [(None, '{"magic": "atMSG", "type": "DT", "message": {')])
    bad = refresh()
    assert bad.status == "error"
    assert f"topic {topic}, partition 0, offset 3: malformed JSON" in bad.error
    assert "nothing was dropped" in bad.error
    assert untouched() == before

    broker.delete_records(topic, 0, 2)  # retention: offsets 0 and 1 are gone
    refused = refresh()
    assert refused.status == "error"
    assert f"topic {topic}, partition 0: offsets 0 to 1 are no longer on the broker" in \
        refused.error
    assert f'starting_offsets to {{"{topic}":{{"0":2}}}}' in refused.error
    assert "nothing was dropped" in refused.error
    assert untouched() == before
