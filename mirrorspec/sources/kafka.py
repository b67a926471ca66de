"""`source.kafka`: the configuration, offset ranges and staged message files (pure Python).

A Kafka table's publish has two steps (mirrorspec/spark/publish/kafka.py runs them):
1. fetch: the messages between the recorded offsets and the topics' end offsets are written as
   staging files under `<state_path>/kafka/<unique_id>/`, one per topic-partition and run, named
   by topic, partition and first offset, one message per line (Debezium: `key<TAB>value`, as
   kafka-console-consumer prints them), with a hidden sidecar listing each line's offset. The
   new end offsets are then recorded in the table's publisher state.
2. publish: the staging folder is an ordinary feed folder for the file publisher, whose state
   records which staging files went into which landing sequence (exactly once).
No pyspark here: compile validates the configuration with `config_problems`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable

SOURCE_TYPES = ("qlik_replicate", "debezium", "goldengate", "canal", "maxwell")
EARLIEST, LATEST = "earliest", "latest"
# Kafka's own markers in per-partition offsets JSON (Spark uses the same)
EARLIEST_MARK, LATEST_MARK = -2, -1
STAGING_FOLDER = "kafka"
# metadata topic files sort before data files, so a batch's metadata comes first
_STAGED = re.compile(r"^k(?P<kind>[01])-(?P<topic>.+)-p(?P<partition>\d+)-o(?P<offset>\d{20})\.jsonl$")


@dataclass(frozen=True)
class KafkaSource:
    """A validated `source.kafka`."""

    bootstrap_servers: str
    topics: tuple[str, ...] = ()
    topic_pattern: str | None = None
    metadata_topic: str | None = None
    starting_offsets: Any = EARLIEST  # "earliest" | "latest" | {topic: {partition: offset}}
    max_offsets_per_run: int | None = None
    options: dict[str, Any] = field(default_factory=dict)

    @staticmethod
    def from_dict(doc: dict[str, Any]) -> "KafkaSource":
        starting = doc.get("starting_offsets", EARLIEST)
        if isinstance(starting, str) and starting.strip().startswith("{"):
            starting = json.loads(starting)
        return KafkaSource(
            bootstrap_servers=str(doc["bootstrap_servers"]),
            topics=tuple(doc.get("topics") or ()),
            topic_pattern=doc.get("topic_pattern"),
            metadata_topic=doc.get("metadata_topic"),
            starting_offsets=starting,
            max_offsets_per_run=doc.get("max_offsets_per_run"),
            options={str(k): v for k, v in (doc.get("options") or {}).items()})

    def describe(self) -> str:
        what = ", ".join(self.topics) if self.topics else f"topics matching {self.topic_pattern}"
        return f"Kafka {self.bootstrap_servers}: {what}"


def config_problems(source_type: str, kafka: dict[str, Any]) -> list[tuple[tuple, str, str | None]]:
    """Problems of a `source.kafka` block: (key path under source.kafka, message, hint)."""
    problems: list[tuple[tuple, str, str | None]] = []
    if source_type not in SOURCE_TYPES:
        problems.append(((), f"source type {source_type} can't be read from Kafka",
                         f"Kafka sources are {', '.join(SOURCE_TYPES)}"))
    if not isinstance(kafka, dict):
        return problems
    if bool(kafka.get("topics")) == bool(kafka.get("topic_pattern")):
        problems.append(((), "source.kafka needs exactly one of topics and topic_pattern",
                         "list the table's topics, or give a regular expression as topic_pattern"))
    pattern = kafka.get("topic_pattern")
    if isinstance(pattern, str):
        try:
            re.compile(pattern)
        except re.error as exc:
            problems.append((("topic_pattern",), f"topic_pattern is not a regular expression "
                             f"({exc})", None))
    if kafka.get("metadata_topic") and source_type != "qlik_replicate":
        problems.append((("metadata_topic",), "metadata_topic is for Qlik Replicate feeds", None))
    starting = kafka.get("starting_offsets", EARLIEST)
    message = starting_offsets_problem(starting)
    if message:
        problems.append((("starting_offsets",), message,
                         'use earliest, latest or {"topic": {"0": 42}} (-2 earliest, -1 latest)'))
    for name in (kafka.get("options") or {}):
        if str(name).startswith("kafka.") or str(name) in _SPARK_OWNED:
            problems.append((("options", name), f"consumer option {name} is set by mirrorspec "
                             "or written without the kafka. prefix",
                             "write consumer settings as Kafka names them (security.protocol, "
                             "sasl.mechanism, ...); offsets come from source.kafka"))
    return problems


# Consumer settings Spark's connector refuses or mirrorspec owns.
_SPARK_OWNED = ("bootstrap.servers", "group.id", "auto.offset.reset", "enable.auto.commit",
                "key.deserializer", "value.deserializer")


def starting_offsets_problem(value: Any) -> str | None:
    """Why `value` is not a valid starting_offsets (None when it is)."""
    if isinstance(value, str) and value.strip().startswith("{"):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            return f"starting_offsets is not valid JSON ({exc.msg})"
    if isinstance(value, str):
        return None if value in (EARLIEST, LATEST) else \
            f"starting_offsets {value!r} is not earliest, latest or per-partition offsets"
    if not isinstance(value, dict) or not value:
        return "starting_offsets must be earliest, latest or per-partition offsets"
    for topic, partitions in value.items():
        if not isinstance(partitions, dict):
            return f"starting_offsets.{topic} must map partitions to offsets"
        for partition, offset in partitions.items():
            if not str(partition).isdigit() or not isinstance(offset, int) or offset < -2:
                return (f"starting_offsets.{topic}.{partition}: {offset!r} is not an offset "
                        "(>= 0, or -2 earliest, -1 latest)")
    return None


# --- offsets ------------------------------------------------------------------------------------

Offsets = dict  # {topic: {partition (str): offset}} — JSON-friendly, as Spark writes them


def offsets_json(offsets: Offsets) -> str:
    """Spark's startingOffsets/endingOffsets JSON ({"topic": {"0": 42}}), sorted."""
    return json.dumps({t: {str(p): int(o) for p, o in sorted(parts.items(), key=lambda i: int(i[0]))}
                       for t, parts in sorted(offsets.items())}, separators=(",", ":"))


