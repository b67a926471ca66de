"""What each Azure SDK puts on the wire, byte for byte, against `mirrorspec serve` (raw HTTP, no
SDK): the path forms of docs/onelake.md's "What each SDK sends" table, one test per row, and the
Blob operations the SDKs call besides reads and writes (metadata, properties, leases, Copy Blob,
Get Account Information, Create Container, Content-MD5), with the service's codes."""

from __future__ import annotations

import base64
import hashlib
import http.client
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import pytest

from tests.support.onelake_server import OneLakeServe

ITEM = "db.MountedRelationalDatabase"
LZ = f"/onelake/ws/{ITEM}/Files/LandingZone"
AUTH = {"Authorization": "Bearer anything"}
BLOB = {"x-ms-blob-type": "BlockBlob"}


class Client:
    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def request(self, method: str, path: str, body: bytes = b"", headers: dict | None = None):
        """`path` goes on the request line exactly as given (http.client does not re-encode)."""
        conn = http.client.HTTPConnection(self.host, self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers={**AUTH, **(headers or {})})
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, \
                response.read()
        finally:
            conn.close()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("wire")
    s = OneLakeServe(tmp, "--workspace", "ws", "--item", "db", "--page-size", "3")
    yield s
    assert s.stop() == 0


@pytest.fixture(scope="module")
def client(server):
    return Client(server.ready["url"])


def on_disk(server, rel: str) -> bytes:
    return (server.landing / rel).read_bytes()


def blob_names(client, query: str = "") -> list[str]:
    """Every name of a flat List Blobs, following NextMarker (the XML must parse)."""
    names, marker = [], ""
    while True:
        status, _h, body = client.request("GET", f"/onelake/ws?restype=container&comp=list"
                                          f"{query}{marker}")
        assert status == 200, body
        root = ET.fromstring(body)
        names += [n.text for n in root.iter("Name")]
        following = root.findtext("NextMarker")
        if not following:
            return names
        marker = f"&marker={following}"


# --- the path forms: one test per row of docs/onelake.md "What each SDK sends" -----------------

def test_go_azblob_escapes_every_slash_of_the_blob_name(server, client):
    # Azure/azure-sdk-for-go sdk/storage/azblob/container/client.go@e57e9445 NewBlobClient:
    # blobName = url.PathEscape(blobName); runtime.JoinPaths(c.URL(), blobName)
    path = f"/onelake/ws/{ITEM}%2FFiles%2FLandingZone%2Fgo%2F00000000000000000001.parquet"
    status, headers, _b = client.request("PUT", path, b"go-bytes", BLOB)
    assert status == 201, headers
    assert on_disk(server, "go/00000000000000000001.parquet") == b"go-bytes"
    status, _h, body = client.request("GET", path)
    assert (status, body) == (200, b"go-bytes")
    status, _h, _b = client.request("HEAD", path)
    assert status == 200


def test_java_encodes_the_name_on_both_dialects(server, client):
    # Azure/azure-sdk-for-java sdk/storage/azure-storage-blob BlobAsyncClientBase@be9171fe
    # getBlobUrl: Utility.urlEncode(blobName) ('/' -> %2F, ' ' -> %20); the DataLake clients
    # build their path URLs the same way
    dfs = f"/onelake/ws/{ITEM}%2FFiles%2FLandingZone%2Fjava%2Fa%20b.csv"
    assert client.request("PUT", dfs + "?resource=file")[0] == 201
    assert client.request("PATCH", dfs + "?action=append&position=0", b"java")[0] == 202
    assert client.request("PATCH", dfs + "?action=flush&position=4")[0] == 200
    assert on_disk(server, "java/a b.csv") == b"java"
    status, _h, body = client.request("GET", f"/onelake/ws/{ITEM}%2FFiles%2FLandingZone%2Fjava"
                                      "%2Fa%20b.csv", headers={"x-ms-range": "bytes=1-2"})
    assert (status, body) == (206, b"av")


