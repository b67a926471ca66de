"""Where a Debezium event sits in its connector's stream: the one home of Debezium ordering.

Each connector documents its own position in the event's `source` block; a function per
connector (keyed by `source.connector`, else recognised by the fields present) turns it into a
`Position`. Field names and formats follow Debezium's `SourceInfo`/`SourceInfoStructMaker`
classes and connector documentation (https://github.com/debezium/debezium at commit
aad5519902, `debezium-connector-*/…/SourceInfo*.java`, `documentation/…/connectors/*.adoc`).

An event's order key is `(phase, p0 … p7)`, then feed file, line and part (the tie-break):
- phase 0 for snapshot events (`source.snapshot` true/first/last/…, not `incremental`),
  1 for streaming events: a table's snapshot comes before its streaming events;
- p0 … p7: the connector's position as integers, -1 where a part is absent. All -1 means the
  event has no position: only its file and line can order it (see `Position.known`).

`domain` says which stream the position belongs to (MySQL/MariaDB `server_id`, Vitess
`keyspace/shard`): positions of two domains don't compare. A connector writes its stream in
position order (`monotone`; a Postgres `lsn` without `sequence` orders one row's changes only,
since interleaved transactions commit out of lsn order). `exact` positions name one event
(MySQL file/pos/row, SQL Server and Db2 change LSNs); the others may be shared by several
events (a snapshot's reads, the rows of one Postgres multi-insert record, one Oracle, MongoDB or
Vitess transaction). `delivery_of` turns a Position into the Delivery that the at-least-once
checks of `mirrorspec.sources.delivery` use: a position going back within a file is a re-send
there, not an error, when the event equals one the file already sent at that position.
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

from mirrorspec.sources.delivery import SNAPSHOT as DELIVERY_SNAPSHOT
from mirrorspec.sources.delivery import STREAM as DELIVERY_STREAM
from mirrorspec.sources.delivery import Delivery, partition_name

WIDTH = 8  # integer parts of a position (SQL Server/Db2: 3 + 3 LSN parts + event_serial_no)
ABSENT = -1
_MAX = (1 << 63) - 1
# Spark's `_order` struct: phase, the position parts, then file, line, part (tie-break).
ORDER_FIELDS: tuple[tuple[str, str], ...] = (
    (("phase", "int"),) + tuple((f"p{i}", "bigint") for i in range(WIDTH))
    + (("file", "string"), ("line", "bigint"), ("part", "int"), ("stream", "string")))
STREAMING, SNAPSHOT = 1, 0
_SNAPSHOT_VALUES = {"true", "first", "last", "first_in_data_collection",
                    "last_in_data_collection"}


class PositionError(ValueError):
    """A position field that is present but unreadable; `field` names it (`source.lsn`)."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Position:
    """An event's place in its connector's stream (see the module docstring)."""

    phase: int
    parts: tuple[int, ...]
    domain: str = ""
    monotone: bool = True
    fields: str = ""  # the source fields the position came from, for messages
    exact: bool = False

    @functools.cached_property
    def known(self) -> bool:
        return any(p != ABSENT for p in self.parts)

    def order(self) -> tuple:
        """The leading part of the `_order` tuple: phase and the WIDTH parts."""
        return (self.phase, *self.parts)


def _int(source: dict[str, Any], name: str) -> int | None:
    value = source.get(name)
    if value is None or value == "":
        return None
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise PositionError(f"source.{name}", f"source.{name} {value!r} is not a whole "
                                               "number") from None
    if not 0 <= number <= _MAX:
        raise PositionError(f"source.{name}", f"source.{name} {value!r} is out of range")
    return number


def _lsn_parts(source: dict[str, Any], name: str, count: int = 3) -> list[int | None]:
    """An SQL Server / Db2 LSN (`00000027:00000758:0005`) as its hex parts, compared by value."""
    value = source.get(name)
    if value is None or value in ("", "NULL"):
        return [None] * count
    pieces = str(value).split(":")
    try:
        parts = [int(p, 16) for p in pieces]
    except ValueError:
        raise PositionError(f"source.{name}", f"source.{name} {value!r} is not an LSN "
                                               "(hex parts separated by ':')") from None
    if len(parts) != count or any(p > _MAX for p in parts):
        raise PositionError(f"source.{name}", f"source.{name} {value!r} is not an LSN of "
                                               f"{count} hex parts")
    return list(parts)