def lag_rows(kafka_state: dict[str, Any]) -> list[dict[str, Any]]:
    """Per topic-partition: consumed (the next offset to read), end offset at the last fetch,
    and lag (end − consumed), from a table's recorded Kafka state."""
    consumed = kafka_state.get("offsets") or {}
    ends = kafka_state.get("end_offsets") or {}
    rows = []
    for topic in sorted(set(consumed) | set(ends)):
        parts = set((consumed.get(topic) or {})) | set((ends.get(topic) or {}))
        for partition in sorted(parts, key=int):
            done = (consumed.get(topic) or {}).get(partition)
            end = (ends.get(topic) or {}).get(partition)
            lag = (end - (done or 0)) if end is not None else None
            rows.append({"topic": topic, "partition": int(partition), "consumed": done,
                         "end": end, "lag": max(lag, 0) if lag is not None else None})
    return rows


# --- what a full refresh replays -----------------------------------------------------------------

def mirrored_from(state: dict[str, Any]) -> dict[tuple[str, int], int] | None:
    """Per (topic, partition): the first offset a table's publisher state shows it consumed
    (its staged files' first offsets, the recorded offsets), or None when the state shows no
    Kafka fetch at all (a lost state: the table may hold everything from offset 0)."""
    starts: dict[tuple[str, int], int] = {}

    def seen(topic: str, partition: int, offset: int) -> None:
        key = (topic, partition)
        starts[key] = min(offset, starts.get(key, offset))

    names = list(state.get("files") or {}) + list(state.get("held_back") or [])
    for batch in state.get("batches") or []:
        names += list(batch.get("files") or [])
    for name in names:
        parsed = parse_staged_name(str(name))
        if parsed is not None:
            seen(*parsed)
    recorded = (state.get("kafka") or {}).get("offsets") or {}
    for topic, partitions in recorded.items():
        for partition, offset in partitions.items():
            seen(topic, int(partition), int(offset))
    if not starts and not state.get("kafka"):
        return None
    return starts


