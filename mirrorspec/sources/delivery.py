"""Delivery semantics: what each producer may do to its stream, and what mirrorspec does with it.

Producers are at-least-once: after a restart they re-send a suffix of what they sent, a topic
dump read from the beginning repeats events, snapshots restart, and rows arrive partial. The
landing zone keeps Fabric's semantics (an insert never checks for its key), so the publisher
makes replays harmless. This module is the one home of those rules (pure Python, no JVM):

- what each producer may do and what mirrorspec does with it is `sources.producers`
  (`PRODUCERS`; docs/sources.md "Delivery semantics" is generated from it).
- `Delivery`: one event's place in its producer's delivery: its source *partition* (the
  channel its order holds in: a Kafka topic-partition and the producer's own stream, e.g. a
  MySQL `server_id`), its *phase* (a snapshot read or a streamed change) and its *position*
  there (integers compared left to right: LSN, binlog file/pos/row, SCN, …).
- `Marks`: per partition, the highest position the publisher applied (kept in the publisher
  state under `delivery`), so a re-sent suffix in a later file, batch or offset is dropped.
- `FileCheck`: one feed file's events in file order; inside one file (or topic dump) a
  position that goes back is a re-send when the event equals one the file already sent at that
  position (dropped); one that equals nothing the file sent is marked `backwards`, and the
  publisher drops it when another file of the batch (or an earlier batch) sent it, or stops
  the table at it.

How a reader adopts it (what a reader has to say, nothing more):

1. per event, a `Delivery(partition, phase, position, exact, per_key)`: `partition` is
   `partition_name(channel_of(file), stream)` (the Kafka topic-partition a staged or sink file
   holds, and the producer's own stream, "" when it has one); `phase` SNAPSHOT for a
   consistent read of the table at `position`, else STREAM; `position` a tuple of integers
   (None when the event carries none); `exact` when no two events share a position;
   `per_key` when positions increase only per key;
2. in its per-file parser, one `FileCheck(marks, keyed, producers.redelivers(type), file)` and, for each
   event, `check.admit(delivery, key, content)` (`content`: anything hashable, equal for equal
   events): None drops the event (a re-send); else the value to put in the `_delivery` column
   (`DELIVERY_TYPE`) of every row the event yields; a `DeliveryError` becomes the reader's
   located SourceError (file, line);
3. `Marks.from_state(state)` gives the marks of earlier batches (`state` is what
   `SourceReader.read` receives); the publisher advances them from the `_delivery` column of
   the rows it lands, in the same state write as the batch (so a crash never skips events).

The publisher (`spark/publish/replays.py`) then lands every keyed insert as an upsert (4) —
except in a table's insert-only first load whose keys are unique, which stays 0 — resolves the
`backwards` events, and checks a keyless table's identical events
across the batch's files and against the events the marks say an earlier batch applied.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

SNAPSHOT, STREAM = 0, 1
TABLE = 2  # the marks' slot of events that order the whole table (not per key)
_SLOT_NAMES = {SNAPSHOT: "snapshot", STREAM: "stream", TABLE: "table"}
STATE_KEY = "delivery"  # the publisher state's key for the marks
DELIVERY_COLUMN = "_delivery"
# The `_delivery` column: the fields of Delivery, and whether the event went back within its
# file to a position the file had not sent (`backwards`: a re-send whose first copy must be in
# another file of the batch, or an earlier batch, or an error).
DELIVERY_TYPE = ("struct<partition:string,phase:int,position:array<bigint>,exact:boolean,"
                 "per_key:boolean,backwards:boolean>")
_MARKS_VERSION = 1


# --- where an event sits ----------------------------------------------------------------------------

class Delivery(NamedTuple):
    """An event's place in its producer's delivery (see the module docstring).

    `exact`: the position names one event, so identical events there are one event sent twice
    (MySQL file/pos/row); otherwise several events may share it (a snapshot's reads, one
    transaction's rows). `per_key`: positions increase per key only, not across the partition
    (Postgres `lsn` without `sequence`): re-sends are then checked per key inside a file, and
    not against the marks of earlier batches; an event that orders the whole table (a
    truncate) is not `per_key` and is checked against every position seen."""

    partition: str
    phase: int
    position: tuple[int, ...] | None
    exact: bool = False
    per_key: bool = False

    def value(self, backwards: bool = False) -> tuple:
        """The `_delivery` column's value (a tuple in DELIVERY_TYPE's field order)."""
        return (self.partition, self.phase, self.position, self.exact, self.per_key, backwards)


_SINK_FILE = re.compile(r"^(?P<topic>.+)\+(?P<partition>\d+)\+(?P<offset>\d+)(?:\.[^+]*)?$")
_STAGED_FILE = re.compile(r"^k[01]-(?P<topic>.+)-p(?P<partition>\d+)-o\d{20}\.jsonl$")


@functools.lru_cache(maxsize=1024)  # asked for every row of a file
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


# --- errors ---------------------------------------------------------------------------------------

class DeliveryError(ValueError):
    """An event a reader must not land; the reader raises it as a SourceError at the event."""

    def __init__(self, message: str, hint: str):
        super().__init__(message)
        self.message = message
        self.hint = hint


KEYLESS_REPEATS = "keyless_repeats"  # the table's source option: `stop` (default) or `land`
KEYLESS_HINT = ("a keyless table can't tell a re-sent row from a second identical row: declare "
                "key_columns in the table's YAML (the producer's key setting, e.g. Debezium's "
                "message.key.columns, gives a keyless source table one), keep the "
                "producer's position fields in the events, or set the table's "
                f"source.options.{KEYLESS_REPEATS}: land (an equal event lands as another "
                "row, so a re-sent row may then be held twice)")


def repeats_land(options: Mapping[str, Any] | None) -> bool:
    """Whether a keyless table's `source.options` say an event equal to one already sent lands
    as another row (`keyless_repeats: land`) instead of stopping the table (`stop`)."""
    return str((options or {}).get(KEYLESS_REPEATS, "stop")).lower() == "land"


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
    fingerprints (the publisher's `replays.row_print`) of the events applied at exactly the
    highest position."""

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

    def positions(self, slot: int) -> dict[str, tuple[int, ...]]:
        """Each partition's highest position of a slot applied so far (`position`)."""
        return {partition: mark.position for (partition, at), mark in self._marks.items()
                if at == slot and mark.position is not None}

    def covers(self, partition: str, position: Sequence[int]) -> bool:
        """Whether an earlier batch reached `position` in `partition`: where an event that went
        back within its file, and matches nothing in its batch, was sent before."""
        marks = [m.position for (p, _), m in self._marks.items()
                 if p == partition and m.position is not None]
        return bool(marks) and tuple(position) <= max(marks)

    def resent(self, delivery: Delivery) -> bool:
        """Whether an event is a re-send of what earlier batches applied (drop it). An event at
        exactly the highest position of a shared position is not: on a keyed table applying it
        again changes nothing; a keyless table's is checked by the publisher against the
        fingerprints the marks keep (`at`)."""
        position = delivery.position
        if position is None:
            return False
        marks = self._marks
        if delivery.per_key:
            # only the events that order the whole table order it against other keys' changes
            table = marks.get((delivery.partition, TABLE))
            return table is not None and position < table.position
        stream = marks.get((delivery.partition, STREAM))
        if delivery.phase == SNAPSHOT:
            # a snapshot read at or below an applied streaming position: the stream already
            # went past the moment this read shows
            if stream is not None and position <= stream.position:
                return True
            mark = marks.get((delivery.partition, SNAPSHOT))
        else:
            mark = stream
        if mark is None or position > mark.position:
            return False
        return position < mark.position or delivery.exact

    def at(self) -> list[tuple[str, int, tuple[int, ...], int]]:
        """(partition, phase, position, fingerprint) of every event a keyless table applied
        at the highest position of a phase: a later event there with the same fingerprint
        can't be told from a re-send."""
        return [(partition, slot, mark.position, fingerprint)
                for (partition, slot), mark in sorted(self._marks.items())
                if slot in (SNAPSHOT, STREAM) and mark.position is not None
                for fingerprint in sorted(set(mark.at))]

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

