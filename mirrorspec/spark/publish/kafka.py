"""Kafka topics → staged feed files, between recorded offsets, with Spark's Kafka connector.

`stage_messages` runs before the file publisher for a table with `source.kafka` (see
mirrorspec/sources/kafka.py for the two-step design):

1. the partitions of the table's topics and their first/end offsets are looked up with the
   kafka-clients consumer Spark's connector brings (on the driver's JVM);
2. a batch read (`spark.read.format("kafka")` with `assign`, `startingOffsets` and
   `endingOffsets` JSON) fetches exactly [recorded offset, end offset) of every partition;
3. the messages are written as staging files (one per topic-partition), then the end offsets
   are recorded in the table's publisher state.

A crash before (3) records nothing: the next run fetches the same range again into the same
file names. Once recorded, the staging files are feed files like any other: the publisher's
state says which landing sequence each went into, so every offset lands exactly once. Offsets
the broker no longer has (retention) stop the table with a hint to --full-refresh.
"""

from __future__ import annotations

import os
import re
from datetime import datetime, timezone
from typing import Any

from mirrorspec.artifacts.plan import Plan, TablePlan, resolve_secrets
from mirrorspec.base.console import Console
from mirrorspec.base.errors import MirrorspecError, SourceError
from mirrorspec.base.faults import crash_point
from mirrorspec.progress.publish import staging_folder
from mirrorspec.sources.avro_schemas import is_wire_format
from mirrorspec.sources.kafka import (EARLIEST, EARLIEST_MARK, LATEST, KafkaSource,
                                      message_line, mirrored_from, offsets_json, offsets_sidecar,
                                      parse_staged_name, rebuild_hint, replay_gap_problem,
                                      replay_gaps, staged_name)

BYTE_ARRAY = "org.apache.kafka.common.serialization.ByteArrayDeserializer"
# Lookups fail within this time when no broker answers (Kafka's default is a minute).
LOOKUP_TIMEOUT_MS = "20000"


def kafka_config(table: TablePlan) -> KafkaSource:
    """The table's `source.kafka` with secrets resolved (only ever in memory)."""
    return KafkaSource.from_dict(resolve_secrets(dict(table.source.kafka or {})))


