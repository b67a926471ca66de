"""VACUUM retention rules, checked before Spark starts (pure Python).

Delta refuses `VACUUM … RETAIN` below the table's `delta.deletedFileRetentionDuration` (7 days by
default) unless its safety check is switched off: files a reader or writer still uses — a
query running now, a mirroring pass that started before the last commit, time travel to a
recent version — would be deleted under it.
"""

from __future__ import annotations

import re

from mirrorspec.base.errors import MirrorspecError

RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"
DEFAULT_RETENTION_HOURS = 168.0  # Delta's default: interval 1 week
_UNITS = {"microsecond": 1 / 3_600_000_000, "millisecond": 1 / 3_600_000, "second": 1 / 3600,
          "minute": 1 / 60, "hour": 1.0, "day": 24.0, "week": 168.0}
_PART = re.compile(r"(-?\d+(?:\.\d+)?)\s*([a-z]+?)s?\b")


def interval_hours(text: str | None) -> float:
    """Hours of a Delta interval property such as `interval 7 days` or `interval 1 week 2 hours`
    (Delta's default when unset or unreadable)."""
    if not text:
        return DEFAULT_RETENTION_HOURS
    body = text.strip().lower()
    body = body[len("interval"):] if body.startswith("interval") else body
    total, found = 0.0, False
    for number, unit in _PART.findall(body):
        if unit not in _UNITS:
            return DEFAULT_RETENTION_HOURS
        total += float(number) * _UNITS[unit]
        found = True
    return total if found else DEFAULT_RETENTION_HOURS


def check_retention(table: str, retain_hours: float, minimum_hours: float,
                    allow_short: bool) -> None:
    """Refuse a VACUUM retention below the table's minimum unless `allow_short`."""
    if retain_hours >= minimum_hours or allow_short:
        return
    raise MirrorspecError(
        f"{table}: --retain-hours {retain_hours:g} is below the table's retention of "
        f"{minimum_hours:g} hours ({RETENTION_PROPERTY}); VACUUM would delete files that a "
        "running query, a mirroring pass or time travel to the last "
        f"{minimum_hours:g} hours may still read",
        hint=f"give --retain-hours {minimum_hours:g} or more, or --allow-short-retention when "
             "nothing reads or writes the table meanwhile and older versions may go")
