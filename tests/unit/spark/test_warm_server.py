"""The warm Spark server without a JVM: a command uses a server only when its settings hash
matches, the server's process runs and answers and its ready file (with the token) is private;
anything else is said once and the command starts Spark itself. `start` (against a stand-in
spark-submit, tests/support/warm_fake.py) gives the server a token and the profile's secrets privately,
owns what it launched until the ready file exists (signals, two starts at once, a killed start)."""

from __future__ import annotations

import json
import os
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import REPO_ROOT
from mirrorspec.base.errors import MirrorspecError, SetupError
from mirrorspec.spark.platform import warm_server as ws
from tests.support.warm_fake import make_spark_home, records, running, start_driver, wait_for

CONF = {"spark.sql.shuffle.partitions": "4", "spark.jars": "/cache/delta.jar"}
MASTER = "local[*]"


@pytest.fixture(autouse=True)
def _fresh(monkeypatch, tmp_path):
    monkeypatch.setenv(ws.SERVERS_DIR_ENV, str(tmp_path / "servers"))
    monkeypatch.delenv(ws.WARM_ENV, raising=False)
    monkeypatch.setattr(ws, "_said", set())


@pytest.fixture
def spawn():
    """spawn(key): a process whose command line runs the Spark Connect server with `key`'s
    marker (as `start` launches one), and a port that answers."""
    started = []

    def make(key: str = ws.server_key(CONF, MASTER)):
        process = subprocess.Popen([sys.executable, "-c", "print('up', flush=True); "
                                    "import sys; sys.stdin.read()", ws.SERVER_CLASS,
                                    "--conf", f"{ws.KEY_CONF}={key}"],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   start_new_session=True)  # its own process group, as a server's
        process.stdout.readline()  # it runs its own command line now (not the forked pytest's)
        listener = socket.socket()
        listener.bind((ws.HOST, 0))
        listener.listen()
        started.append((process, listener))
        return process, listener.getsockname()[1]

    yield make
    for process, listener in started:
        listener.close()
        process.stdin.close()
        process.wait(timeout=30)
        process.stdout.close()


@pytest.fixture
def fake_server(spawn):
    return spawn()


def write_ready(key: str, pid: int, port: int, version: str = ws.__version__,
                token: str = "t0ken", mode: int = 0o600) -> Path:
    folder = ws.servers_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.json"
    path.write_text(json.dumps({"key": key, "pid": pid, "port": port, "version": version,
                                "master": MASTER, "label": "shop (shop.dev)", "started": 0.0,
                                "log": "server.log", "token": token}))
    path.chmod(mode)
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

    assert ready is not None and ready.url == f"sc://localhost:{port}"
    assert ready.connect_url == f"sc://localhost:{port}/;token=t0ken"
    assert "t0ken" not in repr(ready)


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


def test_another_profiles_server_is_left_alone_and_said_once(spawn):
    other_key = ws.server_key({**CONF, "spark.sql.shuffle.partitions": "8"}, MASTER)
    process, port = spawn(other_key)
    other = write_ready(other_key, process.pid, port)
    said: list[str] = []

    assert ws.find(CONF, MASTER, said.append) is None
    assert ws.find(CONF, MASTER, said.append) is None
    assert other.exists() and process.poll() is None
    assert said == ["a warm Spark server runs for another profile or other Spark settings; "
                    "starting Spark here"]


def test_an_older_mirrorspecs_server_is_named_with_its_version(spawn):
    process, port = spawn("0123456789abcdef01234567")
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


# --- who may connect, what the server is given, who owns it (a stand-in spark-submit) -------

SECRET = "hunter2-not-for-workers"


@pytest.fixture
def fake_home(monkeypatch, tmp_path):
    """spark-submit replaced by tests/support/warm_fake.py's stand-in; returns (its home, its records
    folder). The stand-in listens unless the test writes another mode."""
    home = make_spark_home(tmp_path / "spark-home")
    out = tmp_path / "fake-out"
    out.mkdir()
    (out / "mode").write_text("listen")
    monkeypatch.setenv("FAKE_OUT", str(out))
    monkeypatch.setattr(ws, "_spark_home", lambda: home)
    yield home, out
    for ready in ws.read_all():
        ws.stop(ready, grace=0)


