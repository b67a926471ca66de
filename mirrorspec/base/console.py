"""All user-facing output goes through a Console: text for people, JSON lines for machines.

The core never prints; commands get the console from the click context
(`mirrorspec.commands.params.get_console()`). This is the only module that touches rich.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import uuid
from datetime import date, datetime, time as clock_time, timezone
from decimal import Decimal
from typing import Any, Callable, Iterable, Sequence

from mirrorspec.base.interrupts import interrupted

FORMATS = ("text", "json", "csv")
NULL_TEXT = "NULL"  # how `show` prints a NULL for people ('' stays empty)
_LEVELS = {"error": "error", "warning": "warning", "debug": "debug"}


def color_disabled(no_color: bool = False) -> bool:
    """True with --no-color or a non-empty NO_COLOR (https://no-color.org)."""
    return no_color or bool(os.environ.get("NO_COLOR"))


def event_level(kind: str) -> str:
    """The log level of an event kind: error, warning, debug or info."""
    return _LEVELS.get(kind, "info")


def iso_now() -> str:
    """Now, ISO 8601 UTC with milliseconds and a `Z`."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class Console:
    """Human output (rich, colours when a terminal) or `--log-format json` (one object per event).

    JSON events carry `time` (ISO 8601 UTC), `level`, `event`, `message`, the console's
    `invocation_id` (the same as in the run's run_results.json) and the event's fields."""

    def __init__(self, log_format: str = "text", quiet: bool = False, stream=None,
                 no_color: bool = False, invocation_id: str | None = None):
        self.log_format = log_format
        self.quiet = quiet
        self.stream = stream or sys.stdout
        self.no_color = color_disabled(no_color)
        self.invocation_id = invocation_id or str(uuid.uuid4())
        self._rich = None
        if log_format == "text":
            from rich.console import Console as RichConsole
            self._rich = RichConsole(file=self.stream, highlight=False, soft_wrap=True,
                                     no_color=self.no_color or None)

    def record(self, kind: str, message: str, **fields: Any) -> dict[str, Any]:
        """The JSON object of one event."""
        record: dict[str, Any] = {"time": iso_now(), "ts": round(time.time(), 3),
                                  "level": event_level(kind), "event": kind, "message": message,
                                  "invocation_id": self.invocation_id}
        record.update(fields)
        return record

    # --- events ------------------------------------------------------------------------------
    def event(self, kind: str, message: str, **fields: Any) -> None:
        """One event: printed as a line, or as a JSON object with `fields`."""
        if interrupted():  # after Ctrl-C only the command line's one line is said
            return
        if self.log_format == "json":
            self.stream.write(json.dumps(self.record(kind, message, **fields),
                                         default=json_value) + "\n")
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
              kind: str = "table", null: str = "") -> None:
        """A table for people; with JSON logging, one event holding the rows as objects with
        typed values (numbers, booleans, null, ISO times).

        In a terminal it fits the width (long cells wrap; columns that can't fit are left out,
        and a line says which); otherwise (a pipe, a log file) plain aligned rows, never cut.
        `null` is how a None cell reads for people (`NULL` for data, blank for reports)."""
        if interrupted():
            return
        if self.log_format == "json":
            self.event(kind, title or "", rows=[{str(c): json_value(v) for c, v in zip(columns, r)}
                                                for r in rows])
            return
        rows = [[text_value(v, null) for v in r] for r in rows]
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
        if not self.quiet and not interrupted():
            self.stream.write(f"[{time.strftime('%H:%M:%S')}] {message}\n")
            self.stream.flush()

    def _is_terminal(self) -> bool:
        isatty = getattr(self.stream, "isatty", None)
        try:
            return bool(isatty and isatty())
        except (OSError, ValueError):
            return False

    def data(self, title: str, columns: Sequence[str], rows: Sequence[Sequence[Any]],
             output: str = "text", kind: str = "rows", **meta: Any) -> None:
        """Rows of data in `output` format: `text` (a table, NULL shown as NULL), `json` (one
        document: `meta`, the columns and typed row objects) or `csv` (a header, NULL as an
        empty field and '' as `""`)."""
        if output == "json":
            doc = {**meta, "columns": list(columns),
                   "rows": [{str(c): json_value(v) for c, v in zip(columns, r)} for r in rows]}
            self.raw(json.dumps(doc, ensure_ascii=False, default=json_value))
        elif output == "csv":
            self.raw(csv_text(columns, rows))
        else:
            self.table(title, columns, rows, kind=kind, null=NULL_TEXT)

    def styled_lines(self, lines: Iterable[tuple[str | None, str]]) -> None:
        """Result lines, each with a rich style (or None): coloured for people, plain in JSON."""
        for style, line in lines:
            self._print(line, style)

    def progress(self):
        """A transient rich progress bar on this console; None for JSON output or --quiet."""
        if self._rich is None or self.quiet:
            return None
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
        from rich.table import Column

        # the figures first, the text last: it wraps (never cut) in an 80-column terminal
        return Progress(TimeElapsedColumn(), BarColumn(bar_width=16),
                        TextColumn("{task.completed}/{task.total}"),
                        TextColumn("{task.description}",
                                   table_column=Column(ratio=1, overflow="fold")),
                        console=self._rich, transient=True, expand=True)

    def raw(self, text: str) -> None:
        """Text printed as is (JSON documents, file contents)."""
        if interrupted():
            return
        self.stream.write(text if text.endswith("\n") else text + "\n")
        self.stream.flush()

    def _print(self, message: str, style: str | None) -> None:
        if interrupted():
            return
        if self._rich is not None:
            from rich.markup import escape
            self._rich.print(f"[{style}]{escape(message)}[/{style}]" if style else escape(message))
        else:
            self.stream.write(message + "\n")


def json_value(value: Any) -> Any:
    """A value as JSON keeps it: numbers, booleans and null as such; times ISO 8601; a Decimal
    a number when a float holds it exactly, else its text; bytes as hex; the rest as text."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) \
            else str(value)
    if isinstance(value, Decimal):
        if value.is_finite() and Decimal(repr(float(value))) == value:
            return float(value) if value != value.to_integral_value() else int(value)
        return str(value)
    if isinstance(value, (datetime, date, clock_time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    return str(value)


def text_value(value: Any, null: str = "") -> str:
    """A cell for people: `null` for None, booleans as true/false, bytes as hex."""
    if value is None:
        return null
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    return str(value)


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    text = text_value(value)
    if text == "" or any(ch in text for ch in ',"\r\n') or text != text.strip():
        return '"' + text.replace('"', '""') + '"'
    return text


def csv_text(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """RFC 4180 CSV: NULL an empty field, '' a quoted empty string (`""`)."""
    lines = [",".join(_csv_cell(str(c)) for c in columns)]
    lines.extend(",".join(_csv_cell(v) for v in row) for row in rows)
    return "\r\n".join(lines) + "\r\n"


def emit_usage_error(message: str, exit_code: int, invocation_id: str | None = None,
                     stream=None) -> None:
    """A click usage error as one JSON error event (under --log-format json)."""
    console = Console(log_format="json", stream=stream or sys.stdout, invocation_id=invocation_id)
    console.error(message, error_type="UsageError", exit_code=exit_code)


LOGGER = "mirrorspec"
"""The Python logging logger the API's events go to when it is given no `on_event`."""
_LOGGING_LEVELS = {"error": logging.ERROR, "warning": logging.WARNING, "debug": logging.DEBUG}


def log_record(record: dict[str, Any]) -> None:
    """One event (its JSON object) through Python's logging: logger `mirrorspec`, the event's
    level, its message (a table's rows under its title, as plain aligned text) and the whole
    event as the log record's `mirrorspec` attribute."""
    logger = logging.getLogger(LOGGER)
    level = _LOGGING_LEVELS.get(str(record.get("level")), logging.INFO)
    if not logger.isEnabledFor(level):
        return
    message = str(record.get("message") or "")
    rows = record.get("rows")
    if isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows):
        columns = list(rows[0])
        message = plain_table(message or None, columns,
                              [[text_value(r.get(c)) for c in columns] for r in rows])
    logger.log(level, "%s", message, extra={"mirrorspec": record})


class CallbackConsole(Console):
    """Hands every event to `callback` as its JSON object (`record`) instead of printing: the
    Python API's progress and logs (`mirrorspec.api`). Tables become events with typed rows.
    Without a callback, every event goes to Python's logging (`log_record`), so a notebook or an
    orchestrator that shows logging shows mirrorspec's progress and warnings."""

    def __init__(self, callback: "Callable[[dict[str, Any]], None] | None",
                 invocation_id: str | None = None):
        super().__init__(log_format="json", quiet=False, stream=_Sink(),
                         invocation_id=invocation_id)
        self.callback = callback
        self._to_logging = callback is None

    def event(self, kind: str, message: str, **fields: Any) -> None:
        callback = self.callback
        if callback is None:
            if self._to_logging:
                log_record(json_value(self.record(kind, message, **fields)))
            return
        try:
            callback(json_value(self.record(kind, message, **fields)))
        except Exception as exc:  # noqa: BLE001 - a broken callback must not fail the tables
            import warnings

            self.callback = None  # said once; the work goes on without events
            warnings.warn(f"mirrorspec: the on_event callback raised {exc!r}; no more events "
                          "are sent to it", RuntimeWarning, stacklevel=2)

    def raw(self, text: str) -> None:
        self.event("output", text)


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


class WrappingConsole(Console):
    """A console that hands everything to another one; subclasses change `event` (what is
    shown, what is counted) and keep the rest: results, tables, raw text, progress lines."""

    def __init__(self, console: Console):  # super().__init__ not called: it only wraps
        self._console = console
        self.log_format = console.log_format
        self.quiet = console.quiet

    def event(self, kind: str, message: str, **fields: Any) -> None:
        self._console.event(kind, message, **fields)

    def result(self, message: str, **fields: Any) -> None:
        self._console.result(message, **fields)

    def table(self, *args: Any, **kwargs: Any) -> None:
        self._console.table(*args, **kwargs)

    def raw(self, text: str) -> None:
        self._console.raw(text)

    def data(self, *args: Any, **kwargs: Any) -> None:
        self._console.data(*args, **kwargs)

    def is_terminal(self) -> bool:
        return self._console.is_terminal()

    def progress_line(self, message: str, **fields: Any) -> None:
        self._console.progress_line(message, **fields)


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
