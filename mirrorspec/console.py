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
        """A table for people; with JSON logging, one event holding the rows as objects."""
        rows = [list(r) for r in rows]
        if self.log_format == "json":
            self.event(kind, title or "", rows=[dict(zip(columns, r)) for r in rows])
            return
        from rich.table import Table
        table = Table(title=title, show_lines=False)
        for column in columns:
            table.add_column(str(column))
        for row in rows:
            table.add_row(*["" if v is None else str(v) for v in row])
        self._rich.print(table)

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
