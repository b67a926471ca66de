"""Two public open-mirroring publishers' authentication and upload, replayed against
`serve --require-auth` with serve's Entra ID (the same libraries and calls in the same order;
none of their code). tests/functional/test_serve_azure_sdk.py replays their storage sequences;
this file proves their service-principal sign-in works and every request carries a token serve
checks.

- microsoft/fabric-toolbox tools/OpenMirroringPythonSDK/openmirroring_operations.py @044e914c
  (OpenMirroringClient): ClientSecretCredential(tenant, id, secret) into a DataLakeServiceClient
  on `.../<ws>/<item>/Files`; create_table (create_directory, create_file("_metadata.json"),
  append_data, flush_data); upload_data_file (get_paths on the table folder, create_file("_N"),
  append_data, flush_data, then a raw `requests.put` rename with a token from
  `credential.get_token("https://storage.azure.com/.default")`).
  Through `AZURE_AUTHORITY_HOST` one difference: `disable_instance_discovery=True`, since MSAL
  validates an authority it does not know at login.microsoftonline.com; through serve as the
  HTTPS proxy (`HTTPS_PROXY`), none.
- mongodb-partners/MongoDB_Fabric_Mirroring push_file_to_lz.py @033d9d11: a form POST of
  client_credentials + client_secret + scope storage to `<authority>/<tenant>/oauth2/v2.0/token`
  (upstream hard-codes login.microsoftonline.com: through `AZURE_AUTHORITY_HOST` the one
  difference, through the proxy none), then create `?resource=file`, append with flush=true,
  rename with a full-URL source carrying `?resource=file`.

Each runs twice: with serve's URLs (`authority`), and with Microsoft's own URLs through serve as
the HTTPS proxy (`proxy`: docs/onelake.md "With no edit at all").
"""

from __future__ import annotations

import json

import pytest

from tests.support.no_jvm import skip_unless
from tests.support.onelake_server import OneLakeServe

try:
    import requests
    from azure.identity import ClientSecretCredential
    from azure.storage.filedatalake import DataLakeServiceClient
    HAVE_SDK = True
except ImportError:
    HAVE_SDK = False

TENANT, APP, SECRET = "contoso.onmicrosoft.com", "publisher", "publisher-secret"
ITEM = "db.MountedRelationalDatabase"


@pytest.fixture(scope="module", params=["authority", "proxy"])
def endpoint(request, tmp_path_factory):
    skip_unless(HAVE_SDK, "the Azure SDK (pip install 'mirrorspec[onelake-test]') is not installed")
    tmp = tmp_path_factory.mktemp(f"publishers-{request.param}")
    server = OneLakeServe(tmp, "--self-signed", "--require-auth", "--workspace", "ws", "--item",
                          "db", "--client", f"{APP}:{SECRET}")
    mp = pytest.MonkeyPatch()
    mp.setenv("REQUESTS_CA_BUNDLE", server.ready["ca_file"])
    for name in ("AZURE_AUTHORITY_HOST", "HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"):
        mp.delenv(name, raising=False)
    if request.param == "authority":
        mp.setenv("AZURE_AUTHORITY_HOST", server.ready["authority_host"])
        server.authority = server.ready["authority_host"]
        server.onelake = server.ready["account_url"]
        server.credential_options = {"disable_instance_discovery": True}
    else:  # Microsoft's URLs, answered by serve as the HTTPS proxy
        mp.setenv("HTTPS_PROXY", server.ready["url"])
        server.authority = "https://login.microsoftonline.com"
        server.onelake = "https://onelake.dfs.fabric.microsoft.com"
        server.credential_options = {}
    yield server
    mp.undo()
    assert server.stop() == 0


def refusals(endpoint) -> list[dict]:
    return [e for e in endpoint.events() if e.get("status") == 401]


