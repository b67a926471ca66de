"""Hostile and broken clients against `mirrorspec serve` (plain HTTP, raw requests): path
traversal in every form, writes outside the landing zone, oversized bodies, a client that
disconnects mid-append, 100 concurrent uploads, --require-auth, and a clean SIGTERM stop."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from mirrorspec.serve.persist import state_path
from tests.support.onelake_server import OneLakeServe

LZ = "/onelake/ws/db.MountedRelationalDatabase/Files/LandingZone"
AUTH = {"Authorization": "Bearer anything"}


class Client:
    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def request(self, method: str, path: str, body: bytes = b"", headers: dict | None = None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers={**AUTH, **(headers or {})})
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def upload(self, path: str, data: bytes) -> int:
        for method, query, body in (("PUT", "?resource=file", b""),
                                    ("PATCH", "?action=append&position=0", data),
                                    ("PATCH", f"?action=flush&position={len(data)}", b"")):
            status, _h, _b = self.request(method, path + query, body)
            if status >= 300:
                return status
        return 200


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hostile")
    (tmp / "outside").mkdir()
    s = OneLakeServe(tmp, "--workspace", "ws", "--item", "db", "--max-body", str(1 << 20),
                     "--unflushed", "hidden")
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def client(server):
    return Client(server.ready["url"])


def outside_files(server) -> list[str]:
    """Files beside the landing zone and the warehouse, but for serve's own state folder
    (properties and leases, persist.py)."""
    root = server.landing.parent
    kept = (server.landing, server.warehouse, state_path(server.landing).parent)
    found = []
    for folder, _dirs, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            if not any(k in path.parents for k in kept):
                found.append(str(path.relative_to(root)))
    return sorted(found)


@pytest.mark.parametrize("segment", ["..", "%2E%2E", "a%2F..%2F..%2Foutside", "a%00b", "a%5C..",
                                     "%C0%AE%C0%AE"])
def test_traversal_in_the_path_is_invalid_resource_name(server, client, segment):
    for method, query in (("PUT", "?resource=file"), ("GET", ""), ("DELETE", "?recursive=true"),
                          ("PUT", "?resource=directory")):
        status, headers, body = client.request(method, f"{LZ}/t/{segment}/x.csv{query}")
        assert status == 400, (method, segment)
        assert headers["x-ms-error-code"] == "InvalidResourceName"
        assert json.loads(body)["error"]["code"] == "InvalidResourceName"
    assert outside_files(server) == ["ready.json", "serve.log"]


@pytest.mark.parametrize("source", [
    "/ws/db.MountedRelationalDatabase/Files/LandingZone/../../../outside/x",
    "http://127.0.0.1/onelake/ws/db.MountedRelationalDatabase/Files/LandingZone/a%2F..%2Fb",
    "/ws/db.MountedRelationalDatabase/Files/LandingZone/a%00",
])
def test_traversal_in_the_rename_source_is_refused(client, source):
    status, headers, _b = client.request("PUT", f"{LZ}/t/dest.csv",
                                         headers={"x-ms-rename-source": source})
    assert (status, headers["x-ms-error-code"]) == (400, "InvalidResourceName")


def test_writes_outside_the_landing_zone_are_forbidden(server, client):
    for path in ("/onelake/ws/db.MountedRelationalDatabase/Files/Other/x.csv",
                 "/onelake/ws/db.MountedRelationalDatabase/Tables/dbo/t/x.parquet",
                 "/onelake/ws/db.MountedRelationalDatabase/Files/Monitoring/tables.json",
                 "/onelake/ws/db.MountedRelationalDatabase/x.csv"):
        status, headers, _b = client.request("PUT", path + "?resource=file")
        assert status == 403, path
    status, headers, _b = client.request("DELETE", f"{LZ}?recursive=true")
    assert status == 403  # the landing zone itself is Fabric's folder
    status, headers, _b = client.request("DELETE", "/onelake/ws?resource=filesystem")
    assert status == 403
    status, _h, _b = client.request("PATCH", f"{LZ}?action=setAccessControl",
                                    headers={"x-ms-acl": "user::rwx"})
    assert status == 400
    assert outside_files(server) == ["ready.json", "serve.log"]


def test_oversized_bodies_are_refused_and_chunked_ones_decoded(server, client):
    assert client.request("PUT", f"{LZ}/big/f.csv?resource=file")[0] == 201
    conn = http.client.HTTPConnection(client.host, client.port, timeout=30)
    conn.putrequest("PATCH", f"{LZ}/big/f.csv?action=append&position=0")
    conn.putheader("Content-Length", str((1 << 20) + 1))
    conn.endheaders()  # the answer comes before the body is sent (and the connection closes)
    response = conn.getresponse()
    assert (response.status, response.getheader("x-ms-error-code")) == (413, "RequestBodyTooLarge")
    conn.close()
    # a chunked body (a client streaming an unknown length) is decoded, up to the same limit
    for body, expected in ((b"3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n", 202),
                           (b"100001\r\n", 413)):  # a chunk over the limit: refused at its size line
        conn = http.client.HTTPConnection(client.host, client.port, timeout=30)
        conn.putrequest("PATCH", f"{LZ}/big/f.csv?action=append&position=0")
        conn.putheader("Transfer-Encoding", "chunked")
        conn.putheader("Authorization", "Bearer x")
        conn.endheaders()
        conn.send(body)
        response = conn.getresponse()
        assert response.status == expected
        conn.close()
    assert client.request("PATCH", f"{LZ}/big/f.csv?action=flush&position=5")[0] == 200
    assert (server.landing / "big" / "f.csv").read_bytes() == b"abcde"


def test_a_client_gone_mid_append_loses_nothing_and_leaves_nothing(server, client):
    path = f"{LZ}/cut/00000000000000000001.csv"
    assert client.request("PUT", path + "?resource=file")[0] == 201
    with socket.create_connection((client.host, client.port)) as sock:
        sock.sendall((f"PATCH {path}?action=append&position=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                      "Content-Length: 100000\r\n\r\n").encode() + b"partial")
    # the next append at 0 succeeds: the broken request recorded nothing
    assert client.request("PATCH", path + "?action=append&position=0", b"a,b\n1,2\n")[0] == 202
    status, _h, _b = client.request("PATCH", path + "?action=flush&position=8")
    assert status == 200
    assert (server.landing / "cut" / "00000000000000000001.csv").read_bytes() == b"a,b\n1,2\n"


def test_a_hundred_concurrent_uploads(server, client):
    def one(i: int) -> int:
        temp = f"{LZ}/many/_{i:05d}.tmp"
        status = client.upload(temp, f"row {i}\n".encode() * 100)
        if status != 200:
            return status
        return client.request("PUT", f"{LZ}/many/{i:020d}.csv", headers={
            "x-ms-rename-source": f"/ws/db.MountedRelationalDatabase/Files/LandingZone/many/_{i:05d}.tmp"})[0]

    with ThreadPoolExecutor(100) as pool:
        statuses = list(pool.map(one, range(1, 101)))
    assert statuses == [201] * 100
    files = sorted((server.landing / "many").iterdir())
    assert [f.name for f in files] == [f"{i:020d}.csv" for i in range(1, 101)]
    assert all(f.read_bytes() == f"row {int(f.stem)}\n".encode() * 100 for f in files)


def test_hidden_unflushed_files_appear_at_their_flush(server, client):
    path = f"{LZ}/hidden/00000000000000000001.csv"
    assert client.request("PUT", path + "?resource=file")[0] == 201
    assert client.request("HEAD", path)[0] == 404
    assert not (server.landing / "hidden" / "00000000000000000001.csv").exists()
    assert client.request("PATCH", path + "?action=append&position=0&flush=true", b"x\n")[0] == 200
    assert client.request("GET", path)[2] == b"x\n"


def test_range_reads_and_their_errors(client):
    path = f"{LZ}/range/f.csv"
    assert client.upload(path, b"0123456789") == 200
    status, headers, body = client.request("GET", path, headers={"x-ms-range": "bytes=2-4"})
    assert (status, body, headers["Content-Range"]) == (206, b"234", "bytes 2-4/10")
    status, headers, _b = client.request("GET", path, headers={"Range": "bytes=10-"})
    assert (status, headers["x-ms-error-code"]) == (416, "InvalidRange")
    status, _h, _b = client.request("GET", path, headers={"If-Match": '"0x8DNOPE"'})
    assert status == 412


def test_require_auth_and_a_clean_stop(tmp_path):
    s = OneLakeServe(tmp_path, "--require-auth")
    try:
        c = Client(s.ready["url"])
        conn = http.client.HTTPConnection(c.host, c.port, timeout=30)
        conn.request("GET", "/onelake/local?resource=filesystem&recursive=false")
        response = conn.getresponse()
        assert response.status == 401
        assert response.getheader("x-ms-error-code") == "NoAuthenticationInformation"
        assert response.getheader("WWW-Authenticate", "").startswith("Bearer")
        conn.close()
        status, _h, body = c.request("GET", "/msi/token?resource=https://storage.azure.com",
                                     headers={"Authorization": ""})
        assert status == 200 and json.loads(body)["token_type"] == "Bearer"
        token = json.loads(body)["access_token"].encode()  # --require-auth checks it
        staging = [p for p in tmp_path.iterdir() if ".serve-staging-" in p.name]
        assert staging  # uncommitted bytes wait beside, never inside, the landing zone
        # a request in flight when SIGTERM arrives still gets its answer, then serve exits 0
        with socket.create_connection((c.host, c.port), timeout=30) as sock:
            sock.sendall(b"PUT /onelake/local/local.MountedRelationalDatabase/Files/LandingZone/"
                         b"x/f.csv HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + token +
                         b"\r\n"
                         b"x-ms-blob-type: BlockBlob\r\nExpect: 100-continue\r\n"
                         b"Content-Length: 4\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 100")
            s.process.send_signal(signal.SIGTERM)
            sock.sendall(b"abcd")
            assert sock.recv(100).startswith(b"HTTP/1.1 201")
        assert s.process.wait(30) == 0
        assert (s.landing / "x" / "f.csv").read_bytes() == b"abcd"
    finally:
        assert s.stop() == 0
    assert not s.ready_file.exists()
    assert not [p for p in tmp_path.iterdir() if ".serve-staging-" in p.name]


def test_project_profile_names_the_folders_and_sas_stays_out_of_the_log(tmp_path):
    import shutil

    project = tmp_path / "project"
    shutil.copytree(Path(__file__).resolve().parents[2] / "projects" / "parquet_orders", project,
                    ignore=shutil.ignore_patterns("landing_zone", "warehouse", "target"))
    s = OneLakeServe(tmp_path, "--log-requests", project=project)
    try:
        assert s.ready["workspace"] == "parquet_orders"
        assert s.ready["landing_zone_url"].endswith(
            "/onelake/parquet_orders/parquet_orders.MountedRelationalDatabase/Files/LandingZone")
        c = Client(s.ready["url"])
        status, _h, _b = c.request("PUT", "/onelake/parquet_orders/parquet_orders.Mounted"
                                   "RelationalDatabase/Files/LandingZone/x.csv?sv=1&sig=TOPSECRET",
                                   b"a\n", headers={"x-ms-blob-type": "BlockBlob"})
        assert status == 201
        assert (project / "landing_zone" / "x.csv").read_bytes() == b"a\n"
    finally:
        assert s.stop() == 0
    assert "TOPSECRET" not in s.log() and "sig=REDACTED" in s.log()


def test_bad_options_are_clear_errors_without_a_jvm(tmp_path):
    from tests.support.no_jvm import run_without_jvm

    folders = ["--landing-zone", str(tmp_path / "lz"), "--warehouse", str(tmp_path / "wh")]
    result = run_without_jvm("serve", *folders, "--host", "0.0.0.0", cwd=tmp_path)
    assert result.returncode == 2 and "loopback" in result.stdout + result.stderr
    (tmp_path / "cert.pem").write_text("not a certificate")
    result = run_without_jvm("serve", *folders, "--cert", str(tmp_path / "cert.pem"), cwd=tmp_path)
    assert result.returncode == 1 and "--key" in result.stdout + result.stderr
    result = run_without_jvm("serve", *folders, "--cert", str(tmp_path / "cert.pem"), "--key",
                             str(tmp_path / "cert.pem"), cwd=tmp_path)
    assert result.returncode == 1 and "can't load the certificate" in result.stdout + result.stderr
    result = run_without_jvm("serve", "--landing-zone", str(tmp_path / "lz"), cwd=tmp_path)
    assert result.returncode == 1 and "both --landing-zone and --warehouse" in result.stdout + result.stderr


def test_files_moved_by_the_engine_while_clients_list_and_rename(server, client):
    """Two writers on one folder (spec R9): while a thread moves landed files into
    _ProcessedFiles as the engine does, clients keep landing (temp + rename) and listing. Every
    answer is a well-formed one, no file is lost or half written."""
    table = server.landing / "busy"
    processed = table / "_ProcessedFiles"
    processed.mkdir(parents=True)
    done = threading.Event()
    moved: list[str] = []

    def engine() -> None:
        while not done.is_set() or any(table.glob("0*.csv")):
            for path in sorted(table.glob("0*.csv")):
                os.replace(path, processed / path.name)
                moved.append(path.name)
            done.wait(0.001)  # yield the CPU between passes (no assertion depends on it)

    mover = threading.Thread(target=engine)
    mover.start()
    statuses: list[int] = []
    try:
        for i in range(1, 41):
            temp = f"{LZ}/busy/_{i:020d}.tmp"
            assert client.upload(temp, f"{i}\n".encode()) == 200
            statuses.append(client.request("PUT", f"{LZ}/busy/{i:020d}.csv", headers={
                "x-ms-rename-source": f"/ws/db.MountedRelationalDatabase/Files/LandingZone/busy/_{i:020d}.tmp"})[0])
            status, _h, body = client.request(
                "GET", "/onelake/ws?resource=filesystem&recursive=true&directory="
                "db.MountedRelationalDatabase/Files/LandingZone/busy")
            assert status == 200 and "paths" in json.loads(body)
    finally:
        done.set()
        mover.join(30)
    assert statuses == [201] * 40
    assert sorted(p.name for p in processed.iterdir()) == [f"{i:020d}.csv" for i in range(1, 41)]
    assert all((processed / f"{i:020d}.csv").read_bytes() == f"{i}\n".encode() for i in range(1, 41))
    assert "Traceback" not in server.log()


def test_a_killed_serve_leaves_whole_files_and_its_staging_is_swept(tmp_path):
    s = OneLakeServe(tmp_path)
    c = Client(s.ready["url"])
    lz = "/onelake/local/local.MountedRelationalDatabase/Files/LandingZone"
    assert c.upload(f"{lz}/t/00000000000000000001.csv", b"a\n1\n") == 200
    assert c.request("PUT", f"{lz}/t/00000000000000000002.csv?resource=file")[0] == 201
    assert c.request("PATCH", f"{lz}/t/00000000000000000002.csv?action=append&position=0",
                     b"unflushed")[0] == 202
    s.process.kill()
    s.process.wait()
    s.stop()
    assert (s.landing / "t" / "00000000000000000001.csv").read_bytes() == b"a\n1\n"
    assert (s.landing / "t" / "00000000000000000002.csv").read_bytes() == b""  # never half
    assert [p for p in tmp_path.iterdir() if ".serve-staging-" in p.name]
    again = OneLakeServe(tmp_path)  # the next serve sweeps the dead one's staging folder
    try:
        staging = [p.name for p in tmp_path.iterdir() if ".serve-staging-" in p.name]
        assert staging == [f".landing_zone.serve-staging-{again.ready['pid']}"]
    finally:
        assert again.stop() == 0


def test_tls_with_a_given_certificate(tmp_path):
    import ssl

    import trustme

    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "server.pem"))
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    s = OneLakeServe(tmp_path, "--cert", str(tmp_path / "server.pem"), "--key",
                     str(tmp_path / "server.pem"), "--ca-file", str(tmp_path / "ca.pem"))
    try:
        assert s.ready["url"].startswith("https://") and s.ready["ca_file"] == str(tmp_path / "ca.pem")
        parts = urlsplit(s.ready["url"])
        context = ssl.create_default_context(cafile=s.ready["ca_file"])
        conn = http.client.HTTPSConnection(parts.hostname, parts.port, context=context, timeout=30)
        conn.request("GET", "/onelake/local?resource=filesystem&recursive=false", headers=AUTH)
        assert conn.getresponse().status == 200
        conn.close()
        with pytest.raises(ssl.SSLError):  # a client that does not trust the CA is refused
            plain = http.client.HTTPSConnection(parts.hostname, parts.port, timeout=30,
                                                context=ssl.create_default_context())
            plain.request("GET", "/onelake/local")
            plain.getresponse()
    finally:
        assert s.stop() == 0
