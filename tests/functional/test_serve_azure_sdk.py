"""The Azure SDK publisher (docs/onelake.md, "Acceptance"): the real Azure Python SDK against `mirrorspec serve` over TLS, with
DefaultAzureCredential taking its token from the endpoint's managed-identity route, exactly as
azure-identity does on App Service. No code of ours on the client side.

The call sequences follow the SDK as released (azure-storage-file-datalake 12.26.1,
Azure/azure-sdk-for-python `sdk/storage/azure-storage-file-datalake`); the negative answers are
the service's documented ones (Azure/azure-sdk-for-python#16166, #43478).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.support.no_jvm import skip_unless
from tests.support.onelake_server import OneLakeServe

try:
    from azure.core.exceptions import (HttpResponseError, ResourceExistsError,
                                       ResourceModifiedError, ResourceNotFoundError)
    from azure.identity import DefaultAzureCredential
    from azure.storage.blob import BlobServiceClient
    from azure.storage.filedatalake import DataLakeServiceClient
    HAVE_SDK = True
except ImportError:  # the onelake-test extra is not installed
    HAVE_SDK = False

ITEM = "db1.MountedRelationalDatabase"
LZ = f"{ITEM}/Files/LandingZone"
TABLE = f"{LZ}/sales.schema/orders"


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    skip_unless(HAVE_SDK, "the Azure SDK (pip install 'mirrorspec[onelake-test]') is not installed")
    tmp = tmp_path_factory.mktemp("onelake")
    server = OneLakeServe(tmp, "--self-signed", "--workspace", "ws1", "--item", "db1",
                          "--page-size", "2", "--report", str(tmp / "report.json"),
                          "--log-requests")
    mp = pytest.MonkeyPatch()
    mp.setenv("REQUESTS_CA_BUNDLE", server.ready["ca_file"])
    mp.setenv("IDENTITY_ENDPOINT", server.ready["token_url"])
    mp.setenv("IDENTITY_HEADER", "any")
    for name in ("AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "MSI_ENDPOINT"):
        mp.delenv(name, raising=False)
    yield server
    mp.undo()
    assert server.stop() == 0


@pytest.fixture(scope="module")
def fs(endpoint):
    service = DataLakeServiceClient(endpoint.ready["account_url"], credential=DefaultAzureCredential())
    return service.get_file_system_client("ws1")


TRACES = Path(__file__).resolve().parents[1] / "fixtures" / "onelake"


def trace(endpoint, since: int) -> list[list]:
    """The requests serve logged after event `since`: method, path, query keys, status (token
    requests left out: credentials cache them)."""
    out = []
    for event in endpoint.events()[since:]:
        if "status" not in event or "/oauth2/token" in event["path"] or "/msi/" in event["path"]:
            continue
        url = urlsplit(event["path"])
        out.append([event["method"], url.path.replace("%2F", "/"),
                    sorted(k for k, _v in parse_qsl(url.query, keep_blank_values=True)),
                    event["status"]])
    return out


def check_trace(name: str, found: list[list]) -> None:
    """Compare with tests/fixtures/onelake/NAME.json (MIRRORSPEC_RECORD_TRACES=1 rewrites it)."""
    path = TRACES / f"{name}.json"
    if os.environ.get("MIRRORSPEC_RECORD_TRACES") == "1":
        path.write_text(json.dumps(found, indent=1) + "\n")
    assert found == json.loads(path.read_text())


def report(endpoint) -> dict:
    return json.loads((endpoint.ready_file.parent / "report.json").read_text())


def test_publisher_pattern_create_upload_append_flush_rename(endpoint, fs):
    fs.create_directory(TABLE)
    fs.create_directory(LZ)  # an existing directory is fine (debezium-fabric-mirror does this)
    fs.get_file_client(f"{LZ}/_partnerEvents.json").upload_data(b'{"partnerName":"t"}', overwrite=True)
    fs.get_file_client(f"{TABLE}/_metadata.json").upload_data(b'{"keyColumns":["id"]}', overwrite=True)
    temp = fs.get_file_client(f"{TABLE}/_00000000000000000001.parquet.tmp")
    created = temp.create_file()
    for i, part in enumerate((b"PAR1", b"body", b"PAR1")):
        temp.append_data(part, offset=4 * i, length=4)
        # append never changes the ETag (the SDK's upload_data flushes with the create's ETag)
        assert temp.get_file_properties().etag == created["etag"]
    temp.flush_data(12)
    temp.rename_file(f"ws1/{TABLE}/00000000000000000001.parquet")
    final = fs.get_file_client(f"{TABLE}/00000000000000000001.parquet")
    assert final.exists() and not temp.exists()
    assert final.get_file_properties().size == 12
    assert final.download_file().readall() == b"PAR1bodyPAR1"
    assert final.download_file(offset=4, length=4).readall() == b"body"
    landed = endpoint.landing / "sales.schema" / "orders"
    assert (landed / "00000000000000000001.parquet").read_bytes() == b"PAR1bodyPAR1"
    # temp-then-rename never trips the 0-byte finding (the 0-byte window, the serve half)
    assert not [f for f in report(endpoint)["findings"] if f["kind"] == "zero-byte-visible"]


def test_listing_pages_through_continuation_in_byte_order(endpoint, fs):
    for name in ("b.csv", "A.csv", "_x.json", "0.csv", "a.csv"):
        fs.get_file_client(f"{LZ}/paging/{name}").upload_data(b"x", overwrite=True)
    pages = list(fs.get_paths(f"{LZ}/paging", recursive=False, max_results=2).by_page())
    names = [p.name.rsplit("/", 1)[1] for page in pages for p in page]
    assert names == ["0.csv", "A.csv", "_x.json", "a.csv", "b.csv"]
    assert len(pages) == 3
    fs.get_directory_client(f"{LZ}/paging").delete_directory()  # recursive=true&paginated=true
    assert not (endpoint.landing / "paging").exists()


def test_the_documented_negative_answers(endpoint, fs):
    new = fs.get_file_client(f"{LZ}/neg/new.csv")
    with pytest.raises(ResourceNotFoundError) as info:  # #16166: no create, append → 404
        new.upload_data(b"abc", overwrite=False)
    assert info.value.error_code == "PathNotFound"
    existing = fs.get_file_client(f"{LZ}/neg/existing.csv")
    existing.upload_data(b"one", overwrite=True)
    with pytest.raises((ResourceModifiedError, ResourceExistsError, HttpResponseError)) as info:
        existing.upload_data(b"two", overwrite=False)
    assert info.value.error_code == "ConditionNotMet"
    assert existing.download_file().readall() == b"one"
    with pytest.raises(ResourceNotFoundError) as info:
        fs.get_file_client(f"{LZ}/neg/missing.csv").download_file()
    assert info.value.status_code == 404
    with pytest.raises(ResourceNotFoundError) as info:
        fs.get_file_client(f"{LZ}/neg/missing.csv").rename_file(f"ws1/{LZ}/neg/other.csv")
    assert info.value.error_code == "SourcePathNotFound"


def test_rename_through_an_account_url_carrying_the_item_prefix(endpoint):
    """fabric-toolbox's OpenMirroringClient builds the service client on `.../<ws>/<item>/Files`
    with file_system="LandingZone"; the SDK's rename then sends `/LandingZone/...`, which the
    service answers SourcePathNotFound (the reason that client renames with raw REST)."""
    url = f"{endpoint.ready['account_url']}/ws1/{ITEM}/Files"
    lz = DataLakeServiceClient(url, credential=DefaultAzureCredential()).get_file_system_client(
        "LandingZone")
    lz.get_file_client("prefixed/_1.csv").upload_data(b"a", overwrite=True)
    assert (endpoint.landing / "prefixed" / "_1.csv").read_bytes() == b"a"
    with pytest.raises(ResourceNotFoundError) as info:
        lz.get_file_client("prefixed/_1.csv").rename_file("LandingZone/prefixed/1.csv")
    assert info.value.error_code == "SourcePathNotFound"
    hints = [f["message"] for f in report(endpoint)["findings"]
             if f["kind"] == "rename-source-not-found"]
    assert any("fabric-toolbox" in h for h in hints)


def test_blob_dialect_put_blob_blocks_and_listing(endpoint):
    service = BlobServiceClient(endpoint.ready["account_url"], credential=DefaultAzureCredential(),
                                max_single_put_size=1024, max_block_size=1024)
    container = service.get_container_client("ws1")
    container.upload_blob(f"{LZ}/blob/small.csv", b"a,b\n1,2\n")
    big = bytes(range(256)) * 20  # 5,120 bytes: Put Block ×5 + Put Block List
    container.upload_blob(f"{LZ}/blob/big.bin", big)
    assert (endpoint.landing / "blob" / "big.bin").read_bytes() == big
    assert container.download_blob(f"{LZ}/blob/big.bin").readall() == big
    flat = [b.name for b in container.list_blobs(name_starts_with=f"{LZ}/blob/")]
    assert flat == [f"{LZ}/blob/big.bin", f"{LZ}/blob/small.csv"]
    walked = [b.name for b in container.walk_blobs(name_starts_with=f"{LZ}/", delimiter="/")]
    assert f"{LZ}/blob/" in walked
    container.delete_blob(f"{LZ}/blob/small.csv")
    assert not (endpoint.landing / "blob" / "small.csv").exists()


def test_the_account_lists_the_one_workspace(endpoint):
    credential = DefaultAzureCredential()
    dfs = DataLakeServiceClient(endpoint.ready["account_url"], credential=credential)
    assert [f.name for f in dfs.list_file_systems()] == ["ws1"]
    blob = BlobServiceClient(endpoint.ready["account_url"], credential=credential)
    assert [c.name for c in blob.list_containers()] == ["ws1"]


def test_monitoring_and_tables_are_read_only(endpoint, fs):
    tables = fs.get_file_client(f"{ITEM}/Files/Monitoring/tables.json")
    assert json.loads(tables.download_file().readall()) == {"tables": []}
    replicator = json.loads(fs.get_file_client(f"{ITEM}/Files/Monitoring/replicator.json")
                            .download_file().readall())
    assert set(replicator) == {"status", "errorCode", "errorMessage"}
    with pytest.raises(HttpResponseError) as info:
        tables.upload_data(b"{}", overwrite=True)
    assert info.value.status_code == 403
    log = endpoint.warehouse / "sales" / "orders" / "_delta_log"
    log.mkdir(parents=True)
    (log / "00000000000000000000.json").write_text('{"commitInfo":{}}\n')
    read = fs.get_file_client(f"{ITEM}/Tables/sales/orders/_delta_log/00000000000000000000.json")
    assert read.download_file().readall() == b'{"commitInfo":{}}\n'
    with pytest.raises(HttpResponseError) as info:
        fs.get_file_client(f"{ITEM}/Tables/sales/orders/x.parquet").upload_data(b"x", overwrite=True)
    assert info.value.status_code == 403 and info.value.error_code == "OperationNotAllowedOnPath"
    with pytest.raises(HttpResponseError) as info:
        fs.create_directory(f"{ITEM}/Files/Elsewhere")
    assert info.value.status_code == 403
    (endpoint.warehouse / "tables.json").write_text('{"tables": []}')  # monitoring, not a table
    assert [p.name for p in fs.get_paths(f"{ITEM}/Tables", recursive=False)] == [
        f"{ITEM}/Tables/sales"]


def test_direct_upload_to_the_final_name_is_reported(endpoint, fs):
    """The 0-byte window, the serve half: the 0-byte window of create-then-flush under a data file's name."""
    fs.get_file_client(f"{TABLE}/00000000000000000003.parquet").upload_data(b"PAR1", overwrite=True)
    findings = report(endpoint)["findings"]
    zero = [f["path"] for f in findings if f["kind"] == "zero-byte-visible"]
    assert [p for p in zero if p.startswith(TABLE)] == [f"{TABLE}/00000000000000000003.parquet"]
    assert f"{LZ}/paging/b.csv" in zero  # upload_data straight to a data file's name
    gap = [f for f in findings if f["kind"] == "sequence-gap" and f["path"].startswith(TABLE)]
    assert gap and "00000000000000000002.parquet" in gap[0]["message"]
    warnings = [e for e in endpoint.events() if "zero-byte-visible" in e.get("message", "")]
    assert warnings and warnings[0]["event"] == "error"


