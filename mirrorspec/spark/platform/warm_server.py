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

Who may use it: the server requires a random token made at each start
(`spark.connect.authenticate.token`, Spark 4.0+); the token is in the ready file, mode 0600 in a
0700 folder, so only the user who started it can connect. The conf (the profile's resolved
secrets included) reaches the JVM through a private file that is never left on disk (`_conf_file`),
and the JVM inherits no `MIRRORSPEC_SECRET_*` variable (nor, through it, any Python worker).

Who owns it: `start` holds a per-key lock (a second `spark start` of the same settings waits and
then finds the first one's server), records every server it launches under `started/` (so
`spark status` and `spark stop --all` find one whose ready file never got written), and stops
the server again on any exit before the ready file exists (an error, Ctrl-C, SIGTERM, SIGHUP).

This module never imports pyspark at module level; spark-submit runs in a child process.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import filelock

from mirrorspec import __version__
from mirrorspec.artifacts.plan import SECRET_PREFIX
from mirrorspec.base.errors import MirrorspecError, SetupError
from mirrorspec.base.logfile import open_private

WARM_ENV = "MIRRORSPEC_WARM"            # "off": never look for a warm server
SERVERS_DIR_ENV = "MIRRORSPEC_WARM_DIR"  # where ready files live (default: the user's cache)
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
TOKEN_CONF = "spark.connect.authenticate.token"
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"  # the server reads it when the conf has none
KEY_CONF = "spark.mirrorspec.warm.key"  # on the server's command line: which server it is
HOST = "127.0.0.1"
STARTED = "started"  # the folder (under the servers folder) recording every launched server
_log = logging.getLogger(__name__)
_said: set[str] = set()  # notes already given by this process (each is said once)
# Linux re-opens /dev/fd/N of a deleted file from its start, so the conf file can be unlinked
# before the server reads it (twice: the launcher, then SparkSubmit); elsewhere it is removed
# as soon as the server answers.
_REOPENABLE_FDS = sys.platform.startswith("linux")
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


@dataclass(frozen=True)
class ReadyFile:
    """What a running warm server wrote about itself (or, `ready` False, what `start` recorded
    when it launched one that never wrote its ready file)."""

    key: str
    pid: int
    port: int
    version: str
    master: str
    label: str          # the project and profile output it was started for
    started: float      # epoch seconds
    log: str            # the server's own output
    token: str = field(default="", repr=False)  # what clients must present (never printed)
    path: str = ""      # the ready file itself (not stored)
    ready: bool = True  # False: known from `started/` only

    @property
    def url(self) -> str:
        """Where it listens, for people (no token)."""
        return f"sc://localhost:{self.port}"

    @property
    def connect_url(self) -> str:
        """The URL a client connects with: the token as pyspark's `;token=` parameter (a token
        over a plain channel needs the host `localhost`: pyspark then uses gRPC's local
        credentials, for loopback connections only)."""
        return f"{self.url}/;token={self.token}"


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


# --- the private folder and its files ------------------------------------------------------

def _private_folder(folder: Path) -> Path:
    """`folder` (and its `started/`), created 0700 or narrowed to it; refused when another user
    owns it (its files would be theirs to read and to replace)."""
    for path in (folder, folder / STARTED):
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = path.stat()
        if info.st_uid != os.geteuid():
            raise MirrorspecError(f"{path} belongs to another user; the warm Spark server's "
                                  "token can't be kept private there",
                                  hint=f"point {SERVERS_DIR_ENV} at a folder of your own")
        if stat.S_IMODE(info.st_mode) & 0o077:
            os.chmod(path, 0o700)
    return folder


def _write_json(path: Path, data: dict[str, Any]) -> None:
    temp = path.with_name(path.name + ".tmp")
    fd = open_private(temp, truncate=True)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1)
    os.replace(temp, path)


