"""`mirrorspec serve` against raw, hostile bytes: the Host check (DNS rebinding, absolute-form
targets), hostname routing, body framing (smuggling, chunk sizes, Expect), credentials in what
it writes, and folders that overlap. Each refusal is 4xx with the service's error shape, the
connection closes when the body's end is unknown, and the server keeps serving."""

from __future__ import annotations

import json
import re
import socket
import ssl
from urllib.parse import urlsplit

import pytest

from tests.support.no_jvm import run_without_jvm
from tests.support.onelake_server import OneLakeServe

WS = "/ws/db.MountedRelationalDatabase/Files/LandingZone"
LZ = "/onelake" + WS
ALIAS = "westus-onelake.blob.fabric.test"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("framing")
    s = OneLakeServe(tmp, "--workspace", "ws", "--item", "db", "--max-body", "1000",
                     "--allow-host", "proxy.example", "--allow-host", ALIAS,
                     "--report", str(tmp / "reports" / "conformance.json"), "--log-requests")
    yield s
    assert s.stop() == 0


def port(server) -> int:
    return urlsplit(server.ready["url"]).port


def exchange(server, data: bytes) -> bytes:
    """Send `data`, half-close, and read every byte the server answers until it closes."""
    with socket.create_connection(("127.0.0.1", port(server)), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
    return out


def statuses(answer: bytes) -> list[int]:
    return [int(s) for s in re.findall(rb"^HTTP/1\.[01] (\d{3}) ", answer, re.M)]


def request(method: str, target: str, *headers: str, body: bytes = b"",
            host: str | None = "127.0.0.1") -> bytes:
    lines = [f"{method} {target} HTTP/1.1"] + ([f"Host: {host}"] if host is not None else [])
    return ("\r\n".join([*lines, *headers]) + "\r\n\r\n").encode() + body


def still_serving(server) -> None:
    answer = exchange(server, request("GET", "/onelake/ws?resource=filesystem&recursive=false"))
    assert statuses(answer) == [200]


def landed(server) -> list[str]:
    return sorted(str(p.relative_to(server.landing)) for p in server.landing.rglob("*"))


# --- Host --------------------------------------------------------------------------------------
@pytest.mark.parametrize("method, target, extra", [
    ("PUT", f"{LZ}/rebind/x.csv?resource=file", ()),
    ("PUT", f"{LZ}/rebind?resource=directory", ()),
    ("DELETE", f"{LZ}/rebind?recursive=true", ()),
    ("GET", "/onelake/ws/db.MountedRelationalDatabase/Files/Monitoring/tables.json", ()),
    ("PUT", f"{LZ}/rebind/y.csv", ("x-ms-rename-source: /ws/db.MountedRelationalDatabase/"
                                   "Files/LandingZone/rebind/x.csv",)),
    ("GET", "/msi/token?resource=https://storage.azure.com", ()),
])
def test_a_foreign_host_is_refused_before_anything_happens(server, method, target, extra):
    for host in ("rebind.attacker.example", "rebind.attacker.example:8443",
                 "onelake.dfs.fabric.microsoft.com.attacker.example"):
        answer = exchange(server, request(method, target, "Authorization: Bearer x", *extra,
                                          "Content-Length: 0", host=host))
        assert statuses(answer) == [403], answer
        assert b"x-ms-error-code: AuthorizationFailure" in answer
        assert b'"code": "AuthorizationFailure"' in answer
    assert not [p for p in landed(server) if p.startswith("rebind")]
    still_serving(server)


def test_an_absolute_form_target_names_its_host_too(server):
    for target, expected in ((f"http://rebind.attacker.example{LZ}/abs/x.csv?resource=file", 403),
                             (f"http://127.0.0.1:{port(server)}{LZ}/abs/x.csv?resource=file", 201),
                             (f"ftp://127.0.0.1{LZ}/abs/y.csv?resource=file", 400)):
        answer = exchange(server, request("PUT", target, "Content-Length: 0"))
        assert statuses(answer) == [expected], (target, answer)
    assert [p for p in landed(server) if p.startswith("abs")] == ["abs", "abs/x.csv"]


@pytest.mark.parametrize("hosts", [[], ["127.0.0.1", "localhost"]])
def test_http_1_1_needs_exactly_one_host(server, hosts):
    host_lines = [f"Host: {h}" for h in hosts]
    answer = exchange(server, request("GET", "/onelake/ws?resource=filesystem", *host_lines,
                                      host=None))
    assert statuses(answer) == [400] and b"InvalidHeaderValue" in answer


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "[::1]", "proxy.example",
                                  "onelake.dfs.fabric.microsoft.com"])
def test_the_served_names_with_a_port(server, host):
    target = (WS if host.startswith("onelake.") else LZ) + "?action=getStatus"
    answer = exchange(server, request("HEAD", target, host=f"{host}:{port(server)}"))
    assert statuses(answer) == [200], (host, answer)


