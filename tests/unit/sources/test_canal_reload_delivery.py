"""Canal FlatMessage as Alibaba Cloud DTS writes it: a run of `type: "INIT"` messages is a
table's full load (FLINK-32862, apache/flink#23207). A DTS task restarted from its full load
writes the load again; with no other change of the table between the two, the second load
follows the first in one run of INIT messages, and nothing in a FlatMessage marks where it
starts (`es` is the binlog event's time, `ts` the time the message was built, `id` the batch
number — alibaba/canal, connector/core/.../producer/MQMessageUtils.java, commit d8d3246).

A keyed table takes both loads as upserts (the same rows again change nothing). A keyless
table can't tell the second load's rows from duplicate rows of the first: it stops at the
first repeated row instead of doubling its rows."""

from __future__ import annotations

import json

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import canal
from mirrorspec.sources.base import OP_INSERT, OP_TRUNCATE, OP_UPSERT
from mirrorspec.sources.debezium import TableShape
from mirrorspec.sources.delivery import KEYLESS_HINT
from mirrorspec.sources.row_images import parse_options

COLUMNS = (("id", "Int32"), ("name", "String"))
KEYED = TableShape(COLUMNS, ("id",))
KEYLESS = TableShape(COLUMNS, ())
WIDTH = len(COLUMNS)


def init(*rows: tuple[int, str], kind: str = "INIT") -> str:
    return json.dumps({"data": [{"id": str(i), "name": n} for i, n in rows],
                       "database": "shop", "es": 1589373515000, "id": 3, "isDdl": False,
                       "mysqlType": {"id": "int", "name": "varchar(20)"}, "old": None,
                       "pkNames": None, "sql": "", "sqlType": {"id": 4, "name": 12},
                       "table": "items", "ts": 1589373515477, "type": kind})


def parse(shape: TableShape, *lines: str) -> list[tuple]:
    rows = canal.parse_text("\n".join(lines), "dts.json", shape, parse_options({}))
    return [(r[WIDTH], r[:WIDTH]) for r in rows]


def test_a_keyless_load_run_twice_back_to_back_stops_instead_of_doubling():
    with pytest.raises(SourceError, match="equals one the load already sent") as err:
        parse(KEYLESS, init((1, "a"), (2, "b")), init((3, "c")),
              init((1, "a"), (2, "b")), init((3, "c")))
    assert err.value.line == 3 and err.value.file == "dts.json"
    assert (err.value.hint or "").startswith(KEYLESS_HINT)


def test_a_keyed_load_run_twice_lands_as_upserts():
    rows = parse(KEYED, init((1, "a"), (2, "b")), init((1, "a"), (2, "b")))
    assert rows[0][0] == OP_TRUNCATE and {op for op, _ in rows[1:]} == {OP_UPSERT}


def test_keyless_loads_separated_by_a_change_each_replace_the_table():
    rows = parse(KEYLESS, init((1, "a")), init((2, "b"), kind="INSERT"), init((1, "a")))
    assert [op for op, _ in rows] == [OP_TRUNCATE, OP_INSERT, OP_INSERT, OP_TRUNCATE,
                                      OP_INSERT]
