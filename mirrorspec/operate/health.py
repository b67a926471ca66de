"""Is a mirror healthy? The verdict of `mirrorspec status` (and `Project.status()`) from the
monitoring JSON: tables in `Failed`, and, given a bound, tables or a replicator not updated for
longer than it (pure Python).

Exit codes of `status`: 0 healthy, 1 a table is `Failed` (or any error), 3 no table failed but
something is stale (`--stale-after`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from mirrorspec.base.errors import UsageError

EXIT_FAILED = 1
EXIT_STALE = 3
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)")


def parse_duration(text: str, what: str = "--stale-after") -> timedelta:
    """`90s`, `15m`, `2h`, `1d`, `1w` or combinations (`1h30m`); a plain number is seconds."""
    body = str(text).strip().lower()
    if re.fullmatch(r"\d+(?:\.\d+)?", body):
        return timedelta(seconds=float(body))
    parts = _DURATION.findall(body)
    if not body or not parts or _DURATION.sub("", body).strip():
        raise UsageError(f"{what} {text!r} is not a duration",
                         hint="e.g. 90s, 15m, 2h, 1d or 1h30m (a plain number is seconds)")
    seconds = sum(float(number) * _UNITS[unit] for number, unit in parts)
    if seconds <= 0:
        raise UsageError(f"{what} {text!r} must be longer than 0")
    return timedelta(seconds=seconds)


def parse_time(text: str) -> datetime | None:
    """An ISO 8601 time of the monitoring JSON as an aware UTC datetime (None if unreadable)."""
    try:
        value = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        return None
    return value if value.tzinfo else value.replace(tzinfo=timezone.utc)


@dataclass(frozen=True)
class Health:
    """What is wrong with a mirror, if anything."""

    failed: list[str] = field(default_factory=list)  # schema.table of Failed tables
    stale: list[str] = field(default_factory=list)   # "schema.table (last sync …)" / replicator

    @property
    def exit_code(self) -> int:
        if self.failed:
            return EXIT_FAILED
        return EXIT_STALE if self.stale else 0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def verdict(self) -> str:
        parts = []
        if self.failed:
            parts.append(f"{len(self.failed)} table(s) Failed: {', '.join(self.failed)}")
        if self.stale:
            parts.append(f"stale: {', '.join(self.stale)}")
        return "; ".join(parts) or "healthy"


def assess(doc: dict[str, Any], stale_after: timedelta | None = None,
           now: datetime | None = None) -> Health:
    """The Health of a `read_status` document; staleness only when `stale_after` is given."""
    now = now or datetime.now(timezone.utc)
    failed, stale = [], []
    for entry in doc.get("tables") or []:
        name = f"{entry.get('sourceSchemaName') or 'dbo'}.{entry.get('sourceTableName')}"
        if entry.get("status") == "Failed":
            failed.append(name)
        if stale_after is not None and entry.get("status") != "Dropped":
            last = (entry.get("metrics") or {}).get("lastSyncDateTime")
            when = parse_time(last) if last else None
            if when is None or now - when > stale_after:
                stale.append(f"{name} (last sync {last or 'never'})")
    replicator = doc.get("replicator") or {}
    if stale_after is not None and replicator:
        updated = replicator.get("lastUpdated")
        when = parse_time(updated) if updated else None
        if when is None or now - when > stale_after:
            stale.insert(0, f"replicator (last updated {updated or 'never'})")
    return Health(sorted(failed), stale)