# Each connector's function returns (parts, domain, monotone, fields, exact).
_Parts = tuple[list, str, bool, str, bool]


def _sqlserver(source: dict[str, Any]) -> _Parts:
    parts = (_lsn_parts(source, "commit_lsn") + _lsn_parts(source, "change_lsn")
             + [_int(source, "event_serial_no")])
    # change_lsn (__$seqval) names one change; event_serial_no the half of an update
    return parts, "", True, "source.commit_lsn, change_lsn, event_serial_no", parts[3] is not None


_BINLOG_NUMBER = re.compile(r"\.(\d+)$")


def _binlog(source: dict[str, Any]) -> _Parts:
    name = source.get("file")
    number = None
    if name not in (None, ""):
        match = _BINLOG_NUMBER.search(str(name))
        if not match:
            raise PositionError("source.file", f"source.file {name!r} is not a binlog file "
                                               "name (<base>.<number>)")
        number = int(match[1])
    parts = [number, _int(source, "pos"), _int(source, "row")] if number is not None else []
    server = source.get("server_id")
    # file/pos name one binlog event, `row` one row of it
    exact = len(parts) == 3 and None not in parts
    return parts, f"server_id {server}" if server not in (None, "") else "", True, \
        "source.file, pos, row", exact


def _postgres(source: dict[str, Any]) -> _Parts:
    sequence = source.get("sequence")
    if sequence not in (None, ""):
        try:
            items = json.loads(sequence) if isinstance(sequence, str) else sequence
            last_commit, lsn = (None if v is None else int(v) for v in items)
        except (TypeError, ValueError):
            raise PositionError("source.sequence", f"source.sequence {sequence!r} is not "
                                "[\"last_commit_lsn\", \"lsn\"]") from None
        if lsn is None:
            lsn = _int(source, "lsn")
        if lsn is not None:
            return [last_commit if last_commit is not None else 0, lsn], "", True, \
                "source.sequence", False
    lsn = _int(source, "lsn")
    # lsn alone: changes of one row follow each other in the WAL, a stream's need not; the
    # rows of one multi-insert WAL record (COPY) share their lsn
    return ([0, lsn] if lsn is not None else []), "", False, "source.lsn", False


def _oracle(source: dict[str, Any]) -> _Parts:
    scn = _int(source, "scn")
    commit = _int(source, "commit_scn")
    if scn is None and commit is None:
        return [], "", True, "source.commit_scn, scn, txSeq", False
    sequence = _int(source, "txSeq")
    # events are emitted per transaction in commit order; within one, by scn then txSeq
    return [commit if commit is not None else scn, scn, sequence], "", commit is not None, \
        "source.commit_scn, scn, txSeq", False


def _mongodb(source: dict[str, Any]) -> _Parts:
    seconds = _int(source, "sec")
    if seconds is None:
        ts_ms = _int(source, "ts_ms")
        seconds = ts_ms // 1000 if ts_ms is not None else None
    order = _int(source, "ord")
    if seconds is None or order is None:
        return [], "", True, "source.ts_ms, ord", False
    # the events of one transaction share its cluster time
    return [seconds, order], "", True, "source.ts_ms (seconds), ord", False


_GTID_INTERVAL = re.compile(r"^(\d+)(?:-(\d+))?$")


def gtid_count(text: str) -> int:
    """How far a GTID set has come: transactions in a MySQL set (`uuid:1-5:7`), the sum of the
    sequence numbers of a MariaDB position (`0-1-47`). A later set of one server counts more."""
    total = 0
    for item in re.split(r"[,\s]+", text.strip()):
        if not item:
            continue
        if item.count("-") == 2 and ":" not in item:  # MariaDB domain-server-sequence
            total += int(item.rsplit("-", 1)[1])
            continue
        for interval in item.split(":")[1:]:
            match = _GTID_INTERVAL.match(interval)
            if not match:
                raise ValueError(interval)
            low, high = int(match[1]), int(match[2] or match[1])
            total += high - low + 1
    return total


