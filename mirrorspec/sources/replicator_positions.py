"""Where a Qlik Replicate, Arcion or AWS DMS change sits in its producer's stream: the one home
of those readers' source positions, and of the delivery check of a column-wise parse chunk.

- Qlik Replicate: `headers.changeSequence`, "a monotonically increasing change sequencer"
  (`YYYYMMDDHHmmSShh` and a 19-digit change number, one per change; empty for a full load's
  REFRESH rows). AWS DMS can write the same header into a column (`$AR_H_CHANGE_SEQ`).
- Arcion: the realtime change's `cursor` (`timestamp`, `dscId`, `mutId`): a restarted
  Replicant writes a change again with the same cursor.
- AWS DMS: a column a transformation rule fills with `$AR_H_CHANGE_SEQ` (option
  `change_sequence_column`: one per change), else the `TimestampColumnName` column (the source
  commit time of a CDC row: one transaction's rows share it), else nothing.

Positions are tuples of integers (`delivery.Delivery`). A sequence of digits (Qlik's
`changeSequence`, DMS's `AR_H_CHANGE_SEQ`) becomes `sequence_position`: three 18-digit parts of
the digits padded on the right, then their count, so tuples compare as the texts do (the
readers order changes by the text).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any, Sequence

from mirrorspec.sources.base import loads_line
from mirrorspec.sources.delivery import SNAPSHOT, STREAM, Delivery, FileCheck, channel_of

_DIGITS = re.compile(r"^[0-9]{1,54}$")
_PART = 18


def sequence_position(text: Any) -> tuple[int, ...] | None:
    """A digit sequence (`changeSequence`, `AR_H_CHANGE_SEQ`) as a position that compares as
    the text compares; None when the text is empty or not up to 54 digits."""
    if text is None:
        return None
    text = str(text)
    if not _DIGITS.match(text):
        return None
    padded = text.ljust(3 * _PART, "0")
    return (int(padded[:_PART]), int(padded[_PART:2 * _PART]), int(padded[2 * _PART:]),
            len(text))


def sequence_text(position: Sequence[int]) -> str:
    """The digit sequence a `sequence_position` came from (its text in messages)."""
    *parts, length = position
    return "".join(str(part).zfill(_PART) for part in parts)[:length]


# --- Qlik Replicate -------------------------------------------------------------------------------

def qlik_delivery(sequence: str, file: str) -> Delivery:
    """A Qlik data message's Delivery: a CDC change at its `changeSequence` (one per change:
    exact); a REFRESH row (no sequence) is a full-load read without a position."""
    position = sequence_position(sequence)
    phase = STREAM if sequence else SNAPSHOT
    return Delivery(channel_of(file), phase, position, position is not None)


def sequence_deliveries(sequences: Any, lines: Any, file: str, marks: Any) -> Any:
    """The `_delivery` column of a column-wise chunk whose every event has a digit sequence
    (`changeSequence`) of one width that strictly increases from line to line, the first one
    above what earlier batches applied (`marks`): Arrow arrays in, an Arrow struct array out,
    equal to `qlik_delivery(...).value()` of each row. None when the chunk is not that plain
    (REFRESH rows, sequences of several widths, a line out of order, a re-send): the caller
    then checks it event by event (`clean_chunk_deliveries`)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    count = len(sequences)
    if count == 0 or sequences.null_count or not pa.types.is_string(sequences.type):
        return None
    width = pc.utf8_length(sequences)
    if pc.min_max(width).as_py() != {"min": width[0].as_py(), "max": width[0].as_py()}:
        return None
    if width[0].as_py() > 3 * _PART or not pc.all(
            pc.match_substring_regex(sequences, r"^[0-9]+$")).as_py():
        return None
    order = pc.sort_indices(lines)
    by_line = sequences.take(order)
    line_of = lines.take(order)
    if count > 1:
        same_line = pc.equal(line_of[1:], line_of[:-1])
        later = pc.greater(by_line[1:], by_line[:-1])
        equal = pc.equal(by_line[1:], by_line[:-1])
        # one sequence per line, and a higher one on every later line
        if not pc.all(pc.if_else(same_line, equal, later)).as_py():
            return None
    channel = channel_of(file)
    first = sequence_position(by_line[0].as_py())
    if marks is not None and marks.resent(Delivery(channel, STREAM, first, True)):
        return None
    padded = pc.utf8_rpad(sequences, 3 * _PART, "0")
    parts = [np.asarray(pc.cast(pc.utf8_slice_codeunits(padded, i * _PART, (i + 1) * _PART),
                                pa.int64())) for i in range(3)]
    parts.append(np.asarray(pc.cast(width, pa.int64())))
    positions = pa.ListArray.from_arrays(pa.array(np.arange(0, 4 * count + 1, 4, dtype=np.int32)),
                                         pa.array(np.column_stack(parts).ravel()))
    return pa.StructArray.from_arrays(
        [pa.array([channel] * count, pa.string()), pa.array(np.full(count, STREAM, np.int32)),
         positions, pa.array(np.ones(count, bool)), pa.array(np.zeros(count, bool)),
         pa.array(np.zeros(count, bool))],
        names=["partition", "phase", "position", "exact", "per_key", "backwards"])


