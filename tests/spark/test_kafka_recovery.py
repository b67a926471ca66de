"""Kafka-sourced tables when something goes wrong: a crash at each publish step, a SIGKILL
around the recorded offsets, the broker down mid-run, offsets deleted by retention, a bad
message. A module of its own (the helpers are tests/spark/test_kafka_source.py's) so that
`make test`'s workers can share the Kafka tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from qlik_messages import order_messages, orders_metadata
from mirrorspec.base import faults
from mirrorspec.spark.run import run_plan
from tests.spark.test_kafka_source import (
    kafka_state, landing_bytes, orders_model, project, rows, run)

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.kafka


def file_feed(tmp_path: Path) -> str:
    """A Qlik file feed of full rows for the table beside the Kafka ones that must go on while
    they fail (the CUSTOMERS fixture's partial updates cost a publish ~100 Spark jobs)."""
    feed = tmp_path / "file_feed"
    feed.mkdir()
    (feed / "CDC00000001.json").write_text("\n".join(
        [orders_metadata()] + [m for _, m in order_messages(2, 1, per_txn=1)]) + "\n")
    return str(feed)


def reference_and_crashed(spark, broker, tmp_path, topic: str, orders: int, refresh: int):
    """A project of two tables on one new 2-partition topic of Qlik order messages: `reference`
    published once, `crashed` left for the test to crash; returns the plan."""
    broker.create_topic(topic, partitions=2)
    broker.produce(topic, [(None, orders_metadata())], partition=0)
    for partition, message in order_messages(orders, partitions=2, refresh=refresh):
        broker.produce(topic, [(None, message)], partition=partition)
    tables = [{"name": name, "source": {"type": "qlik_replicate", "kafka": {"topics": [topic]}}}
              for name in ("reference", "crashed")]
    plan = project(tmp_path, tables, broker)
    run(spark, plan, select=["dbo.reference"], publish_only=True)
    return plan


@pytest.mark.parametrize("point", ["before_offsets_recorded", "after_offsets_recorded",
                                   "before_publish_rename", "after_publish_rename"])
def test_a_crash_at_each_publish_step_then_a_rerun_publishes_the_same_bytes(
        spark, broker, tmp_path, monkeypatch, point):
    plan = reference_and_crashed(spark, broker, tmp_path, f"crash.{point}", 12, 3)

    class Crash(BaseException):
        pass

    def crash(name, table=None):
        if name == point and table == "dbo.crashed":
            raise Crash(name)
    monkeypatch.setattr("mirrorspec.spark.publish.kafka.crash_point", crash)
    monkeypatch.setattr("mirrorspec.spark.publish.publisher.crash_point", crash)
    with pytest.raises(Crash):
        run_plan(plan, spark=spark, select=["dbo.crashed"], publish_only=True, threads=1)
    monkeypatch.setattr("mirrorspec.spark.publish.kafka.crash_point", faults.crash_point)
    monkeypatch.setattr("mirrorspec.spark.publish.publisher.crash_point", faults.crash_point)
    again = run(spark, plan, select=["dbo.crashed"], publish_only=True)
    assert again["dbo.crashed"].status == "success", again["dbo.crashed"].error
    assert landing_bytes(plan, "dbo.crashed") == landing_bytes(plan, "dbo.reference")
    assert landing_bytes(plan, "dbo.crashed")
    assert kafka_state(plan, "dbo.crashed")["offsets"] == kafka_state(plan, "dbo.reference")["offsets"]


# Killed before the offsets are recorded, the process leaves what the in-process crash at that
# point leaves (staged files, no offsets) and a lock file the kernel released, as the kill after
# them does: that case is an extra (a JVM of its own), the kill after the offsets stays here.
@pytest.mark.parametrize("point", [pytest.param("before_offsets_recorded", marks=pytest.mark.extra),
                                   "after_offsets_recorded"])
def test_a_sigkill_around_the_offsets_then_a_rerun_publishes_the_same_bytes(
        spark, broker, tmp_path, point):
    """A real `mirrorspec publish` process SIGKILLs itself (faults.py) at the Kafka steps: no
    finally block runs, as in a machine crash. The rerun lands the same bytes and offsets as a
    table that never crashed."""
    import subprocess

    plan = reference_and_crashed(spark, broker, tmp_path, f"kill.{point}", 8, 2)
    script = Path(sys.executable).parent / "mirrorspec"
    base = [str(script)] if script.exists() else [sys.executable, "-m", "mirrorspec"]
    env = {**os.environ, "MIRRORSPEC_CRASH_AT": point, "MIRRORSPEC_CRASH_TABLE": "dbo.crashed"}
    killed = subprocess.run(base + ["publish", "--project-dir", str(tmp_path / "proj"),
                                    "--select", "dbo.crashed", "--threads", "1"],
                            env=env, capture_output=True, text=True, timeout=900)
    assert killed.returncode == -9, killed.stdout + killed.stderr
    again = run(spark, plan, select=["dbo.crashed"], publish_only=True)
    assert again["dbo.crashed"].status == "success", again["dbo.crashed"].error
    assert landing_bytes(plan, "dbo.crashed") == landing_bytes(plan, "dbo.reference")
    assert kafka_state(plan, "dbo.crashed")["offsets"] == kafka_state(plan, "dbo.reference")["offsets"]


def test_broker_down_fails_only_its_tables_and_a_restart_mid_run_loses_nothing(
        spark, broker, tmp_path, monkeypatch):
    broker.create_topic("restart.orders", partitions=2)
    messages = order_messages(9, partitions=2)
    broker.produce("restart.orders", [(None, orders_metadata())], partition=0)
    for partition, message in messages[:6]:
        broker.produce("restart.orders", [(None, message)], partition=partition)
    plan = project(tmp_path, [
        {"name": "orders", "source": {"type": "qlik_replicate",
                                      "kafka": {"topics": ["restart.orders"]}}},
        {"name": "files", "source": {"type": "qlik_replicate", "path": file_feed(tmp_path)}}],
        broker)

    class Crash(BaseException):
        pass

    def crash(name, table=None):
        if name == "after_offsets_recorded":
            raise Crash(name)
    monkeypatch.setattr("mirrorspec.spark.publish.kafka.crash_point", crash)
    with pytest.raises(Crash):  # offsets recorded, nothing published yet: then the broker restarts
        run_plan(plan, spark=spark, select=["dbo.orders"], threads=1)
    monkeypatch.setattr("mirrorspec.spark.publish.kafka.crash_point", faults.crash_point)
    broker.stop()
    try:
        down = run(spark, plan)
        assert down["dbo.orders"].status == "error"
        assert "cannot read partitions and offsets from Kafka" in down["dbo.orders"].error
        assert down["dbo.files"].status == "success"  # other tables go on
    finally:
        broker.start()
    for partition, message in messages[6:]:
        broker.produce("restart.orders", [(None, message)], partition=partition)
    after = run(spark, plan)
    assert after["dbo.orders"].status == "success", after["dbo.orders"].error
    assert rows(plan, "dbo.orders", "ORDER_ID") == orders_model([m for _, m in messages])


def test_latest_starts_at_the_end_and_earliest_at_the_beginning(spark, broker, tmp_path):
    broker.create_topic("start.orders")
    broker.produce("start.orders", [(None, orders_metadata())])
    old = order_messages(3, partitions=1, per_txn=1)
    broker.produce("start.orders", [(None, m) for _, m in old])
    plan = project(tmp_path, [
        {"name": name, "columns": [{"name": "ORDER_ID", "type": "Int64"},
                                   {"name": "CUSTOMER_ID", "type": "Int32"},
                                   {"name": "STATUS", "type": "String"},
                                   {"name": "AMOUNT", "type": "Double"}],
         "key_columns": ["ORDER_ID"],
         "source": {"type": "qlik_replicate",
                    "kafka": {"topics": ["start.orders"], "starting_offsets": start}}}
        for name, start in (("early", "earliest"), ("late", "latest"))], broker)
    first = run(spark, plan)
    assert first["dbo.early"].rows_published == 3 and first["dbo.late"].files_published == []
    new = order_messages(2, partitions=1, per_txn=1, first_seq=10, first_id=50)
    broker.produce("start.orders", [(None, m) for _, m in new])
    second = run(spark, plan)
    assert second["dbo.late"].status == "success", second["dbo.late"].error
    assert [r[0] for r in rows(plan, "dbo.late", "ORDER_ID")] == [50, 51]
    # the third old message updates order 1: two old orders, then the two new ones
    assert [r[0] for r in rows(plan, "dbo.early", "ORDER_ID")] == [1, 2, 50, 51]


def test_retention_and_a_bad_message_each_stop_only_their_table(spark, broker, tmp_path):
    """Two Kafka tables and a file table in one project: offsets deleted by retention before
    they were consumed stop `retained` with a hint (its landing folder as it was), a bad
    message stops `bad` at its offset with nothing published, and the file table goes on."""
    broker.create_topic("ret.orders")
    broker.produce("ret.orders", [(None, orders_metadata())])
    broker.produce("ret.orders", [(None, m) for _, m in order_messages(2, 1, per_txn=1)])
    broker.create_topic("bad.orders")
    good = order_messages(4, 1, per_txn=1)
    broker.produce("bad.orders", [(None, orders_metadata())] + [(None, m) for _, m in good[:2]]
                   + [(None, '{"magic": "atMSG", "type": "DT", "message": {"data": {"ORDER_ID": ')]
                   + [(None, m) for _, m in good[2:]])
    plan = project(tmp_path, [
        {"name": "retained", "source": {"type": "qlik_replicate",
                                        "kafka": {"topics": ["ret.orders"]}}},
        {"name": "bad", "source": {"type": "qlik_replicate", "kafka": {"topics": ["bad.orders"]}}},
        {"name": "files", "source": {"type": "qlik_replicate", "path": file_feed(tmp_path)}}],
        broker)
    result = run(spark, plan)
    assert result["dbo.retained"].status == "success", result["dbo.retained"].error
    assert result["dbo.bad"].status == "error"
    assert "topic bad.orders, partition 0, offset 3: malformed JSON" in result["dbo.bad"].error
    assert landing_bytes(plan, "dbo.bad") == {}
    assert result["dbo.files"].status == "success"

    broker.produce("ret.orders", [(None, m) for _, m in order_messages(3, 1, per_txn=1,
                                                                        first_seq=5, first_id=9)])
    broker.delete_records("ret.orders", 0, 5)  # offsets 3 and 4 never consumed
    before = landing_bytes(plan, "dbo.retained")
    result = run(spark, plan, select=["dbo.retained", "dbo.files"])
    error = result["dbo.retained"].error
    assert result["dbo.retained"].status == "error"
    assert "offsets 3 to 4 were deleted from Kafka (retention)" in error
    assert "--full-refresh" in error
    assert result["dbo.files"].status == "success"
    assert landing_bytes(plan, "dbo.retained") == before
