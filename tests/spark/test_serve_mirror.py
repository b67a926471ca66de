"""The Azure SDK publisher's last step and the 0-byte window (docs/onelake.md, "Acceptance"): a publisher written with the Azure SDK lands a
table through `mirrorspec serve --mirror-every`, the real engine (a `mirrorspec mirror --watch`
child process) applies it, and `Files/Monitoring/tables.json`, read back through the SDK, shows
it. A publisher that creates a data file under its final name and flushes it later is caught:
the engine stops the table on the 0-byte file (as Fabric does) and serve reports the window.

Waits are on states (tables.json), never on timings."""

from __future__ import annotations

import pytest

import io
import json
import os
import time


from tests.support.no_jvm import skip_unless
from tests.support.mirror_cli import SHORT_JVM_OPTIONS
from tests.support.onelake_server import OneLakeServe

pytestmark = pytest.mark.extra  # a slow end-to-end extra: `make test-extras`

try:
    from azure.identity import DefaultAzureCredential
    from azure.storage.filedatalake import DataLakeServiceClient
    HAVE_SDK = True
except ImportError:
    HAVE_SDK = False

ITEM = "db.MountedRelationalDatabase"
TABLE = f"{ITEM}/Files/LandingZone/sales.schema/orders"
MIRROR_CONF = ("spark.master=local[1]", "spark.sql.shuffle.partitions=1", "spark.ui.enabled=false",
               f"spark.driver.extraJavaOptions={SHORT_JVM_OPTIONS}")


def descendants(pid: int) -> list[int]:
    """The processes below `pid` (the mirror child and the JVM it started)."""
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as handle:
            for child in map(int, handle.read().split()):
                found += [child, *descendants(child)]
    return found


def gone(pids: list[int], limit: float = 30.0) -> bool:
    """True once none of `pids` runs (a zombie reaped by init counts as gone)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if not [p for p in pids if os.path.exists(f"/proc/{p}")]:
            return True
        time.sleep(0.2)  # polling process state
    return False


def parquet(ids: list[int]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table({"id": ids, "amount": [i * 10 for i in ids],
                             "__rowMarker__": [0] * len(ids)}), sink)
    return sink.getvalue()


def wait_for(fs, predicate, what: str, server, limit: float = 300.0) -> dict:
    """Read tables.json through the SDK until `predicate(entry)` holds for orders."""
    monitoring = fs.get_file_client(f"{ITEM}/Files/Monitoring/tables.json")
    deadline = time.monotonic() + limit
    entry: dict = {}
    while time.monotonic() < deadline:
        doc = json.loads(monitoring.download_file().readall())
        entry = next((t for t in doc["tables"] if t["sourceTableName"] == "orders"), {})
        if entry and predicate(entry):
            return entry
        assert server.process.poll() is None, server.log()
        time.sleep(0.5)  # polling the engine's published state
    raise AssertionError(f"tables.json never showed {what}; last entry {entry}\n{server.log()[-4000:]}")


def test_sdk_publisher_mirrors_and_the_zero_byte_race_is_caught(tmp_path, monkeypatch):
    skip_unless(HAVE_SDK, "the Azure SDK (pip install 'mirrorspec[onelake-test]') is not installed")
    args = ["--self-signed", "--workspace", "ws", "--item", "db", "--mirror-every", "1",
            "--report", str(tmp_path / "report.json")]
    for pair in MIRROR_CONF:
        args += ["--mirror-conf", pair]
    server = OneLakeServe(tmp_path, *args)
    try:
        monkeypatch.setenv("REQUESTS_CA_BUNDLE", server.ready["ca_file"])
        monkeypatch.setenv("IDENTITY_ENDPOINT", server.ready["token_url"])
        monkeypatch.setenv("IDENTITY_HEADER", "x")
        fs = DataLakeServiceClient(server.ready["account_url"], credential=DefaultAzureCredential()
                                   ).get_file_system_client("ws")
        fs.get_file_client(f"{TABLE}/_metadata.json").upload_data(b'{"keyColumns": ["id"]}',
                                                                 overwrite=True)
        temp = fs.get_file_client(f"{TABLE}/_00000000000000000001.parquet")  # temp, then rename
        temp.upload_data(parquet([1, 2, 3]), overwrite=True)
        temp.rename_file(f"ws/{TABLE}/00000000000000000001.parquet")
        entry = wait_for(fs, lambda e: e["metrics"]["processedRowCount"] == 3, "3 rows", server)
        assert entry["status"] == "Replicating"

        racer = fs.get_file_client(f"{TABLE}/00000000000000000002.parquet")
        racer.create_file()  # visible with 0 bytes until the flush below
        stopped = wait_for(fs, lambda e: e["status"] == "Failed", "the zero-byte stop", server)
        assert "zero-byte" in stopped["errorMessage"]
        data = parquet([4, 5])
        racer.append_data(data, offset=0, length=len(data))
        racer.flush_data(len(data))
        wait_for(fs, lambda e: e["metrics"]["processedRowCount"] == 5 and e["status"] != "Failed",
                 "5 rows after the re-write", server)
        children = descendants(server.process.pid)
        assert len(children) >= 2  # the mirror process and its JVM
    finally:
        assert server.stop() == 0
    assert gone(children)  # neither the mirror process nor its JVM outlives serve
    findings = json.loads((tmp_path / "report.json").read_text())["findings"]
    assert [f["path"] for f in findings if f["kind"] == "zero-byte-visible"] == [
        f"{TABLE}/00000000000000000002.parquet"]
    from mirrorspec.readers.delta import preview

    columns, rows, _version = preview(str(server.warehouse / "sales" / "orders"), order_by=["id"])
    assert [row[columns.index("id")] for row in rows] == [1, 2, 3, 4, 5]