def test_js_keeps_slashes_and_renames_without_the_account(server, client):
    # Azure/azure-sdk-for-js sdk/storage/storage-file-datalake/src/clients.ts@137f2dc0
    # DataLakePathClient.move: x-ms-rename-source = getURLPathAndQuery(dfsEndpointUrl) (the
    # account included on a path-style URL), the request URL path set to `/{fs}/{path}` (none)
    src = f"{LZ}/js/_tmp.parquet"
    assert client.request("PUT", src + "?resource=file")[0] == 201
    assert client.request("PATCH", src + "?action=append&position=0&flush=true", b"js")[0] == 200
    status, headers, _b = client.request(
        "PUT", f"/ws/{ITEM}/Files/LandingZone/js/00000000000000000001.parquet?mode=legacy",
        headers={"x-ms-rename-source": src})
    assert status == 201, headers
    assert on_disk(server, "js/00000000000000000001.parquet") == b"js"


def test_go_azdatalake_rename_source_carries_the_account(server, client):
    # Azure/azure-sdk-for-go sdk/storage/azdatalake: the rename source is the source URL's path,
    # `/onelake/{ws}/{path}` on a path-style URL, its name escaped as in the request URL
    src = f"{LZ}/godl/_tmp.csv"
    assert client.request("PUT", src, b"godl", BLOB)[0] == 201
    status, headers, _b = client.request(
        "PUT", f"{LZ}/godl/final.csv?mode=legacy",
        headers={"x-ms-rename-source": f"/onelake/ws/{ITEM}%2FFiles%2FLandingZone%2Fgodl%2F_tmp.csv"})
    assert status == 201, headers
    assert on_disk(server, "godl/final.csv") == b"godl"


def test_python_sends_literal_slashes_and_escaped_segments(server, client):
    # azure-storage-blob 12.31.1 (PyPI) _blob_client_helpers.py: quote(blob_name, safe='~/')
    path = f"{LZ}/py/%C3%A9t%C3%A9%20%2B%20x.csv"
    assert client.request("PUT", path, b"py", BLOB)[0] == 201
    assert on_disk(server, "py/été + x.csv") == b"py"
    # the Python DFS rename source has no account: `/{fs}/{path}`
    status, _h, _b = client.request("PUT", f"{LZ}/py/moved.csv",
                                    headers={"x-ms-rename-source": f"/ws/{ITEM}/Files/LandingZone/"
                                             "py/%C3%A9t%C3%A9%20%2B%20x.csv"})
    assert status == 201 and on_disk(server, "py/moved.csv") == b"py"


def test_dotnet_escapes_each_segment_of_the_rename_source(server, client):
    # Azure/azure-sdk-for-net sdk/storage/Azure.Storage.Files.DataLake/src/DataLakePathClient.cs
    # @1d0b1e34 RenameInternal: renameSource = "/" + FileSystemName + "/" +
    # DirectoryOrFilePath.EscapePath() (no account: DataLakeUriBuilder takes it off an IP-style
    # URL); the request URL keeps it: /onelake/{fs}/{escaped path}
    src = f"{LZ}/net/a%20b%23c.csv"
    assert client.request("PUT", src + "?resource=file")[0] == 201
    assert client.request("PATCH", src + "?action=append&position=0&flush=true", b"net")[0] == 200
    status, headers, _b = client.request(
        "PUT", f"{LZ}/net/00000000000000000001.csv?mode=legacy",
        headers={"x-ms-rename-source": f"/ws/{ITEM}/Files/LandingZone/net/a%20b%23c.csv"})
    assert status == 201, headers
    assert on_disk(server, "net/00000000000000000001.csv") == b"net"
    assert not (server.landing / "net" / "a b#c.csv").exists()


@pytest.mark.parametrize("path", [f"{LZ}/t%2F..%2F..%2F..%2Fescape.csv", f"{LZ}/t/%2E%2E%2Fx.csv",
                                  f"{LZ}/t%5C..%5Cx.csv", f"{LZ}/t/a%01b.parquet",
                                  f"{LZ}/t/a%1Fb.parquet", f"{LZ}/t/a%7Fb.parquet"])
