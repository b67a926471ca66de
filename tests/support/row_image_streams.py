"""GoldenGate, Maxwell and Canal as readers under the delivery harness (tests/support/delivery_harness.py).

Each adapter renders a clean stream's events in its producer's JSON, positions included, after
the producer's documented output (fixtures of the same shapes: tests/fixtures/<format>/):

| adapter | snapshot reads (`r`) | position | re-send told apart |
|---|---|---|---|
| goldengate | inserts (an initial load's trail) | `pos`: trail sequence number + RBA, 20 digits beyond 2^63 | always (one `pos` per operation) |
| maxwell | a bootstrap: `bootstrap-start`, `bootstrap-insert`…, `bootstrap-complete` | `position` per transaction, `xoffset` per row (the last row: `commit`, no `xoffset`), `server_id` | always but bootstrap rows |
| canal | an Alibaba Cloud DTS initial load (`INIT`) | none (FlatMessage has none) | never: a keyless table stops |

Partial images: a GoldenGate compressed update (the after image holds the key and the changed
columns), a Maxwell update under binlog_row_image=MINIMAL (`data` holds the key and the changed
columns); Canal requires FULL row images, so it sends whole rows.

`parse` also does what the Spark reader does over a batch's files for these formats: a file's
leading rows without a position sort at the greatest position of the batch's earlier files
(`feeds.row_images.inherit_positions`), and a Canal initial load continued in the next file
keeps its rows (`canal.plan_batch`).
"""

from __future__ import annotations

import base64
import json
from typing import Any, Sequence

from tests.support.delivery_harness import COLUMNS, KEY, Change, Delivered, Stream

from mirrorspec.sources import canal, goldengate, maxwell
from mirrorspec.sources.base import OP_TRUNCATE
from mirrorspec.sources.debezium import TableShape
from mirrorspec.sources.delivery import Marks
from mirrorspec.sources.row_images import POSITIONS_NOTE, parse_options

# GoldenGate: a trail sequence number whose 20-digit `pos` exceeds a 64-bit integer
_TRAIL = 9_999_999_990


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    """A row as JSON values: bytes as base64 (GoldenGate's and Maxwell's binary encoding)."""
    return {n: (base64.b64encode(v).decode() if isinstance(v, bytes) else v)
            for n, v in row.items()}


def _changed(event) -> dict[str, Any]:
    """The key and the columns an update changed (a compressed or minimal after image)."""
    return {n: v for n, v in event.row.items() if n == KEY or v != event.before[n]}


class _BatchOrder:
    """The Spark reader's batch-level steps, per batch (files arrive in name order)."""

    def __init__(self) -> None:
        self.greatest: dict[str, str] = {}  # batch → the greatest position of its files so far

    def order(self, rows: list, file: str, notes: list) -> list:
        batch = file.split("-", 1)[0]
        inherited = self.greatest.get(batch)
        for note in notes:
            if note[0] == POSITIONS_NOTE:
                best = note[1][0]
                self.greatest[batch] = best if inherited is None else max(inherited, best)
        return [(r[0] if r[0] is not None else inherited, *r[1:]) for r in rows]


class _RowImageAdapter:
    source_type = ""
    module: Any = None
    options: dict[str, Any] = {}

    def __init__(self) -> None:
        self._batches = _BatchOrder()

    def _rows(self, text: str, file: str, keyed: bool, marks: Marks) -> tuple[list, list]:
        shape = TableShape(COLUMNS, (KEY,) if keyed else ())
        notes: list = []
        rows = list(self.module.parse_text(text, file, shape, parse_options(self.options), {},
                                           notes, marks))
        return rows, notes

    def parse(self, text: str, file: str, keyed: bool, marks: Marks) -> list[Change]:
        rows, notes = self._rows(text, file, keyed, marks)
        width = len(COLUMNS)
        names = [n for n, _ in COLUMNS]
        changes = []
        for r in rows:
            changes.append(Change(dict(zip(names, r[:width])), r[width], r[width + 1],
                                  r[width + 2], r[width + 3], r[width + 4], r[-1]))
        orders = self._batches.order([c.order for c in changes], file, notes)
        for change, order in zip(changes, orders):
            # Spark sorts `_order` with NULLs first: (position, file, line, part)
            change.order = (order[0] is not None, order[0] or "", *order[1:4])
        return changes


class GoldenGateAdapter(_RowImageAdapter):
    """GoldenGate for Big Data's JSON formatter (operation modeled) through the Kafka handler."""

    source_type = "goldengate"
    module = goldengate

    def render(self, stream: Stream, events: Sequence[Delivered], file: str) -> str:
        lines = []
        for item in events:
            event = stream.events[item.index]
            message: dict[str, Any] = {"table": "SHOP.ITEMS", "op_ts": "2024-01-02 03:04:05.000000",
                                       "pos": f"{_TRAIL:010d}{1000 + 10 * item.index:010d}"}
            if event.op in ("r", "c"):
                message.update(op_type="I", after=_jsonable(event.row))
            elif event.op == "u":
                after = _changed(event) if item.partial else event.row
                message.update(op_type="U", after=_jsonable(after))
                if stream.full_before:  # GETUPDATEBEFORES: the whole before image
                    message["before"] = _jsonable(event.before)
            elif event.op == "d":
                before = event.row if stream.full_before else {KEY: event.row[KEY]}
                message.update(op_type="D", before=_jsonable(before))
            else:
                message["op_type"] = "T"
            lines.append(json.dumps(message))
        return "\n".join(lines) + "\n"


