"""What `mirror --watch` does between passes: back off on a failed table and keep the output
an operator can live with. Pure logic (clock and folder signatures are passed in), so the
schedule and the once-only reporting are tested without waiting.

- A failed table is retried after `interval`, then 2×, 4×, … capped at `cap` seconds; at once
  when its folder changes (a file re-written, added or removed).
- Its error is printed once; again only when the error text changes. Recovery is printed.
- A message already shown is not repeated while nothing about its table changed, so an idle
  pass prints nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Hashable

from mirrorspec.base.console import Console, WrappingConsole

DEFAULT_CAP = 300.0  # seconds: a failed table is retried at least every 5 minutes


@dataclass
class _Failing:
    failures: int
    retry_at: float
    signature: Hashable


@dataclass
class Backoff:
    """When each failed table is tried again."""

    interval: float
    cap: float = DEFAULT_CAP
    failing: dict[str, _Failing] = field(default_factory=dict)

    def delay(self, failures: int) -> float:
        """Seconds before retry number `failures` (1: the first retry after one failure)."""
        base = max(self.interval, 1.0)
        return min(self.cap, base * 2 ** (failures - 1))

    def due(self, table: str, now: float, signature: Hashable) -> bool:
        """Whether `table` is mirrored in the pass starting `now` (its folder's `signature`)."""
        state = self.failing.get(table)
        return state is None or now >= state.retry_at or signature != state.signature

    def record(self, table: str, failed: bool, now: float, signature: Hashable) -> None:
        """The outcome of a pass that mirrored `table`."""
        if not failed:
            self.failing.pop(table, None)
            return
        failures = self.failing[table].failures + 1 if table in self.failing else 1
        self.failing[table] = _Failing(failures, now + self.delay(failures), signature)


class QuietConsole(WrappingConsole):
    """Wraps the command's console for `--watch`: a message is shown once while nothing about
    its table changes (`end_pass` decides), so idle passes and a table failing the same way
    print nothing new. Messages without a table are shown once per distinct text."""

    def __init__(self, console: Console):
        super().__init__(console)
        self._shown: dict[Any, set[tuple[str, str]]] = {}
        self._seen: dict[Any, set[tuple[str, str]]] = {}
        self._last: dict[str, tuple] = {}

    def event(self, kind: str, message: str, **fields: Any) -> None:
        table = fields.get("table")
        self._seen.setdefault(table, set()).add((kind, message))
        if (kind, message) in self._shown.get(table, ()):
            return
        self._console.event(kind, message, **fields)

    def news(self, table: str, outcome: tuple) -> bool:
        """Whether a table's (status, error text, files applied) of this pass is worth a line:
        it applied files, or its status or error differs from the last pass's."""
        last = self._last.get(table)
        return bool(outcome[2]) or last is None or tuple(outcome[:2]) != tuple(last[:2])

    def end_pass(self, outcomes: dict[str, tuple]) -> list[str]:
        """Close a pass given each mirrored table's (status, error text, files applied);
        returns the tables whose outcome changed. A table that applied files starts afresh
        (its next messages are news); one whose outcome changed keeps only this pass's
        messages as shown; otherwise what it showed stays shown."""
        changed = []
        for table in set(self._seen) | set(outcomes):
            seen = self._seen.get(table, set())
            shown = self._shown.setdefault(table, set())
            outcome = outcomes.get(table) if table is not None else None
            if outcome is not None and outcome[2]:
                shown.clear()
            elif outcome is not None and outcome != self._last.get(table):
                shown.clear()
                shown.update(seen)
            else:
                shown.update(seen)
        for table, outcome in outcomes.items():
            if outcome != self._last.get(table) or outcome[2]:
                changed.append(table)
            self._last[table] = outcome
        self._seen = {}
        return changed

