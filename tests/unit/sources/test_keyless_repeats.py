"""`source.options.keyless_repeats: land`: a keyless table's event equal to one already sent,
with no source position to tell a re-send from a second identical source row, lands as another
row instead of stopping the table (`delivery.FileCheck`, the readers that build it). Events
whose positions do tell them apart are still dropped as re-sends."""

from __future__ import annotations

import pytest

from mirrorspec.base.errors import SourceError
from mirrorspec.sources import canal
from mirrorspec.sources.base import OP_INSERT, OP_TRUNCATE
from mirrorspec.sources.debezium import TableShape
from mirrorspec.sources.delivery import (KEYLESS_HINT, KEYLESS_REPEATS, STREAM, Delivery,
                                         DeliveryError, FileCheck, Marks, repeats_land)
from mirrorspec.sources.row_images import parse_options
from tests.unit.sources.test_canal_reload_delivery import init  # a DTS FlatMessage

COLUMNS = (("id", "Int32"), ("name", "String"))
KEYLESS = TableShape(COLUMNS, ())
WIDTH = len(COLUMNS)
LAND = {KEYLESS_REPEATS: "land"}


def at(*position: int, exact: bool = False, per_key: bool = False) -> Delivery:
    return Delivery("", STREAM, tuple(position), exact, per_key)


def unpositioned() -> Delivery:
    return Delivery("", STREAM, None)


def test_the_option_is_read_from_source_options_and_stop_is_the_default():
    assert repeats_land(LAND) and repeats_land({KEYLESS_REPEATS: "LAND"})
    assert not repeats_land({}) and not repeats_land(None)
    assert not repeats_land({KEYLESS_REPEATS: "stop"})
    assert f"{KEYLESS_REPEATS}: land" in KEYLESS_HINT  # the third way out is named


@pytest.mark.parametrize("first, again", [
    (unpositioned(), unpositioned()),       # no position at all (Canal, a DMS CSV without ts)
    (at(5), at(5)),                          # a position several events share
    (at(7, per_key=True), at(7, per_key=True)),  # a position that orders one row only
])
def test_an_equal_keyless_event_stops_by_default_and_lands_with_land(first, again):
    stopping = FileCheck(keyed=False)
    with pytest.raises(DeliveryError) as err:  # per-key positions stop at the first event
        for event in (first, again):
            stopping.admit(event, (), "row")
    assert err.value.hint == KEYLESS_HINT
    landing = FileCheck(keyed=False, repeats_land=True)
    values = [landing.admit(first, (), "row"), landing.admit(again, (), "row"),
              landing.admit(again, (), "row")]
    assert all(v is not None for v in values)  # three equal events: three rows


def test_land_still_drops_resends_that_positions_tell_apart():
    check = FileCheck(keyed=False, repeats_land=True)
    assert check.admit(at(1, exact=True), (), "a") is not None
    assert check.admit(at(2, exact=True), (), "b") is not None
    assert check.admit(at(2, exact=True), (), "b") is None  # the same event at its own position
    unordered = FileCheck(keyed=False, repeats_land=True, ordered=False)
    assert unordered.admit(at(3, exact=True), (), "c") is not None
    assert unordered.admit(at(3, exact=True), (), "c") is None
    marks = Marks().advanced([("", STREAM, False, (9,), [])])
    assert FileCheck(marks, keyed=False, repeats_land=True).admit(at(8), (), "d") is None


def parse(options: dict, *lines: str) -> list[tuple]:
    rows = canal.parse_text("\n".join(lines), "dts.json", KEYLESS, parse_options(options))
    return [(r[WIDTH], r[:WIDTH]) for r in rows]


def test_a_canal_table_holding_identical_rows_lands_them_with_land():
    insert = init((1, "a"), kind="INSERT")
    with pytest.raises(SourceError, match="equals one the file sent before") as err:
        parse({}, insert, insert)
    assert err.value.file == "dts.json" and err.value.line == 2
    assert parse(LAND, insert, insert) == [(OP_INSERT, (1, "a"))] * 2


def test_a_full_load_with_identical_rows_lands_them_with_land():
    load = (init((1, "a"), (2, "b")), init((1, "a")))
    with pytest.raises(SourceError, match="equals one the load already sent"):
        parse({}, *load)
    rows = parse(LAND, *load)
    assert rows[0][0] == OP_TRUNCATE
    assert sorted(r for _, r in rows[1:]) == [(1, "a"), (1, "a"), (2, "b")]
