"""`mirrorspec serve` tried as an adversary would (docs/security.md, "Hardening of the endpoint:
before and now"): an item named like another's GUID, a web page's cross-site requests, tokens
without credentials, input that used to answer 500, names that shadow routes, a small block
list that writes a large blob; and what serve keeps across a restart (properties, metadata,
leases). Each answer is checked at the wire, and that nothing was created or written."""

from __future__ import annotations

import base64
import http.client
import json
from urllib.parse import urlsplit

import jwt
import pytest

from tests.support.onelake_server import OneLakeServe

LZ = "/onelake/ws/db.MountedRelationalDatabase/Files/LandingZone"
FIRST_LZ = "/onelake/ws1/first.MountedRelationalDatabase/Files/LandingZone"  # under --root
MIRRORING = {"properties": {"source": {"type": "GenericMirror", "typeProperties": {}},
                            "target": {"type": "MountedRelationalDatabase",
                                       "typeProperties": {"format": "Delta"}}}}
JSON = {"Content-Type": "application/json"}
EVIL = "http://evil.example"


def definition(doc) -> dict:
    payload = base64.b64encode(json.dumps(doc).encode()).decode()
    return {"parts": [{"path": "mirroring.json", "payload": payload,
                       "payloadType": "InlineBase64"}]}