def test_hostname_routing_by_the_real_service_names(server):
    missing = f"{WS}/route/missing.csv"
    dfs = exchange(server, request("GET", missing, host="onelake.dfs.fabric.microsoft.com"))
    assert statuses(dfs) == [404] and b'"code": "PathNotFound"' in dfs
    for host in ("onelake.blob.fabric.microsoft.com:443", ALIAS):
        blob = exchange(server, request("GET", missing, host=host))
        assert statuses(blob) == [404] and b"<Code>BlobNotFound</Code>" in blob, host
    put = exchange(server, request("PUT", f"{WS}/route/a.csv", "x-ms-blob-type: BlockBlob",
                                   "Content-Length: 2", body=b"a\n",
                                   host="onelake.blob.fabric.microsoft.com"))
    assert statuses(put) == [201]
    assert (server.landing / "route" / "a.csv").read_bytes() == b"a\n"
    api = exchange(server, request("GET", "/v1/workspaces", host="api.fabric.microsoft.com"))
    assert statuses(api)[0] != 403 and b"AuthorizationFailure" not in api  # reached the dispatcher


def test_the_self_signed_certificate_carries_the_served_names(tmp_path):
    s = OneLakeServe(tmp_path, "--self-signed", "--allow-host", "proxy.example")
    try:
        context = ssl.create_default_context(cafile=s.ready["ca_file"])
        for name in ("onelake.dfs.fabric.microsoft.com", "onelake.blob.fabric.microsoft.com",
                     "api.fabric.microsoft.com", "proxy.example", "localhost"):
            with socket.create_connection(("127.0.0.1", urlsplit(s.ready["url"]).port), 30) as raw:
                with context.wrap_socket(raw, server_hostname=name) as tls:
                    tls.sendall(f"HEAD /onelake/local HTTP/1.1\r\nHost: {name}\r\n"
                                "Connection: close\r\n\r\n".encode())
                    assert tls.recv(100).startswith(b"HTTP/1.1 "), name
    finally:
        assert s.stop() == 0


# --- framing -----------------------------------------------------------------------------------
SMUGGLED = request("PUT", f"{LZ}/smuggled/x.csv?resource=file", "Content-Length: 0")


@pytest.mark.parametrize("headers", [
    ("Content-Length: abc",), ("Content-Length: -5",), ("Content-Length: +0",),
    ("Content-Length: 0x10",), ("Content-Length: 0", "Content-Length: 60"),
    ("Content-Length: 0, 60",), ("Content-Length: 0", "Transfer-Encoding: chunked"),
    ("Transfer-Encoding: gzip",), ("Transfer-Encoding: gzip, chunked",),
    ("Transfer-Encoding: chunked", "Transfer-Encoding: chunked"),
    ("Content-Length : 0",),  # whitespace before the colon
])
def test_ambiguous_framing_is_400_and_the_body_never_runs_as_a_request(server, headers):
    first = request("PUT", f"{LZ}/framing/a.csv?resource=file", *headers)
    answer = exchange(server, first + SMUGGLED)
    assert statuses(answer) == [400], answer
    assert b"x-ms-error-code: InvalidHeaderValue" in answer
    assert not (server.landing / "smuggled").exists()
    assert not (server.landing / "framing").exists()
    still_serving(server)


@pytest.mark.parametrize("body", [
    b"-5\r\n", b"0x10\r\n" + b"a" * 16 + b"\r\n0\r\n\r\n", b"1_0\r\n", b"+5\r\nabcde\r\n0\r\n\r\n",
    b"3\r\nabcXY0\r\n\r\n",  # chunk data not followed by CRLF
    b"3\r\nabc\r\n" + b"1" * 20 + b"\r\n",
])
def test_bad_chunks_are_400_and_append_nothing(server, body):
    path = f"{LZ}/chunks/00000000000000000001.csv"
    assert statuses(exchange(server, request("PUT", path + "?resource=file",
                                             "Content-Length: 0")))[0] == 201
    answer = exchange(server, request("PATCH", path + "?action=append&position=0",
                                      "Transfer-Encoding: chunked", body=body) + SMUGGLED)
    assert statuses(answer) == [400], answer
    assert b"x-ms-error-code: InvalidInput" in answer
    flushed = exchange(server, request("PATCH", path + "?action=flush&position=0",
                                       "Content-Length: 0"))
    assert statuses(flushed) == [200]  # nothing was appended
    assert not (server.landing / "smuggled").exists()


