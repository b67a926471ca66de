"""azcopy's `sync` and `remove --recursive` against `mirrorspec serve`, replayed request by request
with a plain HTTP client, so `make test` guards what `make test-clients` checks with the real
binary (tests/clients/azcopy_driver.py). The requests are azcopy 10.32.2's
(Azure/azure-storage-azcopy@d4f72ec9): `sync` lists each folder with
`comp=list&delimiter=/&include=metadata` and uploads a local file whose mtime is after the blob's
Last-Modified (`traverser/zc_enumerator.go` `IsMoreRecentThan`); `remove` deletes through the
DFS endpoint with one recursive DELETE, or through the Blob endpoint blob by blob, folder stubs
included (`ste/xfer-deleteBlob.go`)."""

from __future__ import annotations

import http.client
import os
import time
import xml.etree.ElementTree as ET
from email.utils import parsedate_to_datetime
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest

from tests.support.onelake_server import OneLakeServe

ITEM = "db.MountedRelationalDatabase"
PREFIX = f"{ITEM}/Files/LandingZone"


class Wire:
    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def __call__(self, method: str, path: str, body: bytes = b"",
                 headers: dict | None = None) -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, path, body, {"Authorization": "Bearer azcopy", **(headers or {})})
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, \
                response.read()
        finally:
            conn.close()


def blob(name: str) -> str:
    """A blob URL path as azcopy (azblob) escapes it: every `/` of the name as %2F."""
    return f"/onelake/ws/{quote(f'{PREFIX}/{name}', safe='')}"


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("azcopy")
    server = OneLakeServe(tmp, "--workspace", "ws", "--item", "db")
    yield server
    assert server.stop() == 0


@pytest.fixture(scope="module")
def wire(served):
    return Wire(served.ready["url"])


def listed(wire, folder: str) -> dict[str, float]:
    """azcopy's listing of one folder: blob name → Last-Modified (epoch seconds)."""
    query = (f"?restype=container&comp=list&delimiter=%2F&include=metadata"
             f"&prefix={quote(f'{PREFIX}/{folder}/', safe='')}")
    status, _h, body = wire("GET", f"/onelake/ws{query}")
    assert status == 200, body
    return {b.findtext("Name").rsplit("/", 1)[1]:
            parsedate_to_datetime(b.findtext("Properties/Last-Modified")).timestamp()
            for b in ET.fromstring(body).iter("Blob")}


def to_send(local: Path, wire, folder: str) -> list[str]:
    """What `azcopy sync` uploads: files absent from the listing, or whose mtime is after
    their blob's Last-Modified."""
    remote = listed(wire, folder)
    return sorted(p.name for p in local.iterdir()
                  if p.name not in remote or p.stat().st_mtime > remote[p.name])


def test_sync_sends_only_what_changed_after_its_upload(wire, tmp_path):
    local = tmp_path / "src"
    local.mkdir()
    before = time.time() - 10
    for name in ("a.csv", "b.csv", "c.csv", "d.csv"):
        (local / name).write_text(f"{name}\n")
        os.utime(local / name, (before, before))  # written well before the sync
    assert to_send(local, wire, "sync") == ["a.csv", "b.csv", "c.csv", "d.csv"]
    started = int(time.time())
    for path in sorted(local.iterdir()):
        assert wire("PUT", blob(f"sync/{path.name}"), path.read_bytes(),
                    {"x-ms-blob-type": "BlockBlob"})[0] == 201
    modified = listed(wire, "sync")
    assert all(lmt >= started for lmt in modified.values())  # the upload's second, or later
    assert to_send(local, wire, "sync") == []  # the next sync sends nothing
    edited = time.time() + 2  # two files edited after the upload
    for name in ("b.csv", "d.csv"):
        (local / name).write_text("changed\n")
        os.utime(local / name, (edited, edited))
    assert to_send(local, wire, "sync") == ["b.csv", "d.csv"]
    for name in ("b.csv", "d.csv"):  # HEAD reads the same Last-Modified as the listing
        headers = wire("HEAD", blob(f"sync/{name}"))[1]
        assert parsedate_to_datetime(headers["last-modified"]).timestamp() == modified[name]


def test_a_dfs_upload_is_last_modified_at_its_flush(wire, served):
    """azcopy --from-to LocalBlobFS: create, append, flush with close=true. The file's
    Last-Modified is the flush's time, not its last append's (ADLS: the commit)."""
    path = f"/onelake/ws/{PREFIX}/dfs/late.csv"
    assert wire("PUT", f"{path}?resource=file", headers={"If-None-Match": "*"})[0] == 201
    assert wire("PATCH", f"{path}?action=append&position=0", b"id\n1\n")[0] == 202
    flushed_after = time.time_ns()
    assert wire("PATCH", f"{path}?action=flush&close=true&position=5"
                         "&retainUncommittedData=false")[0] == 200
    assert (served.landing / "dfs" / "late.csv").stat().st_mtime_ns >= flushed_after


def put_tree(wire, root: str) -> None:
    for name in ("f1.csv", "f2.csv", "sub/g.csv"):
        assert wire("PUT", blob(f"{root}/{name}"), b"x", {"x-ms-blob-type": "BlockBlob"})[0] \
            == 201


def test_remove_recursive_through_the_dfs_endpoint_is_one_delete(wire, served):
    put_tree(wire, "dfsgone")
    status, _h, _b = wire("DELETE", f"/onelake/ws/{PREFIX}/dfsgone?recursive=true")
    assert status == 200 and not (served.landing / "dfsgone").exists()


def test_remove_through_the_blob_endpoint_answers_as_a_hierarchical_namespace(wire, served):
    """Blob-mode remove deletes the folder stubs with the files: a folder still holding
    entries answers 409 DirectoryIsNotEmpty (as ADLS Gen2, Azure/azure-storage-azcopy#2219);
    once its files are gone the same DELETE succeeds."""
    put_tree(wire, "blobgone")
    status, headers, _b = wire("HEAD", blob("blobgone/sub"))
    assert (status, headers["x-ms-meta-hdi_isfolder"]) == (200, "true")  # listed as a folder
    for folder in ("blobgone", "blobgone/sub"):
        status, headers, body = wire("DELETE", blob(folder))
        assert (status, headers["x-ms-error-code"]) == (409, "DirectoryIsNotEmpty")
        assert b"<Code>DirectoryIsNotEmpty</Code>" in body
    for name in ("f1.csv", "f2.csv", "sub/g.csv"):
        assert wire("DELETE", blob(f"blobgone/{name}"))[0] == 202
    for folder in ("blobgone/sub", "blobgone"):  # a second `azcopy remove`
        assert wire("DELETE", blob(folder))[0] == 202
    assert not (served.landing / "blobgone").exists()
