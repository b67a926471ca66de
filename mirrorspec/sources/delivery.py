"""Delivery semantics: what each producer may do to its stream, and what mirrorspec does with it.

Producers are at-least-once: after a restart they re-send a suffix of what they sent, a topic
dump read from the beginning repeats events, snapshots restart, and rows arrive partial. The
landing zone keeps Fabric's semantics (an insert never checks for its key), so the publisher
makes replays harmless. This module is the one home of those rules (pure Python, no JVM):

- `PRODUCERS`: per feed type, what its producer may do and what mirrorspec does with each
  behaviour (docs/sources.md "Delivery semantics" is generated from it: `semantics_markdown`).
- `Delivery`: one event's place in its producer's delivery: its source *partition* (the
  channel its order holds in: a Kafka topic-partition and the producer's own stream, e.g. a
  MySQL `server_id`), its *phase* (a snapshot read or a streamed change) and its *position*
  there (integers compared left to right: LSN, binlog file/pos/row, SCN, …).
- `Marks`: per partition, the highest position the publisher applied (kept in the publisher
  state under `delivery`), so a re-sent suffix in a later file, batch or offset is dropped.
- `FileCheck`: one feed file's events in file order; inside one file (or topic dump) a
  position that goes back is a re-send when the event equals one the file already sent at that
  position, and a located error when it differs.

How a reader adopts it (what a reader has to say, nothing more):

1. per event, a `Delivery(partition, phase, position, exact, per_key)`; `partition` usually
   starts with `channel_of(file)` (the Kafka topic-partition a staged or sink file holds);
   `position` is None when the event carries none;
2. in its per-file parser, one `FileCheck(marks, keyed, redelivers(type), file)` and, for each
   event, `check.admit(delivery, key, content)`: None drops the event (a re-send); else the
   value to put in the `_delivery` column (`DELIVERY_TYPE`) of every row the event yields;
   a `DeliveryError` becomes the reader's located SourceError (file, line);
3. `Marks.from_state(state)` gives the marks of earlier batches (`state` is what
   `SourceReader.read` receives); the publisher advances them from the `_delivery` column of
   the rows it lands, in the same state write as the batch (so a crash never skips events).

The publisher then lands every keyed insert as an upsert (4) — except in a table's first load,
where an insert whose key nothing else in the batch inserts stays 0 — and checks a keyless
table's identical events across the batch's files.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

SNAPSHOT, STREAM = 0, 1
TABLE = 2  # the marks' slot of events that order the whole table (not per key)
_SLOT_NAMES = {SNAPSHOT: "snapshot", STREAM: "stream", TABLE: "table"}
STATE_KEY = "delivery"  # the publisher state's key for the marks
DELIVERY_COLUMN = "_delivery"
# The `_delivery` column: the fields of Delivery, the event's fingerprint, and whether the
# event went back within its file to a position the file had not sent (`backwards`: a re-send
# whose first copy must be in another file of the batch, or an earlier batch).
DELIVERY_TYPE = ("struct<partition:string,phase:int,position:array<bigint>,exact:boolean,"
                 "per_key:boolean,fingerprint:bigint,backwards:boolean>")
_MARKS_VERSION = 1


# --- producers ------------------------------------------------------------------------------------

BEHAVIOURS: tuple[tuple[str, str], ...] = (
    ("redeliver", "re-sends a suffix after a restart"),
    ("snapshot_restart", "restarts a snapshot"),
    ("dump_repeat", "repeats events within one dump or file"),
    ("partial_images", "sends partial row images"),
    ("refresh", "bootstraps or refreshes a whole table"),
    ("tombstones", "sends tombstones"),
)


@dataclass(frozen=True)
class Behaviour:
    """What a producer may do (`does`; empty: it never does) and what mirrorspec does with it.
    `handled` is True only when the mirrored table then equals the source in every case the
    producer documents; False says `handling` describes what happens today."""

    does: str
    handling: str = ""
    handled: bool = True


@dataclass(frozen=True)
class ProducerDelivery:
    """One feed type's producer: where its events sit (`position`) and its behaviours."""

    source_type: str
    producer: str
    position: str
    behaviours: Mapping[str, Behaviour] = field(default_factory=dict)

    def behaviour(self, name: str) -> Behaviour:
        return self.behaviours.get(name, Behaviour(""))

    @property
    def redelivers(self) -> bool:
        """Whether the producer may send an event it already sent (any way)."""
        return any(self.behaviour(n).does for n in ("redeliver", "snapshot_restart",
                                                   "dump_repeat", "refresh"))


