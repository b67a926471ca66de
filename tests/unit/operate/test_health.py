"""The verdict of `status`: Failed tables, stale tables and replicator, durations."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from mirrorspec.base.errors import UsageError
from mirrorspec.operate.health import EXIT_FAILED, EXIT_STALE, assess, parse_duration

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("15m", 900), ("2h", 7200),
                                           ("1d", 86400), ("1h30m", 5400), ("45", 45),
                                           ("1.5h", 5400), ("1W", 604800)])
def test_durations(text, seconds):
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "soon", "5q", "1h soon", "0s", "-5m"])
def test_bad_durations_are_usage_errors(text):
    with pytest.raises(UsageError, match="--stale-after"):
        parse_duration(text)


def doc(*tables, updated="2026-06-01T11:59:00Z"):
    return {"replicator": {"status": "Running", "lastUpdated": updated},
            "tables": [{"sourceSchemaName": s, "sourceTableName": n, "status": st,
                        "metrics": {"lastSyncDateTime": last}} for s, n, st, last in tables]}


def test_failed_wins_over_stale_and_staleness_needs_a_bound():
    d = doc(("sales", "orders", "Failed", "2026-06-01T11:59:00Z"),
            ("dbo", "c", "Replicating", "2026-05-01T00:00:00Z"))
    assert assess(d, now=NOW).exit_code == EXIT_FAILED
    assert assess(d, now=NOW).stale == []
    health = assess(d, timedelta(hours=1), now=NOW)
    assert health.failed == ["sales.orders"] and health.exit_code == EXIT_FAILED
    assert health.stale == ["dbo.c (last sync 2026-05-01T00:00:00Z)"]


def test_stale_replicator_or_never_synced_table():
    fresh = doc(("dbo", "c", "Replicating", "2026-06-01T11:58:00Z"))
    assert assess(fresh, timedelta(minutes=5), now=NOW).ok
    old = doc(("dbo", "c", "Replicating", "2026-06-01T11:58:00Z"),
              updated="2025-07-01T00:00:00Z")
    health = assess(old, timedelta(minutes=5), now=NOW)
    assert health.exit_code == EXIT_STALE
    assert health.stale == ["replicator (last updated 2025-07-01T00:00:00Z)"]
    never = doc(("dbo", "c", "NotStarted", None))
    assert assess(never, timedelta(minutes=5), now=NOW).stale == ["dbo.c (last sync never)"]