def launched_pid() -> int:
    """The pid `start` recorded for the one server it launched."""
    (path,) = (ws.servers_dir() / ws.STARTED).glob("*.json")
    return int(path.stem)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize("reopenable", [True, False], ids=["dev-fd", "file-removed-at-ready"])
def test_start_gives_the_server_a_token_and_the_secrets_privately(fake_home, monkeypatch,
                                                                  reopenable):
    _home, out = fake_home
    monkeypatch.setattr(ws, "_REOPENABLE_FDS", reopenable)
    monkeypatch.setenv("MIRRORSPEC_SECRET_S3_KEY", SECRET)
    monkeypatch.setenv(ws.TOKEN_ENV, "a-token-of-the-callers")
    conf = {**CONF, "spark.hadoop.fs.s3a.secret.key": SECRET}  # the profile's, resolved

    ready, started = ws.start(conf, MASTER, "shop (shop.dev)", timeout=60)

    assert started and len(ready.token) >= 40
    (seen,) = records(out)
    # the server requires the token; the secrets reached it, through a file read twice
    assert seen["conf"][ws.TOKEN_CONF] == ready.token
    assert seen["conf"]["spark.hadoop.fs.s3a.secret.key"] == SECRET and seen["read_twice"]
    # ... but not through its command line, its environment (a UDF's os.environ) or the disk
    command = " ".join(seen["argv"])
    assert SECRET not in command and ready.token not in command
    assert f"{ws.KEY_CONF}={ready.key}" in command
    assert not any(SECRET in v or k.startswith("MIRRORSPEC_SECRET_")
                   for k, v in seen["env"].items())
    assert ws.TOKEN_ENV not in seen["env"]
    folder = ws.servers_dir()
    left = sorted(p.name for p in folder.rglob("*"))
    assert not [name for name in left if name.endswith(".properties")], left
    assert not any(SECRET in p.read_text(errors="replace") for p in folder.rglob("*")
                   if p.is_file())
    # only this user can read where it listens and with what token
    assert mode_of(folder) == 0o700 and mode_of(folder / ws.STARTED) == 0o700
    for name in (f"{ready.key}.json", f"{ready.key}.log", f"{ready.key}.lock",
                 f"{ws.STARTED}/{ready.pid}.json"):
        assert mode_of(folder / name) == 0o600, name
    assert json.loads((folder / f"{ready.key}.json").read_text())["token"] == ready.token
    assert ready.token not in (folder / ws.STARTED / f"{ready.pid}.json").read_text()
    found = ws.find(conf, MASTER)
    assert found is not None and found.connect_url.endswith(f"/;token={ready.token}")
    assert ready.token not in found.url
    # a second start finds it
    again, started = ws.start(conf, MASTER, "shop (shop.dev)", timeout=60)
    assert not started and again.pid == ready.pid and len(records(out)) == 1


def test_a_loose_servers_folder_is_narrowed_and_a_loose_ready_file_not_used(fake_home, spawn):
    folder = ws.servers_dir()
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    ready, _ = ws.start(CONF, MASTER, "shop (shop.dev)", timeout=60)
    assert mode_of(folder) == 0o700
    Path(ready.path).chmod(0o644)  # the token readable by others: not trusted any more
    said: list[str] = []
    assert ws.find(CONF, MASTER, said.append) is None
    assert "readable by others" in said[0]
    # nor is a server an older mirrorspec started without a token
    other = {**CONF, "spark.sql.shuffle.partitions": "8"}
    process, port = spawn(ws.server_key(other, MASTER))
    write_ready(ws.server_key(other, MASTER), process.pid, port, token="")
    said.clear()
    assert ws.find(other, MASTER, said.append) is None and "without a token" in said[0]