_NEVER = Behaviour("")
_TOMBSTONES_SKIPPED = Behaviour("a keyed Kafka topic may hold null values (compaction)",
                                "skipped (a staged message without a value is no change)")
_KEYED_UPSERTS = ("keyed inserts land as upserts (4), so a key never lands twice; not yet "
                  "filtered by position: a re-sent change older than a later change of its "
                  "key is applied again until the re-sent suffix has arrived")

PRODUCERS: dict[str, ProducerDelivery] = {p.source_type: p for p in (
    ProducerDelivery(
        "debezium", "Debezium (Kafka Connect, Debezium Server)",
        "per Kafka topic-partition and connector stream (MySQL `server_id`, Vitess shard): "
        "the connector's source position (`debezium_positions.py`)",
        {"redeliver": Behaviour(
            "after a crash, re-sends what followed the last committed offset (at-least-once)",
            "events at or below the partition's highest applied position are dropped (a "
            "position shared by several events, such as a snapshot's, is applied again on a "
            "keyed table, which is harmless); Postgres `lsn` without `sequence` orders one row's "
            "changes only: re-sent changes re-apply idempotently as upserts; a keyless table "
            "without a stream position stops"),
         "snapshot_restart": Behaviour(
             "a snapshot interrupted by a restart starts again (`op: r` re-sent)",
             "snapshot reads land as upserts; reads at or below an applied streaming position "
             "are dropped; a keyless table's identical reads at one position stop the table"),
         "dump_repeat": Behaviour(
             "a topic dump read from the beginning repeats events (the position goes back)",
             "within a file, an event below the file's position is dropped when it equals one "
             "the file sent at that position, else the table stops at it"),
         "partial_images": Behaviour(
             "unchanged TOAST / LOB columns as `unavailable.value.placeholder` (text, bytes, "
             "arrays of any element type, hstore); REPLICA IDENTITY DEFAULT: no or key-only "
             "`before`; MongoDB updates without the full document",
             "completed from the event's own `before`, the batch's earlier changes, the "
             "mirrored row; the table stops at the event when no place has the value"),
         "refresh": Behaviour(
             "incremental and blocking (ad hoc) snapshots re-read a table (`op: r`, "
             "`snapshot: incremental`) while streaming",
             "reads land as upserts in stream order; Debezium never deletes rows with a "
             "snapshot, so neither does mirrorspec"),
         "tombstones": Behaviour("a null value after each delete (`tombstones.on.delete`)",
                                 "skipped")}),
    ProducerDelivery(
        "qlik_replicate", "Qlik Replicate (Kafka target)", "`changeSequence` (one stream)",
        {"redeliver": Behaviour("re-sends changes after a task resume, with their "
                                "`changeSequence`", _KEYED_UPSERTS, False),
         "dump_repeat": Behaviour("a topic dump read from the beginning repeats messages",
                                  _KEYED_UPSERTS, False),
         "partial_images": Behaviour("`columnMask` leaves unchanged columns out",
                                     "completed from the batch and the mirrored row"),
         "refresh": Behaviour("`REFRESH` reloads a table",
                              "landed as upserts (keyed); rows the reload no longer has stay",
                              False),
         "tombstones": _TOMBSTONES_SKIPPED}),
    ProducerDelivery(
        "arcion", "Arcion Replicant (S3 target)", "the change's `cursor`",
        {"redeliver": Behaviour("after a restart, writes a realtime file again under the next "
                                "name (same operations, same cursors)", _KEYED_UPSERTS, False),
         "snapshot_restart": Behaviour("a restarted snapshot writes its files again",
                                       "landed as upserts (keyed)", False),
         "partial_images": Behaviour("`Exists_Val` 0/2: a column not sent",
                                     "completed from the batch and the mirrored row")}),
    ProducerDelivery(
        "aws_dms", "AWS DMS (S3 target)", "the `timestamp_column`, file and row",
        {"redeliver": Behaviour("a resumed task may write changes again in a new CDC file",
                                _KEYED_UPSERTS, False),
         "partial_images": Behaviour("LOB columns not supplied (`CsvNoSupValue`)",
                                     "completed from the batch and the mirrored row"),
         "refresh": Behaviour("a table reload writes new full-load files",
                              "landed as upserts (keyed); rows the reload no longer has stay",
                              False)}),
    ProducerDelivery(
        "csv", "any exporter of full snapshots (CSV)", "the snapshot (file or folder) order",
        {"refresh": Behaviour("every file is a whole snapshot",
                              "the change set against the previous snapshot is landed"),
         "redeliver": Behaviour("an exporter may write the same snapshot again",
                                "an unchanged snapshot lands no change")}),
    ProducerDelivery(
        "parquet", "any exporter of full snapshots (Parquet)", "the snapshot order",
        {"refresh": Behaviour("every snapshot is a whole table",
                              "the change set against the previous snapshot is landed"),
         "redeliver": Behaviour("an exporter may write the same snapshot again",
                                "an unchanged snapshot lands no change")}),
    ProducerDelivery(
        "goldengate", "Oracle GoldenGate for Big Data (JSON formatter)",
        "`pos` (trail sequence and RBA)",
        {"redeliver": Behaviour("the Kafka handler re-sends after a Replicat restart",
                                _KEYED_UPSERTS, False),
         "dump_repeat": Behaviour("a topic dump read from the beginning repeats messages",
                                  "`pos` going back within a file stops the table", False),
         "partial_images": Behaviour("compressed updates carry only changed columns",
                                     "completed from the batch and the mirrored row, else the "
                                     "table stops; the message's own before image is not used "
                                     "yet", False),
         "tombstones": _TOMBSTONES_SKIPPED}),
    ProducerDelivery(
        "canal", "Alibaba Canal / DTS (FlatMessage)", "none (FlatMessage has no binlog "
        "position)",
        {"redeliver": Behaviour("re-sends after a restart (at-least-once)", _KEYED_UPSERTS,
                                False),
         "refresh": Behaviour("DTS writes a table's full load as `INIT` messages",
                              "refused today (`unknown Canal type`)", False),
         "tombstones": _TOMBSTONES_SKIPPED}),
    ProducerDelivery(
        "maxwell", "Maxwell's daemon", "`position` (binlog file and offset)",
        {"redeliver": Behaviour("re-sends from its stored position after a restart",
                                _KEYED_UPSERTS, False),
         "dump_repeat": Behaviour("a topic dump read from the beginning repeats messages",
                                  "`position` going back within a file stops the table",
                                  False),
         "refresh": Behaviour("`maxwell-bootstrap` re-reads a table (bootstrap-start, "
                              "bootstrap-insert…, bootstrap-complete)",
                              "bootstrap rows land as upserts on a keyed table; a keyless "
                              "table gets a second copy", False),
         "tombstones": _TOMBSTONES_SKIPPED}),
)}


