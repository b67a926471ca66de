"""Fabric's mirroring REST API drives the real engine (docs/onelake.md "Fabric REST API"): a
service principal (ClientSecretCredential against serve's Entra ID) creates a mirrored database
through `/v1`, starts it, publishes one table with the Azure SDK into the new item's landing
zone, and reads `getTablesMirroringStatus` until the table is Replicating with its row count;
`stopMirroring` ends the engine. Waits are on states, never on timings."""

from __future__ import annotations

import base64
import io
import json
import time

import pytest

from tests.support.no_jvm import skip_unless
from tests.support.mirror_cli import SHORT_JVM_OPTIONS
from tests.support.onelake_server import OneLakeServe

pytestmark = pytest.mark.spark

try:
    import requests
    from azure.identity import ClientSecretCredential
    from azure.storage.filedatalake import DataLakeServiceClient
    HAVE_SDK = True
except ImportError:
    HAVE_SDK = False

TENANT = "11111111-2222-3333-4444-555555555555"
APP, SECRET = "publisher-app", "publisher-secret"
MIRROR_CONF = ("spark.master=local[1]", "spark.sql.shuffle.partitions=1", "spark.ui.enabled=false",
               f"spark.driver.extraJavaOptions={SHORT_JVM_OPTIONS}")
MIRRORING = {"properties": {"source": {"type": "GenericMirror", "typeProperties": {}},
                            "target": {"type": "MountedRelationalDatabase",
                                       "typeProperties": {"format": "Delta"}}}}


def parquet(ids: list[int]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table({"id": ids, "__rowMarker__": [0] * len(ids)}), sink)
    return sink.getvalue()


def test_create_start_publish_and_read_the_table_status(tmp_path, monkeypatch):
    skip_unless(HAVE_SDK, "the Azure SDK (pip install 'mirrorspec[onelake-test]') is not installed")
    args = ["--self-signed", "--require-auth", "--client", f"{APP}:{SECRET}",
            "--mirror-every", "1"]
    for pair in MIRROR_CONF:
        args += ["--mirror-conf", pair]
    server = OneLakeServe(tmp_path, *args, root=tmp_path / "root")
    try:
        url = server.ready["url"]
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", server.ready["ca_file"])
        monkeypatch.setenv("AZURE_AUTHORITY_HOST", server.ready["authority_host"])
        credential = ClientSecretCredential(TENANT, APP, SECRET, disable_instance_discovery=True)

        def api(path: str, body=None) -> requests.Response:
            token = credential.get_token("https://api.fabric.microsoft.com/.default").token
            return requests.post(f"{url}/v1/{path}", json=body, timeout=60,
                                 headers={"Authorization": f"Bearer {token}"})

        # Fabric's switch for the change data feed: the engine serve starts honours it
        definition = json.loads(json.dumps(MIRRORING))
        definition["properties"]["target"].setdefault("typeProperties", {})[
            "enableDeltaChangeDataFeed"] = True
        payload = base64.b64encode(json.dumps(definition).encode()).decode()
        created = api("workspaces/local/mirroredDatabases", {
            "displayName": "orders_db", "definition": {"parts": [
                {"path": "mirroring.json", "payload": payload, "payloadType": "InlineBase64"}]}})
        assert created.status_code == 201, created.text
        item = created.json()
        base = f"workspaces/{item['workspaceId']}/mirroredDatabases/{item['id']}"
        assert api(f"{base}/startMirroring").status_code == 200
        assert api(f"{base}/getMirroringStatus").json() == {"status": "Running"}

        fs = DataLakeServiceClient(server.ready["account_url"], credential=credential
                                   ).get_file_system_client(item["workspaceId"])
        table = f"{item['id']}/Files/LandingZone/sales.schema/orders"
        fs.get_file_client(f"{table}/_metadata.json").upload_data(b'{"keyColumns": ["id"]}',
                                                                 overwrite=True)
        fs.get_file_client(f"{table}/00000000000000000001.parquet").upload_data(
            parquet([1, 2, 3]), overwrite=True)

        deadline = time.monotonic() + 300
        entry: dict = {}
        while time.monotonic() < deadline:
            page = api(f"{base}/getTablesMirroringStatus").json()
            entry = next((t for t in page["data"] if t["sourceTableName"] == "orders"), {})
            if entry.get("status") == "Replicating" and entry["metrics"]["processedRows"] == 3:
                break
            assert server.process.poll() is None, server.log()
            time.sleep(0.5)  # polling the engine's published state
        else:
            raise AssertionError(f"never Replicating with 3 rows: {entry}\n{server.log()[-4000:]}")
        assert entry["sourceSchemaName"] == "sales"
        import pyarrow as pa
        from deltalake import DeltaTable

        tables = tmp_path / "root" / item["workspaceId"] / item["id"] / "Tables"
        feed = pa.table(DeltaTable(str(tables / "sales" / "orders")).load_cdf(starting_version=0))
        assert sorted(zip(feed.column("id").to_pylist(),
                          feed.column("_change_type").to_pylist())) == [
            (1, "insert"), (2, "insert"), (3, "insert")]

        assert api(f"{base}/stopMirroring").status_code == 200
        assert api(f"{base}/getMirroringStatus").json() == {"status": "Stopped"}
    finally:
        assert server.stop() == 0
    landing = tmp_path / "root" / item["workspaceId"] / item["id"] / "Files" / "LandingZone"
    assert (landing / "sales.schema" / "orders" / "_metadata.json").exists()
