"""The /metrics endpoint under a scraper that stalls: other scrapes are answered, the pass's
updates and the endpoint's close don't wait for it, and the server drops the stalled
connection after its socket timeout (the old server kept it, and its thread, forever)."""

from __future__ import annotations

import socket
import threading

import pytest

from tests.support.observe_helpers import scrape

pytest.importorskip("prometheus_client")


class _Console:
    def info(self, *args, **kwargs):
        pass

    warning = info


def test_a_stalled_scraper_holds_nothing_and_is_dropped():
    from mirrorspec.operate.metrics import WatchMetrics

    metrics = WatchMetrics(0, _Console(), scrape_timeout=0.3)
    stalled = socket.create_connection(("127.0.0.1", metrics.port))
    half = socket.create_connection(("127.0.0.1", metrics.port))
    try:
        half.sendall(b"GET /metrics HTTP/1.1\r\nHost: x")  # and never the rest
        metrics.observe("dbo.t", "Replicating", files_applied=1, inserted=2)
        metrics.end_pass(1.0)
        assert scrape(metrics.port)[("mirrorspec_table_status",
                                     (("status", "Replicating"), ("table", "dbo.t")))] == 1
        for sock in (stalled, half):
            sock.settimeout(30)  # a bound for the old server, which never closed them
            assert sock.recv(1) == b""  # the server gave up on it
        closing = threading.Thread(target=metrics.close)
        closing.start()
        closing.join(30)
        assert not closing.is_alive()
    finally:
        stalled.close()
        half.close()
        metrics.close()
