"""A real S3-API server for tests: moto's server mode in its own process on 127.0.0.1."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

ACCESS_KEY = "testing-key"
SECRET_KEY = "testing-secret"
REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class S3Server:
    """`python -m moto.server` on a free port; `stop()` ends it (also on a failed start)."""

    def __init__(self, log_dir: Path):
        self.port = _free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log = open(log_dir / "moto.log", "wb")
        self._process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=self._log, stderr=subprocess.STDOUT)
        try:
            self._wait_until_up()
        except BaseException:
            self.stop()
            raise

    def _wait_until_up(self, limit: float = 60.0) -> None:
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"moto server exited with {self._process.returncode}; "
                                   f"see {self._log.name}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    self.client().list_buckets()
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"moto server did not answer on {self.endpoint} within {limit:.0f}s")

    def client(self):
        """A boto3 S3 client for this server."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def bucket(self, name: str) -> str:
        """Create bucket `name`-<port> (named per server: S3A caches a filesystem per bucket)."""
        full = f"{name}-{self.port}"
        self.client().create_bucket(Bucket=full)
        return full

    def upload_tree(self, folder: Path, bucket: str, prefix: str) -> None:
        """Copy every file under `folder` to `s3://bucket/prefix/<relative path>`."""
        client = self.client()
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                client.upload_file(str(path), bucket, f"{prefix}/{path.relative_to(folder)}")

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """The object keys under `prefix`, sorted."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket,
                                                                        Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))

    def hadoop_conf(self) -> dict[str, str]:
        """S3A settings for this server, keys included (for a running session's Hadoop conf)."""
        return {"fs.s3a.endpoint": self.endpoint, "fs.s3a.endpoint.region": REGION,
                "fs.s3a.path.style.access": "true", "fs.s3a.connection.ssl.enabled": "false",
                "fs.s3a.access.key": ACCESS_KEY, "fs.s3a.secret.key": SECRET_KEY}

    def spark_conf(self) -> dict[str, str]:
        """A profile's `spark.conf` for this server; the keys come from MIRRORSPEC_SECRET_*
        variables (`secret_env`), as a real profile would take them."""
        secrets = {"fs.s3a.access.key": "{{ env_var('MIRRORSPEC_SECRET_S3_KEY') }}",
                   "fs.s3a.secret.key": "{{ env_var('MIRRORSPEC_SECRET_S3_SECRET') }}"}
        conf = {f"spark.hadoop.{k}": secrets.get(k, v) for k, v in self.hadoop_conf().items()}
        return {"mirrorspec.extra.jars": "s3", **conf}

    def secret_env(self) -> dict[str, str]:
        return {"MIRRORSPEC_SECRET_S3_KEY": ACCESS_KEY, "MIRRORSPEC_SECRET_S3_SECRET": SECRET_KEY}

    def delta_storage_options(self) -> dict[str, str]:
        """Options for the `deltalake` (delta-rs) reader: an independent check of the tables."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION,
                "AWS_ALLOW_HTTP": "true", "AWS_S3_ALLOW_UNSAFE_RENAME": "true"}

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        self._log.close()


def environ_without_aws() -> dict[str, str]:
    """This environment minus AWS_* variables, so only the profile's settings reach S3A."""
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
