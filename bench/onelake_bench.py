"""`mirrorspec serve` upload benchmark: what the endpoint costs a publisher over a local copy.

    python bench/onelake_bench.py [--mib 1024] [--append-mib 100] [--files 1000]
                                  [--file-kib 4] [--tls] [--json]

Starts `mirrorspec serve` (its own process, as a publisher sees it), then measures in one run:
- one `--mib` MiB file uploaded in `--append-mib` MiB appends and one flush (create, append×N,
  flush: the Azure SDK's `upload_data` pattern), against `shutil.copyfile` of the same file;
- `--files` small files of `--file-kib` KiB, each created, appended, flushed under a `_` temporary
  name and renamed (the fabric-toolbox pattern, 4 requests a file, one keep-alive connection),
  against writing and renaming the same files locally.
The client is `http.client` (stdlib), so the figures are the endpoint's, not an SDK's.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import Timer, emit, machine, print_table

MIB = 1 << 20
LZ = "/onelake/bench/bench.MountedRelationalDatabase/Files/LandingZone"
AUTH = {"Authorization": "Bearer bench"}


def start_serve(work: Path, tls: bool) -> tuple[subprocess.Popen, dict]:
    ready = work / "ready.json"
    args = [sys.executable, "-m", "mirrorspec", "serve", "--landing-zone", str(work / "lz"),
            "--warehouse", str(work / "wh"), "--workspace", "bench", "--ready-file", str(ready),
            "--quiet"] + (["--self-signed"] if tls else [])
    process = subprocess.Popen(args, env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])})
    deadline = time.monotonic() + 60
    while not ready.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            raise SystemExit("serve did not start")
        time.sleep(0.05)
    return process, json.loads(ready.read_text())


class Client:
    def __init__(self, info: dict):
        parts = urlsplit(info["url"])
        if parts.scheme == "https":
            context = ssl.create_default_context(cafile=info["ca_file"])
            self.conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                parts.hostname, parts.port, context=context, blocksize=MIB)
        else:
            self.conn = http.client.HTTPConnection(parts.hostname, parts.port, blocksize=MIB)

    def call(self, method: str, path: str, body=None, length: int = 0, headers=None) -> int:
        headers = {**AUTH, "Content-Length": str(length), **(headers or {})}
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        response.read()
        if response.status >= 300:
            raise SystemExit(f"{method} {path} -> {response.status} {response.getheader('x-ms-error-code')}")
        return response.status


def big_upload(client: Client, source: Path, append: int) -> None:
    path = f"{LZ}/big/00000000000000000001.bin"
    client.call("PUT", path + "?resource=file")
    size = source.stat().st_size
    with open(source, "rb") as handle:
        position = 0
        while position < size:
            n = min(append, size - position)
            client.call("PATCH", f"{path}?action=append&position={position}",
                        body=_Slice(handle, n), length=n)
            position += n
    client.call("PATCH", f"{path}?action=flush&position={size}")


class _Slice:
    """`n` bytes of an open file, read in chunks by http.client (never all in memory)."""

    def __init__(self, handle, n: int):
        self.handle, self.left = handle, n

    def read(self, size: int = -1) -> bytes:
        size = self.left if size < 0 else min(size, self.left)
        data = self.handle.read(size)
        self.left -= len(data)
        return data


def small_uploads(client: Client, count: int, data: bytes) -> None:
    for i in range(1, count + 1):
        temp = f"{LZ}/small/_{i:020d}.tmp"
        client.call("PUT", temp + "?resource=file")
        client.call("PATCH", f"{temp}?action=append&position=0", body=data, length=len(data))
        client.call("PATCH", f"{temp}?action=flush&position={len(data)}")
        client.call("PUT", f"{LZ}/small/{i:020d}.csv", headers={
            "x-ms-rename-source": f"/bench/bench.MountedRelationalDatabase/Files/LandingZone/small/_{i:020d}.tmp"})


def local_small(folder: Path, count: int, data: bytes) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(1, count + 1):
        temp = folder / f"_{i:020d}.tmp"
        temp.write_bytes(data)
        os.replace(temp, folder / f"{i:020d}.csv")


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=1024)
    parser.add_argument("--append-mib", type=int, default=100)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--file-kib", type=int, default=4)
    parser.add_argument("--tls", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="onelake-bench-") as temp:
        work = Path(temp)
        source = work / "source.bin"
        block = os.urandom(MIB)
        with open(source, "wb") as handle:
            for _ in range(args.mib):
                handle.write(block)
        small = os.urandom(args.file_kib * 1024)
        process, info = start_serve(work, args.tls)
        try:
            client = Client(info)
            with Timer() as copy:
                shutil.copyfile(source, work / "copy.bin")
            (work / "copy.bin").unlink()
            with Timer() as served:
                big_upload(client, source, args.append_mib * MIB)
            with Timer() as local_files:
                local_small(work / "local_small", args.files, small)
            with Timer() as served_files:
                small_uploads(client, args.files, small)
        finally:
            process.terminate()
            process.wait(30)
    figures = {
        "machine": machine(), "tls": args.tls, "mib": args.mib, "append_mib": args.append_mib,
        "files": args.files, "file_kib": args.file_kib,
        "big_serve_mib_s": round(args.mib / served.seconds, 1),
        "big_copy_mib_s": round(args.mib / copy.seconds, 1),
        "small_serve_files_s": round(args.files / served_files.seconds, 1),
        "small_local_files_s": round(args.files / local_files.seconds, 1),
    }
    print_table(["what", "serve", "local", "serve / local"], [
        [f"{args.mib} MiB in {args.append_mib} MiB appends (MiB/s)", figures["big_serve_mib_s"],
         figures["big_copy_mib_s"], f"{figures['big_serve_mib_s'] / figures['big_copy_mib_s']:.2f}"],
        [f"{args.files} files of {args.file_kib} KiB, temp + rename (files/s)",
         figures["small_serve_files_s"], figures["small_local_files_s"],
         f"{figures['small_serve_files_s'] / figures['small_local_files_s']:.3f}"],
    ])
    return emit(figures, args.json)


if __name__ == "__main__":
    main()