def test_traversal_and_control_characters_stay_refused(server, client, path):
    status, headers, _b = client.request("PUT", path, b"x", BLOB)
    assert (status, headers["x-ms-error-code"]) == (400, "InvalidResourceName")
    assert blob_names(client)  # every listing still parses
    assert not (server.landing.parent / "escape.csv").exists()


def test_a_rename_source_on_another_host_is_refused(client):
    assert client.request("PUT", f"{LZ}/h/a.csv", b"a", BLOB)[0] == 201
    status, headers, _b = client.request("PUT", f"{LZ}/h/b.csv", headers={
        "x-ms-rename-source": f"https://elsewhere.example/onelake/ws/{ITEM}/Files/LandingZone/h/a.csv"})
    assert (status, headers["x-ms-error-code"]) == (400, "InvalidSourceUri")


# --- the Blob operations around the writes ------------------------------------------------------

def test_create_container_of_the_served_workspace_is_409(client):
    status, headers, _b = client.request("PUT", "/onelake/ws?restype=container")
    assert (status, headers["x-ms-error-code"]) == (409, "ContainerAlreadyExists")
    status, headers, _b = client.request("PUT", "/onelake/ws?resource=filesystem")
    assert (status, headers["x-ms-error-code"]) == (409, "FilesystemAlreadyExists")


def test_get_account_information(client):
    for path in ("/onelake/?restype=account&comp=properties",
                 f"{LZ}/go/00000000000000000001.parquet?restype=account&comp=properties"):
        status, headers, _b = client.request("GET", path)
        assert status == 200
        assert headers["x-ms-is-hns-enabled"] == "true" and headers["x-ms-account-kind"]


def test_content_md5_is_kept_and_checked(client):
    data = b"md5 me"
    digest = base64.b64encode(hashlib.md5(data).digest()).decode()
    assert client.request("PUT", f"{LZ}/md5/a.csv", data, BLOB)[0] == 201  # computed
    assert client.request("HEAD", f"{LZ}/md5/a.csv")[1]["content-md5"] == digest
    status, headers, _b = client.request("PUT", f"{LZ}/md5/b.csv", data,
                                         {**BLOB, "Content-MD5": base64.b64encode(b"0" * 16).decode()})
    assert (status, headers["x-ms-error-code"]) == (400, "Md5Mismatch")
    # Put Block List and a DFS flush keep the MD5 they are given
    block = base64.b64encode(b"block-1").decode()
    assert client.request("PUT", f"{LZ}/md5/c.csv?comp=block&blockid={block}", data)[0] == 201
    assert client.request("PUT", f"{LZ}/md5/c.csv?comp=blocklist",
                          f"<BlockList><Latest>{block}</Latest></BlockList>".encode(),
                          {"x-ms-blob-content-md5": digest})[0] == 201
    assert client.request("PUT", f"{LZ}/md5/d.csv?resource=file")[0] == 201
    assert client.request("PATCH", f"{LZ}/md5/d.csv?action=append&position=0", data)[0] == 202
    assert client.request("PATCH", f"{LZ}/md5/d.csv?action=flush&position={len(data)}",
                          headers={"x-ms-content-md5": digest})[0] == 200
    for name in ("c.csv", "d.csv"):
        assert client.request("HEAD", f"{LZ}/md5/{name}")[1]["content-md5"] == digest
    # a range: the blob's MD5 apart, the range's own only when asked for
    status, headers, body = client.request("GET", f"{LZ}/md5/a.csv", headers={"x-ms-range": "bytes=1-3"})
    assert (status, body, headers["x-ms-blob-content-md5"]) == (206, b"d5 ", digest)
    assert "content-md5" not in headers
    status, headers, _b = client.request("GET", f"{LZ}/md5/a.csv", headers={
        "x-ms-range": "bytes=1-3", "x-ms-range-get-content-md5": "true"})
    assert headers["content-md5"] == base64.b64encode(hashlib.md5(b"d5 ").digest()).decode()
    status, _h, body = client.request("GET", "/onelake/ws?restype=container&comp=list&prefix="
                                      f"{ITEM}/Files/LandingZone/md5/&maxresults=50")
    md5s = [e.text for e in ET.fromstring(body).iter("Content-MD5")]
    assert md5s == [digest, digest, digest]