class _FileStream:
    """What one file sent in one partition: the highest positions and each position's events."""

    __slots__ = ("high", "every", "keys", "seen")

    def __init__(self) -> None:
        self.high: list = [None, None]   # per phase: events that order the whole table
        self.every: list = [None, None]  # per phase: every event, per-key ones too
        self.keys: dict[tuple, tuple[int, ...]] = {}  # (phase, key) → a per-key position
        self.seen: dict[tuple, Any] = {}  # (phase, scope, position) → a content hash or a set


class FileCheck:
    """The delivery checks of one feed file's events, in file order (see the module docstring).

    `keyed`: the table has key columns (a keyed change applied twice in order changes nothing;
    a keyless insert applied twice is a second row). `redelivers`: the producer may send an
    event again, so a keyless table needs a position to tell a re-send from a new row. Memory:
    an entry per position the file sends (a dump read from the beginning may go back to its
    first event). `repeats_land` (`keyless_repeats: land`): a keyless table's event equal to
    one sent before lands as another row instead of stopping the table."""

    def __init__(self, marks: Marks | None = None, keyed: bool = True, redelivers: bool = True,
                 file: str = "", ordered: bool = True, repeats_land: bool = False):
        self.marks = marks if marks else None
        self.keyed = keyed
        self.repeats_land = repeats_land
        # a table whose equal events land needs no position to tell them apart
        self.redelivers = redelivers and not repeats_land
        self.file = file
        # False: the file's events need not be in position order (the reader orders them, as
        # AWS DMS's reader orders a file's rows by commit time), so a position going back
        # within the file is no re-send; only an event equal to one sent at its position is
        self.ordered = ordered
        self._streams: dict[str, _FileStream] = {}
        self._unordered: set = set()  # (partition, phase, position, content hash) sent

    def admit(self, delivery: Delivery, key: tuple, content: Any) -> tuple | None:
        """The `_delivery` value for an event's rows, or None for a re-send to drop.

        `key` is the event's key values (used for `per_key` positions); `content` anything
        hashable that is equal for equal events (its rows' ops, values and present lists).
        An event whose position went back to one the file did not send is returned marked
        `backwards`: the publisher drops it when another file of the batch (or an earlier
        batch) holds it, and stops at it otherwise (`backwards_error`). Raises DeliveryError
        for an event that can't be landed safely."""
        position = delivery.position
        if position is None or not self.ordered:
            if position is not None and self.marks is not None and self.marks.resent(delivery):
                return None
            return self._admit_unordered(delivery, content)
        if delivery.per_key and not self.keyed:
            if self.redelivers:
                raise DeliveryError(
                    "the event carries a position that orders one row's changes only, and the "
                    "table has no key columns: a re-sent event can't be told from a new row",
                    KEYLESS_HINT)
            return delivery.value()
        if self.marks is not None and self.marks.resent(delivery):
            return None
        stream = self._streams.get(delivery.partition)
        if stream is None:
            stream = self._streams[delivery.partition] = _FileStream()
        phase = delivery.phase
        if delivery.per_key:
            scope = (phase, key)
            own = stream.keys.get(scope)
            # the events that order the whole table (a truncate, a snapshot) order this key's
            backwards = ((own is not None and position < own)
                         or _below(position, stream.high[STREAM])
                         or _below(position, stream.high[SNAPSHOT]))
        else:
            scope = (phase, ())
            backwards = _below(position, stream.every[phase]) or (
                phase == SNAPSHOT and stream.every[STREAM] is not None
                and position <= stream.every[STREAM])
        place = scope + (position,)
        digest = hash(content)
        seen = stream.seen.get(place)
        known = seen is not None and (seen == digest if type(seen) is int else digest in seen)
        if backwards:
            if known:
                return None  # a re-send of what this file already sent
            _remember(stream.seen, place, seen, digest)
            # the first copy may be in another file: the publisher looks for it there
            return delivery.value(backwards=True)
        if known:
            if delivery.exact:
                return None  # the same event at its own position again
            if not self.keyed and not self.repeats_land:
                raise DeliveryError(
                    f"this event equals an earlier one at the same source position "
                    f"({_text(position)}), which several events share: a re-send and a second "
                    "identical row can't be told apart", KEYLESS_HINT)
        else:
            _remember(stream.seen, place, seen, digest)
        if delivery.per_key:
            stream.keys[scope] = position
        else:
            high = stream.high[phase]
            if high is None or position > high:
                stream.high[phase] = position
        every = stream.every[phase]
        if every is None or position > every:
            stream.every[phase] = position
        return delivery.value()


    def _admit_unordered(self, delivery: Delivery, content: Any) -> tuple | None:
        """An event without a position, or one in a file whose positions need not increase:
        nothing orders it against the file's other events, so it lands as sent (as Fabric
        lands an insert), except an event equal to one the file already sent at the same
        position (or, without positions, at all): dropped where the position names one
        event (`exact`), else a keyless table stops there instead of landing a duplicate (a
        dump read twice, a re-send within the file)."""
        if not delivery.exact and (self.keyed or not self.redelivers):
            return delivery.value()
        sent = (delivery.partition, delivery.phase, delivery.position, hash(content))
        if sent not in self._unordered:
            self._unordered.add(sent)
            return delivery.value()
        if delivery.exact:
            return None  # the same event at its own position again
        if delivery.position is None:
            where = "carries no source position"
        else:
            where = (f"sits at the same source position ({_text(delivery.position)}), which "
                     "several events share")
        raise DeliveryError(f"the event equals one the file sent before and {where}, and the "
                            "table has no key columns: a re-send can't be told from a second "
                            "identical row", KEYLESS_HINT)


def _below(position: tuple[int, ...], high: tuple[int, ...] | None) -> bool:
    return high is not None and position < high


def _remember(seen: dict, place: tuple, current: Any, digest: int) -> None:
    if current is None:
        seen[place] = digest
    elif type(current) is int:
        seen[place] = {current, digest}
    else:
        current.add(digest)


__all__ = ["DELIVERY_COLUMN", "DELIVERY_TYPE", "Delivery", "DeliveryError", "FileCheck",
           "KEYLESS_HINT", "KEYLESS_REPEATS", "Marks", "SNAPSHOT", "STATE_KEY", "STREAM", "TABLE",
           "channel_of", "partition_name", "repeats_land"]
