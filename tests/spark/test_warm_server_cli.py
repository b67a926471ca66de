"""`mirrorspec spark start | stop` and the commands that use the warm server, as a user runs them:
`run`, `build`, `test`, `maintain`, `reconcile`, `replay` and the Python API (when asked) connect
to the warm server (no JVM of their own; relative paths stay the user's folder's), a server
killed between commands is replaced by a fresh Spark with the same exit code and nothing applied
twice, and `stop` leaves no process behind. Nothing here times anything."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.support.reference_model import read_delta_rs

pytestmark = [pytest.mark.spark, pytest.mark.extra]  # whole CLI processes (60 s): `make test-extras`

WARM_LINE = "using the warm Spark server at sc://localhost:"


API_RUN = """
from mirrorspec.api import Project
events = []
results = Project(".", warm_server=True, on_event=events.append).run()
said = " ".join(str(e.get("message", "")) for e in events)
print("warm", "using the warm Spark server" in said, "failed", results.failed)
"""


def cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mirrorspec", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def said(done: subprocess.CompletedProcess) -> str:
    return done.stdout + done.stderr


def add_order(project: Path, day: int, line: str) -> None:
    """The next nightly snapshot of orders: yesterday's rows plus `line`."""
    feeds = project / "feeds" / "orders"
    latest = sorted(feeds.glob("*.csv"))[-1].read_text()
    (feeds / f"orders_2026-01-{day:02d}.csv").write_text(latest.rstrip("\n") + f"\n{line}\n")


def order_ids(project: Path) -> list[int]:
    _columns, rows = read_delta_rs(str(project / "warehouse" / "sales" / "orders"))
    return sorted(row["order_id"] for row in rows)


def server_pid(servers: Path) -> int:
    (ready,) = servers.glob("*.json")
    return json.loads(ready.read_text())["pid"]


def info_lines(log: Path) -> int:
    return sum(" INFO " in line for line in log.read_text(errors="replace").splitlines())


def running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in \
        Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]


def test_run_uses_the_warm_server_falls_back_when_it_dies_and_stop_leaves_nothing(tmp_path):
    servers = tmp_path / "servers"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), MIRRORSPEC_WARM_DIR=str(servers),
               MIRRORSPEC_LOG_DIR=str(tmp_path), COLUMNS="200")
    env.pop("MIRRORSPEC_WARM", None)
    assert cli(["init", "shop"], tmp_path, env).returncode == 0
    project = tmp_path / "shop"
    pids: list[int] = []
    try:
        started = cli(["spark", "start"], project, env)
        assert started.returncode == 0, said(started)
        pids.append(server_pid(servers))
        (server_log,) = servers.glob("*.log")
        info_at_start = info_lines(server_log)

        first = cli(["run"], project, env)
        assert first.returncode == 0, said(first)
        assert WARM_LINE in said(first) and "starting Spark" not in said(first), said(first)
        # build: run and then the data tests, both on the warm server
        add_order(project, 2, "1004,1,2,eraser,1,0.80")
        second = cli(["build"], project, env)
        assert second.returncode == 0, said(second)
        assert WARM_LINE in said(second) and "starting Spark" not in said(second), said(second)
        assert "committed version 1" in said(second), said(second)
        assert "PASS=4" in said(second) and "ERROR=0" in said(second), said(second)
        assert order_ids(project) == [1001, 1001, 1002, 1003, 1004]

        # the other commands that work on mirrored tables use it too; a relative path is this
        # folder's, not the server's
        snapshot = sorted((project / "feeds" / "customers").glob("*.csv"))[-1]
        for args, result in (
                (["test"], "PASS=4"),
                (["maintain", "--retain-hours", "0", "--allow-short-retention"], "vacuumed"),
                (["reconcile", "sales.customers", "--against",
                  str(snapshot.relative_to(project))], "equal"),
                (["replay", "sales.orders", "--scratch", "scratch"], "equal")):
            done = cli(args, project, env)
            assert done.returncode == 0, said(done)
            assert WARM_LINE in said(done) and "starting Spark" not in said(done), said(done)
            assert result in said(done), said(done)
        assert (project / "scratch" / "warehouse" / "sales" / "orders" / "_delta_log").is_dir()
        assert order_ids(project) == [1001, 1001, 1002, 1003, 1004]
        # the Python API uses it when asked
        api = subprocess.run([sys.executable, "-c", API_RUN], cwd=project, env=env,
                             capture_output=True, text=True, timeout=600)
        assert api.returncode == 0, said(api)
        assert "warm True failed False" in api.stdout, said(api)
        # the server logs warnings and errors only: its log doesn't grow a line per job
        assert info_lines(server_log) == info_at_start

        os.killpg(pids[0], signal.SIGKILL)  # the server dies between two commands
        add_order(project, 3, "1005,1,3,tape,2,3.10")
        fallback = cli(["run"], project, env)
        assert fallback.returncode == 0, said(fallback)
        assert "is gone; starting Spark here" in said(fallback), said(fallback)
        assert "starting Spark…" in said(fallback) and WARM_LINE not in said(fallback)
        assert order_ids(project) == [1001, 1001, 1002, 1003, 1004, 1005]  # nothing twice
        assert not list(servers.glob("*.json"))

        restarted = cli(["spark", "start", "--no-warm-up"], project, env)
        assert restarted.returncode == 0, said(restarted)
        pids.append(server_pid(servers))
        assert running(pids[1])
        stopped = cli(["spark", "stop"], project, env)
        assert stopped.returncode == 0 and "stopped 1 warm Spark server" in said(stopped)
        assert not running(pids[1]) and not list(servers.glob("*.json"))
    finally:
        for pid in pids:  # whatever an assertion left running
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def test_sigterm_to_spark_start_stops_its_jvm_and_leaves_no_file(tmp_path):
    """A CI step's timeout (SIGTERM) while `spark start` waits for the JVM: exit 130, the JVM
    gone, nothing left but the lock file (no ready file, no record, no conf file)."""
    servers = tmp_path / "servers"
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), MIRRORSPEC_WARM_DIR=str(servers),
               MIRRORSPEC_LOG_DIR=str(tmp_path), MIRRORSPEC_SECRET_PW="hunter2-warm")
    assert cli(["init", "shop"], tmp_path, env).returncode == 0
    start = subprocess.Popen([sys.executable, "-m", "mirrorspec", "spark", "start"],
                             cwd=tmp_path / "shop", env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True)
    launched = None
    try:
        deadline = time.monotonic() + 300
        while launched is None and time.monotonic() < deadline and start.poll() is None:
            records = list((servers / "started").glob("*.json")) if servers.exists() else []
            launched = int(records[0].stem) if records else None
            time.sleep(0.1)  # waiting for the launch to be recorded, not timing it
        assert launched is not None and running(launched)
        start.send_signal(signal.SIGTERM)
        out, _ = start.communicate(timeout=120)
    finally:
        if start.poll() is None:
            start.kill()
        if launched is not None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(launched, signal.SIGKILL)
    assert start.returncode == 130 and "Interrupted (" in out, out
    assert not running(launched)
    assert [p.name for p in servers.rglob("*") if p.is_file()] == \
        [next(servers.glob("*.lock")).name]