def test_a_port_taken_before_the_server_binds_it_is_not_taken_for_the_server(fake_home,
                                                                              monkeypatch):
    squatter = socket.create_server((ws.HOST, 0))  # another program got the chosen port first
    monkeypatch.setattr(ws, "free_port", lambda: squatter.getsockname()[1])
    try:
        with pytest.raises(SetupError, match="exited: .*cannot bind"):
            ws.start(CONF, MASTER, "shop (shop.dev)", timeout=60)
    finally:
        squatter.close()
    assert not list(ws.servers_dir().glob("*.json"))
    assert not list((ws.servers_dir() / ws.STARTED).glob("*.json"))


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_while_start_waits_stops_the_server_and_leaves_nothing(fake_home, sig):
    home, out = fake_home
    (out / "mode").write_text("hang")  # the server never answers
    driver = start_driver(home, CONF, dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    try:
        wait_for(lambda: records(out), "the server launched")
        pid = launched_pid()
        assert running(pid)
        driver.send_signal(sig)
        said, _ = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
    assert driver.returncode == 130 and "INTERRUPTED" in said, said
    assert not running(pid)
    folder = ws.servers_dir()
    assert sorted(p.name for p in folder.rglob("*") if p.is_file()) == \
        [f"{ws.server_key(CONF, MASTER)}.lock"]
    assert ws.read_all() == []


def test_two_starts_at_once_give_one_server(fake_home):
    home, out = fake_home
    (out / "mode").write_text("wait")  # listens once `go` exists
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    first = start_driver(home, CONF, env)
    second = None
    try:
        wait_for(lambda: records(out), "the first server launched")
        second = start_driver(home, CONF, env)
        line = second.stdout.readline()
        assert line.startswith("SAY another `mirrorspec spark start` is starting this server"), line
        (out / "go").write_text("")
        said_first, _ = first.communicate(timeout=60)
        said_second, _ = second.communicate(timeout=60)
    finally:
        for driver in (first, second):
            if driver is not None and driver.poll() is None:
                driver.kill()
    (_seen,) = records(out)  # one server launched
    pid = launched_pid()
    assert f"DONE {pid} True" in said_first and f"DONE {pid} False" in said_second
    assert [r.pid for r in ws.read_all()] == [pid]


def test_a_server_whose_start_was_killed_is_listed_stopped_and_replaced(fake_home):
    home, out = fake_home
    (out / "mode").write_text("hang")
    driver = start_driver(home, CONF, dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    wait_for(lambda: records(out), "the server launched")
    driver.kill()  # SIGKILL: nothing of the start's own runs, its server does
    driver.communicate(timeout=60)
    orphan = launched_pid()
    assert running(orphan)

    (listed,) = ws.read_all()  # no ready file, still found: `spark status`, `stop --all`
    assert listed.pid == orphan and not listed.ready and ws.find(CONF, MASTER) is None

    (out / "mode").write_text("listen")
    ready, started = ws.start(CONF, MASTER, "shop (shop.dev)", timeout=60)  # the orphan goes
    assert started and ready.pid != orphan and not running(orphan)
    assert [r.pid for r in ws.read_all()] == [ready.pid]
    ws.stop(ready)
    assert not running(ready.pid) and ws.read_all() == []
    assert not list((ws.servers_dir() / ws.STARTED).iterdir())


def test_a_recorded_pid_that_runs_another_program_is_forgotten_never_killed():
    bystander = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()",
                                  ws.SERVER_CLASS, "--conf", f"{ws.KEY_CONF}=another-key"],
                                 stdin=subprocess.PIPE)
    try:
        started = ws.servers_dir() / ws.STARTED
        started.mkdir(parents=True)
        for pid in (bystander.pid, os.getpid()):
            (started / f"{pid}.json").write_text(json.dumps({
                "key": ws.server_key(CONF, MASTER), "pid": pid, "port": 1, "version": "x",
                "master": MASTER, "label": "l", "started": 0, "log": "l"}))
        assert ws.read_all() == []
        assert not list(started.iterdir()) and bystander.poll() is None
    finally:
        bystander.stdin.close()
        bystander.wait(timeout=30)


def test_a_connect_urls_token_never_reaches_a_message():
    from mirrorspec.spark.platform.session import _check_reachable, shown_remote

    with socket.socket() as closed:
        closed.bind((ws.HOST, 0))
        port = closed.getsockname()[1]
    with pytest.raises(MirrorspecError) as err:
        _check_reachable(f"sc://localhost:{port}/;user_id=me;token=s3cr3t-t0k3n;x=1", timeout=5)
    assert "s3cr3t" not in err.value.render() and f"localhost:{port}" in err.value.render()
    assert shown_remote("sc://h:1/;Token = abc;use_ssl=true") == "sc://h:1/;Token =***;use_ssl=true"