def test_metadata_and_properties_persist(client):
    path = f"{LZ}/meta/a.csv"
    assert client.request("PUT", path, b"m", {**BLOB, "x-ms-meta-Origin": "put"})[0] == 201
    old = client.request("HEAD", path)[1]
    assert old["x-ms-meta-origin"] == "put"
    status, headers, _b = client.request("PUT", path + "?comp=metadata",
                                         headers={"x-ms-meta-Stage": "published", "x-ms-meta-n": "1"})
    assert status == 200 and headers["etag"] != old["etag"]  # the service changes the ETag
    status, _h, _b = client.request("PUT", path + "?comp=properties", headers={
        "x-ms-blob-content-type": "text/csv", "x-ms-blob-cache-control": "no-cache"})
    assert status == 200
    status, headers, body = client.request("GET", path)
    assert (status, body) == (200, b"m")
    assert headers["content-type"] == "text/csv" and headers["cache-control"] == "no-cache"
    assert headers["x-ms-meta-stage"] == "published" and "x-ms-meta-origin" not in headers
    status, _h, body = client.request("GET", "/onelake/ws?restype=container&comp=list&include="
                                      f"metadata&prefix={ITEM}/Files/LandingZone/meta/")
    blob = ET.fromstring(body).find("Blobs/Blob")
    assert {m.tag: m.text for m in blob.find("Metadata")} == {"Stage": "published", "n": "1"}
    assert blob.findtext("Properties/Content-Type") == "text/csv"
    status, headers, _b = client.request("PUT", path + "?comp=metadata",
                                         headers={"x-ms-meta-1bad": "x"})
    assert (status, headers["x-ms-error-code"]) == (400, "InvalidMetadata")
    # a DFS create's x-ms-properties are the file's metadata from its flush on
    dfs = f"{LZ}/meta/b.csv"
    value = base64.b64encode(b"dfs").decode()
    assert client.request("PUT", dfs + "?resource=file", headers={"x-ms-properties": f"k={value}"})[0] == 201
    assert client.request("PATCH", dfs + "?action=append&position=0&flush=true", b"b")[0] == 200
    assert client.request("HEAD", dfs)[1]["x-ms-meta-k"] == "dfs"


def test_leases_guard_writes(client):
    path = f"{LZ}/lease/a.csv"
    lease = "33333333-3333-3333-3333-333333333333"
    assert client.request("PUT", path, b"1", BLOB)[0] == 201
    status, headers, _b = client.request("PUT", path + "?comp=lease", headers={
        "x-ms-lease-action": "acquire", "x-ms-lease-duration": "-1", "x-ms-proposed-lease-id": lease})
    assert (status, headers["x-ms-lease-id"]) == (201, lease)
    assert client.request("HEAD", path)[1]["x-ms-lease-state"] == "leased"
    for method, query, body, extra in (("PUT", "", b"2", BLOB), ("DELETE", "", b"", {}),
                                       ("PUT", "?comp=metadata", b"", {"x-ms-meta-a": "b"})):
        status, headers, _b = client.request(method, path + query, body, extra)
        assert (status, headers["x-ms-error-code"]) == (412, "LeaseIdMissing"), method
    status, headers, _b = client.request("PUT", path, b"2", {**BLOB, "x-ms-lease-id": "44444444-"
                                                             "4444-4444-4444-444444444444"})
    assert (status, headers["x-ms-error-code"]) == (412, "LeaseIdMismatchWithBlobOperation")
    assert client.request("PUT", path, b"2", {**BLOB, "x-ms-lease-id": lease})[0] == 201
    status, headers, _b = client.request("PUT", path + "?comp=lease", headers={
        "x-ms-lease-action": "acquire", "x-ms-lease-duration": "-1"})
    assert (status, headers["x-ms-error-code"]) == (409, "LeaseAlreadyPresent")
    status, headers, _b = client.request("PUT", path + "?comp=lease", headers={
        "x-ms-lease-action": "break", "x-ms-lease-break-period": "0"})
    assert (status, headers["x-ms-lease-time"]) == (202, "0")
    assert client.request("DELETE", path)[0] == 202