def replay_gaps(config: KafkaSource, mirrored: dict[tuple[str, int], int] | None,
                first: dict[tuple[str, int], int]) -> list[tuple[str, int, int, int]]:
    """(topic, partition, lost from, lost to) of each partition whose replay by a full refresh
    would start after offsets the mirrored table was built from, because the broker no longer
    has them (retention). `mirrored`: `mirrored_from` of the old state (None: from offset 0);
    `first`: the broker's first offset per partition. A partition `starting_offsets` starts at
    `latest`, or at an offset the broker still has, is the user's choice and never a gap."""
    gaps = []
    for (topic, partition), earliest in sorted(first.items()):
        initial: Any = EARLIEST if topic == config.metadata_topic else config.starting_offsets
        if isinstance(initial, dict):
            initial = int((initial.get(topic) or {}).get(str(partition), EARLIEST_MARK))
            if initial == LATEST_MARK:
                continue
            if initial >= 0:  # an explicit offset: a gap only when the broker lost it
                if initial < earliest:
                    gaps.append((topic, partition, initial, earliest - 1))
                continue
        elif initial == LATEST:
            continue
        if mirrored is None:
            start = 0
        elif (topic, partition) in mirrored:
            start = mirrored[(topic, partition)]
        else:
            continue  # a partition the table never read from: nothing of it to lose
        if start < earliest:
            gaps.append((topic, partition, start, earliest - 1))
    return gaps


def replay_gap_problem(unique_id: str, gaps: list[tuple[str, int, int, int]]) -> tuple[str, str]:
    """(message, hint) of a full refresh refused for `replay_gaps`."""
    where = "; ".join(f"topic {t}, partition {p}: offsets {a} to {b}" for t, p, a, b in gaps)
    message = (f"{where} are no longer on the broker (retention), but {unique_id} was built "
               "from them: a full refresh would rebuild it without them, so it was refused")
    kept: Offsets = {}
    for topic, partition, _lost_from, lost_to in gaps:
        kept.setdefault(topic, {})[str(partition)] = lost_to + 1
    starting = offsets_json(kept)
    hint = (f"to keep the table, run without --full-refresh; to rebuild it from what the broker "
            f"still holds, set source.kafka.starting_offsets to {starting} (after a new full "
            "load of the source if the table must be complete), compile, and run "
            f"`mirrorspec run --full-refresh --select {unique_id}` again")
    return message, hint


def rebuild_hint(unique_id: str) -> str:
    """What to do when retention deleted offsets a table had not consumed yet."""
    return (f"the mirror can't be complete: rebuild it from a new full load of the source or "
            f"from the earliest offset still kept (set source.kafka.starting_offsets to it, "
            f"compile, then `mirrorspec run --full-refresh --select {unique_id}`), and keep "
            "retention longer than the time between runs")


# --- staging files ------------------------------------------------------------------------------

def staged_name(topic: str, partition: int, first_offset: int, metadata: bool = False) -> str:
    """The staging file of one topic-partition's messages from `first_offset` on."""
    return f"k{0 if metadata else 1}-{topic}-p{partition}-o{first_offset:020d}.jsonl"


def offsets_sidecar(name: str) -> str:
    """The hidden file listing the Kafka offset of each line of staging file `name`."""
    return f".{name}.offsets"


def parse_staged_name(name: str) -> tuple[str, int, int] | None:
    """(topic, partition, first offset) of a staging file name, or None."""
    match = _STAGED.match(name.rsplit("/", 1)[-1])
    if not match:
        return None
    return match["topic"], int(match["partition"]), int(match["offset"])


def one_line(text: str) -> str:
    """A JSON message on one line: raw tabs/newlines in valid JSON are whitespace."""
    if "\n" in text or "\r" in text or "\t" in text:
        return text.replace("\r", " ").replace("\n", " ").replace("\t", " ")
    return text


def message_line(source_type: str, key: str | None, value: str | None) -> str | None:
    """The staging line of one message (None: nothing to stage)."""
    if source_type == "debezium":
        return f"{one_line(key) if key else 'null'}\t{one_line(value) if value else ''}"
    if value is None or not value.strip():
        return None  # no value, no message (Qlik and the row-image feeds: keys carry no meaning)
    return one_line(value)


def located_offset(offsets: Iterable[int], line: int) -> int | None:
    """The offset of 1-based `line` in a staging file whose sidecar lists `offsets`."""
    for number, offset in enumerate(offsets, start=1):
        if number == line:
            return int(offset)
    return None
