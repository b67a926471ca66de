"""A Prometheus `/metrics` endpoint for `run --watch` and `mirror --watch` (the optional
`mirrorspec[metrics]` extra: prometheus_client, imported only when asked for).

Metrics live in their own registry (not the process-global one) and are set after each pass
from its `TableSample`s. A port already taken is a warning, once: the watch goes on without
metrics rather than stopping a service over its dashboard.
"""

from __future__ import annotations

import time
from typing import Any, Iterable

from mirrorspec.console import Console
from mirrorspec.observe.samples import TableSample, require

STATUSES = ("Replicating", "Waiting", "NotStarted", "Failed", "Dropped")


def _prometheus() -> Any:
    return require("prometheus_client", "--metrics-port", "metrics")


class Metrics:
    """The gauges and counters of one process, in `self.registry`."""

    def __init__(self) -> None:
        prom = _prometheus()
        self.registry = registry = prom.CollectorRegistry()
        table = ["table"]
        self.status = prom.Gauge("mirrorspec_table_status", "1 for the table's current status "
                                 "(as tables.json: Replicating, Waiting, NotStarted, Failed, "
                                 "Dropped), 0 for the others", table + ["status"],
                                 registry=registry)
        self.last_sync = prom.Gauge("mirrorspec_table_last_sync_timestamp_seconds",
                                    "When a pass last mirrored the table without failing "
                                    "(Unix time)", table, registry=registry)
        self.pending = prom.Gauge("mirrorspec_table_files_pending",
                                  "Data files waiting in the table's landing folder after the "
                                  "pass", table, registry=registry)
        self.rows = prom.Counter("mirrorspec_table_rows_applied", "Rows applied to the Delta "
                                 "table since the process started, by change",
                                 table + ["change"], registry=registry)
        self.files = prom.Counter("mirrorspec_table_files_applied", "Landing files applied "
                                  "since the process started", table, registry=registry)
        self.failures = prom.Gauge("mirrorspec_table_consecutive_failures",
                                   "Passes in a row that ended with the table Failed", table,
                                   registry=registry)
        self.lag = prom.Gauge("mirrorspec_kafka_lag_messages", "Messages not yet fetched, per "
                              "topic-partition, as of the table's last fetch",
                              table + ["topic", "partition"], registry=registry)
        self.table_seconds = prom.Gauge("mirrorspec_table_pass_duration_seconds",
                                        "Seconds the last pass spent on the table", table,
                                        registry=registry)
        self.pass_seconds = prom.Gauge("mirrorspec_pass_duration_seconds",
                                       "Seconds the last pass took", registry=registry)
        self.passes = prom.Counter("mirrorspec_passes", "Passes since the process started",
                                   registry=registry)
        self.last_pass = prom.Gauge("mirrorspec_last_pass_timestamp_seconds",
                                    "When the last pass ended (Unix time)", registry=registry)
        self._failures: dict[str, int] = {}

    def observe_pass(self, samples: Iterable[TableSample], seconds: float,
                     now: float | None = None) -> None:
        """Set every metric from one pass's samples."""
        now = time.time() if now is None else now
        for s in samples:
            for status in STATUSES:
                self.status.labels(s.table, status).set(1 if s.status == status else 0)
            if not s.failed:
                self.last_sync.labels(s.table).set(now)
            self._failures[s.table] = self._failures.get(s.table, 0) + 1 if s.failed else 0
            self.failures.labels(s.table).set(self._failures[s.table])
            if s.files_pending is not None:
                self.pending.labels(s.table).set(s.files_pending)
            for change, count in (("inserted", s.rows_inserted), ("updated", s.rows_updated),
                                  ("deleted", s.rows_deleted)):
                self.rows.labels(s.table, change).inc(count)
            self.files.labels(s.table).inc(s.files_applied)
            for lag in s.kafka_lag or ():
                self.lag.labels(s.table, lag.topic, str(lag.partition)).set(lag.lag)
            self.table_seconds.labels(s.table).set(s.seconds)
        self.pass_seconds.set(seconds)
        self.passes.inc()
        self.last_pass.set(now)

    def exposition(self) -> bytes:
        """The text format a scrape gets."""
        return _prometheus().generate_latest(self.registry)


class MetricsServer:
    """`Metrics` served on http://HOST:PORT/metrics from a daemon thread (or not at all when
    the port can't be bound: `serving` is False and a warning was printed)."""

    def __init__(self, port: int, host: str, console: Console):
        self.metrics = Metrics()
        self.serving = False
        self._server: Any = None
        try:
            self._server, _thread = _prometheus().start_http_server(
                port, addr=host, registry=self.metrics.registry)
            self.serving = True
            console.info(f"metrics on http://{host}:{port}/metrics", metrics_port=port)
        except OSError as exc:
            console.warning(f"metrics: can't listen on {host}:{port} ({exc.strerror or exc}); "
                            "running without the /metrics endpoint",
                            metrics_port=port)

    def observe_pass(self, samples: Iterable[TableSample], seconds: float) -> None:
        self.metrics.observe_pass(samples, seconds)

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
