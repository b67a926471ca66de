"""`make test-clients`: a mirrored database end to end through Fabric's REST API, published by
the Azure Java SDK (docs/onelake.md "A mirrored database through /v1 with the Java SDK").

A service principal gets client-credentials tokens from serve's Entra ID, creates a workspace
and a mirrored database (`POST /v1/workspaces/{ws}/mirroredDatabases`, a base64 `mirroring.json`
definition), starts mirroring; the Java driver (tests/clients/java/PublishTable.java, its own
ClientSecretCredential against AZURE_AUTHORITY_HOST=serve) publishes one table into the item's
landing zone; `getTablesMirroringStatus` is read until the table is Replicating with its row
count. serve is then restarted on the same `--root`: the started mirroring is restarted with it,
and `stopMirroring` ends the engine and every process it started. Waits are on states.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import ssl
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from tests.clients.test_clients import InstallFailed, java_runner
from tests.support.mirror_cli import SHORT_JVM_OPTIONS
from tests.support.onelake_server import OneLakeServe

pytestmark = [pytest.mark.clients, pytest.mark.skipif(
    os.environ.get("MIRRORSPEC_TEST_CLIENTS") != "1",
    reason="installs Azure clients from their registries: run `make test-clients`")]

TENANT = "11111111-2222-3333-4444-555555555555"
APP, SECRET = "publisher-app", "publisher-secret"
FABRIC_SCOPE = "https://api.fabric.microsoft.com/.default"
MIRROR_CONF = ("spark.master=local[1]", "spark.sql.shuffle.partitions=1", "spark.ui.enabled=false",
               f"spark.driver.extraJavaOptions={SHORT_JVM_OPTIONS}")
MIRRORING = {"properties": {"source": {"type": "GenericMirror", "typeProperties": {}},
                            "target": {"type": "MountedRelationalDatabase",
                                       "typeProperties": {"format": "Delta"}}}}
ROWS = [1, 2, 3, 4, 5]
REPLICATING_WITHIN = 600  # seconds: a JVM start and a first batch on a loaded 2-core machine


class Fabric:
    """Fabric's REST API as a service principal calls it: a client-credentials token from the
    tenant's v2.0 token endpoint, `Authorization: Bearer` on every `/v1` call."""

    def __init__(self, ready: dict):
        self.url = ready["url"]
        self.authority = ready["authority_host"]
        self.tls = ssl.create_default_context(cafile=ready["ca_file"])
        self._token = ""

    def token(self) -> str:
        if not self._token:
            form = urllib.parse.urlencode({"grant_type": "client_credentials", "client_id": APP,
                                           "client_secret": SECRET, "scope": FABRIC_SCOPE})
            status, doc = self._send(f"{self.authority}/{TENANT}/oauth2/v2.0/token", "POST",
                                     form.encode(), "application/x-www-form-urlencoded", auth=False)
            assert status == 200 and doc["token_type"] == "Bearer", doc
            self._token = doc["access_token"]
        return self._token

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict | None]:
        data = json.dumps(body).encode() if body is not None else None
        return self._send(f"{self.url}/v1/{path}", method, data, "application/json")

    def _send(self, url: str, method: str, data: bytes | None, content_type: str,
              auth: bool = True) -> tuple[int, dict | None]:
        headers = {"Content-Type": content_type}
        if auth:
            headers["Authorization"] = f"Bearer {self.token()}"
        request = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, context=self.tls, timeout=60) as answer:
                status, text = answer.status, answer.read()
        except urllib.error.HTTPError as refused:
            status, text = refused.code, refused.read()
        return status, (json.loads(text) if text else None)


def parquet(ids: list[int]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table({"id": ids, "name": [f"n{i}" for i in ids],
                             "__rowMarker__": [0] * len(ids)}), sink)
    return sink.getvalue()