def producer(source_type: str) -> ProducerDelivery:
    """The delivery semantics of a feed type (one with no behaviours when unknown)."""
    return PRODUCERS.get(source_type) or ProducerDelivery(source_type, source_type, "none")


def redelivers(source_type: str) -> bool:
    """Whether a feed type's producer may send an event again."""
    return producer(source_type).redelivers


def semantics_markdown() -> str:
    """The delivery-semantics table of docs/sources.md (a test keeps the page equal to it)."""
    lines = ["| producer (`type`) | behaviour | what the producer may do | what mirrorspec does |",
             "|---|---|---|---|"]
    for item in PRODUCERS.values():
        for name, title in BEHAVIOURS:
            behaviour = item.behaviour(name)
            if not behaviour.does:
                continue
            handling = behaviour.handling if behaviour.handled else \
                f"**not handled yet**: {behaviour.handling}"
            lines.append(f"| {item.producer} (`{item.source_type}`) | {title} | "
                         f"{behaviour.does} | {handling} |")
    return "\n".join(lines) + "\n"


# --- where an event sits ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Delivery:
    """An event's place in its producer's delivery (see the module docstring).

    `exact`: the position names one event, so identical events there are one event sent twice
    (MySQL file/pos/row); otherwise several events may share it (a snapshot's reads, one
    transaction's rows). `per_key`: positions increase per key only, not across the partition
    (Postgres `lsn` without `sequence`): re-sends are then checked per key inside a file, and
    not against the marks of earlier batches."""

    partition: str
    phase: int
    position: tuple[int, ...] | None
    exact: bool = False
    per_key: bool = False

    def value(self, fingerprint: int | None = None, backwards: bool = False) -> tuple:
        """The `_delivery` column's value (a tuple in DELIVERY_TYPE's field order)."""
        return (self.partition, self.phase,
                list(self.position) if self.position is not None else None,
                self.exact, self.per_key, fingerprint, backwards)