def _read(path: Path, ready: bool = True) -> ReadyFile | None:
    """The record in `path`, or None: unreadable, malformed, a link, or another user's."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    try:
        if os.fstat(fd).st_uid != os.geteuid():
            return None
        with os.fdopen(fd, encoding="utf-8") as handle:
            fd = -1
            data = json.load(handle)
        fields = {k: data[k] for k in ("key", "pid", "port", "version", "master", "label",
                                       "started", "log")}
        return ReadyFile(**fields, token=str(data.get("token") or ""), path=str(path),
                         ready=ready)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def _private_mode(path: str) -> bool:
    try:
        return stat.S_IMODE(os.stat(path).st_mode) & 0o077 == 0
    except OSError:
        return False


def _record(ready: ReadyFile) -> dict[str, Any]:
    return {k: v for k, v in asdict(ready).items() if k not in ("path", "ready")}


def _started_path(folder: Path, pid: int) -> Path:
    return folder / STARTED / f"{pid}.json"


def read_all(folder: Path | None = None) -> list[ReadyFile]:
    """Every server of the servers folder: each ready file, then each server `start` launched
    whose ready file is missing and that still runs (`ready` False). Records of launched
    servers that are gone are removed."""
    folder = folder or servers_dir()
    found = []
    for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        ready = _read(path)
        if ready is not None:
            found.append(ready)
    listed = {r.pid for r in found}
    for path in sorted((folder / STARTED).glob("*.json")) if folder.is_dir() else []:
        launched = _read(path, ready=False)
        if launched is None or launched.pid in listed:
            continue
        if _ours(launched.pid, launched.key):
            found.append(launched)
        else:
            with contextlib.suppress(OSError):
                path.unlink()
    return found


# --- which process is ours ----------------------------------------------------------------

def _ours(pid: int, key: str) -> bool:
    """True when `pid` is a live warm server of key `key` run by this user: its command line
    runs the Spark Connect server with this key's marker (a pid the system gave to another
    program since is not ours; a server of an older mirrorspec, without a marker, is
    recognised by the application name it was given)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process: never ours
    command = _command_line(pid)
    if SERVER_CLASS not in command:
        return False
    if KEY_CONF in command:
        return f"{KEY_CONF}={key}" in command
    return "mirrorspec-warm" in command


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


def _listener_is(pid: int, port: int) -> bool:
    """True when a socket listening on `port` belongs to process `pid` (Linux: its inode in
    /proc/net/tcp or tcp6 — a JVM listens on an IPv6 socket — among the process's descriptors),
    so a port another program took between the choice and the server's bind is never taken for
    the server. True where /proc can't tell."""
    inodes, readable = set(), False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table, encoding="ascii") as handle:
                rows = [line.split() for line in handle.readlines()[1:]]
        except OSError:
            continue
        readable = True
        inodes |= {row[9] for row in rows if len(row) > 9 and row[3] == "0A"
                   and row[1].rsplit(":", 1)[-1] == f"{port:04X}"}
    if not readable:
        return True
    try:
        links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    except OSError:
        return False
    return any(f"socket:[{inode}]" in links for inode in inodes)


def alive(ready: ReadyFile) -> bool:
    """The server's process runs and its port accepts connections."""
    return _ours(ready.pid, ready.key) and port_answers(ready.port)


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
        if not alive(mine):
            stop(mine, grace=0)  # a JVM that stopped answering goes; a reused pid is left alone
            _say_once(f"the warm Spark server (pid {mine.pid}, port {mine.port}) is gone; "
                      "starting Spark here", say)
            return None
        if mine.token and _private_mode(mine.path):
            return mine
        _say_once(f"the warm Spark server (pid {mine.pid}) takes connections without a token "
                  "or its ready file is readable by others; starting Spark here (restart it: "
                  "mirrorspec spark stop, then spark start)", say)
        return None
    others = [r for r in read_all(folder) if r.ready and _ours(r.pid, r.key)]
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


# --- starting -----------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def _spark_home() -> Path:
    import pyspark  # the installation spark-submit and the jars come from

    return Path(pyspark.__file__).resolve().parent


