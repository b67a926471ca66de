"""Fuzzing serve's request reading: raw, mostly malformed requests (framing headers, chunk
lines, Host values, Expect, targets) against an in-process endpoint.

Invariants: never a 5xx, never a hang (every exchange ends within the socket timeout), the
server answers another client afterwards, nothing is written outside the landing zone (and
serve's staging folder). `make test` runs a fixed, small set of examples (seconds);
`make test-extras` runs the `extra` variant with MIRRORSPEC_FUZZ_EXAMPLES random ones (2000).
"""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mirrorspec.serve.framing import CHUNKED, FramingError, body_length, chunk_size
from mirrorspec.serve.names import Names
from mirrorspec.serve.persist import state_path
from mirrorspec.serve.server import Config, Endpoint

LZ = "/onelake/ws/db.MountedRelationalDatabase/Files/LandingZone"
QUICK = settings(max_examples=60, derandomize=True, deadline=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture,
                                        HealthCheck.too_slow])
LONG = settings(QUICK, max_examples=int(os.environ.get("MIRRORSPEC_FUZZ_EXAMPLES", "2000")),
                derandomize=False)

numbers = st.one_of(st.integers(-10, 3000).map(str), st.sampled_from(
    ["abc", "0x10", "+5", " 5", "5 ", "1_0", "", "5, 5", "5, 6", "99999999999999999999", "٣"]))
header_values = {
    "Content-Length": numbers,
    "Transfer-Encoding": st.sampled_from(["chunked", "Chunked", "gzip", "chunked, gzip",
                                          "gzip, chunked", "identity", "", "chunked\x0b"]),
    "Host": st.sampled_from(["127.0.0.1", "localhost:1", "[::1]", "evil.example", "", "a:b:c",
                             "onelake.dfs.fabric.microsoft.com", "onelake.blob.fabric.microsoft.com",
                             "api.fabric.microsoft.com", "127.0.0.1@evil.example", "[::1"]),
    "Expect": st.sampled_from(["100-continue", "nonsense"]),
    "x-ms-blob-type": st.just("BlockBlob"),
    "x-ms-rename-source": st.sampled_from([f"{LZ[8:]}/f/a.csv?sig=X", "http://[::1", "%zz"]),
    "X-HTTP-Method-Override": st.sampled_from(["PATCH", "DELETE", "BREW"]),
}
headers = st.lists(st.sampled_from(sorted(header_values)).flatmap(
    lambda name: st.tuples(st.just(name), header_values[name])), max_size=6)
targets = st.one_of(
    st.sampled_from([f"{LZ}/f/a.csv?resource=file", f"{LZ}/f/a.csv?action=append&position=0",
                     f"{LZ}/f/a.csv?action=flush&position=3", f"{LZ}/f/00000000000000000001.csv",
                     f"{LZ}/f?recursive=true", "/onelake/ws?resource=filesystem&recursive=true",
                     "/msi/token", "*", "http://evil.example/x", f"http://127.0.0.1{LZ}/f/b.csv"]),
    st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=30).map(
        lambda t: f"{LZ}/f/{t}"))
chunk_lines = st.lists(st.one_of(
    st.sampled_from([b"3\r\nabc\r\n", b"-5\r\n", b"0x10\r\n", b"0\r\n\r\n", b"1_0\r\n", b"z\r\n",
                     b"3\r\nabcXX", b"ffffffffffffffff\r\n", b"3;x=y\r\nabc\r\n"]),
    st.binary(max_size=20)), max_size=5).map(b"".join)
requests = st.tuples(st.sampled_from(["GET", "HEAD", "PUT", "PATCH", "DELETE", "POST", "BREW"]),
                     targets, st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.1x"]),
                     headers, st.one_of(chunk_lines, st.binary(max_size=64)))


def raw(method: str, target: str, version: str, fields: list[tuple[str, str]], body: bytes
        ) -> bytes:
    head = f"{method} {target} {version}\r\n" + "".join(f"{n}: {v}\r\n" for n, v in fields)
    return head.encode("utf-8", "surrogateescape") + b"\r\n" + body


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fuzz")
    (tmp / "landing").mkdir()
    (tmp / "warehouse").mkdir()
    config = Config(Names("ws", "w-id", "db", "i-id"), tmp / "landing", tmp / "warehouse",
                    max_body=2000)
    logged: list[tuple] = []
    e = Endpoint(config, lambda *a, **k: logged.append(a))
    e.start()
    yield e
    e.stop(grace=5)


def exchange(endpoint: Endpoint, data: bytes) -> bytes:
    host, port = endpoint.httpd.server_address[:2]
    with socket.create_connection((str(host), port), timeout=10) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := sock.recv(65536):  # a hang is a socket.timeout: the example fails
            out += chunk
    return out


def check(endpoint: Endpoint, request: tuple) -> None:
    answer = exchange(endpoint, raw(*request))
    statuses = [int(s) for s in re.findall(rb"^HTTP/1\.[01] (\d{3}) ", answer, re.M)]
    assert all(s < 500 or s == 501 for s in statuses), answer[:600]  # 501: an unknown method
    good = exchange(endpoint, b"GET /onelake/ws?resource=filesystem&recursive=false HTTP/1.1\r\n"
                              b"Host: 127.0.0.1\r\n\r\n")
    assert good.startswith(b"HTTP/1.1 200 "), good[:300]
    root = endpoint.config.landing.parent
    kept = {endpoint.config.landing, endpoint.config.warehouse, endpoint.staging,
            state_path(endpoint.config.landing).parent}  # properties and leases (persist.py)
    strays = [p for p in root.rglob("*") if not any(k == p or k in p.parents for k in kept)]
    assert not strays


@QUICK
@given(requests)
def test_malformed_requests_quick(endpoint, request):
    check(endpoint, request)


@pytest.mark.extra
@LONG
@given(requests)
def test_malformed_requests_long(endpoint, request):
    check(endpoint, request)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.text(max_size=12), max_size=3), st.lists(st.text(max_size=12), max_size=2),
       st.binary(max_size=24))
def test_framing_rules_answer_a_length_or_a_framing_error(lengths, encodings, line):
    try:
        length = body_length(lengths, encodings)
        assert length == CHUNKED or length >= 0
    except FramingError:
        pass
    try:
        assert chunk_size(line) >= 0
    except FramingError:
        pass


def test_the_examples_reach_the_server(endpoint):
    """The fuzz target is live: a well-formed upload through the same helpers lands."""
    for request in (("PUT", f"{LZ}/ok/a.csv?resource=file", "HTTP/1.1", [("Host", "127.0.0.1")], b""),
                    ("PATCH", f"{LZ}/ok/a.csv?action=append&position=0&flush=true", "HTTP/1.1",
                     [("Host", "127.0.0.1"), ("Content-Length", "3")], b"abc")):
        assert exchange(endpoint, raw(*request)).startswith(b"HTTP/1.1 20")
    assert Path(endpoint.config.landing, "ok", "a.csv").read_bytes() == b"abc"
