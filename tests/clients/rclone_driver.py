"""rclone's azureblob backend running a mirroring publisher's everyday steps against
MS_ACCOUNT_URL: one `STEP <name> ok|FAIL <why>|skip <why>` line per step.

rclone 1.60 (Debian's) takes the endpoint as a host suffix (`https://<account>.<endpoint>`), so
a path-style IP endpoint is reached through a container SAS URL (`sas_url`; `serve` accepts any
signature); later ones (MS_RCLONE_ENV_AUTH=1) take the account URL as `endpoint` and sign in
with `env_auth`. rclone has no lease command; its `moveto` is Copy Blob + Delete Blob; `check` and
`md5sum` read the Content-MD5 kept from the upload, `lsl` the mtime it keeps in metadata."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

URL = os.environ["MS_ACCOUNT_URL"]
WS, ITEM, CLIENT = os.environ["MS_WS"], os.environ["MS_ITEM"], os.environ["MS_CLIENT"]
SRC = Path(os.environ["MS_SRC"])
LISTED = int(os.environ["MS_LISTED"])
LZ = f"ol:{WS}/{ITEM}/Files/LandingZone/{CLIENT}.schema"
TABLE = f"{LZ}/orders"
WORK = Path(tempfile.mkdtemp(prefix="rclone-driver-"))
RCLONE = os.environ.get("MS_RCLONE", "rclone")
ENV = {**os.environ, "RCLONE_CONFIG": str(WORK / "none.conf"), "RCLONE_CONFIG_OL_TYPE": "azureblob"}
if os.environ.get("MS_RCLONE_ENV_AUTH") == "1":
    # rclone >= 1.62 (the track-2 SDK): a full endpoint URL, and env_auth's azidentity chain
    # takes the managed-identity token from IDENTITY_ENDPOINT
    ENV.update(RCLONE_CONFIG_OL_ACCOUNT="onelake", RCLONE_CONFIG_OL_ENDPOINT=URL,
               RCLONE_CONFIG_OL_ENV_AUTH="true")
else:
    ENV["RCLONE_CONFIG_OL_SAS_URL"] = f"{URL}/{WS}?sv=2021-06-08&sr=c&sp=racwdl&sig=YW55"
failures = 0


def rclone(*args: str) -> bytes:
    done = subprocess.run([RCLONE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env=ENV, timeout=1200)
    if done.returncode != 0:
        raise RuntimeError(f"rclone {args[0]} exited {done.returncode}: "
                           + " ".join(done.stderr.decode(errors="replace").split())[-600:])
    return done.stdout


def step(name: str, body) -> None:
    global failures
    try:
        skipped = body()
        print(f"STEP {name} skip {skipped}" if skipped else f"STEP {name} ok", flush=True)
    except Exception as exc:  # noqa: BLE001 - one FAIL line per step, the driver goes on
        failures += 1
        print(f"STEP {name} FAIL {' '.join(str(exc).split())[:400]}", flush=True)


def check(ok: bool, what: str) -> None:
    if not ok:
        raise AssertionError(what)


def temp_rename():
    rclone("copyto", str(SRC / "small.bin"), f"{TABLE}/_tmp.parquet")
    rclone("moveto", f"{TABLE}/_tmp.parquet", f"{TABLE}/00000000000000000001.parquet")


def list_paged():
    names = rclone("lsf", f"{LZ}/big", "--files-only", "--azureblob-list-chunk", "1000").split()
    check(len(names) == LISTED, f"rclone lsf gave {len(names)} of {LISTED}")


def read_full():
    got = rclone("cat", f"{TABLE}/00000000000000000001.parquet")
    check(got == (SRC / "small.bin").read_bytes(), "rclone cat bytes differ")


def read_range():
    got = rclone("cat", "--offset", "1000", "--count", "5000", f"{TABLE}/00000000000000000001.parquet")
    check(got == (SRC / "small.bin").read_bytes()[1000:6000], "the range's bytes differ")


def properties():
    md5 = rclone("md5sum", f"{TABLE}/00000000000000000001.parquet").split()[0].decode()
    check(md5 == hashlib.md5((SRC / "small.bin").read_bytes()).hexdigest(),
          f"the MD5 rclone reads back is {md5!r}")
    rclone("check", str(SRC), f"{TABLE}", "--one-way", "--include", "_metadata.json")
    listed = rclone("lsl", f"{TABLE}/00000000000000000001.parquet").split()
    mtime = os.stat(SRC / "small.bin").st_mtime
    from datetime import datetime
    seen = datetime.strptime(f"{listed[1].decode()} {listed[2].decode()[:15]}", "%Y-%m-%d %H:%M:%S.%f")
    check(abs(seen.timestamp() - datetime.fromtimestamp(mtime).timestamp()) < 1,
          f"the mtime rclone keeps in metadata reads back as {seen}")


def overwrite():
    rclone("copyto", str(SRC / "small.bin"), f"{TABLE}/data.csv")
    rclone("copyto", str(SRC / "small2.bin"), f"{TABLE}/data.csv")


def ignore_existing():
    rclone("copyto", "--ignore-existing", str(SRC / "small.bin"), f"{TABLE}/data.csv")


def concurrent():
    folder = WORK / "many"
    folder.mkdir()
    for i in range(16):
        shutil.copy(SRC / "small2.bin", folder / f"c{i:02d}.bin")
    rclone("copy", str(folder), TABLE, "--transfers", "16")


def delete_recursive():
    folder = WORK / "scratch" / "a"
    folder.mkdir(parents=True)
    shutil.copy(SRC / "small2.bin", folder / "b.bin")
    shutil.copy(SRC / "small2.bin", folder.parent / "c.bin")
    rclone("copy", str(folder.parent), f"{LZ}/scratch")
    rclone("purge", f"{LZ}/scratch")


def monitoring():
    got = rclone("cat", f"ol:{WS}/{ITEM}/Files/Monitoring/tables.json")
    check(b'"tables"' in got, f"tables.json: {got[:200]!r}")


step("create-table", lambda: rclone("copyto", str(SRC / "_metadata.json"), f"{TABLE}/_metadata.json") and None)
step("temp-rename", temp_rename)
step("list-paged", list_paged)
step("read-full", read_full)
step("read-range", read_range)
step("properties-metadata", properties)
step("overwrite", overwrite)
step("if-none-match", ignore_existing)
step("upload-big", lambda: rclone("copyto", str(SRC / "big.bin"), f"{TABLE}/big.bin",
                                  "--azureblob-chunk-size", "8M") and None)
step("concurrent-16", concurrent)
step("lease", lambda: "rclone has no lease command")
step("delete-recursive", delete_recursive)
step("monitoring", monitoring)
shutil.rmtree(WORK, ignore_errors=True)
sys.exit(1 if failures else 0)
