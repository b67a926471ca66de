"""Kafka source benchmark: Qlik messages on a 3-partition topic → Delta, beside the
same messages read from files, in the same process; then watch-pass latency.

Starts a local KRaft broker (scripts/local_kafka.py), produces --scale × 1,000,000 Qlik
Replicate messages (a metadata message, then INSERT/UPDATE/DELETE transactions spread over three
partitions), and runs the same project's two tables — one reading the topic (`source.kafka`),
one reading the same messages written as a file feed — through `run_plan` (publish + mirror),
reporting wall seconds, changes/s and CPU seconds of this process tree (the broker's own CPU
taken out). Then, --samples times: produce one transaction and run one pass (what
`run --watch` does on each tick), measuring message produced → row visible in Delta; p50/p95.

    .venv/bin/python bench/kafka_bench.py [--scale 0.02] [--samples 5] [--json]

The default scale (20,000 messages) runs in a few minutes on a small machine; --scale 1 is the
issue's 1M messages.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPO_ROOT, CpuTime, emit, machine, rate, spark_session, timed, tree_cpu_seconds

sys.path.insert(0, str(REPO_ROOT / "scripts"))
from local_kafka import LocalBroker
from qlik_messages import order_messages, orders_metadata

TOPIC = "bench.orders"
PARTITIONS = 3


def produce(broker: LocalBroker, messages: list[tuple[int, str]]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, linger_ms=20,
                             batch_size=256 * 1024)
    for partition, message in messages:
        producer.send(TOPIC, value=message.encode(), partition=partition)
    producer.flush()
    producer.close()


def make_project(root: Path, broker: LocalBroker, feed: Path):
    from mirrorspec.compile import compile_project

    from tests.support.project_files import write

    write(root, {
        "mirrorspec_project.yml": {"name": "kb"},
        "profiles.yml": {"kb": {"target": "dev", "outputs": {"dev": {
            "landing_zone": "landing", "warehouse": "warehouse"}}}},
        "tables/t.yml": {"tables": [
            {"name": "from_kafka", "source": {"type": "qlik_replicate", "kafka": {
                "bootstrap_servers": broker.bootstrap, "topics": [TOPIC]}}},
            {"name": "from_files", "source": {"type": "qlik_replicate", "path": str(feed)}},
        ]}})
    return compile_project(root, infer=lambda *a: None).plan


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=0.02, help="1.0 = 1,000,000 messages")
    parser.add_argument("--samples", type=int, default=5, help="watch-pass latency samples")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--driver-memory", default="4g")
    parser.add_argument("--json", action="store_true", help="print one JSON object last")
    args = parser.parse_args(argv)
    count = max(30, int(1_000_000 * args.scale))
    work = Path(tempfile.mkdtemp(prefix="mirrorspec-kafka-bench-"))
    figures: dict = {"bench": "kafka", "scale": args.scale, "messages": count,
                     "machine": machine()}
    broker = LocalBroker(work / "broker").start()
    try:
        from mirrorspec.spark.run import run_plan

        broker.create_topic(TOPIC, PARTITIONS)
        messages = [(0, orders_metadata())] + order_messages(count, PARTITIONS)
        with timed() as producing:
            produce(broker, messages)
        figures["produce_s"] = round(producing.seconds, 2)
        feed = work / "feed"
        feed.mkdir()
        (feed / "orders.json").write_text("\n".join(m for _, m in messages) + "\n")
        plan = make_project(work / "project", broker, feed)
        spark = spark_session(args.master, args.driver_memory, app_name="kafka-bench")
        spark.range(1).count()  # JVM and session up before the clock starts
        for table in ("dbo.from_files", "dbo.from_kafka"):
            broker_before = tree_cpu_seconds(broker.process.pid)
            with CpuTime() as cpu, timed() as clock:
                results = run_plan(plan, select=[table], spark=spark, threads=1)
            broker_cpu = tree_cpu_seconds(broker.process.pid) - broker_before
            outcome = results.results[0]
            if outcome.failed:
                raise SystemExit(f"{table} failed: {outcome.error}")
            cpu_s = cpu.seconds - broker_cpu
            figures[table] = {"seconds": round(clock.seconds, 2),
                              "changes_per_s": rate(count, clock.seconds),
                              "cpu_s": round(cpu_s, 2), "changes_per_cpu_s": rate(count, cpu_s),
                              "rows_published": outcome.rows_published}
            if not args.json:
                print(f"{table}: {count:,} messages → Delta in {clock.seconds:.1f} s = "
                      f"{count / clock.seconds:,.0f} changes/s ({cpu_s:.1f} CPU s)")
        kafka, files = figures["dbo.from_kafka"], figures["dbo.from_files"]
        figures["kafka_vs_files_cpu"] = round(kafka["cpu_s"] / max(files["cpu_s"], 1e-9), 2)
        latencies = []
        next_seq, next_id = count + 1, 10_000_000
        for _ in range(args.samples):
            transaction = order_messages(3, PARTITIONS, first_seq=next_seq, first_id=next_id)
            next_seq += 3
            produced = time.perf_counter()
            produce(broker, transaction)
            run_plan(plan, select=["dbo.from_kafka"], spark=spark, threads=1)
            visible = spark.read.format("delta").load(plan.table("dbo.from_kafka").delta_path) \
                .where(f"ORDER_ID = {next_id}").count()
            if visible != 1:
                raise SystemExit(f"order {next_id} is not visible after a pass")
            latencies.append(time.perf_counter() - produced)
            next_id += 2
        if latencies:
            ordered = sorted(latencies)
            figures["watch_latency_s"] = {
                "p50": round(statistics.median(ordered), 2),
                "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
                "samples": len(ordered)}
            if not args.json:
                print(f"watch pass latency (produced → visible): p50 "
                      f"{figures['watch_latency_s']['p50']} s, p95 "
                      f"{figures['watch_latency_s']['p95']} s over {len(ordered)} samples")
    finally:
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return emit(figures, args.json)


if __name__ == "__main__":
    main()