def process_tree(pid: int) -> set[int]:
    """`pid` and its descendants now alive (from /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    tree, grew = {pid} if pid in parents else set(), True
    while grew:
        more = {child for child, parent in parents.items() if parent in tree} - tree
        grew = bool(more)
        tree |= more
    return tree


def alive(pids: set[int]) -> set[int]:
    """Those of `pids` still running (a zombie has ended)."""
    left = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z":
            left.add(pid)
    return left


def engine_of(server: OneLakeServe, verb: str) -> int:
    """The pid of the one engine serve says it `verb` (started, restarted) for orders_db."""
    said = [e["message"] for e in server.events()
            if e.get("message", "").startswith(f"mirroring {verb} for sales/orders_db")]
    assert len(said) == 1, server.log()[-4000:]
    return int(re.search(r"engine pid (\d+)", said[0]).group(1))


def stop_and_check(fabric: Fabric, base: str, pid: int) -> None:
    """stopMirroring ends the engine and, shortly after, every process it started."""
    tree = process_tree(pid)
    assert pid in tree, "the engine ended before stopMirroring"
    assert fabric.call("POST", f"{base}/stopMirroring") == (200, None)
    assert fabric.call("POST", f"{base}/getMirroringStatus") == (200, {"status": "Stopped"})
    assert pid not in alive(tree), "stopMirroring returned with the engine running"
    gone_by(tree)


def gone_by(tree: set[int]) -> None:
    left = alive(tree)
    deadline = time.monotonic() + 60
    while left and time.monotonic() < deadline:  # the JVM ends when its parent's pipe closes
        time.sleep(0.2)
        left = alive(tree)
    assert not left, f"processes of the engine left: {sorted(left)}"


def test_java_sdk_publishes_into_a_mirrored_database_created_through_v1(tmp_path):
    sources = tmp_path / "sources"
    sources.mkdir()
    (sources / "_metadata.json").write_text('{"keyColumns": ["id"]}\n')
    (sources / "data.parquet").write_bytes(parquet(ROWS))
    args = ["--self-signed", "--require-auth", "--client", f"{APP}:{SECRET}",
            "--mirror-every", "1"]
    for pair in MIRROR_CONF:
        args += ["--mirror-conf", pair]
    server = OneLakeServe(tmp_path, *args, root=tmp_path / "root")
    try:
        try:
            command = java_runner(server)
        except InstallFailed as exc:
            pytest.skip(f"java: could not install the Azure Java SDK: {exc}")
        fabric = Fabric(server.ready)
        status, ws = fabric.call("POST", "workspaces", {"displayName": "sales"})
        assert status == 201, ws
        payload = base64.b64encode(json.dumps(MIRRORING).encode()).decode()
        status, item = fabric.call("POST", f"workspaces/{ws['id']}/mirroredDatabases", {
            "displayName": "orders_db", "description": "published by the Java SDK",
            "definition": {"parts": [{"path": "mirroring.json", "payload": payload,
                                      "payloadType": "InlineBase64"}]}})
        assert status == 201, item
        base = f"workspaces/{ws['id']}/mirroredDatabases/{item['id']}"
        assert fabric.call("POST", f"{base}/startMirroring") == (200, None)
        assert fabric.call("POST", f"{base}/getMirroringStatus") == (200, {"status": "Running"})
        engine_pid = engine_of(server, "started")

        published = subprocess.run([*command, "PublishTable"], env={
            **os.environ, "MS_AUTHORITY_HOST": server.ready["authority_host"],
            "MS_TENANT": TENANT, "MS_CLIENT_ID": APP, "MS_CLIENT_SECRET": SECRET,
            "MS_ACCOUNT_URL": server.ready["account_url"], "MS_WS": ws["id"],
            "MS_ITEM": item["id"], "MS_TABLE": "sales.schema/orders", "MS_SRC": str(sources)},
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
        steps = [line for line in published.stdout.splitlines() if line.startswith("STEP ")]
        assert published.returncode == 0 and steps == [
            "STEP metadata ok", "STEP data-temp ok", "STEP data-rename ok"], published.stdout[-4000:]

        deadline = time.monotonic() + REPLICATING_WITHIN
        entry: dict = {}
        while time.monotonic() < deadline:
            status, page = fabric.call("POST", f"{base}/getTablesMirroringStatus")
            assert status == 200, page
            entry = next((t for t in page["data"] if t["sourceTableName"] == "orders"), {})
            if entry.get("status") == "Replicating" and \
                    entry["metrics"]["processedRows"] == len(ROWS):
                break
            assert entry.get("status") in (None, "Running", "Replicating"), entry
            assert server.process.poll() is None, server.log()[-4000:]
            time.sleep(1)  # polling the engine's published state
        else:
            raise AssertionError(f"never Replicating with {len(ROWS)} rows: {entry}\n"
                                 f"{server.log()[-4000:]}")
        assert entry["sourceSchemaName"] == "sales"

        engine = process_tree(engine_pid)
    finally:
        assert server.stop() == 0, server.log()[-4000:]
    gone_by(engine)  # serve's stop ends the engine; the item stays started

    again = tmp_path / "again"
    again.mkdir()
    server = OneLakeServe(again, *args, root=tmp_path / "root")
    try:
        fabric = Fabric(server.ready)
        resumed = engine_of(server, "restarted")
        assert fabric.call("POST", f"{base}/getMirroringStatus") == (200, {"status": "Running"})
        status, page = fabric.call("POST", f"{base}/getTablesMirroringStatus")
        assert status == 200 and [(t["sourceTableName"], t["status"],
                                   t["metrics"]["processedRows"]) for t in page["data"]] == [
            ("orders", "Replicating", len(ROWS))], page
        stop_and_check(fabric, base, resumed)
    finally:
        assert server.stop() == 0, server.log()[-4000:]
    landing = tmp_path / "root" / ws["id"] / item["id"] / "Files" / "LandingZone"
    table = landing / "sales.schema" / "orders"
    assert not list(table.glob("_*.tmp")), "the temporary upload is still there"
