"""azcopy (the released binary, MSI login through IDENTITY_ENDPOINT) running a mirroring
publisher's everyday steps against MS_ACCOUNT_URL: one `STEP <name> ok|FAIL <why>|skip <why>`
line per step. azcopy has no rename, range read or lease: those steps are skips.

azcopy sends a token only to hosts it trusts: `--trusted-microsoft-suffixes 127.0.0.1:PORT`;
an IP host names no service, so every command carries `--from-to` (Blob or BlobFS)."""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote, urlsplit

AZCOPY = os.environ["MS_AZCOPY"]
URL = os.environ["MS_ACCOUNT_URL"]
WS, ITEM, CLIENT = os.environ["MS_WS"], os.environ["MS_ITEM"], os.environ["MS_CLIENT"]
SRC = Path(os.environ["MS_SRC"])
LISTED = int(os.environ["MS_LISTED"])
HOST = urlsplit(URL).netloc
LZ = f"{URL}/{WS}/{ITEM}/Files/LandingZone/{CLIENT}.schema"
TABLE = f"{LZ}/orders"
WORK = Path(tempfile.mkdtemp(prefix="azcopy-driver-"))
failures = 0


def azcopy(*args: str) -> str:
    done = subprocess.run([AZCOPY, *args, "--trusted-microsoft-suffixes", HOST],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200,
                          env={**os.environ, "AZCOPY_AUTO_LOGIN_TYPE": "MSI",
                               "AZCOPY_LOG_LOCATION": str(WORK / "logs"),
                               "AZCOPY_JOB_PLAN_LOCATION": str(WORK / "plans")})
    if done.returncode != 0 or re.search(r"Number of File Transfers Failed: [1-9]", done.stdout):
        raise RuntimeError(f"azcopy {args[0]} exited {done.returncode}: "
                           + " ".join(done.stdout.split())[-600:])
    return done.stdout


def step(name: str, body) -> None:
    global failures
    try:
        skipped = body()
        print(f"STEP {name} skip {skipped}" if skipped else f"STEP {name} ok", flush=True)
    except Exception as exc:  # noqa: BLE001 - one FAIL line per step, the driver goes on
        failures += 1
        print(f"STEP {name} FAIL {' '.join(str(exc).split())[:400]}", flush=True)


def head(url: str) -> dict[str, str]:
    """HEAD through the endpoint itself (to read back what azcopy set)."""
    parts = urlsplit(url)
    context = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"])
    conn = http.client.HTTPSConnection(parts.hostname, parts.port, context=context, timeout=30)
    try:
        conn.request("HEAD", quote(parts.path), headers={"Authorization": "Bearer any"})
        response = conn.getresponse()
        response.read()
        return {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


def check(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(what)


def same(local: Path, source: str) -> None:
    check(local.read_bytes() == (SRC / source).read_bytes(), f"{local.name} differs from {source}")


def create_table():
    azcopy("copy", str(SRC / "_metadata.json"), f"{TABLE}/_metadata.json", "--from-to", "LocalBlobFS")


def list_paged():
    out = azcopy("list", f"{LZ}/big/", "--running-tally", "--location", "Blob")
    found = re.search(r"File count: (\d+)", out)
    check(found is not None and int(found.group(1)) == LISTED, f"azcopy list: {out[-300:]}")


def seed_first():
    azcopy("copy", str(SRC / "small.bin"), f"{TABLE}/00000000000000000001.parquet",
           "--from-to", "LocalBlob", "--put-md5")


def read_full():
    seed_first()
    target = WORK / "first.bin"
    azcopy("copy", f"{TABLE}/00000000000000000001.parquet", str(target), "--from-to", "BlobLocal",
           "--check-md5", "FailIfDifferentOrMissing")
    same(target, "small.bin")


def properties():
    azcopy("set-properties", f"{TABLE}/00000000000000000001.parquet", "--metadata=stage=published",
           "--from-to", "BlobNone")
    azcopy("copy", str(SRC / "small.bin"), f"{TABLE}/typed.parquet", "--from-to", "LocalBlob",
           "--content-type", "application/vnd.apache.parquet", "--metadata", "stage=typed")
    first, typed = head(f"{TABLE}/00000000000000000001.parquet"), head(f"{TABLE}/typed.parquet")
    check(first.get("x-ms-meta-stage") == "published", f"metadata after set-properties: {first}")
    check(typed.get("content-type") == "application/vnd.apache.parquet"
          and typed.get("x-ms-meta-stage") == "typed", f"properties on upload: {typed}")


def overwrite():
    azcopy("copy", str(SRC / "small.bin"), f"{TABLE}/data.csv", "--from-to", "LocalBlob")
    azcopy("copy", str(SRC / "small2.bin"), f"{TABLE}/data.csv", "--from-to", "LocalBlob",
           "--overwrite", "true")


def if_none_match():
    out = azcopy("copy", str(SRC / "small.bin"), f"{TABLE}/data.csv", "--from-to", "LocalBlob",
                 "--overwrite", "false")
    check("Number of File Transfers Skipped: 1" in out, f"not skipped: {out[-300:]}")


def upload_big():
    azcopy("copy", str(SRC / "big.bin"), f"{TABLE}/big.bin", "--from-to", "LocalBlobFS",
           "--block-size-mb", "8", "--put-md5")
    target = WORK / "big.bin"
    azcopy("copy", f"{TABLE}/big.bin", str(target), "--from-to", "BlobLocal",
           "--check-md5", "FailIfDifferentOrMissing")
    same(target, "big.bin")
    target.unlink()


def concurrent():
    folder = WORK / "many"
    folder.mkdir()
    for i in range(16):
        shutil.copy(SRC / "small2.bin", folder / f"c{i:02d}.bin")
    azcopy("copy", f"{folder}/*", f"{TABLE}/", "--from-to", "LocalBlob")


def delete_recursive():
    folder = WORK / "scratch" / "a"
    folder.mkdir(parents=True)
    shutil.copy(SRC / "small2.bin", folder / "b.bin")
    shutil.copy(SRC / "small2.bin", folder.parent / "c.bin")
    azcopy("copy", str(folder.parent), f"{LZ}/", "--from-to", "LocalBlobFS", "--recursive")
    azcopy("remove", f"{LZ}/scratch", "--from-to", "BlobFSTrash", "--recursive")


def monitoring():
    target = WORK / "tables.json"
    azcopy("copy", f"{URL}/{WS}/{ITEM}/Files/Monitoring/tables.json", str(target),
           "--from-to", "BlobLocal")
    check("tables" in json.loads(target.read_text()), "tables.json has no tables")


step("create-table", create_table)
step("temp-rename", lambda: "azcopy has no rename")
step("list-paged", list_paged)
step("read-full", read_full)
step("read-range", lambda: "azcopy has no range read")
step("properties-metadata", properties)
step("overwrite", overwrite)
step("if-none-match", if_none_match)
step("upload-big", upload_big)
step("concurrent-16", concurrent)
step("lease", lambda: "azcopy has no lease command")
step("delete-recursive", delete_recursive)
step("monitoring", monitoring)
shutil.rmtree(WORK, ignore_errors=True)
sys.exit(1 if failures else 0)