def test_fabric_toolbox_call_sequence(endpoint):
    """The OpenMirroringClient sequence of microsoft/fabric-toolbox
    tools/OpenMirroringPythonSDK/openmirroring_operations.py @b4636ef9 (replayed with the same
    libraries and parameters, none of its code): a service client on `.../<ws>/<item>/Files`,
    a listing on the deep path `LandingZone/<s>.schema/<t>` (no directory=), and the rename as a
    raw `requests.put` with a full-URL x-ms-rename-source."""
    import requests

    since = len(endpoint.events())
    files_url = f"{endpoint.ready['account_url']}/ws1/{ITEM}/Files"
    service = DataLakeServiceClient(files_url, credential=DefaultAzureCredential())
    folder = "sales.schema/ft"
    lz = service.get_file_system_client("LandingZone")
    lz.create_directory(folder)
    for sequence in (1, 2):
        table = service.get_file_system_client(f"LandingZone/{folder}")
        names = [os_basename(p.name) for p in table.get_paths(recursive=False)]
        numbers = [int(n.split(".")[0]) for n in names if not n.startswith("_") and n.endswith(".parquet")]
        name = f"{(max(numbers) if numbers else 0) + 1:020d}.parquet"
        assert name == f"{sequence:020d}.parquet"  # get_next_file_name's answer
        lz.get_file_client(f"{folder}/_{name}").upload_data(b"PAR1", overwrite=True)
        response = requests.put(f"{files_url}/LandingZone/{folder}/{name}", headers={
            "Authorization": "Bearer token", "x-ms-version": "2020-06-12",
            "x-ms-rename-source": f"{files_url}/LandingZone/{folder}/_{name}"}, timeout=30)
        assert response.status_code == 201
    assert sorted(p.name for p in (endpoint.landing / "sales.schema" / "ft").iterdir()) == [
        "00000000000000000001.parquet", "00000000000000000002.parquet"]
    status = service.get_file_system_client("Monitoring").get_file_client("tables.json")
    assert "tables" in json.loads(status.download_file().readall())
    check_trace("fabric_toolbox", trace(endpoint, since))


