"""`docs serve` answers only requests for its own address (DNS rebinding) and never serves a
file through a symbolic link inside the site folder."""

from __future__ import annotations

import http.client
import threading

import pytest

from mirrorspec.docsite.serve import allowed_hosts, host_allowed, make_server


@pytest.fixture
def site(tmp_path):
    root = tmp_path / "site"
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text("<p>site</p>")
    (root / "sub" / "page.html").write_text("<p>page</p>")
    outside = tmp_path / "private"
    outside.mkdir()
    (outside / "secret.txt").write_text("do not publish")
    (root / "link.txt").symlink_to(outside / "secret.txt")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    server = make_server(root, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def get(port: int, path: str, host: str | None) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    connection.putrequest("GET", path, skip_host=True)
    if host is not None:
        connection.putheader("Host", host)
    connection.endheaders()
    response = connection.getresponse()
    body = response.read().decode(errors="replace")
    connection.close()
    return response.status, body


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8080",
                                  "localhost.attacker.example"])
def test_a_foreign_host_header_is_refused(site, host):
    status, body = get(site, "/index.html", host)
    assert status == 403 and "<p>site</p>" not in body


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST:{port}",
                                  "127.0.0.1:{port}", "[::1]:{port}"])
def test_the_own_address_is_served(site, host):
    status, body = get(site, "/index.html", host.format(port=site))
    assert status == 200 and "<p>site</p>" in body


@pytest.mark.parametrize("path", ["/link.txt", "/linked/secret.txt", "/linked/"])
def test_nothing_is_served_through_a_link(site, path):
    status, body = get(site, path, "127.0.0.1")
    assert status == 404 and "do not publish" not in body


def test_files_in_subfolders_are_served(site):
    assert get(site, "/sub/page.html", "localhost")[0] == 200


def test_a_server_on_every_interface_accepts_the_machine_names():
    import socket
    allowed = allowed_hosts("0.0.0.0")
    assert host_allowed(socket.gethostname(), allowed)
    assert host_allowed("10.1.2.3:8080", allowed)
    assert not host_allowed("rebind.attacker.example", allowed)
