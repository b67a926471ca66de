"""Debezium as a reader under the delivery harness (tests/support/delivery_harness.py).

`DebeziumAdapter(connector)` renders a clean stream's events as Debezium JSON envelopes whose
`source` block carries that connector's position, as the connectors document it (field names
and formats after Debezium's SourceInfo classes and connector documentation,
https://github.com/debezium/debezium at aad5519902; see mirrorspec/sources/debezium/positions.py):

| connector | position | shared by several events |
|---|---|---|
| postgresql | `lsn` and `sequence` [last commit lsn, lsn] | the rows of one multi-insert record |
| postgresql_lsn | `lsn` alone: interleaved transactions commit out of lsn order | — (per key) |
| mysql, mariadb | binlog `file`, `pos` (one per transaction here), `row` | — (exact) |
| sqlserver | `commit_lsn`, `change_lsn`, `event_serial_no` | — (exact) |
| db2 | `commit_lsn`, `change_lsn` | — (exact) |
| oracle | `scn`, `commit_scn`, `txSeq` | the events of one transaction |
| mongodb | `ts_ms` (seconds), `ord` | the events of one transaction |
| vitess | the shard's GTID set in `vgtid` | the events of one transaction |

Snapshot reads share the snapshot's position (`snapshot: first/true/last`). Partial images use
the placeholder forms of `UnchangedToastedPlaceholder` (text, `int[]` as the placeholder's byte
values — DBZ-5936 — and bytea as its bytes in base64).
"""

from __future__ import annotations

import base64
import json
from typing import Any, Sequence

from tests.support.delivery_harness import COLUMNS, KEY, LARGE, Change, Delivered, Stream

from mirrorspec.sources.debezium import DebeziumOptions, TableShape, parse_text
from mirrorspec.sources.debezium.placeholders import DEFAULT, Placeholder
from mirrorspec.sources.delivery import Marks

CONNECTORS = ("postgresql", "postgresql_lsn", "mysql", "mariadb", "sqlserver", "db2", "oracle",
              "mongodb", "vitess")
# positions that name one event: a keyless table's re-sends are always told apart there
EXACT = ("mysql", "mariadb", "sqlserver", "db2")
_VGTID = '[{"keyspace":"shop","shard":"-80","gtid":"MySQL56/f3b1c2d4-0000-11ee-8000-000000000001:1-%d"}]'
_PLACEHOLDER = Placeholder(DEFAULT)


def source_block(connector: str, stream: Stream, index: int) -> dict[str, Any]:
    """The `source` block of the stream's event `index` for `connector`."""
    event = stream.events[index]
    group = event.group  # 0: the snapshot; transactions from 1
    sub = event.index_in_group
    snapshot = None
    if event.snapshot:
        snapshot = "first" if index == 0 else (
            "last" if index == stream.snapshot_size - 1 else "true")
    name = "mysql" if connector == "mariadb" else connector
    block: dict[str, Any] = {"connector": connector.split("_")[0], "name": "shop",
                             "ts_ms": 1_700_000_000_000 + index, "db": "shop", "table": "items"}
    if snapshot:
        block["snapshot"] = snapshot
    if name == "postgresql":
        lsn = 1000 + 10 * group + sub
        block.update({"lsn": lsn, "sequence": json.dumps([None if snapshot else str(lsn - sub - 1),
                                                          str(lsn)])})
        if snapshot:
            block["lsn"], block["sequence"] = 1000, json.dumps([None, "1000"])
    elif name == "postgresql_lsn":
        block.update({"connector": "postgresql", "lsn": _lsn_only(stream, index)})
    elif name == "mysql":
        block.update({"file": "mysql-bin.000003", "pos": 100 + 10 * group,
                      "row": 0 if snapshot else sub, "server_id": 1})
    elif name in ("sqlserver", "db2"):
        block["commit_lsn"] = f"00000027:{group:08x}:0001"
        if not snapshot:
            block["change_lsn"] = f"00000027:{group:08x}:{sub + 2:04x}"
            if name == "sqlserver":
                block["event_serial_no"] = 1
    elif name == "oracle":
        block["scn"] = str(10_000 + 10 * group + sub)
        if not snapshot:
            block.update({"commit_scn": str(10_000 + 10 * group + 9), "txSeq": sub + 1})
    elif name == "mongodb":
        block.update({"ts_ms": (1_700_000_000 + group) * 1000, "ord": 1})
    elif name == "vitess":
        block.update({"keyspace": "shop", "shard": "-80", "vgtid": _VGTID % (group + 1)})
    return block


def _lsn_only(stream: Stream, index: int) -> int:
    """Postgres lsns without `sequence`: increasing for each key, but two transactions on
    different keys commit out of lsn order (the later-committed one wrote first)."""
    lsns = [1000 + 10 * e.group + e.index_in_group if not e.snapshot else 1000
            for e in stream.events]
    keys = [e.row[KEY] if e.row else None for e in stream.events]
    for i in range(stream.snapshot_size, len(lsns) - 1):
        if (i - stream.snapshot_size) % 3 == 1 and keys[i] != keys[i + 1] \
                and None not in (keys[i], keys[i + 1]) and stream.events[i].op != "t" \
                and stream.events[i + 1].op != "t":
            lsns[i], lsns[i + 1] = lsns[i + 1], lsns[i]
    return lsns[index]


def _json_row(row: dict[str, Any] | None, partial_of: dict[str, Any] | None = None
              ) -> dict[str, Any] | None:
    """A row as JsonConverter (schemas off) writes it; with `partial_of` (the row before an
    update), the large columns the update left unchanged as the placeholder."""
    if row is None:
        return None
    out = {n: (base64.b64encode(v).decode() if isinstance(v, bytes) else v)
           for n, v in row.items()}
    if partial_of is not None:
        forms = {"notes": _PLACEHOLDER.text, "tags": _PLACEHOLDER.numbers,
                 "blob": _PLACEHOLDER.base64}
        for name in LARGE:
            if row[name] == partial_of[name]:
                out[name] = forms[name]
    return out


class DebeziumAdapter:
    """Renders and parses Debezium JSON for one connector's positions."""

    source_type = "debezium"
    options: dict[str, Any] = {}

    def __init__(self, connector: str):
        self.connector = connector

    def render(self, stream: Stream, events: Sequence[Delivered], file: str) -> str:
        lines = []
        for item in events:
            event = stream.events[item.index]
            key_only = {KEY: event.row[KEY]} if event.row else None
            if event.op in ("r", "c"):
                before, after = None, _json_row(event.row)
            elif event.op == "u":
                before = _json_row(event.before) if stream.full_before else None
                after = _json_row(event.row, event.before if item.partial else None)
            elif event.op == "d":
                before = _json_row(event.row) if stream.full_before else key_only
                after = None
            else:
                before = after = None
            lines.append(json.dumps({
                "before": before, "after": after, "op": event.op,
                "source": source_block(self.connector, stream, item.index),
                "ts_ms": 1_700_000_000_000 + item.index}))
        return "\n".join(lines) + "\n"

    def parse(self, text: str, file: str, keyed: bool, marks: Marks) -> list[Change]:
        shape = TableShape(COLUMNS, (KEY,) if keyed else ())
        width = len(COLUMNS)
        names = [n for n, _ in COLUMNS]
        return [Change(dict(zip(names, r[:width])), r[width], r[width + 1], r[width + 2],
                       r[width + 3], r[width + 4], r[width + 5])
                for r in parse_text(text, file, shape, DebeziumOptions(), marks=marks)]
