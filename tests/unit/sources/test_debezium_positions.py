"""Debezium changes are ordered by each connector's documented source position, not by feed file
names or ts_ms. Source blocks follow Debezium's SourceInfoStructMaker classes and connector docs
(https://github.com/debezium/debezium at aad5519902)."""

from __future__ import annotations

import json

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import OP_INSERT, OP_UPDATE
from mirrorspec.sources.debezium import DebeziumOptions, TableShape, parse_text
from mirrorspec.sources.debezium.positions import gtid_count, position_of

SHAPE = TableShape((("id", "Int32"), ("v", "String")), ("id",))
VITESS_GTID = ('[{"keyspace":"commerce","shard":"80-","gtid":"MariaDB/0-54610504-47"},'
               '{"keyspace":"commerce","shard":"-80","gtid":"MariaDB/0-1592148-%d"}]')

# connector → (source block of the earlier change, source block of the later change); each
# later position is smaller than the earlier one in ts_ms, so only the position can order them.
CASES = {
    "sqlserver": ({"commit_lsn": "00000027:00000758:0005", "change_lsn": "00000027:00000758:0003",
                   "event_serial_no": 1},
                  # 0x0a > 0x09 in the middle part: a text comparison of unpadded parts would fail
                  {"commit_lsn": "00000027:0000a000:0002", "change_lsn": "00000027:00000a00:0001",
                   "event_serial_no": 1}),
    "mysql": ({"file": "mysql-bin.000009", "pos": 900, "row": 0, "server_id": 223344},
              {"file": "mysql-bin.000010", "pos": 4, "row": 0, "server_id": 223344}),
    "mariadb": ({"file": "mariadb-bin.000003", "pos": 154, "row": 0, "server_id": 1},
                {"file": "mariadb-bin.000003", "pos": 154, "row": 1, "server_id": 1}),
    "postgresql": ({"lsn": 24023128, "sequence": '["24023000","24023128"]'},
                   # a smaller lsn committed later: sequence's last_commit_lsn decides
                   {"lsn": 24023100, "sequence": '["24023200","24023100"]'}),
    "oracle": ({"scn": "1513734", "commit_scn": "1513754", "txSeq": 1},
               {"scn": "1513730", "commit_scn": "1513760", "txSeq": 1}),
    "vitess": ({"keyspace": "commerce", "shard": "-80", "vgtid": VITESS_GTID % 45},
               {"keyspace": "commerce", "shard": "-80", "vgtid": VITESS_GTID % 46}),
    "mongodb": ({"ts_ms": 1558965508000, "ord": 7}, {"ts_ms": 1558965508000, "ord": 8}),
    "db2": ({"commit_lsn": "00000025:00000d98:00a2", "change_lsn": "00000025:00000d98:00a1"},
            {"commit_lsn": "00000025:00000e00:0002", "change_lsn": "00000025:00000d99:0001"}),
}


def event(op: str, v: str, source: dict, connector: str, ts_ms: int) -> str:
    before = {"id": 1, "v": "x"} if op == "u" else None
    return json.dumps({"op": op, "before": before, "after": {"id": 1, "v": v}, "ts_ms": ts_ms,
                       "source": {"connector": connector, "ts_ms": ts_ms, **source}})


def changes(files: dict[str, str]) -> list[tuple]:
    rows = []
    for name in sorted(files):  # the names sort against the positions
        rows.extend(parse_text(files[name], name, SHAPE, DebeziumOptions()))
    return rows


@pytest.mark.parametrize("connector", sorted(CASES))
def test_each_connector_orders_by_its_position_not_file_names_or_ts_ms(connector):
    earlier, later = CASES[connector]
    files = {"a-later.json": event("u", "second", later, connector, ts_ms=1000),
             "b-earlier.json": event("c", "first", earlier, connector, ts_ms=2000)}
    rows = changes(files)
    assert [r[2] for r in rows] == [OP_UPDATE, OP_INSERT]  # file order
    applied = sorted(rows, key=lambda r: r[3])
    assert [(r[2], r[1]) for r in applied] == [(OP_INSERT, "first"), (OP_UPDATE, "second")]


def changes_of(rows: list[tuple]) -> list:
    """Parsed rows as the delivery harness's Change rows (for its model of the publisher)."""
    from tests.support.delivery_harness import Change

    names = [n for n, _ in SHAPE.columns]
    width = len(names)
    return [Change(dict(zip(names, r[:width])), r[width], r[width + 1], r[width + 2],
                   r[width + 3], r[width + 4], r[width + 5]) for r in rows]


def stop_of(rows: list[tuple]) -> SourceError:
    """The publisher's verdict on a batch (tests/support/delivery_harness.py models it)."""
    from tests.support.delivery_harness import publish_model
    from tests.support.reference_model import ModelTable

    from mirrorspec.sources.delivery import Marks

    with pytest.raises(SourceError) as err:
        publish_model(changes_of(rows), ("id",), SHAPE.names, ModelTable(("id",)), True, Marks())
    return err.value


