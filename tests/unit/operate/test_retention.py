"""VACUUM retention: Delta interval properties and the check before Spark starts."""

from __future__ import annotations

import pytest

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.operate.retention import check_retention, interval_hours


@pytest.mark.parametrize("text, hours", [
    (None, 168), ("", 168), ("interval 7 days", 168), ("interval 1 week", 168),
    ("interval 2 hours", 2), ("interval 1 day 12 hours", 36), ("interval 30 minutes", 0.5),
    ("INTERVAL 3 DAYS", 72), ("interval 5 fortnights", 168),
])
def test_interval_hours(text, hours):
    assert interval_hours(text) == pytest.approx(hours)


def test_check_retention():
    check_retention("t", 168, 168, False)
    check_retention("t", 0, 168, True)
    with pytest.raises(MirrorspecError, match="below the table's retention of 168 hours") as info:
        check_retention("sales.orders", 24, 168, False)
    assert "--allow-short-retention" in str(info.value)