class Wire:
    """Raw requests: the headers given and no others (http.client adds Host and the length)."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.host, self.port = parts.hostname, parts.port

    def __call__(self, method: str, path: str, body: bytes | dict | None = None,
                 headers: dict | None = None) -> tuple[int, dict, bytes]:
        data = json.dumps(body).encode() if isinstance(body, dict) else body
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        try:
            conn.request(method, path, data, headers or {})
            response = conn.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, \
                response.read()
        finally:
            conn.close()

    def doc(self, method: str, path: str, body=None, headers=None) -> tuple[int, dict]:
        status, _h, text = self(method, path, body, headers)
        return status, json.loads(text) if text else {}


@pytest.fixture(scope="module")
def root_serve(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("abuse")
    server = OneLakeServe(tmp, "--workspace", "ws1", "--item", "first", root=tmp / "root")
    server.root = tmp / "root"
    yield server
    assert server.stop() == 0


@pytest.fixture(scope="module")
def wire(root_serve):
    return Wire(root_serve.ready["url"])


def workspaces(wire) -> list[str]:
    return sorted(w["displayName"] for w in wire.doc("GET", "/v1/workspaces")[1]["value"])


# --- M: one item takes over another ----------------------------------------------------------

def test_an_item_named_like_another_items_guid_is_refused(wire):
    status, victim = wire.doc("POST", "/v1/workspaces/ws1/mirroredDatabases",
                              {"displayName": "victim", "definition": definition(MIRRORING)}, JSON)
    assert status == 201
    status, err = wire.doc("POST", "/v1/workspaces/ws1/mirroredDatabases",
                           {"displayName": victim["id"]}, JSON)
    assert (status, err["errorCode"]) == (400, "InvalidInput") and "GUID" in err["message"]
    status, err = wire.doc("PATCH", "/v1/workspaces/ws1/mirroredDatabases/first",
                           {"displayName": victim["id"].upper()}, JSON)
    assert (status, err["errorCode"]) == (400, "InvalidInput")
    status, got = wire.doc("GET", f"/v1/workspaces/ws1/mirroredDatabases/{victim['id']}")
    assert (status, got["displayName"]) == (200, "victim")
    # an upload addressed to the victim by GUID lands in the victim's landing zone
    path = f"/onelake/ws1/{victim['id']}/Files/LandingZone/t/a.csv"
    assert wire("PUT", path, b"id\n1\n", {"x-ms-blob-type": "BlockBlob"})[0] == 201
    status, _h, body = wire("GET", "/onelake/ws1/victim.MountedRelationalDatabase/Files/"
                                   "LandingZone/t/a.csv")
    assert (status, body) == (200, b"id\n1\n")


# --- M: cross-site requests --------------------------------------------------------------------

@pytest.mark.parametrize("headers", [
    {"Origin": EVIL, "Content-Type": "text/plain"},
    {"Origin": "null", "Content-Type": "text/plain"},
    {"Sec-Fetch-Site": "cross-site", "Content-Type": "text/plain"},
    {"Sec-Fetch-Site": "same-site", "Origin": "http://127.0.0.1:1"},
    {"Origin": EVIL, "Content-Type": "application/json"},
])
def test_a_web_pages_post_to_the_fabric_api_is_refused(wire, headers):
    before = workspaces(wire)
    status, err = wire.doc("POST", "/v1/workspaces", b'{"displayName": "pwned"}', headers)
    assert (status, err["errorCode"]) == (403, "Forbidden"), err
    assert "web page" in err["message"]
    assert workspaces(wire) == before


def test_a_web_page_cannot_stop_mirroring_or_reach_storage_and_tokens(wire, root_serve):
    stop = "/v1/workspaces/ws1/mirroredDatabases/first/stopMirroring"
    status, err = wire.doc("POST", stop, b"", {"Origin": EVIL, "Content-Type": "text/plain"})
    assert (status, err["errorCode"]) == (403, "Forbidden")
    status, headers, _b = wire("PUT", f"{FIRST_LZ}/t/x.csv", b"x",
                               {"x-ms-blob-type": "BlockBlob", "Origin": EVIL})
    assert (status, headers["x-ms-error-code"]) == (403, "AuthorizationFailure")
    status, headers, _b = wire("GET", "/msi/token?resource=https://storage.azure.com",
                               headers={"Sec-Fetch-Site": "cross-site"})
    assert (status, headers["x-ms-error-code"]) == (403, "AuthorizationFailure")
    status, err = wire.doc("POST", "/t1/oauth2/v2.0/token",
                           b"grant_type=client_credentials&client_id=a&client_secret=b"
                           b"&scope=https://storage.azure.com/.default",
                           {"Origin": EVIL, "Content-Type": "application/x-www-form-urlencoded"})
    assert (status, err["error"]) == (400, "invalid_request")
    assert err["error_description"].startswith("AADSTS9002326:")
    assert not list(root_serve.root.rglob("x.csv"))
    # the endpoint's own origin, a user's typed URL and an SDK (no such header) are served
    own = root_serve.ready["url"]
    assert wire.doc("POST", stop, b"", {"Origin": own})[0] == 200
    assert wire.doc("GET", "/v1/workspaces", None, {"Sec-Fetch-Site": "none"})[0] == 200
    assert wire.doc("POST", stop)[0] == 200


def test_a_fabric_api_body_that_is_not_json_gets_415(wire):
    before = workspaces(wire)
    for content_type in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = {"Content-Type": content_type} if content_type else {}
        status, err = wire.doc("POST", "/v1/workspaces", b'{"displayName": "plain"}', headers)
        assert (status, err["errorCode"]) == (415, "UnsupportedMediaType"), content_type
    assert workspaces(wire) == before
    status, _doc = wire.doc("POST", "/v1/workspaces", b'{"displayName": "typed"}',
                            {"Content-Type": "application/json; charset=utf-8"})
    assert status == 201


# --- L: 500 where Fabric answers 400; names that shadow routes -------------------------------

@pytest.mark.parametrize("body, code", [
    ({"displayName": "deep", "definition": {"parts": [{"path": "mirroring.json", "payload":
      base64.b64encode(b'{"a":' * 3000 + b"1" + b"}" * 3000).decode()}]}}, "InvalidDefinition"),
    ({"displayName": "typed", "definition": definition({"properties": [1]})}, "InvalidDefinition"),
    ({"displayName": "typed", "definition": definition({"properties": "text"})},
     "InvalidDefinition"),
    ({"displayName": "typed", "definition": definition({"properties": {"source": [1]}})},
     "InvalidDefinition"),
    ({"displayName": "typed", "definition": definition([1, 2])}, "InvalidDefinition"),
])
def test_a_deep_or_wrongly_typed_definition_is_400(wire, root_serve, body, code):
    before = sorted(p.name for p in root_serve.root.rglob("*"))
    status, err = wire.doc("POST", "/v1/workspaces/ws1/mirroredDatabases", body, JSON)
    assert (status, err["errorCode"]) == (400, code), err
    assert sorted(p.name for p in root_serve.root.rglob("*")) == before


def test_a_deep_body_and_a_broken_copy_source_are_400(wire):
    status, err = wire.doc("POST", "/v1/workspaces", b"[" * 100_000 + b"]" * 100_000, JSON)
    assert (status, err["errorCode"]) == (400, "InvalidInput")
    path = f"{FIRST_LZ}/t/copy.csv"
    status, headers, _b = wire("PUT", path, b"", {"x-ms-copy-source": "http://[::1"})
    assert (status, headers["x-ms-error-code"]) == (400, "InvalidHeaderValue")
    status, headers, _b = wire("PUT", path, b"", {"x-ms-rename-source": "http://[::1"})
    assert (status, headers["x-ms-error-code"]) == (400, "InvalidHeaderValue")


def test_workspace_names_that_shadow_routes_are_refused_and_onelake_hosts_are_storage(wire):
    for name in ("v1", "onelake", "null", "V1"):
        status, err = wire.doc("POST", "/v1/workspaces", {"displayName": name}, JSON)
        assert (status, err["errorCode"]) == (400, "InvalidInput"), name
    # through the real host names, every path is storage: `/v1/...` names a workspace `v1`
    for host in ("onelake.dfs.fabric.microsoft.com", "onelake.blob.fabric.microsoft.com"):
        status, headers, body = wire("GET", "/v1/workspaces", headers={"Host": host})
        assert status == 404 and headers["x-ms-error-code"] in ("PathNotFound", "BlobNotFound",
                                                                  "FilesystemNotFound",
                                                                  "ContainerNotFound"), body
        assert b"errorCode" not in body  # not the Fabric API's answer
        status, headers, _b = wire("GET", "/msi/token", headers={"Host": host})
        assert status == 404, host  # a path in workspace `msi`, not the token route
    assert wire("GET", "/v1/workspaces", headers={"Host": "api.fabric.microsoft.com"})[0] == 200


# --- L: tokens without credentials -----------------------------------------------------------

def test_with_clients_only_registered_identities_get_tokens(tmp_path):
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db", "--require-auth",
                          "--client", "app:app-secret",
                          "--managed-identity", "mi:mi-secret")
    try:
        wire = Wire(server.ready["url"])
        msi = "/msi/token?api-version=2019-08-01&resource=https://storage.azure.com"
        imds = "/metadata/identity/oauth2/token?resource=https://storage.azure.com"
        for path, headers in ((msi, {}), (msi, {"X-IDENTITY-HEADER": "wrong"}),
                              (msi + "&client_id=other", {"X-IDENTITY-HEADER": "mi-secret"}),
                              (imds, {"Metadata": "true"}),
                              (imds, {"Metadata": "true", "X-IDENTITY-HEADER": "mi-secret"})):
            status, err = wire.doc("GET", path, None, headers)
            assert (status, err["error"]) == (401, "unauthorized_client"), (path, headers)
            assert "access_token" not in err
        status, doc = wire.doc("GET", msi, None, {"X-IDENTITY-HEADER": "mi-secret"})
        assert status == 200
        assert jwt.decode(doc["access_token"], options={"verify_signature": False})["sub"] == "mi"
        bearer = {"Authorization": f"Bearer {doc['access_token']}"}
        assert wire("PUT", f"{LZ}/t/ok.csv", b"1", {"x-ms-blob-type": "BlockBlob",
                                                       **bearer})[0] == 201
        # with registered applications only serve's bearer tokens get in: every other scheme,
        # SharedKey and a SAS are 401 (without --client they are Azure's 400 / unchecked)
        for scheme in ("Basic YWxhZGRpbjpvcGVuc2VzYW1l", "Digest x", "Bearer", "Negotiate",
                       "SharedKey onelake:c2ln"):
            status, headers, _b = wire("PUT", f"{LZ}/t/no.csv", b"1",
                                       {"x-ms-blob-type": "BlockBlob", "Authorization": scheme})
            assert (status, headers["x-ms-error-code"]) == (401, "InvalidAuthenticationInfo"), \
                scheme
        status, headers, _b = wire("PUT", f"{LZ}/t/no.csv?sv=2023-01-03&sig=c2ln", b"1",
                                   {"x-ms-blob-type": "BlockBlob"})
        assert (status, headers["x-ms-error-code"]) == (401, "InvalidAuthenticationInfo")
        assert not (server.landing / "t" / "no.csv").exists()
        assert "mi-secret" not in server.log() and "app-secret" not in server.log()
    finally:
        assert server.stop() == 0


def test_without_clients_an_unread_scheme_is_azures_400_and_shared_key_is_only_present(tmp_path):
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db", "--require-auth")
    try:
        wire = Wire(server.ready["url"])
        status, headers, _b = wire("PUT", f"{LZ}/t/no.csv", b"1",
                                   {"x-ms-blob-type": "BlockBlob",
                                    "Authorization": "Basic YWxhZGRpbjpvcGVuc2VzYW1l"})
        assert (status, headers["x-ms-error-code"]) == (400, "InvalidAuthenticationInfo")
        assert wire("PUT", f"{LZ}/t/key.csv", b"1", {"x-ms-blob-type": "BlockBlob",
                                                        "Authorization": "SharedKey onelake:c2ln"}
                    )[0] == 201  # SharedKey: present is enough (documented)
        assert not (server.landing / "t" / "no.csv").exists()
    finally:
        assert server.stop() == 0


def test_with_clients_and_no_managed_identity_the_msi_routes_issue_nothing(tmp_path):
    server = OneLakeServe(tmp_path, "--client", "app:app-secret")
    try:
        wire = Wire(server.ready["url"])
        status, err = wire.doc("GET", "/msi/token?resource=https://storage.azure.com", None,
                               {"X-IDENTITY-HEADER": "anything"})
        assert (status, err["error"]) == (401, "unauthorized_client")
        assert "--managed-identity" in err["error_description"]
    finally:
        assert server.stop() == 0


# --- L: block-list amplification ---------------------------------------------------------------

def test_a_small_block_list_cannot_write_a_large_blob(tmp_path):
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db",
                          "--max-blob-size", str(1 << 20))
    try:
        wire = Wire(server.ready["url"])
        blob = f"{LZ}/t/amplified.bin"
        block = base64.b64encode(b"block-1").decode()
        assert wire("PUT", f"{blob}?comp=block&blockid={block}", b"x" * (600 << 10))[0] == 201
        listing = ("<BlockList>" + f"<Latest>{block}</Latest>" * 200 + "</BlockList>").encode()
        assert len(listing) < 8 << 10
        status, headers, _b = wire("PUT", f"{blob}?comp=blocklist", listing)
        assert (status, headers["x-ms-error-code"]) == (413, "RequestBodyTooLarge")
        assert not (server.landing / "t" / "amplified.bin").exists()
        status, headers, _b = wire("PUT", f"{LZ}/t/big.bin", b"y" * ((1 << 20) + 1),
                                   {"x-ms-blob-type": "BlockBlob"})
        assert (status, headers["x-ms-error-code"]) == (413, "RequestBodyTooLarge")
        status, headers, _b = wire("PATCH", f"{LZ}/t/x.bin?action=flush&position={(1 << 20) + 1}")
        assert (status, headers["x-ms-error-code"]) == (400, "InvalidQueryParameterValue")
        one = ("<BlockList>" + f"<Latest>{block}</Latest>" + "</BlockList>").encode()
        assert wire("PUT", f"{blob}?comp=blocklist", one)[0] == 201
        assert (server.landing / "t" / "amplified.bin").stat().st_size == 600 << 10
    finally:
        assert server.stop() == 0


def test_a_refused_body_sent_whole_before_the_answer_is_read_gets_its_refusal(tmp_path):
    """http.client (like many clients) sends the whole body before it reads the answer: the
    server reads and drops the unread rest before closing, so the 413 arrives, not a reset."""
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db",
                          "--max-blob-size", str(1 << 20))
    try:
        wire = Wire(server.ready["url"])
        for _ in range(3):
            status, headers, _b = wire("PUT", f"{LZ}/t/big.bin", b"y" * (16 << 20),
                                       {"x-ms-blob-type": "BlockBlob"})
            assert (status, headers["x-ms-error-code"]) == (413, "RequestBodyTooLarge")
        assert not (server.landing / "t" / "big.bin").exists()
        assert wire("PUT", f"{LZ}/t/small.bin", b"z", {"x-ms-blob-type": "BlockBlob"})[0] == 201
    finally:
        assert server.stop() == 0


# --- what survives a restart ------------------------------------------------------------------

def test_properties_metadata_and_leases_survive_a_restart(tmp_path):
    lease = "11111111-2222-3333-4444-555555555555"
    blob = f"{LZ}/t/kept.csv"
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db")
    try:
        wire = Wire(server.ready["url"])
        assert wire("PUT", blob, b"a,b\n", {"x-ms-blob-type": "BlockBlob",
                                            "x-ms-blob-content-type": "text/csv",
                                            "x-ms-meta-stage": "raw"})[0] == 201
        assert wire("PUT", f"{blob}?comp=metadata", b"", {"x-ms-meta-stage": "checked",
                                                         "x-ms-meta-Owner": "etl"})[0] == 200
        assert wire("PUT", f"{blob}?comp=lease", b"", {"x-ms-lease-action": "acquire",
                                                      "x-ms-lease-duration": "-1",
                                                      "x-ms-proposed-lease-id": lease})[0] == 201
        before = wire("HEAD", blob)[1]
    finally:
        assert server.stop() == 0
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db")
    try:
        wire = Wire(server.ready["url"])
        after = wire("HEAD", blob)[1]
        for key in ("etag", "last-modified", "content-type", "content-md5", "x-ms-meta-stage",
                    "x-ms-meta-owner", "x-ms-lease-state", "x-ms-lease-status",
                    "x-ms-lease-duration"):
            assert after.get(key) == before.get(key), key
        assert (after["x-ms-meta-stage"], after["x-ms-lease-state"]) == ("checked", "leased")
        status, headers, _b = wire("PUT", blob, b"x", {"x-ms-blob-type": "BlockBlob"})
        assert (status, headers["x-ms-error-code"]) == (412, "LeaseIdMissing")
        assert wire("PUT", blob, b"x", {"x-ms-blob-type": "BlockBlob",
                                        "x-ms-lease-id": lease})[0] == 201
    finally:
        assert server.stop() == 0