# --- Arcion -----------------------------------------------------------------------------------------

_CURSOR_FIELDS = ("timestamp", "dscId", "mutId")
# Arcion's `_order`: the phase (0 snapshot rows, 1 realtime changes), the realtime change's
# cursor position (a change without one takes its file's previous one), then the file's rank,
# line and the half of a key change
ARCION_ORDER_FIELDS = (("phase", "int"), ("p0", "bigint"), ("p1", "bigint"), ("p2", "bigint"),
                       ("file", "int"), ("line", "bigint"), ("sub", "int"))
UNPOSITIONED = (-1, -1, -1)


def arcion_position(cursor: Any) -> tuple[int, ...] | None:
    """The position in an Arcion `cursor` (JSON text or object): its timestamp, dscId and mutId
    as integers; None when the cursor lacks one of them."""
    if isinstance(cursor, str):
        if not cursor.strip():
            return None
        try:
            cursor = loads_line(cursor)
        except ValueError:
            return None
    if not isinstance(cursor, dict):
        return None
    parts = []
    for name in _CURSOR_FIELDS:
        value = cursor.get(name)
        if isinstance(value, bool):
            return None
        try:
            parts.append(int(value))
        except (TypeError, ValueError):
            return None
    return tuple(parts)


def arcion_delivery(position: tuple[int, ...] | None, file: str, snapshot: bool) -> Delivery:
    """An Arcion change's Delivery: a realtime change at its cursor (a cursor names one change:
    exact); a snapshot row is a read without a position."""
    if snapshot:
        return Delivery(channel_of(file), SNAPSHOT, None)
    return Delivery(channel_of(file), STREAM, position, position is not None)


# --- AWS DMS ----------------------------------------------------------------------------------------

_STAMP = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})[ T](\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?\s*$")


def timestamp_position(text: Any) -> tuple[int, ...] | None:
    """A DMS timestamp column value (`2023-10-29 11:34:01.123456`) as (seconds since the epoch,
    nanoseconds); None when it is empty or not a timestamp."""
    match = _STAMP.match(str(text)) if text not in (None, "") else None
    if not match:
        return None
    try:
        moment = datetime.fromisoformat(f"{match[1]}T{match[2]}").replace(tzinfo=timezone.utc)
    except ValueError:
        return None
    return (int(moment.timestamp()), int((match[3] or "0").ljust(9, "0")))


def dms_delivery(full_load: bool, timestamp: Any, file: str, sequence: Any = None,
                 sequenced: bool = False) -> Delivery:
    """A DMS row's Delivery: a full-load row is a read without a position. A CDC row sits at
    its `AR_H_CHANGE_SEQ` when the task adds it as a column (`sequenced`: one per change,
    exact; a row without one has no position), else at its timestamp column's value (the
    source commit time, shared by one transaction's rows)."""
    if full_load:
        return Delivery(channel_of(file), SNAPSHOT, None)
    if sequenced:
        position = sequence_position(sequence)
        return Delivery(channel_of(file), STREAM, position, position is not None)
    return Delivery(channel_of(file), STREAM, timestamp_position(timestamp))


# --- checks ------------------------------------------------------------------------------------------

def admit(check: FileCheck, delivery: Delivery, key: tuple, content: Any) -> tuple | None:
    """`check.admit`, but a full-load read without a position (Qlik REFRESH, an Arcion snapshot
    row, a DMS full-load row) is not checked: these producers send their full load again only
    as a reload of the table (the `refresh` behaviour), never after its changes."""
    if delivery.position is None and delivery.phase == SNAPSHOT:
        return delivery.value()
    return check.admit(delivery, key, content)


def marks_of(state: Any):
    """The delivery marks a parse task carries (`Marks.to_state()` JSON in its context)."""
    from mirrorspec.sources.delivery import STATE_KEY, Marks

    return Marks.from_state({STATE_KEY: state}) if state else None


# --- a column-wise chunk ----------------------------------------------------------------------------

def clean_chunk_deliveries(deliveries: Sequence[Delivery], check: FileCheck,
                           keyed: bool) -> list[tuple] | None:
    """The `_delivery` values of a column-wise chunk's events (in file order, one Delivery
    each), when the chunk can't hold a re-send: positions strictly increase, none lies where
    the marks of earlier batches reached, and a keyless table's events all have positions.
    None otherwise: the row parser then runs `FileCheck` event by event."""
    marks = check.marks
    previous: dict[str, tuple[int, ...]] = {}
    values = []
    for delivery in deliveries:
        position = delivery.position
        if position is None:
            if not keyed and check.redelivers and delivery.phase == STREAM:
                return None
        else:
            last = previous.get(delivery.partition)
            if last is not None and position <= last:
                return None
            previous[delivery.partition] = position
            if marks is not None and marks.resent(delivery):
                return None
        values.append(delivery.value())
    return values


__all__ = ["ARCION_ORDER_FIELDS", "UNPOSITIONED", "admit", "arcion_delivery", "marks_of", "arcion_position", "clean_chunk_deliveries", "dms_delivery",
           "qlik_delivery", "sequence_deliveries", "sequence_position",
           "timestamp_position"]