def test_mongodb_connector_call_sequence(endpoint):
    """The raw-REST upload of mongodb-partners/MongoDB_Fabric_Mirroring push_file_to_lz.py
    @514442c (replayed with `requests`): no x-ms-version on create/append, append with
    flush=true, and a full-URL rename source with a stray `?resource=file`."""
    import requests

    since = len(endpoint.events())
    lz_url = endpoint.ready["account_url"] + f"/ws1/{ITEM}/Files/LandingZone"
    auth = {"Authorization": "Bearer token"}
    temp = f"{lz_url}/mongo/_00000000000000000001.parquet_TEMP"
    assert requests.put(f"{temp}?resource=file", headers={**auth, "content-length": "0"},
                        timeout=30).status_code == 201
    assert requests.patch(f"{temp}?position=0&action=append&flush=true", data=b"PAR1data",
                          headers={**auth, "x-ms-file-name": "x"}, timeout=30).status_code == 200
    final = f"{lz_url}/mongo/00000000000000000001.parquet"
    response = requests.put(final, headers={**auth, "x-ms-version": "2020-06-12",
                                            "x-ms-rename-source": f"{temp}?resource=file"}, timeout=30)
    assert response.status_code == 201
    assert requests.get(final, headers=auth, timeout=30).content == b"PAR1data"
    assert requests.delete(final, headers=auth, timeout=30).status_code in (200, 202)
    assert not (endpoint.landing / "mongo" / "00000000000000000001.parquet").exists()
    check_trace("mongodb", trace(endpoint, since))


def os_basename(name: str) -> str:
    return name.rsplit("/", 1)[-1]