def start(conf: Mapping[str, str], master: str, label: str, port: int | None = None,
          timeout: float = 240.0, folder: Path | None = None,
          say: Callable[[str], Any] | None = None) -> tuple[ReadyFile, bool]:
    """Start a warm server for (`conf`, `master`) unless one runs already; returns (its ready
    file, True when started now). One `start` per key at a time: another one waits for it
    (`say` hears so) and then returns its server. Raises MirrorspecError for a port in use or a
    server that doesn't come up (its log named); KeyboardInterrupt on Ctrl-C, SIGTERM or SIGHUP,
    after stopping what it launched."""
    if not is_local_master(master):
        raise MirrorspecError(f"a warm Spark server runs a local driver; this profile's master is "
                              f"{master!r}",
                              hint="use it with a profile output whose spark.master is local[*]")
    folder = _private_folder(folder or servers_dir())
    key = server_key(conf, master)
    with _stop_signals_interrupt(), _key_lock(folder, key, timeout, say):
        existing = _read(folder / f"{key}.json")
        if existing is not None and alive(existing) and existing.token \
                and _private_mode(existing.path):
            return existing, False
        if existing is not None:
            stop(existing)
        for launched in read_all(folder):
            if launched.key == key and not launched.ready:
                stop(launched)  # launched by a `start` that was killed before its ready file
        if port is not None and port_answers(port):
            raise MirrorspecError(f"port {port} on {HOST} is in use",
                                  hint="choose another --port, or leave it out to take a free one")
        return _launch(conf, master, label, key, port or free_port(), timeout, folder), True


def _launch(conf: Mapping[str, str], master: str, label: str, key: str, port: int,
            timeout: float, folder: Path) -> ReadyFile:
    from mirrorspec.spark.platform import cds

    token = secrets.token_urlsafe(32)
    server_conf = {**conf, "spark.connect.grpc.binding.port": str(port),
                   "spark.connect.grpc.binding.address": HOST, TOKEN_CONF: token}
    # spark-submit logs at INFO: a line per job, stage and task, which a server that runs for
    # days writes to its log without end. Warnings and errors are what its log is read for.
    server_conf.setdefault("spark.log.level", os.environ.get("MIRRORSPEC_SPARK_LOG_LEVEL", "WARN"))
    cds.add_archive(server_conf)
    log = folder / f"{key}.log"
    home = _spark_home()
    ready = ReadyFile(key, 0, port, __version__, master, label, time.time(), str(log), token,
                      str(folder / f"{key}.json"))
    process: subprocess.Popen | None = None
    with _conf_file(server_conf, folder, key) as (conf_argument, pass_fds):
        command = [str(home / "bin" / "spark-submit"), "--class", SERVER_CLASS,
                   "--master", master, "--name", f"mirrorspec-warm {label}",
                   "--conf", f"{KEY_CONF}={key}", "--properties-file", conf_argument,
                   "spark-internal"]
        try:
            log_fd = open_private(log, truncate=True)
            try:
                with _signals_held():  # a signal now is handled once the launch is recorded
                    process = subprocess.Popen(
                        command, stdout=log_fd, stderr=subprocess.STDOUT,
                        stdin=subprocess.DEVNULL, env=_server_env(home), cwd=str(folder),
                        pass_fds=pass_fds, start_new_session=True)
                    ready = replace(ready, pid=process.pid)
                    _write_json(_started_path(folder, process.pid), _record(replace(ready, token="")))
            finally:
                os.close(log_fd)
            _wait_ready(process, ready, timeout)
            _write_json(Path(ready.path), _record(ready))
        except BaseException as exc:
            if process is not None:
                _kill_group(process.pid)
                with contextlib.suppress(OSError, subprocess.SubprocessError):
                    process.wait(timeout=30)
                _forget(folder, process.pid)
                with contextlib.suppress(OSError):
                    os.unlink(ready.path)  # written just before a signal came
            if not isinstance(exc, SetupError):  # its message names the log
                with contextlib.suppress(OSError):
                    log.unlink()
            raise
    return ready