_SINK_FILE = re.compile(r"^(?P<topic>.+)\+(?P<partition>\d+)\+(?P<offset>\d+)(?:\.[^+]*)?$")
_STAGED_FILE = re.compile(r"^k[01]-(?P<topic>.+)-p(?P<partition>\d+)-o\d{20}\.jsonl$")


def channel_of(file: str) -> str:
    """The Kafka topic-partition a feed file holds, when its name says so: a file staged from
    `source.kafka`, or a Kafka Connect sink's `<topic>+<partition>+<start offset>.<ext>` (S3,
    GCS, Azure Blob sinks). Order holds per topic-partition only, so each is its own
    partition of marks. "" for any other file (the feed is one channel)."""
    name = file.rsplit("/", 1)[-1]
    for pattern in (_STAGED_FILE, _SINK_FILE):
        match = pattern.match(name)
        if match:
            return f"{match['topic']}/{int(match['partition'])}"
    return ""


def partition_name(channel: str, stream: str) -> str:
    """A partition of marks: the file's channel and the producer's stream within it."""
    return f"{channel}|{stream}" if channel else stream


def fingerprint(content: Any) -> int:
    """A stable 64-bit fingerprint of an event's content (its rows' values, ops, present
    lists), the same in every process and run: what a keyless table's marks remember."""
    digest = hashlib.blake2b(repr(content).encode("utf-8", "surrogatepass"),
                             digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


# --- errors ---------------------------------------------------------------------------------------

class DeliveryError(ValueError):
    """An event a reader must not land; the reader raises it as a SourceError at the event."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.message = message
        self.hint = hint


KEYLESS_HINT = ("a keyless table can't tell a re-sent row from a second identical row: declare "
                "key_columns in the table's YAML (the producer's key setting, e.g. Debezium's "
                "message.key.columns, gives a keyless source table one), or keep the "
                "producer's position fields in the events")


def backwards_error(position: tuple[int, ...] | None) -> DeliveryError:
    """Why an event whose position went back within its file stops the table: no file of the
    batch and no earlier batch sent it."""
    return DeliveryError(
        f"the source position goes back within the file (to {_text(position)}) and the event "
        "differs from every event sent at that position",
        "a re-sent event repeats one sent before; this file mixes streams, was reordered or "
        "edited: rewrite it in source order (the table stops here until then)")


def _text(position: tuple[int, ...] | None) -> str:
    if position is None:
        return "none"
    return "/".join(str(p) for p in position if p >= 0) or "none"


# --- the marks of earlier batches -------------------------------------------------------------------

@dataclass
class _Mark:
    position: tuple[int, ...] | None = None
    at: Counter = field(default_factory=Counter)  # keyless: fingerprints applied at `position`


class Marks:
    """What earlier batches applied, per partition: the highest snapshot position, the highest
    streaming position, and the highest position of an event that orders the whole table (all
    but `per_key` ones: a snapshot's consistent point, a truncate). For a keyless table also the
    fingerprints of the events applied at exactly the highest position."""

    def __init__(self, marks: dict[tuple[str, int], _Mark] | None = None):
        self._marks = marks or {}

    @classmethod
    def from_state(cls, state: Mapping[str, Any] | None) -> "Marks":
        """The marks kept in a publisher state (none in a state without them)."""
        saved = (state or {}).get(STATE_KEY) or {}
        marks: dict[tuple[str, int], _Mark] = {}
        for partition, slots in (saved.get("partitions") or {}).items():
            for slot, name in _SLOT_NAMES.items():
                item = slots.get(name)
                if item and item.get("position") is not None:
                    marks[(partition, slot)] = _Mark(tuple(int(p) for p in item["position"]),
                                                     Counter(int(f) for f in item.get("at", ())))
        return cls(marks)

    def to_state(self) -> dict[str, Any]:
        """The JSON the publisher state keeps under STATE_KEY."""
        partitions: dict[str, dict[str, Any]] = {}
        for (partition, slot), mark in sorted(self._marks.items()):
            item: dict[str, Any] = {"position": list(mark.position or ())}
            if mark.at:
                item["at"] = sorted(mark.at.elements())
            partitions.setdefault(partition, {})[_SLOT_NAMES[slot]] = item
        return {"version": _MARKS_VERSION, "partitions": partitions}

    def __bool__(self) -> bool:
        return bool(self._marks)

    def position(self, partition: str, slot: int) -> tuple[int, ...] | None:
        """The highest position of a slot (SNAPSHOT, STREAM or TABLE) applied so far."""
        mark = self._marks.get((partition, slot))
        return mark.position if mark else None

    def covers(self, partition: str, position: Sequence[int]) -> bool:
        """Whether an earlier batch reached `position` in `partition`: where an event that went
        back within its file, and matches nothing in its batch, was sent before."""
        marks = [m.position for (p, _), m in self._marks.items()
                 if p == partition and m.position is not None]
        return bool(marks) and tuple(position) <= max(marks)

    def resent(self, delivery: Delivery, keyed: bool, content_print: int | None = None) -> bool:
        """Whether an event is a re-send of what earlier batches applied (drop it). Raises
        DeliveryError when a keyless table's event can't be told from one applied before."""
        position = delivery.position
        if position is None:
            return False
        if delivery.per_key:
            # only the events that order the whole table order it against other keys' changes
            table = self.position(delivery.partition, TABLE)
            return table is not None and position < table
        stream = self._marks.get((delivery.partition, STREAM))
        if delivery.phase == SNAPSHOT:
            # a snapshot read at or below an applied streaming position: the stream already
            # went past the moment this read shows
            if stream is not None and position <= (stream.position or ()):
                return True
            mark = self._marks.get((delivery.partition, SNAPSHOT))
        else:
            mark = stream
        if mark is None or mark.position is None or position > mark.position:
            return False
        if position < mark.position or delivery.exact:
            return True
        if not keyed and content_print is not None and mark.at[content_print]:
            raise DeliveryError(
                f"this event equals one an earlier batch applied at the same source position "
                f"({_text(position)}), which several events share: it is a re-send or a second "
                "identical row", KEYLESS_HINT)
        return False

    def advanced(self, observed: Iterable[tuple[str, int, bool, Any, Iterable[int]]]
                 ) -> "Marks":
        """The marks after a batch whose landed events reached, per (partition, phase,
        per_key), the highest position `position`, with the fingerprints of its events there
        (only for a keyless table)."""
        marks = {k: _Mark(v.position, Counter(v.at)) for k, v in self._marks.items()}
        for partition, phase, per_key, position, prints in observed:
            if position is None:
                continue
            position = tuple(int(p) for p in position)
            slots = [(int(phase), list(prints or ()))]
            if not per_key:
                slots.append((TABLE, []))
            for slot, slot_prints in slots:
                mark = marks.setdefault((partition, slot), _Mark())
                if mark.position is None or position > mark.position:
                    mark.position, mark.at = position, Counter(int(p) for p in slot_prints)
                elif position == mark.position:
                    mark.at.update(int(p) for p in slot_prints)
        return Marks(marks)


# --- one file ---------------------------------------------------------------------------------------

class FileCheck:
    """The delivery checks of one feed file's events, in file order (see the module docstring).

    `keyed`: the table has key columns (a keyed change applied twice in order changes nothing;
    a keyless insert applied twice is a second row). `redelivers`: the producer may send an
    event again, so a keyless table needs a position to tell a re-send from a new row."""

    def __init__(self, marks: Marks | None = None, keyed: bool = True, redelivers: bool = True,
                 file: str = ""):
        self.marks = marks or Marks()
        self.keyed = keyed
        self.redelivers = redelivers
        self.file = file
        self._high: dict[tuple, tuple[int, ...]] = {}     # (partition, phase, scope) → max
        self._seen: dict[tuple, Counter] = {}              # (…, position) → content hashes

    def admit(self, delivery: Delivery, key: tuple, content: Any) -> tuple | None:
        """The `_delivery` value for an event's rows, or None for a re-send to drop.

        `key` is the event's key values (used for `per_key` positions); `content` what makes
        two events equal (its rows' ops, values and present lists), compared by `fingerprint`.
        An event whose position went back to one the file did not send is returned marked
        `backwards`: the publisher drops it when another file of the batch (or an earlier
        batch) holds it, and stops at it otherwise (`backwards_error`). Raises DeliveryError
        for an event that can't be landed safely."""
        position = delivery.position
        print_ = fingerprint(content)
        if position is None or (delivery.per_key and not self.keyed):
            if not self.keyed and self.redelivers:
                what = ("carries no source position" if position is None else
                        "carries a position that orders one row's changes only")
                raise DeliveryError(
                    f"the event {what}, and the table has no key columns: a re-sent event "
                    "can't be told from a new row", KEYLESS_HINT)
            return delivery.value(print_)
        if self.marks.resent(delivery, self.keyed, print_):
            return None
        scope = tuple(key) if delivery.per_key else ()
        part = (delivery.partition, delivery.phase, scope)
        place = part + (position,)
        seen = self._seen.setdefault(place, Counter())
        digest = print_
        high = self._high.get(part)
        stream_high = self._high.get((delivery.partition, STREAM, scope))
        if delivery.per_key:  # the events that order the whole table order this key's too
            high = _highest(high, self._high.get((delivery.partition, STREAM, ())),
                            self._high.get((delivery.partition, SNAPSHOT, ())))
        else:  # e.g. a truncate among per-key positions: it orders them all
            high = _highest(high, self._high.get((delivery.partition, delivery.phase, _ALL)))
            stream_high = _highest(stream_high, self._high.get((delivery.partition, STREAM, _ALL)))
        backwards = (high is not None and position < high) or (
            delivery.phase == SNAPSHOT and stream_high is not None and position <= stream_high)
        if backwards:
            if seen[digest]:
                return None  # a re-send of what this file already sent
            # the first copy may be in another file: the publisher looks for it there
            seen[digest] += 1
            return delivery.value(print_, backwards=True)
        if seen[digest]:
            if delivery.exact:
                return None  # the same event at its own position again
            if not self.keyed:
                raise DeliveryError(
                    f"this event equals an earlier one at the same source position "
                    f"({_text(position)}), which several events share: a re-send and a second "
                    "identical row can't be told apart", KEYLESS_HINT)
        seen[digest] += 1
        for at in (part, (delivery.partition, delivery.phase, _ALL)):
            self._high[at] = _highest(self._high.get(at), position)
        return delivery.value(print_)


_ALL = ("\x00all",)  # the scope of every event of a partition and phase


def _highest(*positions: tuple[int, ...] | None) -> tuple[int, ...] | None:
    known = [p for p in positions if p is not None]
    return max(known) if known else None


__all__ = ["BEHAVIOURS", "DELIVERY_COLUMN", "DELIVERY_TYPE", "Behaviour", "Delivery",
           "DeliveryError", "FileCheck", "Marks", "PRODUCERS", "ProducerDelivery", "SNAPSHOT",
           "STATE_KEY", "STREAM", "channel_of", "fingerprint", "partition_name", "producer",
           "redelivers", "semantics_markdown"]
