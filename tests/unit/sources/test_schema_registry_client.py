"""The schema-registry client as a hostile or careless registry meets it: credentials in the URL
(with and without a port) go as Basic auth and never into a message; a redirect is refused, so
credentials never reach the host it names; a registry that drips its answer is cut off by a
deadline over the whole request. Stubs on 127.0.0.1; ordered by events, never by timings."""

from __future__ import annotations

import base64
import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.avro_feed import VALUE_ID, VALUE_SCHEMA
from mirrorspec.base.errors import SourceError
from mirrorspec.sources.avro_schemas import AvroConfig, SchemaLookup, _registry

PASSWORD = "pw-Z9q!x"  # unusual characters: percent-encoded in a URL


class Stub:
    """An HTTP server on 127.0.0.1 answering every GET with `answer(path)` -> (status, headers,
    body); it records each request's path and Authorization header."""

    def __init__(self, answer):
        self.seen: list[tuple[str, str | None]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                owner.seen.append((self.path, self.headers.get("Authorization")))
                status, headers, body = answer(self.path)
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(body))}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def schema_answer(path: str):
    return 200, {}, json.dumps({"schema": json.dumps(VALUE_SCHEMA)}).encode()


def basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def lookup(url: str, **extra) -> SchemaLookup:
    return SchemaLookup(AvroConfig(encoding="confluent", registry_url=url, **extra))


def test_user_info_in_a_url_with_a_port_is_sent_as_basic_auth():
    registry = Stub(schema_answer)
    try:
        found = lookup(f"http://svc-user:pw-Z9q%21x@127.0.0.1:{registry.port}/").get(
            VALUE_ID, "f", 1)
    finally:
        registry.close()
    assert found.avro["name"] == VALUE_SCHEMA["name"]
    assert registry.seen == [(f"/schemas/ids/{VALUE_ID}", basic("svc-user", PASSWORD))]


def test_user_info_in_a_url_without_a_port_never_reaches_a_message():
    # the password's ':' and '@' once made "nonnumeric port: 'pw…@127.0.0.1'" the error
    url = "http://svc-user:pw-Z9q%21x@127.0.0.1/registry"
    registry = _registry(AvroConfig(registry_url=url))
    assert registry.base == "http://127.0.0.1/registry"
    assert registry.authorization == basic("svc-user", PASSWORD)
    assert PASSWORD not in repr(registry) and "pw-Z9q" not in repr(AvroConfig(registry_url=url))
    with pytest.raises(SourceError) as err:  # nothing listens on port 80 here
        lookup(url, timeout=5).get(VALUE_ID, "feed.txt", 3)
    text = err.value.render()
    assert "http://127.0.0.1/registry" in text and err.value.line == 3
    assert "pw-Z9q" not in text and "svc-user" not in text


def test_credentials_given_twice_and_a_port_that_is_no_number_are_refused_without_them():
    with pytest.raises(SourceError, match="given twice") as err:
        lookup("http://u:pw-Z9q@127.0.0.1:1/", username="u", password="other").get(
            VALUE_ID, "f", 1)
    assert "pw-Z9q" not in err.value.render()
    with pytest.raises(SourceError, match="port that is not a number") as err:
        lookup("http://u:pw-Z9q@127.0.0.1:8o81/").get(VALUE_ID, "f", 1)
    assert "pw-Z9q" not in err.value.render()


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirect_is_refused_and_credentials_never_reach_its_host(status):
    elsewhere = Stub(schema_answer)
    registry = Stub(lambda path: (status, {"Location": f"http://127.0.0.1:{elsewhere.port}"
                                                      f"{path}?sig=leak"}, b""))
    try:
        with pytest.raises(SourceError) as err:
            lookup(f"http://127.0.0.1:{registry.port}", username="u",
                   password=PASSWORD).get(VALUE_ID, "f", 1)
    finally:
        registry.close()
        elsewhere.close()
    assert registry.seen == [(f"/schemas/ids/{VALUE_ID}", basic("u", PASSWORD))]
    assert elsewhere.seen == []  # urllib followed it, Authorization header and all
    text = err.value.render()
    assert f"HTTP {status}" in text and f"127.0.0.1:{elsewhere.port}" in text
    assert "sig=leak" not in text and PASSWORD not in text


class DripRegistry:
    """Reads a request, then answers one byte per tick (the status line, or the body after
    quick headers) for far longer than the client's timeout; `finished` is set if it ever
    sends the whole answer."""

    def __init__(self, drip: str, tick: float = 0.05):
        body = json.dumps({"schema": json.dumps(VALUE_SCHEMA)}).encode()
        head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
        self.quick, self.slow = (b"", head + body) if drip == "status line" else (head, body)
        self.tick = tick
        self.dripping, self.finished, self.stop = (threading.Event() for _ in range(3))
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            try:
                conn.sendall(self.quick)
                self.dripping.set()
                for byte in self.slow:
                    conn.sendall(bytes([byte]))
                    if self.stop.wait(self.tick):
                        return
            except OSError:
                return  # the client gave up: what its deadline is for
            self.finished.set()

    def close(self):
        self.stop.set()
        self.listener.close()


@pytest.mark.parametrize("drip", ["status line", "body"])
def test_a_dripping_registry_is_cut_off_by_the_timeout_over_the_whole_request(drip):
    registry = DripRegistry(drip)  # ~20 s of bytes, each well under the 1 s timeout
    try:
        with pytest.raises(SourceError, match="did not answer within 1s") as err:
            lookup(f"http://127.0.0.1:{registry.port}", timeout=1.0).get(VALUE_ID, "f", 2)
        assert registry.dripping.is_set() and not registry.finished.is_set()
    finally:
        registry.close()
    assert err.value.line == 2
