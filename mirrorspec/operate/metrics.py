"""`--metrics-port`: a Prometheus `/metrics` endpoint for `run --watch` and `mirror --watch`
(the `mirrorspec[metrics]` extra: prometheus_client, imported only when asked for).

Per table: its status (one gauge per status, 1 for the current one), the time of its last
successful pass, the landing files still pending in its folder (local folders), the rows applied
(counters by change), consecutive failed passes, Kafka lag per partition (`run --watch`); per
pass: its duration and a pass counter. The
endpoint never takes the service down: a port that can't be bound is one warning, and the
passes go on without metrics. It is served on its own threads (one per scrape, daemons), each
socket read and write bounded by `SCRAPE_TIMEOUT`: a scraper that stalls or reads slowly loses
its connection and never holds a pass, another scrape or the service's exit.
"""

from __future__ import annotations

import os
import time
from typing import Any

from mirrorspec.base.errors import SetupError, UsageError
from mirrorspec.base.files import LocalFS
from mirrorspec.openmirroring.mirroring import data_file_format, is_reserved_name, mirror_id, parse_sequence
from mirrorspec.progress.mirror import read_state

STATUSES = ("Replicating", "NotStarted", "Waiting", "Failed", "Dropped")
SCRAPE_TIMEOUT = 10.0  # seconds a scrape's socket may wait on one read or write


def check_metrics_option(port: int | None, watch: float | None) -> None:
    """Before any work: --metrics-port needs --watch and the prometheus_client package."""
    if port is None:
        return
    if watch is None:
        raise UsageError(f"--metrics-port {port} needs --watch (a one-off pass has no "
                         "endpoint to scrape)")
    try:
        import prometheus_client  # noqa: F401
    except ImportError:
        raise SetupError("--metrics-port needs the prometheus_client package",
                         hint="pip install 'mirrorspec[metrics]'") from None


def _local(path: str) -> str | None:
    local = path[len("file:"):] if path.startswith("file:") else path
    return None if "://" in local else local


def pending_files(landing_path: str, delta_path: str | None = None,
                  table: str | None = None) -> int | None:
    """Landing files of a local table folder not applied yet (None for a URI, a missing folder
    or progress that can't be read). The last applied file stays in the folder, so the table's
    progress in its Delta log (`table`: its unique id) says which files are new: those past the
    recorded sequence, or, with LastUpdateTimeFileDetection, those not among the files applied."""
    local = _local(landing_path)
    if local is None:
        return None
    try:
        names = os.listdir(local)
    except OSError:
        return None
    record = None
    if delta_path and table:
        delta = _local(delta_path)
        if delta is None:
            return None
        schema, _, name = table.partition(".")
        try:
            record = read_state(LocalFS(), delta, mirror_id(schema, name)).record
        except Exception:  # noqa: BLE001 - StateLost and I/O: the engine reports those
            return None
    if record is not None and record.mode == "time":
        done = record.done
        return sum(1 for n in names if n not in done and not is_reserved_name(n)
                   and data_file_format(n) is not None)
    applied = int(record.sequence or 0) if record is not None else 0
    return sum(1 for n in names if (parse_sequence(n) or 0) > applied)