def _vitess(source: dict[str, Any]) -> _Parts:
    shard, keyspace, vgtid = source.get("shard"), source.get("keyspace"), source.get("vgtid")
    if vgtid in (None, "") or shard in (None, ""):
        return [], "", True, "source.vgtid", False
    try:
        entries = json.loads(vgtid) if isinstance(vgtid, str) else vgtid
        gtid = next(e["gtid"] for e in entries
                    if e.get("shard") == shard and e.get("keyspace", keyspace) == keyspace)
        text = str(gtid).split("/", 1)[-1]  # MySQL56/… or MariaDB/…
        count = gtid_count(text)
    except (TypeError, ValueError, KeyError, StopIteration, AttributeError):
        raise PositionError("source.vgtid", f"source.vgtid has no readable GTID for shard "
                                            f"{shard!r}") from None
    # one GTID per transaction: its rows share it
    return [count], f"shard {keyspace}/{shard}", True, "source.vgtid", False


def _unknown(source: dict[str, Any]) -> _Parts:
    return [], "", True, "source position", False


POSITIONS: dict[str, Callable[[dict[str, Any]], _Parts]] = {
    "sqlserver": _sqlserver,
    "db2": _sqlserver,  # the Db2 connector's commit_lsn/change_lsn have SQL Server's format
    "mysql": _binlog,
    "mariadb": _binlog,
    "postgresql": _postgres,
    "oracle": _oracle,
    "mongodb": _mongodb,
    "vitess": _vitess,
}


def connector_of(source: dict[str, Any]) -> str:
    """`source.connector`, else the connector whose position fields the block has."""
    name = source.get("connector")
    if isinstance(name, str) and name in POSITIONS:
        return name
    if "vgtid" in source:
        return "vitess"
    if "commit_lsn" in source or "change_lsn" in source:
        return "sqlserver"
    if "file" in source and "pos" in source:
        return "mysql"
    if "scn" in source or "commit_scn" in source:
        return "oracle"
    if "lsn" in source or "sequence" in source:
        return "postgresql"
    if "ord" in source:
        return "mongodb"
    return str(name or "")


def position_of(source: dict[str, Any] | None) -> Position:
    """The Position of an event's `source` block; raises PositionError for a bad field."""
    source = source or {}
    snapshot = str(source.get("snapshot") or "false").lower()
    phase = SNAPSHOT if snapshot in _SNAPSHOT_VALUES else STREAMING
    parts, domain, monotone, fields, exact = POSITIONS.get(connector_of(source), _unknown)(source)
    values = tuple(ABSENT if p is None else p for p in parts)
    values = values + (ABSENT,) * (WIDTH - len(values))
    # a snapshot's reads share the position of its consistent point
    return Position(phase, values, domain, monotone, fields, exact and phase == STREAMING)


UNPOSITIONED = "no "  # how the `stream` of an event without a position starts


def stream_of(position: Position) -> str:
    """The `stream` field of `_order`: the position's domain, or what is missing."""
    return position.domain if position.known else f"{UNPOSITIONED}{position.fields}"


MISSING_HINT = ("keep the source block in the events (ExtractNewRecordState: add.fields with the "
            "connector's position fields, e.g. source.lsn or source.file,source.pos,"
            "source.row), or put each key's events in one feed file")


class StreamCheck:
    """One file's stream order: an event without a position sorts where the file puts it.
    (Whether positions may go back within the file is `delivery.FileCheck`'s question.)"""

    def __init__(self) -> None:
        self._known: dict[int, tuple[int, ...]] = {}  # phase → the file's last known parts

    def order(self, position: Position) -> tuple:
        """The event's leading `_order` parts. Without a position it takes the file's previous
        one (of its phase), so the file's line order places it; across files nothing does
        (the reader refuses such keys: `stream_of` marks them)."""
        if position.known:
            self._known[position.phase] = position.parts
            return position.order()
        parts = self._known.get(position.phase, position.parts)
        return (position.phase, *parts)


def delivery_of(position: Position, channel: str = "") -> Delivery:
    """The Delivery of an event at `position` in a file of `channel` (`delivery.channel_of`):
    its partition is the channel and the connector's stream (MySQL `server_id`, a Vitess
    shard); a streamed change at a Postgres `lsn` without `sequence` (an Oracle `scn` without
    `commit_scn`) is a per-key position. A snapshot's position is a consistent point of the
    whole table, never per key."""
    phase = DELIVERY_SNAPSHOT if position.phase == SNAPSHOT else DELIVERY_STREAM
    return Delivery(partition_name(channel, position.domain), phase,
                    position.parts if position.known else None, position.exact,
                    not position.monotone and phase == DELIVERY_STREAM)
