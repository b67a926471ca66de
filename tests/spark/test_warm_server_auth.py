"""The warm Spark server as another local account meets it: a client without the token (or with
a wrong one) is refused; mirrorspec's own client connects with the token from the ready file;
the profile's resolved secrets reached the server, yet neither the JVM's environment nor a UDF's
`os.environ` holds them, nor does any file left in the servers folder. One real server for the
module (its start takes tens of seconds); the clients run in a child process, so this process's
shared classic SparkSession never becomes a Connect client."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT
from mirrorspec.spark.platform import warm_server as ws
from mirrorspec.spark.platform.session import driver_conf

SECRET = "warm-secret-Value-7f3a9c"
MASTER = "local[2]"
USER_CONF = {"spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g",
             "spark.hadoop.fs.s3a.secret.key": SECRET}  # as a profile's resolved spark.conf

CLIENTS = r"""
import json, os, sys
from pyspark.sql import SparkSession
from pyspark.sql.functions import udf

from mirrorspec.spark.platform.session import build_session, is_connect

port, secret, user_conf = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
said = {}
spark = build_session("local[2]", user_conf, warm=True)  # what every mirrorspec command does
said["warm"] = is_connect(spark)
# the server has the profile's secret (redacted for clients: its name says "secret")
said["set"] = {row.key: row.value for row in spark.sql("SET").collect()}

@udf("string")
def environment(_):
    import os
    return json.dumps(dict(os.environ))

said["udf"] = json.loads(spark.range(1).select(environment("id")).first()[0])

# then as another account would: a session of its own without the token (pyspark keeps the
# first session active, so these come last)
for name, url in (("no token", f"sc://localhost:{port}"),
                  ("no token, by address", f"sc://127.0.0.1:{port}"),
                  ("wrong token", f"sc://localhost:{port}/;token=not-the-token")):
    try:
        SparkSession.builder.remote(url).create().range(1).collect()
        said[name] = "connected"
    except Exception as exc:
        said[name] = str(exc)
print("SAID" + json.dumps(said))
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("warm") / "servers"
    os.environ["MIRRORSPEC_SECRET_WARM_TEST"] = SECRET  # what the profile's env_var() read
    try:
        ready, started = ws.start(driver_conf(USER_CONF, MASTER), MASTER, "warm (auth test)",
                                  timeout=600, folder=folder)
    finally:
        del os.environ["MIRRORSPEC_SECRET_WARM_TEST"]
    assert started
    yield ready, folder
    ws.stop(ready)


@pytest.fixture(scope="module")
def clients(server):
    ready, folder = server
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), MIRRORSPEC_WARM_DIR=str(folder))
    done = subprocess.run([sys.executable, "-c", CLIENTS, str(ready.port), SECRET,
                           json.dumps(USER_CONF)], env=env, capture_output=True, text=True,
                          timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("SAID")]
    assert done.returncode == 0 and lines, done.stdout + done.stderr
    return json.loads(lines[0][len("SAID"):])


def test_a_client_without_the_token_is_refused(clients):
    assert "UNAUTHENTICATED" in clients["no token"] and "No authentication token" in \
        clients["no token"]
    assert "UNAUTHENTICATED" in clients["no token, by address"]
    assert "Invalid authentication token" in clients["wrong token"]


def test_mirrorspecs_client_connects_with_the_token_and_the_secrets_reached_only_the_server(
        server, clients):
    ready, _folder = server
    assert clients["warm"] is True
    # the secret reached the server through the private conf file (Spark redacts its value)
    assert "spark.hadoop.fs.s3a.secret.key" in clients["set"]
    assert SECRET not in json.dumps(clients["set"])
    worker = clients["udf"]
    assert not [k for k, v in worker.items() if SECRET in v or k.startswith("MIRRORSPEC_SECRET_")]
    assert ready.token not in json.dumps(worker)  # nor the token itself
    with open(f"/proc/{ready.pid}/environ", "rb") as handle:
        assert SECRET.encode() not in handle.read()
    with open(f"/proc/{ready.pid}/cmdline", "rb") as handle:
        command = handle.read()
    assert SECRET.encode() not in command and ready.token.encode() not in command


def test_the_servers_files_are_private_and_hold_no_secret(server, clients):
    ready, folder = server
    files = [p for p in folder.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix == ".properties"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
        assert SECRET not in path.read_text(errors="replace"), path
    assert json.loads(open(ready.path).read())["token"] == ready.token
