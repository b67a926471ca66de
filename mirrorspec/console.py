"""All user-facing output goes through a Console: text for people, JSON lines for machines.

The core never prints; commands get the console from the click context
(`mirrorspec.commands.params.get_console()`). This is the only module that touches rich.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Iterable, Sequence


class Console:
    """Human output (rich, colours when a terminal) or `--log-format json` (one object per event)."""

    def __init__(self, log_format: str = "text", quiet: bool = False, stream=None):
        self.log_format = log_format
        self.quiet = quiet
        self.stream = stream or sys.stdout
        self._rich = None
        if log_format == "text":
            from rich.console import Console as RichConsole
            self._rich = RichConsole(file=self.stream, highlight=False, soft_wrap=True)

    # --- events ------------------------------------------------------------------------------
    def event(self, kind: str, message: str, **fields: Any) -> None:
        """One event: printed as a line, or as a JSON object with `fields`."""
        if self.log_format == "json":
            record = {"ts": round(time.time(), 3), "event": kind, "message": message}
            record.update(fields)
            self.stream.write(json.dumps(record, default=str) + "\n")
            self.stream.flush()
            return
        if self.quiet and kind not in ("error", "warning", "result"):
            return
        style = {"error": "bold red", "warning": "yellow", "success": "green"}.get(kind)
        self._print(message, style)

    def info(self, message: str, **fields: Any) -> None:
        self.event("info", message, **fields)

    def success(self, message: str, **fields: Any) -> None:
        self.event("success", message, **fields)

    def warning(self, message: str, **fields: Any) -> None:
        self.event("warning", message, **fields)

    def error(self, message: str, **fields: Any) -> None:
        self.event("error", message, **fields)

    def result(self, message: str, **fields: Any) -> None:
        """Output the command exists to produce (shown even with --quiet)."""
        self.event("result", message, **fields)

    def table(self, title: str | None, columns: Sequence[str], rows: Iterable[Sequence[Any]],
              kind: str = "table") -> None:
        """A table for people; with JSON logging, one event holding the rows as objects.

        In a terminal it fits the width (long cells wrap; columns that can't fit are left out,
        and a line says which); otherwise (a pipe, a log file) plain aligned rows, never cut."""
        rows = [["" if v is None else str(v) for v in r] for r in rows]
        if self.log_format == "json":
            self.event(kind, title or "", rows=[dict(zip(columns, r)) for r in rows])
            return
        if not self._is_terminal():
            self.raw(plain_table(title, [str(c) for c in columns], rows))
            return
        from rich.table import Table

        shown = fit_columns([str(c) for c in columns], rows, self._rich.width)
        table = Table(title=title, show_lines=False)
        for index, min_width in shown.items():
            # the first column names the row: never folded; long text in others wraps
            table.add_column(str(columns[index]), overflow="fold", no_wrap=index == 0,
                             min_width=min_width)
        for row in rows:
            table.add_row(*[row[i] if i < len(row) else "" for i in shown])
        self._rich.print(table)
        left_out = [str(c) for i, c in enumerate(columns) if i not in shown]
        if left_out:
            self._print(f"(left out at this width: {', '.join(left_out)}; "
                        "pipe the output for every column)", "dim")

    def is_terminal(self) -> bool:
        """True when text goes to a terminal (a live bar can be drawn there)."""
        return self.log_format == "text" and self._is_terminal()

    def progress_line(self, message: str, **fields: Any) -> None:
        """A progress report where no live bar can be drawn: a plain line with the local time
        (`[12:00:05] …`), or a `progress` event for JSON; nothing with --quiet."""
        if self.log_format == "json":
            self.event("progress", message, **fields)
            return
        if not self.quiet:
            self.stream.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
            self.stream.flush()

    def _is_terminal(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except (OSError, ValueError):
            return False

    def styled_lines(self, lines: Iterable[tuple[str | None, str]]) -> None:
        """Result lines, each with a rich style (or None): coloured for people, plain in JSON."""
        for style, line in lines:
            self._print(line, style)

    def progress(self):
        """A transient rich progress bar on this console; None for JSON output or --quiet."""
        if self._rich is None or self.quiet:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        return Progress(TextColumn("{task.description}"), BarColumn(),
                        TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn(),
                        console=self._rich, transient=True)

    def raw(self, text: str) -> None:
        """Text printed as is (JSON documents, file contents)."""
        self.stream.write(text if text.endswith("\n") else text + "\n")
        self.stream.flush()

    def _print(self, message: str, style: str | None) -> None:
        if self._rich is not None:
            from rich.markup import escape
            self._rich.print(f"[{style}]{escape(message)}[/{style}]" if style else escape(message))
        else:
            self.stream.write(message + "\n")


MIN_CELL = 14  # a cell up to this long (a status, a count, a time) is never wrapped
_BORDER = 3  # rich's "│ " + " " around each cell


def fit_columns(columns: Sequence[str], rows: Sequence[Sequence[str]], width: int
                ) -> dict[int, int]:
    """{index: minimum width} of the columns that fit `width`: the first (the row's name) at
    its full width, the others up to MIN_CELL unwrapped (longer text wraps); columns are left
    out from the right."""
    def need(index: int) -> int:
        longest = max([len(columns[index])] + [len(r[index]) for r in rows if index < len(r)])
        if index == 0:
            return longest
        word = max((len(w) for w in columns[index].split()), default=0)  # headers wrap too
        return min(longest, max(MIN_CELL, word))

    shown = {i: need(i) for i in range(len(columns))}
    while len(shown) > 1 and sum(w + _BORDER for w in shown.values()) + 1 > width:
        shown.pop(max(shown))
    return shown


def plain_table(title: str | None, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Aligned rows without box drawing or truncation, for pipes and log files."""
    widths = [max([len(c)] + [len(r[i]) for r in rows if i < len(r)])
              for i, c in enumerate(columns)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(cells)).rstrip()

    lines = [title] if title else []
    lines.append(line(columns))
    lines.extend(line(list(r) + [""] * (len(columns) - len(r))) for r in rows)
    return "\n".join(lines)


class NullConsole(Console):
    """Swallows everything (library use and tests)."""

    def __init__(self):
        super().__init__(log_format="json", quiet=True, stream=_Sink())

    def event(self, kind: str, message: str, **fields: Any) -> None:
        return None


class _Sink:
    def write(self, _text: str) -> None:
        return None

    def flush(self) -> None:
        return None
