"""A warm local Spark Connect server: started once (`mirrorspec spark start`), used by every
command whose Spark settings match it exactly, stopped with `mirrorspec spark stop`.

The server is pyspark's own `SparkConnectServer`, launched through spark-submit with the conf a
local driver of the same profile would start with (`session.driver_conf`: Delta Lake, the cached
jars, the class-data archive, the profile's `spark.conf`), on 127.0.0.1 in its own process group.
A ready file `<key>.json` under the servers folder says where it listens; `<key>` is a hash of
everything that makes one session differ from another (mirrorspec's version, the master, the whole
resolved conf, the Java binary, the Python environment), so a command only ever uses a server
started for exactly its settings: another profile's or another mirrorspec's server is left alone.
A ready file whose process is gone or whose port doesn't answer is removed and the command starts
Spark as it always did. MIRRORSPEC_WARM=off turns the lookup off.

This module never imports pyspark at module level; spark-submit runs in a child process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from mirrorspec import __version__
from mirrorspec.base.errors import MirrorspecError, SetupError

WARM_ENV = "MIRRORSPEC_WARM"            # "off": never look for a warm server
SERVERS_DIR_ENV = "MIRRORSPEC_WARM_DIR"  # where ready files live (default: the user's cache)
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
HOST = "127.0.0.1"
_log = logging.getLogger(__name__)
_said: set[str] = set()  # notes already given by this process (each is said once)


@dataclass(frozen=True)
class ReadyFile:
    """What a running warm server wrote about itself."""

    key: str
    pid: int
    port: int
    version: str
    master: str
    label: str          # the project and profile output it was started for
    started: float      # epoch seconds
    log: str            # the server's own output
    path: str = ""      # the ready file itself (not stored)

    @property
    def url(self) -> str:
        return f"sc://{HOST}:{self.port}"


def servers_dir() -> Path:
    """The folder of ready files: $MIRRORSPEC_WARM_DIR, else <user cache>/mirrorspec/spark-servers."""
    explicit = os.environ.get(SERVERS_DIR_ENV)
    if explicit:
        return Path(explicit)
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "mirrorspec" / "spark-servers"


def enabled() -> bool:
    """False when MIRRORSPEC_WARM=off (or 0/false/no)."""
    return os.environ.get(WARM_ENV, "").strip().lower() not in ("off", "0", "false", "no")


def is_local_master(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def server_key(conf: Mapping[str, str], master: str) -> str:
    """The hash naming a server for these exact settings (conf as `session.driver_conf` gives it,
    before the class-data archive is added)."""
    # real paths: a venv reached through a symlink is the same Python (and the same server)
    java_home = os.path.realpath(os.environ["JAVA_HOME"]) if os.environ.get("JAVA_HOME") else ""
    java = shutil.which("java")
    identity = {"version": __version__, "master": master,
                "conf": sorted((str(k), str(v)) for k, v in conf.items()),
                "java": [java_home, os.path.realpath(java) if java else ""],
                "python": os.path.realpath(sys.prefix)}
    text = json.dumps(identity, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def read_all(folder: Path | None = None) -> list[ReadyFile]:
    """Every ready file in the servers folder (unreadable ones are skipped)."""
    folder = folder or servers_dir()
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        ready = _read(path)
        if ready is not None:
            found.append(ready)
    return found


def _read(path: Path) -> ReadyFile | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        fields = {k: data[k] for k in ("key", "pid", "port", "version", "master", "label",
                                       "started", "log")}
        return ReadyFile(**fields, path=str(path))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def pid_alive(pid: int) -> bool:
    """True when `pid` is a live warm server: a process whose command line runs the Spark
    Connect server (a pid the system gave to another program since is not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: never ours
    return SERVER_CLASS in _command_line(pid)


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        pass
    try:  # no /proc (macOS): ask ps
        return subprocess.run(["ps", "-o", "command=", "-p", str(pid)], capture_output=True,
                              text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def port_answers(port: int, host: str = HOST, timeout: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def alive(ready: ReadyFile) -> bool:
    """The server's process runs and its port accepts connections."""
    return pid_alive(ready.pid) and port_answers(ready.port)


def _say_once(note: str, say: Callable[[str], Any] | None) -> None:
    if note in _said:
        return
    _said.add(note)
    (say or _log.warning)(note)


def find(conf: Mapping[str, str], master: str, say: Callable[[str], Any] | None = None,
         folder: Path | None = None) -> ReadyFile | None:
    """The live warm server started for exactly (`conf`, `master`), or None (then the caller
    starts Spark itself). A ready file of a dead server is removed; `say` (a warning printer)
    hears why a server that exists is not used, once per process."""
    if not enabled() or not is_local_master(master):
        return None
    folder = folder or servers_dir()
    key = server_key(conf, master)
    mine = _read(folder / f"{key}.json")
    if mine is not None:
        if alive(mine):
            return mine
        stop(mine, grace=0)  # a JVM that stopped answering goes; a reused pid is left alone
        _say_once(f"the warm Spark server (pid {mine.pid}, port {mine.port}) is gone; "
                  "starting Spark here", say)
        return None
    others = [r for r in read_all(folder) if pid_alive(r.pid)]
    if others:
        older = [r for r in others if r.version != __version__]
        if older and len(older) == len(others):
            _say_once(f"the warm Spark server runs for mirrorspec {older[0].version}, not "
                      f"{__version__}; starting Spark here (restart it: mirrorspec spark stop "
                      "--all, then spark start)", say)
        else:
            _say_once("a warm Spark server runs for another profile or other Spark settings; "
                      "starting Spark here", say)
    return None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _spark_home() -> Path:
    import pyspark  # the installation spark-submit and the jars come from

    return Path(pyspark.__file__).resolve().parent


def start(conf: Mapping[str, str], master: str, label: str, port: int | None = None,
          timeout: float = 240.0, folder: Path | None = None) -> tuple[ReadyFile, bool]:
    """Start a warm server for (`conf`, `master`) unless one runs already; returns (its ready
    file, True when started now). Raises MirrorspecError for a port in use or a server that
    doesn't come up (its log named)."""
    if not is_local_master(master):
        raise MirrorspecError(f"a warm Spark server runs a local driver; this profile's master is "
                              f"{master!r}",
                              hint="use it with a profile output whose spark.master is local[*]")
    folder = folder or servers_dir()
    key = server_key(conf, master)
    existing = _read(folder / f"{key}.json")
    if existing is not None and alive(existing):
        return existing, False
    if existing is not None:
        stop(existing)
    if port is not None and port_answers(port):
        raise MirrorspecError(f"port {port} on {HOST} is in use",
                              hint="choose another --port, or leave it out to take a free one")
    port = port or free_port()
    folder.mkdir(parents=True, exist_ok=True)
    from mirrorspec.spark.platform import cds

    server_conf = {**conf, "spark.connect.grpc.binding.port": str(port),
                   "spark.connect.grpc.binding.address": HOST}
    # spark-submit logs at INFO: a line per job, stage and task, which a server that runs for
    # days writes to its log without end. Warnings and errors are what its log is read for.
    server_conf.setdefault("spark.log.level", os.environ.get("MIRRORSPEC_SPARK_LOG_LEVEL", "WARN"))
    cds.add_archive(server_conf)
    log = folder / f"{key}.log"
    # The conf (profile secrets included) goes through a private properties file, never the
    # command line (visible to every user in `ps`); it is removed once the server is up.
    fd, props = tempfile.mkstemp(prefix=f"{key}-", suffix=".properties", dir=folder)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        for k, v in server_conf.items():
            handle.write(f"{_escape(k)}={_escape(v)}\n")
    home = _spark_home()
    command = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS, "--master", master,
               "--name", f"mirrorspec-warm {label}", "--properties-file", props, "spark-internal"]
    env = dict(os.environ, SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable,
               SPARK_LOCAL_IP=HOST)
    try:
        with open(log, "wb") as out:
            process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL, env=env, cwd=str(folder),
                                       start_new_session=True)
        ready = ReadyFile(key, process.pid, port, __version__, master, label, time.time(),
                          str(log), str(folder / f"{key}.json"))
        _wait_ready(process, ready, timeout)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(props)
    _write(ready)
    return ready, True


def _escape(text: str) -> str:
    """A Java properties key or value: backslashes, line ends and leading spaces kept literally."""
    out = str(text).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return out.replace("=", "\\=").replace(":", "\\:").replace("#", "\\#").replace("!", "\\!")


def _wait_ready(process: subprocess.Popen, ready: ReadyFile, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not port_answers(ready.port, timeout=1.0):
        if process.poll() is not None or time.monotonic() > deadline:
            _kill_group(process.pid)
            tail = _tail(Path(ready.log))
            reason = "exited" if process.poll() is not None else f"did not answer in {timeout:.0f}s"
            raise SetupError(f"the warm Spark server {reason}: {tail}",
                             hint=f"its whole output is in {ready.log}; `mirrorspec debug` "
                                  "checks Java, the jars and the profile's Spark settings")
        time.sleep(0.25)  # polling a port that is about to open, not timing anything


def _tail(log: Path) -> str:
    try:
        lines = [line.strip() for line in log.read_text(errors="replace").splitlines()
                 if line.strip() and not line.strip().startswith(("at ", "..."))]
    except OSError:
        return "no output"
    return " / ".join(lines[-3:])[:400] or "no output"


def _write(ready: ReadyFile) -> None:
    data = {k: v for k, v in asdict(ready).items() if k != "path"}
    temp = ready.path + ".tmp"
    with open(temp, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
    os.replace(temp, ready.path)


def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)  # the group id is the launcher's pid (start_new_session=True)


def stop(ready: ReadyFile, grace: float = 20.0) -> None:
    """Stop the server's whole process group (SIGTERM, then SIGKILL after `grace` seconds) and
    remove its ready file. A pid that no longer runs a Spark Connect server is left alone."""
    if pid_alive(ready.pid):
        _kill_group(ready.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while _group_alive(ready.pid) and time.monotonic() < deadline:
            time.sleep(0.2)  # waiting for the JVM to exit, not timing anything
        _kill_group(ready.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(ready.pid, os.WNOHANG)  # reap it when this process started it
    with contextlib.suppress(OSError):
        os.unlink(ready.path)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def plan_allows(plan: Any) -> bool:
    """True when everything `plan` does works over Spark Connect: local paths only (a URI is
    reached through the driver's Hadoop FileSystem) and no Kafka source (its offsets are read
    with kafka-clients on the driver). Otherwise the command starts its own Spark."""
    from mirrorspec.base.files import is_remote

    paths = [plan.warehouse, plan.landing_zone, plan.state_path]
    for table in plan.tables:
        paths += [table.landing_path, table.delta_path, table.source.path or ""]
        if table.source.type == "kafka" or table.source.kafka:
            return False
    return not any(p and is_remote(str(p)) for p in paths)
