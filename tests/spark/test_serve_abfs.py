"""Spark over ABFS (docs/onelake.md, "Acceptance"): `mirrorspec run` of projects/csv_extract (extracts → change sets) with its landing zone on
`abfs://ws@onelake.dfs.fabric.microsoft.com/db.MountedRelationalDatabase/Files/LandingZone`,
reached through `mirrorspec serve` by Hadoop ABFS (hadoop-azure, the cached `azure` jar set):
the publisher's writes (conditional create, append/flush, rename, listing) and the engine's reads
and moves all go through the endpoint, and the result is the local run's: the same file set in
the landing zone and the same rows in every table. Plain HTTP with SharedKey (ABFS uses HTTPS
only for OAuth)."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.support.no_jvm import skip_unless
from tests.support.onelake_server import OneLakeServe
from tests.support.mirror_cli import SHORT_JVM_OPTIONS

pytestmark = pytest.mark.extra  # a slow end-to-end extra: `make test-extras`

REPO = Path(__file__).resolve().parents[2]
LANDING_URI = ("abfs://ws@onelake.dfs.fabric.microsoft.com/db.MountedRelationalDatabase/"
               "Files/LandingZone")
SPARK = {"spark.sql.shuffle.partitions": "1", "spark.ui.enabled": "false",
         "spark.driver.extraJavaOptions": SHORT_JVM_OPTIONS}


ACCOUNT_KEY = base64.b64encode(b"any key will do, serve checks none").decode()


def abfs_conf(port: int) -> dict[str, str]:
    """The four ABFS settings that point the production URI at the endpoint, plus SharedKey."""
    return {"mirrorspec.extra.jars": "azure",
            "spark.hadoop.fs.azure.abfs.endpoint": f"127.0.0.1:{port}",
            "spark.hadoop.fs.azure.always.use.https": "false",
            "spark.hadoop.fs.azure.account.auth.type": "SharedKey",
            # a credential in profiles.yml comes from a secret variable (compile refuses a
            # literal one): run() sets it
            "spark.hadoop.fs.azure.account.key.onelake.dfs.fabric.microsoft.com":
                "{{ env_var('MIRRORSPEC_SECRET_ABFS_KEY') }}",
            "spark.hadoop.fs.azure.account.hns.enabled": "true"}


def project(tmp: Path, name: str, landing: str, conf: dict[str, str]) -> Path:
    folder = tmp / name
    shutil.copytree(REPO / "projects" / "csv_extract", folder,
                    ignore=shutil.ignore_patterns("landing_zone", "warehouse", "target"))
    profile = {"csv_extract": {"target": "dev", "outputs": {"dev": {
        "landing_zone": landing, "warehouse": str(folder / "warehouse"),
        "spark": {"master": "local[1]", "conf": {**SPARK, **conf}}}}}}
    (folder / "profiles.yml").write_text(yaml.safe_dump(profile))
    return folder


def run(folder: Path) -> None:
    result = subprocess.run([sys.executable, "-m", "mirrorspec", "run", "--project-dir",
                             str(folder)], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO),
                                 "MIRRORSPEC_SECRET_ABFS_KEY": ACCOUNT_KEY})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()}


def rows(warehouse: Path) -> dict[str, list]:
    from mirrorspec.readers.delta import preview

    out = {}
    for table in sorted(p.parent for p in warehouse.glob("*/*/_delta_log")):
        columns, data, _v = preview(str(table), limit=10_000, order_by=["id"])
        out[str(table.relative_to(warehouse))] = sorted(map(repr, data))
    return out


def test_run_with_its_landing_zone_on_abfs_through_serve(tmp_path):
    from mirrorspec.spark.platform.jars import cached_extra_jars

    skip_unless(bool(cached_extra_jars("azure")),
                "the azure jar set is not cached (python -m mirrorspec.spark.platform.jars azure)")
    local = project(tmp_path, "local", "landing_zone", {})
    run(local)
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db")
    try:
        port = int(server.ready["url"].rsplit(":", 1)[1])
        remote = project(tmp_path, "remote", LANDING_URI, abfs_conf(port))
        run(remote)
    finally:
        assert server.stop() == 0
    local_files, remote_files = files(local / "landing_zone"), files(server.landing)
    assert local_files == remote_files and any(f.endswith(".parquet") for f in remote_files)
    assert rows(local / "warehouse") == rows(remote / "warehouse") != {}


OAUTH_SCRIPT = """
import sys
from mirrorspec.spark.platform.session import build_session

store, port, token_url, url = sys.argv[1:5]
conf = {"mirrorspec.extra.jars": "azure",
        "spark.driver.extraJavaOptions": f"-Djavax.net.ssl.trustStore={store} "
            "-Djavax.net.ssl.trustStorePassword=changeit -Djavax.net.ssl.trustStoreType=PKCS12",
        "spark.hadoop.fs.azure.abfs.endpoint": f"127.0.0.1:{port}",
        "spark.hadoop.fs.azure.ssl.channel.mode": "Default_JSSE",
        "spark.hadoop.fs.azure.account.auth.type": "OAuth",
        "spark.hadoop.fs.azure.account.oauth.provider.type":
            "org.apache.hadoop.fs.azurebfs.oauth2.MsiTokenProvider",
        "spark.hadoop.fs.azure.account.oauth2.msi.endpoint": token_url,
        "spark.hadoop.fs.azure.account.oauth2.msi.tenant": "00000000-0000-0000-0000-000000000000",
        "spark.hadoop.fs.azure.account.oauth2.client.id": "00000000-0000-0000-0000-000000000000",
        "spark.hadoop.fs.azure.account.hns.enabled": "true",
        "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"}
spark = build_session("local[1]", conf)
spark.range(5).write.mode("overwrite").parquet(url)
print("ROWS", spark.read.parquet(url).count())
"""


def test_abfss_with_oauth_over_tls_through_the_imds_token_route(tmp_path):
    """The production auth shape: `abfss://` (ABFS always uses HTTPS for OAuth), the endpoint's
    CA in a JVM truststore, and ABFS's MsiTokenProvider taking its token from serve's IMDS-style
    route; `--require-auth` proves every storage request carried the bearer token."""
    from mirrorspec.spark.platform.jars import cached_extra_jars

    skip_unless(bool(cached_extra_jars("azure")) and shutil.which("keytool") is not None,
                "needs the azure jar set and keytool")
    server = OneLakeServe(tmp_path, "--workspace", "ws", "--item", "db", "--self-signed",
                          "--require-auth", "--log-requests")
    try:
        store = tmp_path / "trust.p12"
        subprocess.run(["keytool", "-importcert", "-noprompt", "-file", server.ready["ca_file"],
                        "-alias", "serve", "-keystore", str(store), "-storetype", "PKCS12",
                        "-storepass", "changeit"], check=True, capture_output=True)
        port = server.ready["url"].rsplit(":", 1)[1]
        url = LANDING_URI.replace("abfs://", "abfss://") + "/oauth"
        result = subprocess.run([sys.executable, "-c", OAUTH_SCRIPT, str(store), port,
                                 server.ready["imds_token_url"], url], capture_output=True,
                                text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert "ROWS 5" in result.stdout, result.stdout[-3000:] + result.stderr[-3000:]
    finally:
        assert server.stop() == 0
    events = server.events()
    assert any(e.get("path", "").startswith("/metadata/identity/oauth2/token") for e in events)
    assert not [e for e in events if e.get("status") == 401]
    assert any(p.suffix == ".parquet" for p in (server.landing / "oauth").iterdir())