def stage_messages(spark, fs, plan: Plan, table: TablePlan, state: dict[str, Any],
                   save_state, console: Console) -> str:
    """Fetch what is new in the table's topics into its staging folder and record the offsets
    in `state` (saved with `save_state(state)`); returns the folder to publish from."""
    from mirrorspec.spark.platform.session import is_connect

    config = kafka_config(table)
    folder = staging_folder(plan, table)
    kstate = state.setdefault("kafka", {})
    _remove_published(fs, folder, state)
    if is_connect(spark):
        raise MirrorspecError(
            f"{table.unique_id}: Kafka sources look up partitions and offsets with the "
            "kafka-clients library on the Spark driver, which Spark Connect does not expose",
            hint="run Kafka tables with a classic session (spark.master), e.g. on the cluster's "
                 "driver; the batch read itself only needs spark-sql-kafka-0-10 on the cluster")
    lookup = _OffsetLookup(spark, config)
    try:
        wanted = lookup.partitions(config)
        if not wanted:
            raise SourceError(f"{table.unique_id}: no topic on {config.bootstrap_servers} "
                              f"matches {_topics_text(config)}",
                              hint="create the topics, or fix source.kafka.topics/topic_pattern")
        first, end = lookup.first_and_end(wanted)
    finally:
        lookup.close()
    recorded = kstate.get("offsets") or {}
    start = _start_offsets(config, recorded, first, end)
    _check_retention(table, config, recorded, first)
    stop = _bounded(start, end, config.max_offsets_per_run)
    fetch = {tp: (start[tp], stop[tp]) for tp in wanted if stop[tp] > start[tp]}
    if fetch:
        rows = _read(spark, config, fetch, binary=is_wire_format(table.source.options))
        written = _write_staging(fs, folder, table, config, fetch, rows)
        console.info(f"{table.unique_id}: fetched {sum(written.values())} message(s) from "
                     f"{len(fetch)} partition(s) of {_topics_text(config)}",
                     table=table.unique_id, messages=sum(written.values()))
    crash_point("before_offsets_recorded", table.unique_id)
    kstate["offsets"] = _nested(stop)
    kstate["end_offsets"] = _nested(end)
    kstate["fetched_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    save_state(state)
    crash_point("after_offsets_recorded", table.unique_id)
    return folder


def check_replay(spark, table: TablePlan, state: dict[str, Any]) -> None:
    """Before a full refresh drops anything: refuse (SourceError naming each topic and
    partition) when the broker no longer has offsets the mirrored table was built from
    (`sources.kafka.replay_gaps`; `state` is the table's publisher state before the refresh)."""
    from mirrorspec.spark.platform.session import is_connect

    if is_connect(spark):
        return  # stage_messages refuses Spark Connect with its own message
    config = kafka_config(table)
    lookup = _OffsetLookup(spark, config)
    try:
        first, _end = lookup.first_and_end(lookup.partitions(config))
    finally:
        lookup.close()
    gaps = replay_gaps(config, mirrored_from(state), first)
    if gaps:
        message, hint = replay_gap_problem(table.unique_id, gaps)
        raise SourceError(message, hint=hint)


def located_error(fs, exc: MirrorspecError) -> MirrorspecError:
    """`exc` naming topic, partition and offset instead of a staging file and line."""
    if not isinstance(exc, SourceError) or not exc.file:
        return exc
    parsed = parse_staged_name(exc.file)
    if parsed is None:
        return exc
    topic, partition, first = parsed
    folder, name = exc.file.rsplit("/", 1)
    offset = None
    text = fs.read_text(f"{folder}/{offsets_sidecar(name)}")
    if text is not None and exc.line:
        lines = text.split()
        if 0 < exc.line <= len(lines):
            offset = int(lines[exc.line - 1])
    where = f"topic {topic}, partition {partition}, offset {offset if offset is not None else '?'}"
    hint = ("nothing from this offset on was published and the table stays stopped here; fix "
            "the producer, then skip the message by running with --full-refresh and "
            "starting_offsets past it (docs/sources/kafka.md)")
    message = exc.message if hasattr(exc, "message") else str(exc)
    return SourceError(f"{where}: {message}", hint=hint)


# --- offsets -------------------------------------------------------------------------------------

TopicPartition = tuple  # (topic, partition)


class _OffsetLookup:
    """A kafka-clients consumer on the driver's JVM, for partitions and offsets only."""

    def __init__(self, spark, config: KafkaSource):
        self.jvm = spark._jvm
        props = self.jvm.java.util.Properties()
        settings = {"default.api.timeout.ms": LOOKUP_TIMEOUT_MS,
                    "request.timeout.ms": LOOKUP_TIMEOUT_MS, **{k: str(v) for k, v in
                                                                config.options.items()},
                    "bootstrap.servers": config.bootstrap_servers,
                    "key.deserializer": BYTE_ARRAY, "value.deserializer": BYTE_ARRAY,
                    "enable.auto.commit": "false"}
        for key, value in settings.items():
            props.setProperty(key, value)
        try:
            self.consumer = self.jvm.org.apache.kafka.clients.consumer.KafkaConsumer(props)
        except Exception as exc:  # noqa: BLE001 - py4j wraps the JVM's exceptions
            raise _kafka_error(config, exc) from None
        self.config = config

    def partitions(self, config: KafkaSource) -> list[TopicPartition]:
        try:
            topics = self.consumer.listTopics()
        except Exception as exc:  # noqa: BLE001
            raise _kafka_error(config, exc) from None
        names = sorted(str(n) for n in topics.keySet())
        if config.topics:
            chosen = [n for n in names if n in config.topics]
        else:
            pattern = re.compile(config.topic_pattern or "")
            chosen = [n for n in names if pattern.fullmatch(n)]
        if config.metadata_topic and config.metadata_topic in names:
            chosen.append(config.metadata_topic)
        result = []
        for name in dict.fromkeys(chosen):
            for info in topics.get(name):
                result.append((name, int(info.partition())))
        return sorted(result)

    def first_and_end(self, wanted: list[TopicPartition]) -> tuple[dict, dict]:
        jvm = self.jvm
        partitions = jvm.java.util.ArrayList()
        for topic, partition in wanted:
            partitions.add(jvm.org.apache.kafka.common.TopicPartition(topic, partition))
        try:
            first = self.consumer.beginningOffsets(partitions)
            end = self.consumer.endOffsets(partitions)
        except Exception as exc:  # noqa: BLE001
            raise _kafka_error(self.config, exc) from None

        def as_dict(offsets) -> dict:
            return {(str(tp.topic()), int(tp.partition())): int(offsets.get(tp))
                    for tp in offsets.keySet()}
        return as_dict(first), as_dict(end)

    def close(self) -> None:
        try:
            self.consumer.close()
        except Exception:  # noqa: BLE001, S110 - closing a consumer of a gone broker
            pass


def _kafka_error(config: KafkaSource, exc: Exception) -> MirrorspecError:
    text = str(exc)
    first = next((line.strip() for line in text.splitlines()
                  if "Exception" in line or "Timeout" in line), text.strip()[:300])
    return SourceError(f"cannot read partitions and offsets from Kafka at "
                       f"{config.bootstrap_servers}: {first}",
                       hint="check that the brokers are up and source.kafka.bootstrap_servers "
                            "and its security options are right; nothing was published")


def _start_offsets(config: KafkaSource, recorded: dict, first: dict, end: dict) -> dict:
    """Each partition's first offset to read: recorded, else from starting_offsets."""
    start = {}
    for tp in end:
        topic, partition = tp
        done = (recorded.get(topic) or {}).get(str(partition))
        if done is not None:
            start[tp] = int(done)
            continue
        initial = config.starting_offsets
        if topic == config.metadata_topic:
            initial = EARLIEST  # metadata is needed from the beginning
        if isinstance(initial, dict):
            value = (initial.get(topic) or {}).get(str(partition), EARLIEST_MARK)
            value = int(value)
            start[tp] = first[tp] if value == EARLIEST_MARK else end[tp] if value < 0 \
                else max(value, first[tp])
        elif initial == LATEST:
            start[tp] = end[tp]
        else:
            start[tp] = first[tp]
    return start


def _check_retention(table: TablePlan, config: KafkaSource, recorded: dict, first: dict) -> None:
    """Offsets recorded but no longer on the broker: stop with a hint to --full-refresh."""
    for (topic, partition), earliest in sorted(first.items()):
        done = (recorded.get(topic) or {}).get(str(partition))
        if done is not None and int(done) < earliest:
            raise SourceError(
                f"topic {topic}, partition {partition}: offsets {done} to {earliest - 1} were "
                f"deleted from Kafka (retention) before {table.unique_id} consumed them",
                hint=rebuild_hint(table.unique_id))


def _bounded(start: dict, end: dict, limit: int | None) -> dict:
    if not limit:
        return dict(end)
    return {tp: min(end[tp], start[tp] + int(limit)) for tp in end}


def _nested(offsets: dict) -> dict:
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def _topics_text(config: KafkaSource) -> str:
    text = ", ".join(config.topics) if config.topics else f"/{config.topic_pattern}/"
    return text + (f" + {config.metadata_topic}" if config.metadata_topic else "")


# --- reading and staging -------------------------------------------------------------------------

def reader_options(config: KafkaSource) -> dict[str, str]:
    """The consumer settings of Spark's Kafka source (kafka.*), secrets resolved."""
    options = {f"kafka.{k}": str(v) for k, v in config.options.items()}
    options["kafka.bootstrap.servers"] = config.bootstrap_servers
    return options


def _read(spark, config: KafkaSource, fetch: dict, binary: bool = False) -> list:
    """(topic, partition, offset, key, value) of every message in `fetch`'s ranges, in order;
    with `binary` (Avro wire-format messages) key and value as base64 text."""
    import json

    assign: dict[str, list[int]] = {}
    for topic, partition in sorted(fetch):
        assign.setdefault(topic, []).append(partition)
    starting = _nested({tp: rng[0] for tp, rng in fetch.items()})
    ending = _nested({tp: rng[1] for tp, rng in fetch.items()})
    frame = (spark.read.format("kafka").options(**reader_options(config))
             .option("assign", json.dumps(assign, sort_keys=True))
             .option("startingOffsets", offsets_json(starting))
             .option("endingOffsets", offsets_json(ending))
             .option("failOnDataLoss", "true")
             .load()
             .selectExpr("topic", "partition", "offset",
                         "base64(key) AS key" if binary else "CAST(key AS STRING) AS key",
                         "base64(value) AS value" if binary else "CAST(value AS STRING) AS value"))
    try:
        return frame.orderBy("topic", "partition", "offset").collect()
    except Exception as exc:  # noqa: BLE001 - the connector's errors arrive through py4j
        if "ClassNotFound" in str(exc) or "Failed to find data source: kafka" in str(exc):
            from mirrorspec.spark.platform import jars

            raise MirrorspecError(
                "Spark's Kafka connector is not on this Spark's classpath",
                hint=f"run `python -m mirrorspec.spark.platform.jars` (make) for the local cache, or add "
                     f"--packages {jars.kafka_coordinate()} where Spark starts") from None
        raise _kafka_error(config, exc) from None


def _write_staging(fs, folder: str, table: TablePlan, config: KafkaSource, fetch: dict,
                   rows: list) -> dict:
    """One staging file (and its offsets sidecar) per fetched partition; messages per file."""
    by_partition: dict[TopicPartition, list] = {tp: [] for tp in fetch}
    for row in rows:
        by_partition[(row["topic"], int(row["partition"]))].append(row)
    counts = {}
    for (topic, partition), messages in sorted(by_partition.items()):
        lines, offsets = [], []
        for row in messages:
            line = message_line(table.source.type, row["key"], row["value"])
            if line is not None:
                lines.append(line)
                offsets.append(str(int(row["offset"])))
        counts[(topic, partition)] = len(lines)
        if not lines:
            continue
        name = staged_name(topic, partition, fetch[(topic, partition)][0],
                           metadata=topic == config.metadata_topic)
        fs.write_text(f"{folder}/{offsets_sidecar(name)}", "\n".join(offsets) + "\n")
        fs.write_text(f"{folder}/{name}", "\n".join(lines) + "\n")
    return counts


def _remove_published(fs, folder: str, state: dict[str, Any]) -> None:
    """Drop staging files already in a landing file (neither held back nor pending)."""
    from mirrorspec.base.files import is_remote, local_path

    keep = set(state.get("held_back") or []) | set((state.get("pending") or {}).get("files") or [])
    published = state.get("files") or {}
    for name in fs.names(folder):
        if parse_staged_name(name) is None:
            continue
        path = f"{folder}/{name}"
        key = path if is_remote(path) else os.path.abspath(local_path(path))
        if key in published and key not in keep and path not in keep:
            fs.delete(f"{folder}/{offsets_sidecar(name)}")
            fs.delete(path)

__all__ = ["stage_messages", "check_replay", "located_error", "kafka_config", "reader_options"]