def test_negative_chunks_cant_slip_past_max_body(server):
    path = f"{LZ}/chunks/big.csv"
    exchange(server, request("PUT", path + "?resource=file", "Content-Length: 0"))
    body = b"3e8\r\n" + b"a" * 1000 + b"\r\n-3e8\r\n\r\n3e8\r\n" + b"a" * 1000 + b"\r\n0\r\n\r\n"
    answer = exchange(server, request("PATCH", path + "?action=append&position=0",
                                      "Transfer-Encoding: chunked", body=body))
    assert statuses(answer) == [400]
    body = b"3e8\r\n" + b"a" * 1000 + b"\r\n1\r\na\r\n0\r\n\r\n"
    answer = exchange(server, request("PATCH", path + "?action=append&position=0",
                                      "Transfer-Encoding: chunked", body=body))
    assert statuses(answer) == [413]


def test_an_oversized_body_gets_413_never_100_continue_first(server):
    path = f"{LZ}/expect/a.csv"
    exchange(server, request("PUT", path + "?resource=file", "Content-Length: 0"))
    with socket.create_connection(("127.0.0.1", port(server)), timeout=30) as sock:
        sock.sendall(request("PATCH", path + "?action=append&position=0",
                             "Expect: 100-continue", "Content-Length: 1001"))
        first = sock.recv(200)
    assert first.startswith(b"HTTP/1.1 413 "), first
    with socket.create_connection(("127.0.0.1", port(server)), timeout=30) as sock:
        sock.sendall(request("PATCH", path + "?action=append&position=0",
                             "Expect: 100-continue", "Content-Length: 3"))
        assert sock.recv(200).startswith(b"HTTP/1.1 100 ")
        sock.sendall(b"abc")
        assert sock.recv(200).startswith(b"HTTP/1.1 202 ")


# --- what serve writes -------------------------------------------------------------------------
def test_credentials_stay_out_of_the_log_the_report_and_error_bodies(server):
    for source in ("/ws/db.MountedRelationalDatabase/Files/LandingZone/sas/_gone.tmp?sv=1&sig=TOPSECRET1",
                   "/otherws/db.MountedRelationalDatabase/Files/LandingZone/x?sig=TOPSECRET4"):
        answer = exchange(server, request("PUT", f"{LZ}/sas/00000000000000000001.csv",
                                          f"x-ms-rename-source: {source}", "Content-Length: 0"))
        assert statuses(answer) == [404] and b"TOPSECRET" not in answer
    assert b"sig=REDACTED" in answer  # the message echoes the source, its signature redacted
    answer = exchange(server, request("PUT", f"{LZ}/sas/b.csv?sv=1&%73ig=TOPSECRET2",
                                      "x-ms-blob-type: BlockBlob", "Content-Length: 0"))
    assert statuses(answer) == [201]
    answer = exchange(server, request("GET", f"{LZ}/sas/nope%3Fsig%3DTOPSECRET3"))
    assert statuses(answer) == [404] and b"TOPSECRET" not in answer
    report = server.ready_file.parent / "reports" / "conformance.json"  # its folder was created
    doc = json.loads(report.read_text())
    assert [f["kind"] for f in doc["findings"]].count("rename-source-not-found") == 2
    assert "TOPSECRET" not in report.read_text()
    log = server.log()
    assert "TOPSECRET" not in log and log.count("REDACTED") >= 3


# --- folders -----------------------------------------------------------------------------------
@pytest.mark.parametrize("landing, warehouse", [
    ("lz", "lz/wh"), ("wh/lz", "wh"), ("same", "same"), ("lz", "./x/../lz/"), ("lz", "link/wh")])
def test_overlapping_folders_are_refused_at_start(tmp_path, landing, warehouse):
    (tmp_path / "lz").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "lz")
    result = run_without_jvm("serve", "--landing-zone", landing, "--warehouse", warehouse,
                             cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "overlap" in result.stdout + result.stderr
    assert not (tmp_path / "lz" / "wh").exists() and not (tmp_path / "wh").exists()


def test_a_report_folder_that_cant_be_made_is_a_one_line_error(tmp_path):
    (tmp_path / "file").write_text("x")
    result = run_without_jvm("serve", "--landing-zone", "lz", "--warehouse", "wh",
                             "--report", "file/sub/report.json", cwd=tmp_path, log_format="text")
    assert result.returncode == 1
    assert "--report file/sub/report.json: can't create its folder" in result.stderr
    assert "Traceback" not in result.stderr


def test_bytes_retained_by_a_flush_can_be_flushed_later(server):
    path = f"{LZ}/retain/a.csv"
    for method, query, body in (("PUT", "?resource=file", b""),
                                ("PATCH", "?action=append&position=0", b"0123456789"),
                                ("PATCH", "?action=flush&position=5&retainUncommittedData=true", b""),
                                ("PATCH", "?action=flush&position=10", b"")):
        answer = exchange(server, request(method, path + query, f"Content-Length: {len(body)}",
                                          body=body))
        assert statuses(answer)[0] < 300, (query, answer)
    assert (server.landing / "retain" / "a.csv").read_bytes() == b"0123456789"
