"""Tables fit an 80-column terminal without cutting names, and print as plain rows elsewhere."""

from __future__ import annotations

import io

from rich.console import Console as RichConsole

from mirrorspec.base.console import Console

COLUMNS = ["table", "status", "mirror status", "files published", "files applied", "inserted",
           "updated", "deleted", "time"]
ROWS = [["ops.events_with_a_long_name", "success", "Replicating", 3, 3, 1200, 4, 0, "1.2s"],
        ["sales.orders", "not_started", "NotStarted", 0, 0, 0, 0, None, "0.1s"]]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def in_terminal(width: int) -> str:
    stream = Terminal()
    console = Console(stream=stream)
    console._rich = RichConsole(file=stream, width=width, highlight=False, soft_wrap=True,
                                force_terminal=True, color_system=None)
    console.table("run results", COLUMNS, ROWS)
    return stream.getvalue()


def test_a_terminal_of_80_columns_gets_whole_names_and_a_note_on_left_out_columns():
    text = in_terminal(80)
    table_lines = [line for line in text.splitlines() if line[:1] in "┏┃┡│└"]
    assert table_lines and all(len(line) <= 80 for line in table_lines)
    assert "ops.events_with_a_long_name" in text and "not_started" in text
    assert "Replicating" in text and "…" not in text
    assert "left out at this width: files applied, inserted, updated, deleted, time" in text


def test_a_wide_terminal_shows_every_column():
    text = in_terminal(200)
    assert "left out" not in text
    for name in COLUMNS:
        assert name in text


def test_not_a_terminal_prints_plain_aligned_rows_never_cut():
    stream = io.StringIO()
    Console(stream=stream).table("run results", COLUMNS, ROWS)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "run results"
    assert lines[1].split("  ")[0] == "table" and "files published" in lines[1]
    assert lines[2].split() == ["ops.events_with_a_long_name", "success", "Replicating", "3",
                                "3", "1200", "4", "0", "1.2s"]
    assert lines[3].split() == ["sales.orders", "not_started", "NotStarted", "0", "0", "0", "0",
                                "0.1s"]  # None is an empty cell
    assert lines[2].index("success") == lines[1].index("status")  # aligned
    assert not any(ch in stream.getvalue() for ch in "│┃…")