class MaxwellAdapter(_RowImageAdapter):
    """Maxwell's JSON with output_binlog_position, output_commit_info (xoffset) and
    output_server_id; snapshot reads are a bootstrap of the table."""

    source_type = "maxwell"
    module = maxwell

    def render(self, stream: Stream, events: Sequence[Delivered], file: str) -> str:
        last = {}
        for index, event in enumerate(stream.events):
            last[event.group] = index
        lines = []
        for item in events:
            event = stream.events[item.index]
            base = {"database": "shop", "table": "items", "ts": 1_700_000_000}
            if event.snapshot:
                if item.index == 0:
                    lines.append(dict(base, type="bootstrap-start", data={}))
                lines.append(dict(base, type="bootstrap-insert", data=_jsonable(event.row)))
                if item.index == stream.snapshot_size - 1:
                    lines.append(dict(base, type="bootstrap-complete", data={}))
                continue
            message = dict(base, xid=event.group, server_id=1,
                           position=f"master.000003:{100 + 10 * event.group}")
            if last[event.group] == item.index:
                message["commit"] = True
            else:
                message["xoffset"] = event.index_in_group
            if event.op == "c":
                message.update(type="insert", data=_jsonable(event.row))
            elif event.op == "u":
                data = _changed(event) if item.partial else event.row
                old = {n: v for n, v in event.before.items() if event.row[n] != v}
                message.update(type="update", data=_jsonable(data), old=_jsonable(old))
            elif event.op == "d":
                data = event.row if stream.full_before else {KEY: event.row[KEY]}
                message.update(type="delete", data=_jsonable(data))
            else:
                raise AssertionError("Maxwell sends no truncates")
            lines.append(message)
        return "\n".join(json.dumps(m) for m in lines) + "\n"


def _canal_text(row: dict[str, Any]) -> dict[str, str]:
    """A row as FlatMessage values: text, bytes as their ISO-8859-1 text, arrays as JSON."""
    out = {}
    for name, value in row.items():
        if isinstance(value, bytes):
            out[name] = value.decode("latin-1")
        elif isinstance(value, list):
            out[name] = json.dumps(value, separators=(",", ":"))
        else:
            out[name] = str(value)
    return out


_MYSQL_TYPES = {KEY: "int", "name": "varchar(20)", "notes": "text", "tags": "json",
                "blob": "blob"}


class CanalAdapter(_RowImageAdapter):
    """Canal's FlatMessage (the Kafka flatMessage output); snapshot reads are Alibaba Cloud
    DTS's initial load (`INIT`)."""

    source_type = "canal"
    module = canal

    def __init__(self) -> None:
        super().__init__()
        self._state: dict[str, Any] = {}

    def render(self, stream: Stream, events: Sequence[Delivered], file: str) -> str:
        lines = []
        for item in events:
            event = stream.events[item.index]
            message: dict[str, Any] = {"database": "shop", "table": "items", "id": item.index,
                                       "es": 1_700_000_000_000, "ts": 1_700_000_000_001,
                                       "isDdl": False, "pkNames": [KEY] if stream.keyed else None,
                                       "mysqlType": _MYSQL_TYPES, "old": None}
            if event.op in ("r", "c"):
                message.update(type="INIT" if event.op == "r" else "INSERT",
                               data=[_canal_text(event.row)])
            elif event.op == "u":
                old = {n: v for n, v in event.before.items() if event.row[n] != v}
                message.update(type="UPDATE", data=[_canal_text(event.row)],
                               old=[_canal_text(old)])
            elif event.op == "d":
                message.update(type="DELETE", data=[_canal_text(event.row)])
            else:
                message.update(type="TRUNCATE", isDdl=True, data=None,
                               sql="TRUNCATE TABLE items")
            lines.append(json.dumps(message))
        return "\n".join(lines) + "\n"

    def _rows(self, text: str, file: str, keyed: bool, marks: Marks) -> tuple[list, list]:
        rows, notes = super()._rows(text, file, keyed, marks)
        found = [{"kind": n[0], "details": n[1], "file": file, "line": n[3]} for n in notes]
        plan = canal.plan_batch(found, [file], self._state)
        self._state = plan.state
        dropped = set(plan.dropped)
        width = len(COLUMNS)
        kept = [r for r in rows if not (r[width] == OP_TRUNCATE and (file, r[width + 4]) in dropped)]
        return kept, notes


def maxwell_with_positions(text: str) -> str:
    """Maxwell messages as Maxwell writes them with output_binlog_position and
    output_commit_info (positions ours): every binlog row gets `position` and `xoffset`."""
    lines = []
    for number, line in enumerate(text.splitlines()):
        message = json.loads(line)
        if message["type"] in ("insert", "update", "delete"):
            message.update(position=f"master.000001:{100 + number}", xoffset=number)
        lines.append(json.dumps(message))
    return "\n".join(lines)


def resent_snapshot_after_stream(stream: Stream, plan) -> bool:
    """Whether a delivery re-sends a snapshot read after the stream's changes had begun: a
    bootstrap or initial load is only sent again from its start, or while it runs (Maxwell
    reruns an unfinished bootstrap from the start; DTS restarts its full load), never as a
    stale copy read before later changes — which only a position could tell."""
    streamed = False
    for index in (item.index for batch in plan for events in batch for item in events):
        if index >= stream.snapshot_size:
            streamed = True
        elif streamed:
            return True
    return False
