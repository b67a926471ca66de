"""`make demo-onelake`: `mirrorspec serve --self-signed --mirror-every 1`, a publisher written with
the Azure SDK (nothing of mirrorspec on its side), and Fabric's outcome read back through it.

1. serve starts with a fresh CA; the publisher takes its token from serve's managed-identity
   route through DefaultAzureCredential, exactly as on Azure App Service;
2. it lands `sales.orders` the way Microsoft's Open Mirroring SDK does: `_metadata.json`, then
   each Parquet file under a `_` temporary name, renamed to its 20-digit name;
3. it reads `Files/Monitoring/tables.json` back through the SDK until the engine has applied the
   rows, and shows them (read with delta-rs from the warehouse);
4. it uploads the next file straight to its final name (create, then append and flush) and shows
   the conformance warning serve reports for the 0-byte window.

Work folder: $MIRRORSPEC_DEMO_DIR, else a temporary one (kept when MIRRORSPEC_DEMO_KEEP=1).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TABLE = "shop.MountedRelationalDatabase/Files/LandingZone/sales.schema/orders"


def parquet(rows: list[tuple[int, str, int]]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    pq.write_table(pa.table({"order_id": [r[0] for r in rows], "item": [r[1] for r in rows],
                             "__rowMarker__": [r[2] for r in rows]}), sink)
    return sink.getvalue()


def wait_ready(path: Path, process: subprocess.Popen) -> dict:
    deadline = time.monotonic() + 60
    while not path.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("serve did not start")
        time.sleep(0.1)
    return json.loads(path.read_text())


def main() -> int:
    keep = os.environ.get("MIRRORSPEC_DEMO_KEEP") == "1"
    work = Path(os.environ.get("MIRRORSPEC_DEMO_DIR") or tempfile.mkdtemp(prefix="mirrorspec-onelake."))
    work.mkdir(parents=True, exist_ok=True)
    ready_file = work / "serve.json"
    command = [sys.executable, "-m", "mirrorspec", "serve", "--landing-zone", str(work / "landing_zone"),
               "--warehouse", str(work / "warehouse"), "--workspace", "shop", "--self-signed",
               "--mirror-every", "1", "--mirror-conf", "spark.master=local[1]",
               "--mirror-conf", "spark.sql.shuffle.partitions=1",
               "--ready-file", str(ready_file), "--report", str(work / "conformance.json")]
    print("== " + " ".join(command[2:]), flush=True)
    serve = subprocess.Popen(command, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        ready = wait_ready(ready_file, serve)
        os.environ.update(REQUESTS_CA_BUNDLE=ready["ca_file"], IDENTITY_ENDPOINT=ready["token_url"],
                          IDENTITY_HEADER="demo")
        from azure.identity import DefaultAzureCredential
        from azure.storage.filedatalake import DataLakeServiceClient

        fs = DataLakeServiceClient(ready["account_url"], DefaultAzureCredential()
                                   ).get_file_system_client("shop")
        print(f"== publishing sales.orders to {ready['landing_zone_url']}", flush=True)
        fs.get_file_client(f"{TABLE}/_metadata.json").upload_data(
            b'{"keyColumns": ["order_id"]}', overwrite=True)
        for sequence, rows in ((1, [(1, "apple", 0), (2, "pear", 0), (3, "fig", 0)]),
                               (2, [(2, "quince", 1), (3, "", 2)])):
            name = f"{sequence:020d}.parquet"
            temp = fs.get_file_client(f"{TABLE}/_{name}")
            temp.upload_data(parquet(rows), overwrite=True)
            temp.rename_file(f"shop/{TABLE}/{name}")
            print(f"   {name}: uploaded as _{name}, renamed", flush=True)
        monitoring = fs.get_file_client("shop.MountedRelationalDatabase/Files/Monitoring/tables.json")
        deadline = time.monotonic() + 300
        entry: dict = {}
        while time.monotonic() < deadline:
            tables = json.loads(monitoring.download_file().readall())["tables"]
            entry = next((t for t in tables if t["sourceTableName"] == "orders"), {})
            if entry.get("metrics", {}).get("processedRowCount") == 5:
                break
            time.sleep(1)
        print("== Files/Monitoring/tables.json, read through the SDK:")
        print(json.dumps(entry, indent=2))
        from mirrorspec.readers.delta import preview

        columns, rows, version = preview(str(work / "warehouse" / "sales" / "orders"),
                                         order_by=["order_id"])
        print(f"== sales.orders (Delta version {version}): {columns}")
        for row in rows:
            print(f"   {row}")
        print("== uploading 00000000000000000003.parquet straight to its final name", flush=True)
        fs.get_file_client(f"{TABLE}/00000000000000000003.parquet").upload_data(
            parquet([(4, "kiwi", 0)]), overwrite=True)
        report = json.loads((work / "conformance.json").read_text())
        print("== serve's conformance report:")
        for finding in report["findings"]:
            print(f"   {finding['severity']}: {finding['kind']}: {finding['path']}\n"
                  f"      {finding['message']}")
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(60)
        if keep or os.environ.get("MIRRORSPEC_DEMO_DIR"):
            print(f"== work folder kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