def _server_env(home: Path) -> dict[str, str]:
    """The JVM's environment: this process's without the profile's secrets (a Python worker
    inherits the JVM's, and a UDF could read it) or a Connect token of its own."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(SECRET_PREFIX) and k != TOKEN_ENV}
    env.update(SPARK_HOME=str(home), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP=HOST)
    return env


@contextlib.contextmanager
def _conf_file(conf: Mapping[str, str], folder: Path, key: str
               ) -> Iterator[tuple[str, tuple[int, ...]]]:
    """(the --properties-file argument, the descriptors to pass) for `conf`, never on the
    command line (every user sees it in `ps`) nor left on disk: a 0600 file in the private
    folder, unlinked at once where /dev/fd re-opens it (Linux), else removed when the block
    ends (the server answered, or the start failed)."""
    for stale in folder.glob(f"{key}-*.properties"):  # of a start killed outright elsewhere
        with contextlib.suppress(OSError):
            stale.unlink()
    fd, path = tempfile.mkstemp(prefix=f"{key}-", suffix=".properties", dir=folder)  # 0600
    try:
        with os.fdopen(os.dup(fd), "w", encoding="utf-8") as handle:
            for k, v in conf.items():
                handle.write(f"{_escape(k)}={_escape(v)}\n")
        if _REOPENABLE_FDS:
            os.unlink(path)
            yield f"/dev/fd/{fd}", (fd,)
        else:
            yield path, ()
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)


def _escape(text: str) -> str:
    """A Java properties key or value: backslashes, line ends and leading spaces kept literally."""
    out = str(text).replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    return out.replace("=", "\\=").replace(":", "\\:").replace("#", "\\#").replace("!", "\\!")


_HOLD = {"on": False, "came": False}  # a stop signal waits while a launch is being recorded


@contextlib.contextmanager
def _stop_signals_interrupt() -> Iterator[None]:
    """Ctrl-C, SIGTERM (a CI step's timeout) and SIGHUP (a closed terminal) raise
    KeyboardInterrupt while the block runs, so whatever it launched is stopped on the way out;
    the handlers before are restored after. Only the main thread can set handlers: elsewhere
    the block runs as is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: Any) -> None:
        if _HOLD["on"]:
            _HOLD["came"] = True
            return
        raise KeyboardInterrupt

    previous = {sig: signal.signal(sig, interrupt) for sig in _STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """A stop signal that comes while the block runs is handled when it ends, so a launched
    process is recorded before anything can interrupt. (Not the signal mask: a child would
    inherit it, and a server ignoring SIGTERM would outlive `stop`'s grace.)"""
    _HOLD.update(on=True, came=False)
    try:
        yield
    finally:
        came = _HOLD["came"]
        _HOLD.update(on=False, came=False)
        if came:
            raise KeyboardInterrupt


@contextlib.contextmanager
def _key_lock(folder: Path, key: str, timeout: float,
              say: Callable[[str], Any] | None) -> Iterator[None]:
    """Hold `<key>.lock` (flock: released when the process ends, however it ends); another
    holder is waited for up to `timeout` seconds, and said."""
    lock = filelock.FileLock(str(folder / f"{key}.lock"), mode=0o600, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        (say or _log.warning)("another `mirrorspec spark start` is starting this server; "
                              "waiting for it")
        try:
            lock.acquire(timeout=timeout)
        except filelock.Timeout:
            raise MirrorspecError(f"another `mirrorspec spark start` of these settings still "
                                  f"runs after {timeout:.0f}s",
                                  hint="wait for it, or stop it (Ctrl-C) and start again"
                                  ) from None
    try:
        yield
    finally:
        lock.release()


def _wait_ready(process: subprocess.Popen, ready: ReadyFile, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not (port_answers(ready.port, timeout=1.0) and _listener_is(process.pid, ready.port)):
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


# --- stopping -----------------------------------------------------------------------------

def _kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)  # the group id is the launcher's pid (start_new_session=True)


def _forget(folder: Path, pid: int) -> None:
    with contextlib.suppress(OSError):
        _started_path(folder, pid).unlink()


def stop(ready: ReadyFile, grace: float = 20.0) -> None:
    """Stop the server's whole process group (SIGTERM, then SIGKILL after `grace` seconds) and
    remove its ready file and record. A pid that no longer runs this server is left alone."""
    if _ours(ready.pid, ready.key):
        _kill_group(ready.pid, signal.SIGTERM)
        _wait_gone(ready.pid, grace)
        _kill_group(ready.pid, signal.SIGKILL)
        _wait_gone(ready.pid, 10.0)
    folder = Path(ready.path).parent
    if ready.ready:
        with contextlib.suppress(OSError):
            os.unlink(ready.path)
    else:
        folder = folder.parent  # the record is in <servers>/started/
    _forget(folder, ready.pid)


def _wait_gone(pid: int, seconds: float) -> None:
    """Wait up to `seconds` for the group leader `pid` to end (reaped when this process
    started it; a zombie another process must reap counts as ended)."""
    deadline = time.monotonic() + seconds
    while True:
        with contextlib.suppress(ChildProcessError, OSError):
            os.waitpid(pid, os.WNOHANG)
        if not _running(pid) or time.monotonic() >= deadline:
            return
        time.sleep(0.1)  # waiting for the JVM to exit, not timing anything


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
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
