"""The warm Spark server's ready files, matched without a JVM: a command uses a server only when
its settings hash matches and the server's process runs and answers; anything else is said once
and the command starts Spark itself."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from mirrorspec.base.errors import MirrorspecError
from mirrorspec.spark.platform import warm_server as ws

CONF = {"spark.sql.shuffle.partitions": "4", "spark.jars": "/cache/delta.jar"}
MASTER = "local[*]"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.setenv(ws.SERVERS_DIR_ENV, str(tmp_path / "servers"))
    monkeypatch.delenv(ws.WARM_ENV, raising=False)
    monkeypatch.setattr(ws, "_said", set())


@pytest.fixture
def fake_server():
    """A process whose command line names the Spark Connect server, and a port that answers."""
    process = subprocess.Popen([sys.executable, "-c", "print('up', flush=True); "
                                "import sys; sys.stdin.read()", ws.SERVER_CLASS],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               start_new_session=True)  # its own process group, as a server's
    process.stdout.readline()  # it runs its own command line now (not the forked pytest's)
    listener = socket.socket()
    listener.bind((ws.HOST, 0))
    listener.listen()
    yield process, listener.getsockname()[1]
    listener.close()
    process.stdin.close()
    process.wait(timeout=30)
    process.stdout.close()


def write_ready(key: str, pid: int, port: int, version: str = ws.__version__) -> Path:
    folder = ws.servers_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.json"
    path.write_text(json.dumps({"key": key, "pid": pid, "port": port, "version": version,
                                "master": MASTER, "label": "shop (shop.dev)", "started": 0.0,
                                "log": "server.log"}))
    return path


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_the_key_changes_with_every_setting_that_makes_sessions_differ(monkeypatch):
    key = ws.server_key(CONF, MASTER)
    assert key == ws.server_key(dict(reversed(list(CONF.items()))), MASTER)
    assert key != ws.server_key({**CONF, "spark.sql.shuffle.partitions": "8"}, MASTER)
    assert key != ws.server_key({**CONF, "spark.hadoop.fs.s3a.secret.key": "x"}, MASTER)
    assert key != ws.server_key(CONF, "local[2]")
    monkeypatch.setattr(ws, "__version__", "0.0.1")
    assert key != ws.server_key(CONF, MASTER)


def test_a_live_server_for_the_same_settings_is_used(fake_server):
    process, port = fake_server
    write_ready(ws.server_key(CONF, MASTER), process.pid, port)

    ready = ws.find(CONF, MASTER)

    assert ready is not None and ready.url == f"sc://127.0.0.1:{port}"


def test_warm_off_and_non_local_masters_never_look(fake_server, monkeypatch):
    process, port = fake_server
    write_ready(ws.server_key(CONF, MASTER), process.pid, port)
    write_ready(ws.server_key(CONF, "spark://h:7077"), process.pid, port)

    assert ws.find(CONF, "spark://h:7077") is None
    monkeypatch.setenv(ws.WARM_ENV, "off")
    assert ws.find(CONF, MASTER) is None


def test_a_dead_server_is_forgotten_and_said_once(fake_server):
    _process, port = fake_server
    path = write_ready(ws.server_key(CONF, MASTER), dead_pid(), port)
    said: list[str] = []

    assert ws.find(CONF, MASTER, said.append) is None
    assert not path.exists()
    assert len(said) == 1 and "is gone; starting Spark here" in said[0]


def test_a_reused_pid_is_neither_used_nor_killed(fake_server):
    _process, port = fake_server
    path = write_ready(ws.server_key(CONF, MASTER), ws.os.getpid(), port)  # this test: no server
    said: list[str] = []

    assert ws.find(CONF, MASTER, said.append) is None
    assert not path.exists() and "is gone" in said[0]  # and this process still runs


def test_a_server_whose_port_stopped_answering_is_stopped_not_used(fake_server):
    process, _port = fake_server
    with socket.socket() as closed:
        closed.bind((ws.HOST, 0))
        silent = closed.getsockname()[1]
    path = write_ready(ws.server_key(CONF, MASTER), process.pid, silent)

    assert ws.find(CONF, MASTER, lambda _note: None) is None
    assert not path.exists()
    # the hung server's process group was stopped (its stdin is still open: it would never end
    # by itself, and wait() would time out)
    process.wait(timeout=30)


def test_another_profiles_server_is_left_alone_and_said_once(fake_server):
    process, port = fake_server
    other = write_ready(ws.server_key({**CONF, "spark.sql.shuffle.partitions": "8"}, MASTER),
                        process.pid, port)
    said: list[str] = []

    assert ws.find(CONF, MASTER, said.append) is None
    assert ws.find(CONF, MASTER, said.append) is None
    assert other.exists() and process.poll() is None
    assert said == ["a warm Spark server runs for another profile or other Spark settings; "
                    "starting Spark here"]


def test_an_older_mirrorspecs_server_is_named_with_its_version(fake_server):
    process, port = fake_server
    write_ready("0123456789abcdef01234567", process.pid, port, version="0.0.1")
    said: list[str] = []

    assert ws.find(CONF, MASTER, said.append) is None
    assert "mirrorspec 0.0.1" in said[0] and "spark stop --all" in said[0]


def test_start_refuses_a_port_in_use_and_a_cluster_master(fake_server):
    _process, port = fake_server
    with pytest.raises(MirrorspecError, match=f"port {port} on 127.0.0.1 is in use"):
        ws.start(CONF, MASTER, "shop (shop.dev)", port=port)
    with pytest.raises(MirrorspecError, match="runs a local driver"):
        ws.start(CONF, "yarn", "shop (shop.dev)")


def test_stop_leaves_a_process_that_is_not_a_server_alone():
    bystander = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                                 stdin=subprocess.PIPE)
    try:
        path = write_ready("0123456789abcdef01234567", bystander.pid, 1)
        ws.stop(ws.read_all()[0])
        assert not path.exists() and bystander.poll() is None
    finally:
        bystander.stdin.close()
        bystander.wait(timeout=30)


def test_plans_reaching_uris_or_kafka_start_their_own_spark():
    def plan(path: str = "/w/t", kind: str = "csv", kafka=None):
        table = SimpleNamespace(landing_path="/lz/t", delta_path=path,
                                source=SimpleNamespace(type=kind, path="/feeds", kafka=kafka))
        return SimpleNamespace(warehouse="/w", landing_zone="/lz", state_path="/s",
                               tables=[table])

    assert ws.plan_allows(plan())
    assert ws.plan_allows(plan("file:///w/t"))
    assert not ws.plan_allows(plan("abfss://c@a.dfs.core.windows.net/w/t"))
    assert not ws.plan_allows(plan(kind="kafka"))


def test_the_same_python_reached_through_a_symlink_finds_the_same_server(monkeypatch, tmp_path):
    real = tmp_path / "venv"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    monkeypatch.setattr(sys, "prefix", str(real))
    key = ws.server_key(CONF, MASTER)
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "link"))
    assert ws.server_key(CONF, MASTER) == key
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert ws.server_key(CONF, MASTER) != key