class WatchMetrics:
    """The gauges and counters of a watching service, served on `port` (0: any free port)."""

    def __init__(self, port: int, console: Any, host: str = "127.0.0.1",
                 scrape_timeout: float = SCRAPE_TIMEOUT):
        from prometheus_client import CollectorRegistry, Counter, Gauge

        self.registry = CollectorRegistry()
        labels = ["table"]
        self.status = Gauge("mirrorspec_table_status", "1 for the table's current status",
                            ["table", "status"], registry=self.registry)
        self.last_sync = Gauge("mirrorspec_table_last_sync_timestamp_seconds",
                               "When the table last passed without failing (Unix time)", labels,
                               registry=self.registry)
        self.pending = Gauge("mirrorspec_table_files_pending",
                             "Landing files waiting in the table's folder after the pass", labels,
                             registry=self.registry)
        self.rows = Counter("mirrorspec_table_rows_applied", "Delta rows changed by the engine",
                            ["table", "change"], registry=self.registry)
        self.files = Counter("mirrorspec_table_files_applied", "Landing files applied", labels,
                             registry=self.registry)
        self.failures = Gauge("mirrorspec_table_consecutive_failures",
                              "Passes in a row the table failed", labels, registry=self.registry)
        self.kafka_lag = Gauge("mirrorspec_kafka_lag",
                               "Kafka messages not consumed yet, as of the table's last fetch",
                               ["table", "topic", "partition"], registry=self.registry)
        self.pass_seconds = Gauge("mirrorspec_pass_duration_seconds", "The last pass's duration",
                                  registry=self.registry)
        self.passes = Counter("mirrorspec_passes", "Passes done", registry=self.registry)
        self.port: int | None = None
        self._server: Any = None
        self._failing: dict[str, int] = {}
        try:
            self._server = _serve(self.registry, host, port, scrape_timeout)
            self.port = int(self._server.server_port)
            console.info(f"metrics: http://{host}:{self.port}/metrics", metrics_port=self.port)
        except OSError as exc:
            console.warning(f"metrics: cannot serve on {host}:{port} ({exc}); going on "
                            "without a /metrics endpoint", metrics_port=port)

    def observe(self, table: str, status: str | None, files_applied: int = 0,
                inserted: int = 0, updated: int = 0, deleted: int = 0,
                landing_path: str | None = None, delta_path: str | None = None) -> None:
        """One table's outcome of a pass (`delta_path`: where its progress is recorded);
        `status` None (a skipped table, `run_results.fabric_status`) keeps its status gauges."""
        if status is not None:
            for known in STATUSES:
                self.status.labels(table, known).set(1 if known == status else 0)
            if status == "Failed":
                self._failing[table] = self._failing.get(table, 0) + 1
            else:
                self._failing.pop(table, None)
                self.last_sync.labels(table).set(time.time())
            self.failures.labels(table).set(self._failing.get(table, 0))
        for change, count in (("inserted", inserted), ("updated", updated),
                              ("deleted", deleted)):
            self.rows.labels(table, change).inc(max(0, int(count or 0)))
        self.files.labels(table).inc(max(0, int(files_applied or 0)))
        waiting = pending_files(landing_path, delta_path, table) if landing_path else None
        if waiting is not None:
            self.pending.labels(table).set(waiting)

    def observe_kafka(self, rows: list[list[Any]]) -> None:
        """`progress.publish.kafka_offset_rows`: [table, topic, partition, consumed, end, lag,
        fetched at] per partition; a partition without a known end offset is left out."""
        for table, topic, partition, _consumed, _end, lag, _at in rows:
            if lag is not None:
                self.kafka_lag.labels(table, topic, str(partition)).set(lag)

    def end_pass(self, seconds: float) -> None:
        self.pass_seconds.set(seconds)
        self.passes.inc()

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _serve(registry: Any, host: str, port: int, timeout: float) -> Any:
    """prometheus_client's WSGI app on a thread-per-scrape server whose sockets time out."""
    import io
    import threading
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

    from prometheus_client import make_wsgi_app

    class Scrape(WSGIRequestHandler):
        def setup(self) -> None:
            self.timeout = timeout  # StreamRequestHandler: every read and write on the socket
            super().setup()

        def get_stderr(self) -> Any:
            return io.StringIO()  # a scraper that went away is not an error of the service

        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Server(ThreadingMixIn, WSGIServer):
        daemon_threads = True  # a stalled scrape never keeps the process, or close(), waiting
        block_on_close = False

        def handle_error(self, request: Any, client_address: Any) -> None:
            pass  # a timed-out or vanished scraper: its connection is closed, nothing else

    server = make_server(host, port, make_wsgi_app(registry), Server, handler_class=Scrape)
    threading.Thread(target=server.serve_forever, name="mirrorspec-metrics", daemon=True).start()
    return server