def test_fabric_toolbox_open_mirroring_client(endpoint):
    files = f"{endpoint.onelake}/ws/{ITEM}/Files"
    credential = ClientSecretCredential(TENANT, APP, SECRET, **endpoint.credential_options)
    service = DataLakeServiceClient(account_url=files, credential=credential)
    # create_table
    directory = service.get_file_system_client(file_system="LandingZone").get_directory_client(
        "sales/orders")
    directory.create_directory()
    metadata = json.dumps({"keyColumns": ["id"]})
    file = directory.create_file("_metadata.json")
    file.append_data(data=metadata, offset=0, length=len(metadata))
    file.flush_data(len(metadata))
    # upload_data_file
    listing = service.get_file_system_client(file_system="LandingZone/sales/orders")
    assert [p.name.rsplit("/", 1)[-1] for p in listing.get_paths(recursive=False)] == [
        "_metadata.json"]
    name = f"{1:020}.parquet"
    temp = directory.create_file(f"_{name}")
    temp.append_data(data=b"PAR1", offset=0, length=4)
    temp.flush_data(4)
    token = credential.get_token("https://storage.azure.com/.default").token
    response = requests.put(f"{files}/LandingZone/sales/orders/{name}", timeout=30, headers={
        "Authorization": f"Bearer {token}", "x-ms-rename-source":
            f"{files}/LandingZone/sales/orders/_{name}", "x-ms-version": "2020-06-12"})
    assert response.status_code in (200, 201), response.text
    table = endpoint.landing / "sales" / "orders"
    assert sorted(p.name for p in table.iterdir()) == ["00000000000000000001.parquet",
                                                      "_metadata.json"]
    assert refusals(endpoint) == []


def test_mongodb_connector_push_file_to_lz(endpoint):
    token_url = endpoint.authority + "/" + TENANT + "/oauth2/v2.0/token"
    answer = requests.post(token_url, data={
        "grant_type": "client_credentials", "client_id": APP, "client_secret": SECRET,
        "scope": "https://storage.azure.com/.default"},
        headers={"Content-Type": "application/x-www-form-urlencoded"})
    token = json.loads(answer.text).get("access_token")
    assert token, answer.text
    base = f"{endpoint.onelake}/ws/{ITEM}/Files/LandingZone/mongo/"
    temp = base + "_00000000000000000001.parquet_TEMP"
    assert requests.put(temp + "?resource=file", data={}, headers={
        "Authorization": "Bearer " + token, "content-length": "0"}).status_code == 201
    assert requests.patch(temp + "?position=0&action=append&flush=true", data=b"PAR1", headers={
        "Authorization": "Bearer " + token, "x-ms-file-name": "00000000000000000001.parquet"}
                          ).status_code == 200
    assert requests.put(base + "00000000000000000001.parquet", headers={
        "Authorization": "Bearer " + token, "x-ms-rename-source": temp + "?resource=file",
        "x-ms-version": "2020-06-12"}).status_code == 201
    assert (endpoint.landing / "mongo" / "00000000000000000001.parquet").read_bytes() == b"PAR1"
    # another secret gets no token; a token serve did not sign writes nothing
    refused = requests.post(token_url, data={
        "grant_type": "client_credentials", "client_id": APP, "client_secret": "wrong",
        "scope": "https://storage.azure.com/.default"}, timeout=30)
    assert refused.status_code == 401 and "access_token" not in refused.json()
    assert requests.put(base + "x.parquet?resource=file", timeout=30, headers={
        "Authorization": "Bearer not-a-token"}).status_code == 401
    assert not (endpoint.landing / "mongo" / "x.parquet").exists()


def test_the_proxy_answers_only_microsofts_hosts(endpoint, monkeypatch):
    """A CONNECT elsewhere is refused, never forwarded."""
    monkeypatch.setenv("HTTPS_PROXY", endpoint.ready["url"])
    with pytest.raises(requests.exceptions.ProxyError, match="403"):
        requests.get("https://example.com/", timeout=30)
    assert any(e.get("method") == "CONNECT" and e.get("status") == 403
               for e in endpoint.events())
