"""`show` and `history` on an object-store warehouse without a JVM: delta-rs gets the endpoint
and keys from the profile's Spark conf (s3a settings, keys from MIRRORSPEC_SECRET_*)."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from tests.support.no_jvm import BLOCK_PYSPARK, REPO
from tests.support.project_files import write
from tests.support.s3_server import S3Server, environ_without_aws

pytestmark = pytest.mark.s3
deltalake = pytest.importorskip("deltalake")


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    server = S3Server(tmp_path_factory.mktemp("moto"))
    yield server
    server.stop()


def test_show_and_history_read_an_s3a_warehouse_with_the_profiles_settings(s3, tmp_path):
    import subprocess
    import sys

    s3.client().create_bucket(Bucket="reads")
    deltalake.write_deltalake("s3://reads/wh/sales/orders",
                              pa.table({"id": [2, 1], "v": ["b", "a"]}),
                              storage_options=s3.delta_storage_options())
    root = write(tmp_path / "shop", {
        "mirrorspec_project.yml": {"name": "shop", "version": "1"},
        "profiles.yml": {"shop": {"outputs": {"default": {
            "landing_zone": "s3a://reads/landing", "warehouse": "s3a://reads/wh",
            "spark": {"conf": s3.spark_conf()}}}}},
        "tables/orders.yml": {"tables": [{"name": "orders", "schema": "sales",
                                          "key_columns": ["id"]}]},
    })
    env = {**environ_without_aws(), **s3.secret_env(), "PYTHONPATH": str(REPO),
           "MIRRORSPEC_LOG_FORMAT": "json"}
    for command in (["show", "orders"], ["history", "orders"]):
        done = subprocess.run([sys.executable, "-c", BLOCK_PYSPARK, *command, "--project-dir",
                               str(root)], capture_output=True, text=True, env=env, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
        events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
        rows = next(e["rows"] for e in events if isinstance(e.get("rows"), list))
        if command[0] == "show":
            assert rows == [{"id": 1, "v": "a"}, {"id": 2, "v": "b"}]  # typed JSON values
        else:
            assert [r["version"] for r in rows] == [0] and rows[0]["operation"] == "WRITE"
        assert "Spark" not in done.stdout + done.stderr