def test_copy_blob_is_synchronous_within_the_endpoint(server, client):
    # rclone's moveto: Copy Blob then Delete Blob
    src = f"{LZ}/copy/src.csv"
    assert client.request("PUT", src, b"copied", {**BLOB, "x-ms-meta-from": "src"})[0] == 201
    source_url = f"{server.ready['url'].rstrip('/')}{src}"
    status, headers, _b = client.request("PUT", f"{LZ}/copy/dst.csv",
                                         headers={"x-ms-copy-source": source_url})
    assert (status, headers["x-ms-copy-status"]) == (202, "success") and headers["x-ms-copy-id"]
    assert on_disk(server, "copy/dst.csv") == b"copied"
    status, _h, _b = client.request("PUT", f"{LZ}/copy/signed.csv", headers={
        "x-ms-copy-source": source_url + "?sv=2021-06-08&sig=c2VjcmV0"})
    assert status == 202
    head = client.request("HEAD", f"{LZ}/copy/signed.csv")[1]
    assert head["x-ms-meta-from"] == "src" and head["x-ms-copy-status"] == "success"
    assert head["x-ms-copy-source"] == source_url  # the signature is not kept
    status, headers, _b = client.request("PUT", f"{LZ}/copy/none.csv", headers={
        "x-ms-copy-source": source_url.replace("src.csv", "missing.csv")})
    assert (status, headers["x-ms-error-code"]) == (404, "CannotVerifyCopySource")


def test_block_lists_and_positions_are_bounded(client):
    block = base64.b64encode(b"b").decode()
    assert client.request("PUT", f"{LZ}/caps/a.csv?comp=block&blockid={block}", b"x" * 4096)[0] == 201
    body = b"<BlockList>" + f"<Latest>{block}</Latest>".encode() * 50_001 + b"</BlockList>"
    status, headers, _b = client.request("PUT", f"{LZ}/caps/a.csv?comp=blocklist", body)
    assert (status, headers["x-ms-error-code"]) == (400, "BlockListTooLong")
    assert client.request("PUT", f"{LZ}/caps/b.csv?resource=file")[0] == 201
    status, headers, _b = client.request("PATCH", f"{LZ}/caps/b.csv?action=append&position="
                                         f"{2 ** 63}", b"x")
    assert (status, headers["x-ms-error-code"]) == (400, "InvalidQueryParameterValue")


def test_paged_listings_follow_the_cursor(client):
    for i in range(7):
        assert client.request("PUT", f"{LZ}/pages/{i:020d}.csv", b"p", BLOB)[0] == 201
    names = blob_names(client, f"&prefix={ITEM}/Files/LandingZone/pages/")
    assert names == [f"{ITEM}/Files/LandingZone/pages/{i:020d}.csv" for i in range(7)]


def test_blob_delete_of_a_folder_with_entries_is_directory_is_not_empty(client):
    # the Blob endpoint's answer on a hierarchical namespace (Azure/azure-cli#20884); DFS's is
    # DirectoryNotEmpty, and a DFS delete with recursive=true removes the folder
    assert client.request("PUT", f"{LZ}/full/a.csv", b"a", BLOB)[0] == 201
    status, headers, body = client.request("DELETE", f"{LZ}/full")
    assert (status, headers["x-ms-error-code"]) == (409, "DirectoryIsNotEmpty")
    assert ET.fromstring(body).findtext("Code") == "DirectoryIsNotEmpty"
    status, headers, _b = client.request("DELETE", f"{LZ}/full?recursive=false")
    assert (status, headers["x-ms-error-code"]) == (409, "DirectoryNotEmpty")
    assert client.request("DELETE", f"{LZ}/full?recursive=true")[0] == 200
