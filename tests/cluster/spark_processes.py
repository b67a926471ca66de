"""Start and stop Spark daemons (standalone master/workers, a Spark Connect server) for tests.

Every daemon runs in its own process group, started from the pyspark installation's `bin/`
scripts, so `stop()` can kill the launcher script and the JVM it spawned together. Readiness is
detected from the daemon's own signals (a port that accepts connections, the master's JSON
status), never from sleeping a fixed time.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark

SPARK_HOME = Path(pyspark.__file__).resolve().parent
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def spark_env() -> dict[str, str]:
    """Environment for Spark daemons: loopback only, this interpreter for Python workers."""
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_HOSTNAME": "127.0.0.1",
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_NO_DAEMONIZE": "1",
    })
    return env


@dataclass
class Daemon:
    """One started process (and its process group) with its log file."""

    name: str
    process: subprocess.Popen
    log: Path

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM the process group, SIGKILL what is left after `grace` seconds."""
        if self.process.poll() is not None:
            _kill_group(self.process.pid, signal.SIGKILL)  # stray children of a dead launcher
            return
        _kill_group(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        _kill_group(self.process.pid, signal.SIGKILL)
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass


def _kill_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)  # the group id is the launcher's pid (start_new_session=True)
    except (ProcessLookupError, PermissionError):
        pass


def start_daemon(name: str, command: list[str], log_dir: Path) -> Daemon:
    """Start `command` in a new session (its own process group), output to `log_dir/name.log`."""
    log_dir.mkdir(parents=True, exist_ok=True)
    log = log_dir / f"{name}.log"
    handle = open(log, "wb")
    try:
        process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT,
                                   stdin=subprocess.DEVNULL, env=spark_env(),
                                   cwd=str(log_dir), start_new_session=True)
    finally:
        handle.close()
    return Daemon(name, process, log)


def wait_until(ready, daemons: list[Daemon], what: str, timeout: float = 90.0) -> None:
    """Poll `ready()` until true; fail early with the logs if a daemon died, or at `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        if ready():
            return
        dead = [d for d in daemons if not d.alive()]
        if dead or time.monotonic() > deadline:
            logs = "\n".join(f"--- {d.name} ({d.log}) ---\n{d.log_tail()}" for d in daemons)
            reason = f"{', '.join(d.name for d in dead)} exited" if dead else "timed out"
            raise RuntimeError(f"{what}: {reason}\n{logs}")
        time.sleep(0.25)


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return True
    except OSError:
        return False


@dataclass
class StandaloneCluster:
    """A Spark standalone master and its workers on 127.0.0.1."""

    master_url: str
    web_port: int
    daemons: list[Daemon] = field(default_factory=list)

    def alive_workers(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=2) as r:
                status = json.load(r)
        except (OSError, ValueError):
            return 0
        return sum(1 for w in status.get("workers", []) if w.get("state") == "ALIVE")

    def completed_apps(self) -> list[dict]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.web_port}/json/", timeout=2) as r:
            return json.load(r).get("completedapps", [])

    def wait_completed(self, count: int, bound: float = 60.0) -> list[dict]:
        """The completed applications once there are at least `count` (the master records an
        application when its driver stops the context); fails after `bound` seconds."""
        deadline = time.monotonic() + bound
        while True:
            apps = self.completed_apps()
            if len(apps) >= count or time.monotonic() > deadline:
                return apps
            time.sleep(0.2)

    def stop(self) -> None:
        for daemon in reversed(self.daemons):  # workers first, then the master
            daemon.stop()


def start_standalone(log_dir: Path, workers: int = 2, cores: int = 1,
                     memory: str = "1g") -> StandaloneCluster:
    """Start a master and `workers` workers; returns once every worker has registered."""
    port, web_port = free_port(), free_port()
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    cluster = StandaloneCluster(f"spark://127.0.0.1:{port}", web_port)
    try:
        cluster.daemons.append(start_daemon("master", [
            spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
            "--port", str(port), "--webui-port", str(web_port)], log_dir))
        wait_until(lambda: port_open(port), cluster.daemons, "standalone master")
        for index in range(workers):
            work_dir = log_dir / f"worker{index}"
            work_dir.mkdir(parents=True, exist_ok=True)
            cluster.daemons.append(start_daemon(f"worker{index}", [
                spark_class, "org.apache.spark.deploy.worker.Worker", cluster.master_url,
                "--host", "127.0.0.1", "--webui-port", str(free_port()), "--cores", str(cores),
                "--memory", memory, "--work-dir", str(work_dir)], log_dir))
        wait_until(lambda: cluster.alive_workers() >= workers, cluster.daemons,
                   f"{workers} standalone workers")
    except BaseException:
        cluster.stop()
        raise
    return cluster


def start_connect_server(log_dir: Path, delta_jars: list[Path] | None,
                         extra_conf: dict[str, str] | None = None) -> tuple[Daemon, str]:
    """Start a Spark Connect server (local[2]); with `delta_jars`, Delta Lake is configured.

    Returns the daemon and its `sc://127.0.0.1:PORT` URL once the port accepts connections.
    """
    port = free_port()
    command = [str(SPARK_HOME / "bin" / "spark-submit"),
               "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
               "--master", "local[2]", "--name", "mirrorspec-test-connect",
               "--conf", f"spark.connect.grpc.binding.port={port}",
               "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
               "--conf", "spark.ui.enabled=false",
               "--conf", "spark.driver.memory=1g",
               "--conf", "spark.sql.shuffle.partitions=2"]
    if delta_jars:
        command += ["--jars", ",".join(str(p) for p in delta_jars),
                    "--conf", f"spark.sql.extensions={DELTA_EXTENSION}",
                    "--conf", f"spark.sql.catalog.spark_catalog={DELTA_CATALOG}"]
    for key, value in (extra_conf or {}).items():
        command += ["--conf", f"{key}={value}"]
    command.append("spark-internal")
    daemon = start_daemon(f"connect-{port}", command, log_dir)
    try:
        wait_until(lambda: port_open(port), [daemon], "Spark Connect server", timeout=120)
    except BaseException:
        daemon.stop()
        raise
    return daemon, f"sc://127.0.0.1:{port}"
