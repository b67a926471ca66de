"""Private Spark APIs are used only where no public one exists, and a failure is logged."""

from __future__ import annotations

import logging

from mirrorspec.spark.platform import delta


class _NoJvm:
    """A classic-looking session whose JVM gateway is gone."""


def test_a_failed_delta_cache_clear_is_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="mirrorspec.spark.platform.delta"):
        delta.forget_delta_logs(_NoJvm())
    assert "could not clear Delta's log cache" in caplog.text


def test_a_failed_session_activation_is_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="mirrorspec.spark.platform.delta"):
        delta.activate(_NoJvm())
    assert "could not make the mirror session active" in caplog.text