@pytest.mark.parametrize("connector", sorted(CASES))
def test_a_position_going_back_within_a_file_to_another_event_stops_at_that_line(connector):
    """A re-sent event repeats one sent before; one that differs from everything sent at its
    position means a reordered or mixed file: the parser marks it, the publisher (which looks
    in the batch's other files and earlier batches too) stops at it."""
    earlier, later = CASES[connector]
    if connector == "postgresql":
        earlier, later = {"sequence": '["10","24023128"]'}, {"sequence": '["20","24023100"]'}
    text = event("u", "second", later, connector, 1) + "\n" + event("c", "first", earlier,
                                                                   connector, 2) + "\n"
    rows = list(parse_text(text, "f.json", SHAPE, DebeziumOptions()))
    assert [r[-1][-1] for r in rows] == [False, True]  # `backwards`
    error = stop_of(rows)
    assert (error.file, error.line) == ("f.json", 2)
    assert "goes back within the file" in error.message


def keyed_event(key: int, v: str, source: dict) -> str:
    return json.dumps({"op": "c", "after": {"id": key, "v": v},
                       "source": {"connector": "postgresql", **source}})


def test_postgres_lsn_alone_may_go_backwards_in_a_stream_but_not_for_one_row():
    """Interleaved transactions commit out of lsn order; lsn orders changes of one row, so a
    row's lsn going back is a re-send (dropped when equal, an error when it differs)."""
    text = keyed_event(1, "a", {"lsn": 200}) + "\n" + keyed_event(2, "b", {"lsn": 100})
    assert len(list(parse_text(text, "f.json", SHAPE, DebeziumOptions()))) == 2
    resent = text + "\n" + keyed_event(1, "x", {"lsn": 300}) + "\n" + keyed_event(1, "a", {"lsn": 200})
    skipped: dict = {}
    rows = list(parse_text(resent, "f.json", SHAPE, DebeziumOptions(), skipped))
    assert [r[1] for r in rows] == ["a", "b", "x"] and skipped == {"resent": 1}
    differs = text + "\n" + keyed_event(1, "x", {"lsn": 300}) + "\n" + keyed_event(1, "y", {"lsn": 150})
    assert stop_of(list(parse_text(differs, "f.json", SHAPE, DebeziumOptions()))).line == 4


def test_snapshot_events_come_before_streaming_events_at_the_same_position():
    source = {"file": "mysql-bin.000003", "pos": 154, "row": 0, "server_id": 1}
    files = {"a.json": event("u", "streamed", source, "mysql", 1),
             "b.json": event("r", "snapshot", {**source, "snapshot": "last"}, "mysql", 2)}
    applied = sorted(changes(files), key=lambda r: r[3])
    assert [r[1] for r in applied] == ["snapshot", "streamed"]
    incremental = position_of({"connector": "postgresql", "lsn": 5, "snapshot": "incremental"})
    assert incremental.phase == 1  # incremental snapshot chunks are part of the stream


def test_positions_parse_lsns_by_value_and_gtid_sets_by_size():
    low = position_of({"connector": "sqlserver", "commit_lsn": "00000027:00000758:0005"})
    high = position_of({"connector": "sqlserver", "commit_lsn": "00000027:0000a000:0001"})
    assert low.parts < high.parts and low.parts[:3] == (0x27, 0x758, 5)
    assert gtid_count("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7-9") == 8
    assert gtid_count("0-1-47,1-2-3") == 50
    mysql = position_of({"connector": "mysql", "file": "mysql-bin.000003", "pos": 7,
                         "server_id": 9})
    assert mysql.domain == "server_id 9" and mysql.parts[:3] == (3, 7, -1)


@pytest.mark.parametrize("source, field", [
    ({"connector": "sqlserver", "commit_lsn": "zz:00:01"}, "source.commit_lsn"),
    ({"connector": "mysql", "file": "binlog", "pos": 4}, "source.file"),
    ({"connector": "postgresql", "sequence": "[1]"}, "source.sequence"),
    ({"connector": "vitess", "shard": "-80", "vgtid": "[]"}, "source.vgtid"),
    ({"connector": "oracle", "scn": "12x"}, "source.scn"),
])
def test_an_unreadable_position_names_its_field_and_line(source, field):
    text = json.dumps({"op": "c", "after": {"id": 1, "v": "a"}, "source": source})
    with pytest.raises(SourceError) as err:
        list(parse_text("\n" + text, "f.json", SHAPE, DebeziumOptions()))
    assert field in err.value.message and err.value.line == 2


def test_connector_is_recognised_by_its_fields_without_source_connector():
    assert position_of({"file": "mysql-bin.000002", "pos": 5}).parts[:2] == (2, 5)
    assert position_of({"commit_lsn": "00000001:00000002:0003"}).parts[:3] == (1, 2, 3)
    assert not position_of({"ts_ms": 5}).known  # ts_ms is not a position


def test_an_event_without_a_position_sorts_where_its_file_puts_it():
    """It takes the file's previous position, so line order places it among its neighbours;
    its `stream` marks it for the reader's cross-file check."""
    text = "\n".join([event("c", "a", {"lsn": 500, "sequence": '["1","500"]'}, "postgresql", 1),
                      json.dumps({"op": "u", "before": None, "after": {"id": 1, "v": "b"},
                                  "source": {"ts_ms": 2}}),
                      event("u", "c", {"lsn": 600, "sequence": '["2","600"]'}, "postgresql", 3)])
    rows = list(parse_text(text, "f.json", SHAPE, DebeziumOptions()))
    applied = sorted(rows, key=lambda r: r[3])
    assert [r[1] for r in applied] == ["a", "b", "c"]
    assert [r[3][-1] for r in rows] == ["", "no source position", ""]
