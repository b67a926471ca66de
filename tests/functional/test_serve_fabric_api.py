"""Fabric's mirroring REST API on `mirrorspec serve --root` (docs/onelake.md "Fabric REST
API"): workspaces and mirrored databases by name or GUID, definitions, long-running operations,
per-item folders, table status paging, and the bad input each refused in Fabric's error shape
while serve keeps serving. The engine run (startMirroring until Replicating) is in
tests/spark/test_serve_fabric_mirroring.py."""

from __future__ import annotations

import base64
import http.client
import json
import shutil
import xml.etree.ElementTree as ET
from urllib.parse import urlsplit

import pytest

from tests.support.onelake_server import OneLakeServe

MIRRORING = {"properties": {"source": {"type": "GenericMirror", "typeProperties": {}},
                            "target": {"type": "MountedRelationalDatabase",
                                       "typeProperties": {"format": "Delta"}}}}


def definition(doc) -> dict:
    payload = base64.b64encode(json.dumps(doc).encode()).decode()
    return {"parts": [{"path": "mirroring.json", "payload": payload,
                       "payloadType": "InlineBase64"}]}


class Api:
    def __init__(self, url: str, token: str | None = None):
        parts = urlsplit(url)
        self.host, self.port, self.token = parts.hostname, parts.port, token

    def call(self, method: str, path: str, body=None, raw: bytes | None = None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        conn.request(method, path, data, headers)
        response = conn.getresponse()
        text = response.read()
        conn.close()
        return response.status, dict(response.getheaders()), json.loads(text) if text else None

    def storage(self, method: str, path: str, body: bytes = b"", headers=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        conn.request(method, path, body, headers or {})
        response = conn.getresponse()
        response.read()
        conn.close()
        return response.status


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fabric")
    root = tmp / "root"
    server = OneLakeServe(tmp, "--page-size", "1", "--workspace", "ws1", "--item", "first",
                          root=root)
    server.root = root
    yield server
    assert server.stop() == 0


@pytest.fixture(scope="module")
def api(served):
    return Api(served.ready["url"])


@pytest.fixture(scope="module")
def db(api):
    """A mirrored database created through /v1 in the started workspace."""
    status, _h, item = api.call("POST", "/v1/workspaces/ws1/mirroredDatabases", {
        "displayName": "sales", "description": "d", "definition": definition(MIRRORING)})
    assert status == 201, item
    return item


def test_workspaces_and_items_by_name_or_guid(api, served, db):
    status, _h, listing = api.call("GET", "/v1/workspaces")
    assert status == 200 and [w["displayName"] for w in listing["value"]] == ["ws1"]
    ws_id = listing["value"][0]["id"]
    assert db["workspaceId"] == ws_id and db["type"] == "MirroredDatabase"
    for ref in (db["id"], "sales", "SALES"):
        status, _h, got = api.call("GET", f"/v1/workspaces/{ws_id}/mirroredDatabases/{ref}")
        assert (status, got["id"]) == (200, db["id"])
    assert got["properties"]["oneLakeTablesPath"].endswith(f"/{ws_id}/{db['id']}/Tables")
    status, _h, items = api.call("GET", f"/v1/workspaces/{ws_id}/items?type=MirroredDatabase")
    assert sorted(i["displayName"] for i in items["value"]) == ["first", "sales"]
    status, _h, items = api.call("GET", f"/v1/workspaces/{ws_id}/items?type=Lakehouse")
    assert items["value"] == []
    folder = served.root / ws_id / db["id"]
    assert (folder / "Files" / "LandingZone").is_dir() and (folder / "Tables").is_dir()


def test_each_item_has_its_own_landing_zone(api, served, db):
    lz = "/onelake/ws1/sales.MountedRelationalDatabase/Files/LandingZone/t.schema/f.csv"
    assert api.storage("PUT", lz, b"id\n1\n", {"x-ms-blob-type": "BlockBlob"}) == 201
    landing = served.root / db["workspaceId"] / db["id"] / "Files" / "LandingZone"
    assert (landing / "t.schema" / "f.csv").read_bytes() == b"id\n1\n"
    others = [p for p in served.root.rglob("f.csv") if p != landing / "t.schema" / "f.csv"]
    assert others == []  # nothing written into the other item's folders


def test_definition_round_trip_as_a_long_running_operation(api, db):
    base = f"/v1/workspaces/{db['workspaceId']}/mirroredDatabases/{db['id']}"
    status, headers, body = api.call("POST", f"{base}/getDefinition")
    assert status == 202 and body is None
    op = headers["x-ms-operation-id"]
    assert headers["Location"].endswith(f"/v1/operations/{op}") and headers["Retry-After"]
    status, headers, state = api.call("GET", f"/v1/operations/{op}")
    assert (status, state["status"]) == (200, "Succeeded")
    assert headers["Location"].endswith(f"/v1/operations/{op}/result")
    status, _h, result = api.call("GET", f"/v1/operations/{op}/result")
    part = result["definition"]["parts"][0]
    assert part["path"] == "mirroring.json"
    assert json.loads(base64.b64decode(part["payload"])) == MIRRORING
    status, _h, _b = api.call("POST", f"{base}/updateDefinition",
                              {"definition": definition(MIRRORING)})
    assert status == 200


def test_update_rename_and_conflict(api, db):
    base = f"/v1/workspaces/{db['workspaceId']}/mirroredDatabases"
    status, _h, item = api.call("PATCH", f"{base}/{db['id']}", {"description": "new"})
    assert (status, item["description"]) == (200, "new")
    status, _h, err = api.call("PATCH", f"{base}/{db['id']}", {"displayName": "first"})
    assert (status, err["errorCode"]) == (409, "ItemDisplayNameAlreadyInUse")
    assert set(err) == {"requestId", "errorCode", "message"}


@pytest.mark.parametrize("body, code", [
    ({"displayName": "x", "definition": {"parts": [{"path": "mirroring.json",
                                                    "payload": "not base64!"}]}},
     "InvalidDefinition"),
    ({"displayName": "x", "definition": definition({"properties": {
        "source": {"type": "AzureSqlDatabase"}, "target": {"type": "MountedRelationalDatabase"}}})},
     "InvalidDefinition"),
    ({"displayName": "", "definition": definition(MIRRORING)}, "InvalidInput"),
    ({"displayName": "a/b"}, "InvalidInput"),
])
def test_bad_definitions_are_refused(api, served, body, code):
    before = sorted(p.name for p in served.root.rglob("*"))
    status, _h, err = api.call("POST", "/v1/workspaces/ws1/mirroredDatabases", body)
    assert (status, err["errorCode"]) == (400, code), err
    assert sorted(p.name for p in served.root.rglob("*")) == before  # nothing written


def test_bad_requests_keep_serve_serving(api, served):
    status, _h, err = api.call("POST", "/v1/workspaces/ws1/items",
                               {"displayName": "lh", "type": "Lakehouse"})
    assert (status, err["errorCode"]) == (400, "InvalidItemType")
    status, _h, err = api.call("POST", "/v1/workspaces/ws1/mirroredDatabases",
                               raw=b"{not json")
    assert (status, err["errorCode"]) == (400, "InvalidInput")
    status, _h, err = api.call("GET", "/v1/workspaces/ws1/mirroredDatabases/nope")
    assert (status, err["errorCode"]) == (404, "ItemNotFound")
    status, _h, err = api.call("GET", "/v1/workspaces/nowhere/items")
    assert (status, err["errorCode"]) == (404, "WorkspaceNotFound")
    status, _h, err = api.call("GET", "/v1/operations/00000000-0000-0000-0000-000000000000")
    assert (status, err["errorCode"]) == (404, "OperationNotFound")
    logged = [e for e in served.events() if e.get("error_code") == "InvalidItemType"]
    assert len(logged) == 1  # logged once
    assert api.call("GET", "/v1/workspaces")[0] == 200


def test_start_without_a_landing_zone_is_refused(api, served):
    status, _h, item = api.call("POST", "/v1/workspaces/ws1/mirroredDatabases",
                                {"displayName": "gone"})
    assert status == 201
    landing = served.root / item["workspaceId"] / item["id"] / "Files" / "LandingZone"
    shutil.rmtree(landing)
    base = f"/v1/workspaces/ws1/mirroredDatabases/{item['id']}"
    status, _h, err = api.call("POST", f"{base}/startMirroring")
    assert (status, err["errorCode"]) == (400, "LandingZoneNotFound")
    assert not landing.exists()
    status, _h, state = api.call("POST", f"{base}/getMirroringStatus")
    assert (status, state) == (200, {"status": "Initialized"})


def test_tables_status_is_paged_from_the_monitoring_status(api, served, db):
    warehouse = served.root / db["workspaceId"] / db["id"] / "Tables"
    tables = [{"sourceSchemaName": "s", "sourceTableName": name, "status": "Replicating",
               "metrics": {"processedRows": rows, "processedBytes": 10 * rows,
                           "lastSyncDateTime": "2025-05-20T00:02:24Z"}}
              for name, rows in (("a", 3), ("b", 5))]
    (warehouse / "tables.json").write_text(json.dumps({"tables": tables}))
    base = f"/v1/workspaces/ws1/mirroredDatabases/{db['id']}/getTablesMirroringStatus"
    status, _h, page = api.call("POST", base)
    assert status == 200 and [t["sourceTableName"] for t in page["data"]] == ["a"]
    assert page["data"][0]["metrics"] == {"processedBytes": 30, "processedRows": 3,
                                          "lastSyncDateTime": "2025-05-20T00:02:24.0000000Z"}
    status, _h, second = api.call("POST", f"{base}?continuationToken={page['continuationToken']}")
    assert [t["sourceTableName"] for t in second["data"]] == ["b"]
    assert second["continuationToken"] is None and second["continuationUri"] is None
    status, _h, err = api.call("POST", f"{base}?continuationToken=garbage")
    assert (status, err["errorCode"]) == (400, "InvalidContinuationToken")


def storage_get(api: Api, path: str) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection(api.host, api.port, timeout=30)
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, dict(response.getheaders()), body


def list_paths(api: Api, path: str) -> list[str]:
    """Every name of a List Paths, page after page (the module's serve pages by 1)."""
    names, token = [], ""
    while True:
        query = f"&continuation={token}" if token else ""
        status, headers, body = storage_get(api, path + query)
        assert status == 200, body
        names += [p["name"] for p in json.loads(body)["paths"]]
        token = headers.get("x-ms-continuation", "")
        if not token:
            return names


def list_blobs(api: Api, path: str) -> list[str]:
    """Every blob name and prefix of a List Blobs, page after page."""
    names, marker = [], ""
    while True:
        status, _h, body = storage_get(api, path + (f"&marker={marker}" if marker else ""))
        assert status == 200, body
        root = ET.fromstring(body)
        names += [e.text for e in root.iter("Name") if e.text]
        marker = root.findtext("NextMarker") or ""
        if not marker:
            return names


def test_storage_lists_every_workspace_and_every_item(api, served, db):
    status, _h, ws2 = api.call("POST", "/v1/workspaces", {"displayName": "ws2"})
    assert status == 201, ws2
    status, _h, other = api.call("POST", "/v1/workspaces/ws2/mirroredDatabases",
                                 {"displayName": "other"})
    assert status == 201, other
    status, _h, body = storage_get(api, "/onelake?resource=account")
    assert sorted(f["name"] for f in json.loads(body)["filesystems"]) == ["ws1", "ws2"]
    assert list_blobs(api, "/onelake?comp=list") == ["ws1", "ws2"]

    status, _h, items = api.call("GET", "/v1/workspaces/ws1/mirroredDatabases")
    every = sorted(f"{i['displayName']}.MountedRelationalDatabase" for i in items["value"])
    assert len(every) >= 2  # the start item and `sales`
    assert list_paths(api, "/onelake/ws1?resource=filesystem&recursive=false") == every
    assert list_blobs(api, "/onelake/ws1?restype=container&comp=list&delimiter=/") == \
        [name + "/" for name in every]

    table = "sales.MountedRelationalDatabase/Files/LandingZone/listed.schema/t"
    assert api.storage("PUT", f"/onelake/ws1/{table}/a.csv", b"id\n1\n",
                       {"x-ms-blob-type": "BlockBlob"}) == 201
    listed = list_paths(api, "/onelake/ws1?resource=filesystem&recursive=true&directory="
                        "sales.MountedRelationalDatabase/Files/LandingZone/listed.schema")
    assert listed == [table, f"{table}/a.csv"]
    assert list_blobs(api, f"/onelake/ws1?restype=container&comp=list&prefix={table}/") == \
        [f"{table}/a.csv"]
    everything = list_paths(api, "/onelake/ws1?resource=filesystem&recursive=true")
    assert f"{table}/a.csv" in everything and everything == sorted(
        everything, key=lambda n: n.encode())
    assert {n.partition("/")[0] for n in everything} == set(every)

    # a path may start with any hosted workspace instead of the account
    lz = "other.MountedRelationalDatabase/Files/LandingZone/x.schema/t/f.csv"
    assert api.storage("PUT", f"/ws2/{lz}", b"id\n2\n", {"x-ms-blob-type": "BlockBlob"}) == 201
    landing = served.root / other["workspaceId"] / other["id"] / "Files" / "LandingZone"
    assert (landing / "x.schema" / "t" / "f.csv").read_bytes() == b"id\n2\n"
    assert list_blobs(api, f"/{ws2['id']}?restype=container&comp=list&prefix="
                      "other.MountedRelationalDatabase/Files/LandingZone/x.schema/t/") == [lz]


def test_a_workspace_with_no_item_yet_lists_empty(api, served):
    status, _h, ws = api.call("POST", "/v1/workspaces", {"displayName": "bare"})
    assert status == 201, ws
    status, _h, body = storage_get(api, "/onelake?resource=account")
    assert "bare" in [f["name"] for f in json.loads(body)["filesystems"]]
    for ref in ("bare", ws["id"]):
        assert list_paths(api, f"/onelake/{ref}?resource=filesystem&recursive=true") == []
        assert list_blobs(api, f"/onelake/{ref}?restype=container&comp=list") == []
        assert api.storage("HEAD", f"/onelake/{ref}?resource=filesystem") == 200
    path = "/onelake/bare/db.MountedRelationalDatabase/Files/LandingZone/t.schema/x.csv"
    before = sorted(served.root.rglob("*"))
    assert api.storage("PUT", path, b"id\n1\n", {"x-ms-blob-type": "BlockBlob"}) == 404
    assert sorted(served.root.rglob("*")) == before  # nothing written anywhere


def test_delete_removes_the_item_and_its_folders_and_the_list_survives_a_restart(tmp_path):
    root = tmp_path / "root"
    server = OneLakeServe(tmp_path, root=root)
    try:
        api = Api(server.ready["url"])
        status, _h, item = api.call("POST", "/v1/workspaces/local/mirroredDatabases",
                                    {"displayName": "keep"})
        status, _h, doomed = api.call("POST", "/v1/workspaces/local/mirroredDatabases",
                                      {"displayName": "doomed"})
        folder = root / doomed["workspaceId"] / doomed["id"]
        assert folder.is_dir()
        assert api.call("DELETE", f"/v1/workspaces/local/mirroredDatabases/{doomed['id']}")[0] == 200
        assert not folder.exists()
        status, _h, err = api.call("GET", f"/v1/workspaces/local/items/{doomed['id']}")
        assert (status, err["errorCode"]) == (404, "ItemNotFound")
    finally:
        assert server.stop() == 0
    again = OneLakeServe(tmp_path, root=root)
    try:
        status, _h, got = Api(again.ready["url"]).call(
            "GET", f"/v1/workspaces/local/mirroredDatabases/{item['id']}")
        assert (status, got["displayName"]) == (200, "keep")
    finally:
        assert again.stop() == 0


def test_each_item_has_its_own_conformance_report(tmp_path):
    report = tmp_path / "reports" / "conformance.json"
    server = OneLakeServe(tmp_path, "--report", str(report), root=tmp_path / "root")
    try:
        api = Api(server.ready["url"])
        status, _h, item = api.call("POST", "/v1/workspaces/local/mirroredDatabases",
                                    {"displayName": "other"})
        assert status == 201, item
        lz = "/onelake/local/other.MountedRelationalDatabase/Files/LandingZone/s.schema/t"
        assert api.storage("PUT", f"{lz}/data.csv", b"id\n1\n",
                           {"x-ms-blob-type": "BlockBlob"}) == 201
    finally:
        assert server.stop() == 0
    own = json.loads((report.parent / f"conformance.{item['id']}.json").read_text())
    assert own["item"]["id"] == item["id"] and own["requests"] == 1
    assert [(f["kind"], f["path"]) for f in own["findings"]] == [
        ("not-sequence-name", "other.MountedRelationalDatabase/Files/LandingZone/s.schema/t/"
                              "data.csv")]
    start = json.loads(report.read_text())
    assert start["item"]["displayName"] == "local" and start["findings"] == []


def test_single_item_flags_serve_one_item_the_api_can_read(tmp_path):
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db")
    try:
        api = Api(server.ready["url"])
        status, _h, got = api.call("GET", "/v1/workspaces/ws/mirroredDatabases/db")
        assert (status, got["id"]) == (200, server.ready["item_id"])
        status, _h, err = api.call("POST", "/v1/workspaces/ws/mirroredDatabases",
                                   {"displayName": "more"})
        assert (status, err["errorCode"]) == (400, "OperationNotSupported")
        assert "--root" in err["message"]
    finally:
        assert server.stop() == 0


def test_require_auth_wants_a_fabric_token(tmp_path):
    server = OneLakeServe(tmp_path, "--require-auth")
    try:
        api = Api(server.ready["url"])
        status, headers, err = api.call("GET", "/v1/workspaces")
        assert (status, err["errorCode"]) == (401, "Unauthorized")
        assert headers["WWW-Authenticate"].startswith("Bearer")
        api.token = "garbage.token.here"
        assert api.call("GET", "/v1/workspaces")[2]["errorCode"] == "InvalidToken"
        token_path = "/msi/token?resource=https://storage.azure.com"
        status, _h, doc = Api(server.ready["url"]).call("GET", token_path)
        api.token = doc["access_token"]  # a storage token: the wrong audience for /v1
        status, _h, err = api.call("GET", "/v1/workspaces")
        assert status == 401 and "Audience" in err["message"]
        status, _h, doc = Api(server.ready["url"]).call(
            "GET", "/msi/token?resource=https://api.fabric.microsoft.com")
        api.token = doc["access_token"]
        assert api.call("GET", "/v1/workspaces")[0] == 200
    finally:
        assert server.stop() == 0
