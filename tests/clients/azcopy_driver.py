"""azcopy (the released binary, MSI login through IDENTITY_ENDPOINT) running a mirroring
publisher's everyday steps against MS_ACCOUNT_URL: one `STEP <name> ok|FAIL <why>|skip <why>`
line per step. azcopy has no rename, range read or lease: those steps are skips. Two steps are
azcopy's own: `sync` sends only what changed, and `remove --recursive` through the Blob
endpoint answers as on ADLS Gen2 (tests/functional/test_serve_azcopy_wire.py replays both).

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
import time
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


def azcopy(*args: str, check: bool = True) -> str:
    done = subprocess.run([AZCOPY, *args, "--trusted-microsoft-suffixes", HOST],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1200,
                          env={**os.environ, "AZCOPY_AUTO_LOGIN_TYPE": "MSI",
                               "AZCOPY_LOG_LOCATION": str(WORK / "logs"),
                               "AZCOPY_JOB_PLAN_LOCATION": str(WORK / "plans")})
    failed = re.search(r"Number of (File |Folder )?Transfers Failed: [1-9]", done.stdout)
    if check and (done.returncode != 0 or failed):
        raise RuntimeError(f"azcopy {args[0]} exited {done.returncode}: "
                           + " ".join(done.stdout.split())[-600:])
    return done.stdout


def count(out: str, what: str) -> int:
    """A number from azcopy's job summary (`Total Number of Copy Transfers: 6`)."""
    found = re.search(rf"{what}: (\d+)", out)
    check(found is not None, f"no '{what}' in: {' '.join(out.split())[-300:]}")
    return int(found.group(1))


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


def sync_changed_only():
    """`azcopy sync` sends a file again only when its mtime is after the blob's Last-Modified
    (one-second resolution, as Azure's): files written well before their upload, then two
    edited, make 4 transfers and then 2."""
    folder = WORK / "sync"
    folder.mkdir()
    before = time.time() - 10
    for i in range(4):
        (folder / f"s{i}.csv").write_bytes((SRC / "small2.bin").read_bytes()[: 1000 + i])
        os.utime(folder / f"s{i}.csv", (before, before))
    target = f"{TABLE}/sync"
    first = azcopy("sync", str(folder), target, "--from-to", "LocalBlob")
    check(count(first, "Total Number of Copy Transfers") == 4, f"first sync: {first[-300:]}")
    again = azcopy("sync", str(folder), target, "--from-to", "LocalBlob")
    check(count(again, "Total Number of Copy Transfers") == 0, f"unchanged: {again[-300:]}")
    for name in ("s1.csv", "s3.csv"):
        (folder / name).write_bytes(b"edited\n")
    changed = azcopy("sync", str(folder), target, "--from-to", "LocalBlob")
    check(count(changed, "Total Number of Copy Transfers") == 2, f"after 2 edits: {changed[-300:]}")
    for name in ("s1.csv", "s3.csv"):
        check(head(f"{target}/{name}").get("content-length") == "7", f"{name} not sent")


def remove_blob_endpoint():
    """Blob-mode `remove --recursive` deletes the folder stubs with their files: a folder that
    still has entries answers 409 DirectoryIsNotEmpty, as on ADLS Gen2 (the files go, the job
    ends CompletedWithErrors); each run again removes the folders emptied before."""
    folder = WORK / "bremove" / "a"
    folder.mkdir(parents=True)
    (folder / "b.bin").write_bytes(b"b")
    (folder.parent / "c.bin").write_bytes(b"c")
    azcopy("copy", str(folder.parent), f"{LZ}/", "--from-to", "LocalBlobFS", "--recursive")
    out = azcopy("remove", f"{LZ}/bremove", "--from-to", "BlobTrash", "--recursive", check=False)
    check(count(out, "Number of File Transfers Completed") == 2, f"files: {out[-300:]}")
    check(head(f"{LZ}/bremove/c.bin").get("x-ms-error-code") == "BlobNotFound", "c.bin left")
    # as on a hierarchical namespace: each run removes the folders emptied by the one before
    # (Azure/azure-storage-azcopy#1294: depth + 1 runs)
    for _run in range(2):
        if not count(out, "Number of Folder Transfers Failed"):
            break
        out = azcopy("remove", f"{LZ}/bremove", "--from-to", "BlobTrash", "--recursive",
                     check=False)
    check(head(f"{LZ}/bremove").get("x-ms-error-code") == "BlobNotFound", "the folder is left")


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
step("sync-changed-only", sync_changed_only)
step("remove-blob-endpoint", remove_blob_endpoint)
shutil.rmtree(WORK, ignore_errors=True)
sys.exit(1 if failures else 0)
