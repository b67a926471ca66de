"""What each producer may do to its stream and what mirrorspec does (mirrorspec/sources/
producers.py): the table docs/sources.md shows, generated from `PRODUCERS`."""

from __future__ import annotations

import re
from pathlib import Path

from mirrorspec.sources import FEED_TYPES
from mirrorspec.sources.delivery import KEYLESS_REPEATS
from mirrorspec.sources.producers import PRODUCERS, redelivers, semantics_markdown

ROOT = Path(__file__).resolve().parents[3]


def test_every_feed_type_has_its_row_and_the_page_shows_the_table():
    assert set(PRODUCERS) == set(FEED_TYPES)
    page = (ROOT / "docs" / "sources.md").read_text()
    assert semantics_markdown() in page, "regenerate the table: producers.semantics_markdown()"
    # nothing is called handled that the module doesn't say is handled
    for line in semantics_markdown().splitlines()[2:]:
        producer = re.search(r"\(`(\w+)`\)", line)[1]
        handled = [b for b in PRODUCERS[producer].behaviours.values() if b.does in line]
        assert handled and (("not handled yet" in line) == (not handled[0].handled))


def test_debezium_redelivers_and_an_extract_does_not_need_positions():
    assert redelivers("debezium") and redelivers("maxwell")
    assert all(b.handled for b in PRODUCERS["debezium"].behaviours.values())


def test_where_a_keyless_table_stops_the_row_names_the_setting_that_changes_it():
    """A keyless table's stop at a repeated row names `keyless_repeats: land`; its stop at a
    reload that lacks a row it holds names key_columns."""
    rows = semantics_markdown().splitlines()[2:]
    stops = [line for line in rows if re.search(r"keyless table\b[^|]*\bstops?\b", line)]
    assert len(stops) >= 10
    for line in stops:
        assert f"{KEYLESS_REPEATS}: land" in line or "key_columns" in line, line
    for item in PRODUCERS.values():
        for behaviour in item.behaviours.values():
            if behaviour.repeats_stop:
                assert "stop" in behaviour.handling
    assert sum(f"{KEYLESS_REPEATS}: land" in line for line in rows) == sum(
        b.repeats_stop for p in PRODUCERS.values() for b in p.behaviours.values())
