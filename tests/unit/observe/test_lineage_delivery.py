"""OpenLineage events never hold a pass: a collector that drips its answer (one byte at a time,
each well under any per-read timeout) is cut off by a deadline over the whole request, the pass
only queues (a bounded queue: drops counted, warned once), and exit waits a bounded time.
Against a dripping socket server on 127.0.0.1; ordered by events, never by timings."""

from __future__ import annotations

import io
import json
import socket
import threading

import pytest

from mirrorspec.base.console import Console
from mirrorspec.observe.lineage import LineageEmitter
from mirrorspec.observe.samples import TableSample

pytest.importorskip("openlineage.client")
STATUS_LINE = b"HTTP/1.1 201 Created\r\n"


class DripServer:
    """Reads each request whole, then answers one byte per tick: the whole response once
    `release` is set, or (forever=True) a status line that never ends."""

    def __init__(self, forever: bool = False, tick: float = 0.02):
        self.forever, self.tick = forever, tick
        self.dripping = threading.Event()  # a request was read and the answer began
        self.finished = threading.Event()  # an answer was sent whole
        self.release = threading.Event()
        self.stop = threading.Event()
        self.requests = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length")))
            while len(body) < length:
                body += conn.recv(4096)
            self.requests += 1
            answer = STATUS_LINE[:12] if self.forever else STATUS_LINE + b"Content-Length: 0\r\n\r\n"
            self.dripping.set()
            try:
                for i, byte in enumerate(answer):
                    if self.release.is_set() and not self.forever:
                        conn.sendall(answer[i:])
                        break
                    conn.sendall(bytes([byte]))
                    if self.stop.wait(self.tick):
                        return
                while self.forever and not self.stop.wait(self.tick):
                    conn.sendall(b" ")  # the status line never ends
            except OSError:
                return  # the client gave up: what the deadline is for
            self.finished.set()

    def close(self):
        self.stop.set()
        self.release.set()
        self.listener.close()


@pytest.fixture
def console():
    stream = io.StringIO()
    yield Console(log_format="json", stream=stream), stream


def warnings(stream) -> list[str]:
    return [e["message"] for e in map(json.loads, stream.getvalue().splitlines())
            if e["event"] == "warning"]


def sample(tmp_path, table="sales.orders") -> TableSample:
    return TableSample(table=table, status="Failed", error="boom", files_applied=1,
                       delta_path=str(tmp_path / "wh" / table))


def test_the_pass_returns_while_the_collector_still_drips(tmp_path, console):
    server = DripServer()
    emitter = LineageEmitter(server.url, "mirrorspec", console[0], timeout=60)
    passing = threading.Thread(target=emitter.emit_pass, args=([sample(tmp_path)],))
    try:
        passing.start()
        passing.join(10)  # a bound for the old code, which waited for the whole drip
        assert not passing.is_alive()
        assert server.dripping.wait(30)  # the collector got the first event and drips ...
        assert not server.finished.is_set()  # ... and the pass was over before it ended
        server.release.set()
        assert emitter.flush(30) and server.requests == 2  # START and FAIL, in order
        assert emitter.sender.delivered == 2 and not warnings(console[1])
    finally:
        server.close()
        emitter.close()


def test_a_collector_that_drips_forever_is_cut_by_the_deadline(tmp_path, console):
    server = DripServer(forever=True)
    emitter = LineageEmitter(server.url, "mirrorspec", console[0], timeout=0.3)
    try:
        assert emitter.emit_pass([sample(tmp_path)]) == 2
        assert emitter.flush(30)  # both events given up, each after its deadline
        assert server.requests == 2 and not server.finished.is_set()
        [warning] = warnings(console[1])
        assert "TimeoutError" in warning and "warned once" in warning
    finally:
        server.close()
        emitter.close()


def test_a_full_queue_drops_and_exit_waits_a_bounded_time(tmp_path, console):
    server = DripServer(forever=True)
    emitter = LineageEmitter(server.url, "mirrorspec", console[0], timeout=60, queue_size=2,
                             flush_seconds=0.2)
    try:
        queued = emitter.emit_pass([sample(tmp_path, f"sales.t{i}") for i in range(4)])
        assert queued <= 3 and emitter.sender.dropped == 8 - queued
        closing = threading.Thread(target=emitter.close)
        closing.start()
        closing.join(30)
        assert not closing.is_alive() and not server.finished.is_set()  # exit didn't wait
        dropped, unsent = warnings(console[1])
        assert "dropped while its queue is full" in dropped
        assert f"{8 - emitter.sender.delivered} event(s) not sent" in unsent
    finally:
        server.close()


def test_the_collector_url_is_shown_without_credentials_or_query_values(tmp_path, console):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://alice:pw1@127.0.0.1:{port}/api?code=SECRET2&api_key=SECRET3"
    emitter = LineageEmitter(url, "mirrorspec", console[0], timeout=5)
    emitter.emit_pass([sample(tmp_path)])
    emitter.close()
    shown = console[1].getvalue()
    assert f"127.0.0.1:{port}/api?code=***&api_key=***" in shown
    for secret in ("pw1", "SECRET2", "SECRET3", "alice"):
        assert secret not in shown


def test_an_https_collector_is_verified_with_the_bundle_requests_would_use(tmp_path, console,
                                                                           monkeypatch):
    import ssl

    trustme = pytest.importorskip("trustme")
    from tests.support.observe_helpers import Collector

    ca = trustme.CA()
    ca_file = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    collector = Collector()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1").configure_cert(context)
    collector.server.socket = context.wrap_socket(collector.server.socket, server_side=True)
    url = collector.url.replace("http://", "https://")
    try:
        monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
        emitter = LineageEmitter(url, "mirrorspec", console[0], timeout=10)
        emitter.emit_pass([sample(tmp_path)])
        assert emitter.flush(30) and emitter.sender.delivered == 0  # not trusted: refused
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", str(ca_file))
        emitter = LineageEmitter(url, "mirrorspec", console[0], timeout=10)
        emitter.emit_pass([sample(tmp_path, "sales.other")])
        assert emitter.flush(30) and emitter.sender.delivered == 2
        assert [e["eventType"] for e in collector.events] == ["START", "FAIL"]
    finally:
        collector.close()


def test_a_collector_url_that_is_not_http_is_refused_without_echoing_it():
    """A URL may carry a key (`ftp://user:KEY@host`, `?code=`): the usage error names the
    scheme it found, never the value."""
    from click.testing import CliRunner

    from mirrorspec.cli import cli

    secret = "s3cr3t-K3Y-in-the-url"
    result = CliRunner().invoke(cli, ["run", "--openlineage-url",
                                      f"ftp://mirror:{secret}@collector?code={secret}"])
    assert result.exit_code == 2
    assert "not an http(s) URL (it starts with 'ftp':)" in result.output
    assert secret not in result.output
