"""The SparkSession: local[*] by default, master/remote and conf from the plan or flags.

Three ways to get Spark, all from the same profile output (`spark: {master, remote, conf}`):

- classic, in-process driver: `master` is `local[*]`, `spark://host:port`, `yarn`, `k8s://…`;
  Delta's jars are added from the offline cache: on the driver's class path for a local master
  (one JVM), else as `spark.jars`, which Spark ships to executors.
- inside a driver someone else started (spark-submit, a Fabric/Databricks/EMR job, a notebook):
  the running session is reused (Spark's getOrCreate) and spark-submit's master is kept.
- Spark Connect: `remote: sc://host:port`; the server owns the JVM, its jars and static conf, so
  only runtime conf (`spark.sql.*`, Delta session defaults) can be set from here, and the server
  must have been started with Delta Lake (checked, with a message saying how).

The conf key `mirrorspec.delta.jars` (never passed to Spark) says where Delta's jars come from:
`cache` (default: the offline cache, downloaded from Maven Central when missing), `packages` (always
spark.jars.packages) or `provided` (the platform already has Delta: add nothing; the default
under spark-submit, whose --jars/--packages stay in charge).
`mirrorspec.extra.jars` (also never passed to Spark) names optional jar sets of the offline cache
to add, comma-separated (`s3`: hadoop-aws and its AWS SDK bundle); a set not cached is an error
that says how to fetch it.
"""

from __future__ import annotations

import atexit
import logging
import contextlib
import os
import re
import sys
import tempfile
import threading
import time
from typing import Any, Mapping

from pyspark.sql import SparkSession

from mirrorspec.base import interrupts
from mirrorspec.base.errors import MirrorspecError, SetupError
from mirrorspec.base.faults import crash_point
from mirrorspec.base.logfile import log_folder, open_private
from mirrorspec.artifacts.plan import Plan, resolve_secrets
from mirrorspec.spark.platform import cds, jars, java

# Defaults for a laptop; any of them can be overridden by the profile's `spark.conf`.
DEFAULT_CONF: dict[str, str] = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "8",
    "spark.sql.adaptive.enabled": "true",
    "spark.driver.memory": "4g",
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "1000000",
    # Delta's VACUUM lists a table's files in this many tasks (Spark's default 10,000): on a
    # laptop that is 20-40 s of empty tasks per VACUUM (`maintain`); 8 takes 2.8-4.6 s. A
    # cluster vacuuming tables of many files can raise it in the profile.
    "spark.sql.sources.parallelPartitionDiscovery.parallelism": "8",
    # Delta rebuilds a table's state from its log with this many tasks (default 50): for the
    # small commits of a mirror pass, many tiny tasks cost more than the data (8 → 2 took
    # ~0.3 s off a warm 1k-change pass, performance.md); a log of many files wants more.
    "spark.databricks.delta.snapshotPartitions": "2",
    # MERGE materialises its source (the folded batch); on disk only by default. Memory first
    # (spilling to disk when it doesn't fit) measured 6% faster at 1M changes (performance.md).
    "spark.databricks.delta.merge.materializeSource.rddStorageLevel": "MEMORY_AND_DISK",
    # Tables mirrored at once share the cores fairly: each worker thread submits its jobs to its
    # own pool (`scheduler_pool`), so a big table's stages don't queue a small table's behind
    # them (FIFO would run whole jobs in submission order).
    "spark.scheduler.mode": "FAIR",
}

# mirrorspec's tables are paths, never catalog tables; Spark still creates its catalog's folder
# (`spark-warehouse/`) in the working directory on the first catalog lookup. It goes to a
# private folder under the temp directory instead, unless the profile names one.
WAREHOUSE_DIR_KEY = "spark.sql.warehouse.dir"

# Local masters run the Python workers with the driver's own Python, which has mirrorspec: its
# daemon imports the feed parsers once before forking the workers (spark/publish/python_daemon.py).
PYTHON_DAEMON_KEY = "spark.python.daemon.module"
PYTHON_DAEMON = "mirrorspec.spark.publish.python_daemon"

DELTA_JARS_KEY = "mirrorspec.delta.jars"
DELTA_JARS_MODES = ("cache", "packages", "provided")
EXTRA_JARS_KEY = "mirrorspec.extra.jars"
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"

# Runtime settings a Connect client may set on its server session (the rest of DEFAULT_CONF is
# the server's business: heap, UI, jars and SQL extensions are fixed when the server starts).
_CONNECT_DEFAULTS = (
    "spark.databricks.delta.properties.defaults.enableDeletionVectors",
    "spark.sql.session.timeZone",
    "spark.sql.shuffle.partitions",
    "spark.sql.adaptive.enabled",
    "spark.databricks.delta.merge.materializeSource.rddStorageLevel",
)

# The conf each remote session was built with, by session id, so new_session() can repeat it.
_REMOTE_SESSIONS: dict[str, tuple[str, dict[str, str]]] = {}
# Connect sessions to close before the interpreter tears down: a gRPC channel closed from a
# finalizer during shutdown can hang the process for minutes.
_OPEN_REMOTE: list[Any] = []
# Classic sessions whose JVM context this process started (stop_sessions stops them).
_OWNED: list[Any] = []
_log = logging.getLogger(__name__)


def build_session(master: str | None = "local[*]", conf: Mapping[str, str] | None = None,
                  remote: str | None = None, app_name: str = "mirrorspec",
                  console: Any = None, warm: bool = False) -> SparkSession:
    """Get or create the process's SparkSession with Delta Lake configured.

    Delta's jars come from the cache `make` filled (offline); without it they are downloaded
    into it first (jars.fetch: a SetupError saying how when that fails). With `remote` (sc://…) a Spark Connect
    session is returned instead; raises MirrorspecError when the server can't be used.
    `console` (a mirrorspec Console) is told "starting Spark…" at once and how long it took,
    when this call starts the JVM or connects. `warm`: connect to the warm Spark server started
    for exactly this conf when one runs (`_warm_session`), instead of starting a JVM.
    """
    submitted = _inside_spark_submit()
    # Under spark-submit, its --jars/--packages stay in charge unless the profile says otherwise.
    user_conf, jars_mode, extra_jars = _split_conf(conf, "provided" if submitted else "cache")
    if remote:
        if console is not None:
            console.info(f"connecting to Spark at {shown_remote(remote)}…")
        return _connect_session(remote, user_conf, app_name)
    # under spark-submit the master is its own (maybe a cluster's): jars go to spark.jars
    merged = _merged_conf(user_conf, jars_mode, extra_jars,
                          "" if submitted else master or "local[*]")
    if warm and not submitted and _no_jvm_yet():
        session = _warm_session(merged, master or "local[*]", app_name, console)
        if session is not None:
            return session
    _leave_warm_connect_mode()
    if not submitted and (master or "local[*]").startswith("local"):
        merged.setdefault(PYTHON_DAEMON_KEY, PYTHON_DAEMON)  # a profile's value wins
    register_delta_errors(remote=False)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName(app_name)
    if not submitted:
        builder = builder.master(master or "local[*]")
        from pyspark import SparkContext

        if SparkContext._gateway is None:  # this process starts the JVM: map the archive
            java.check_java()  # no Java / too old: a SetupError now, not a gateway error later
            cds.add_archive(merged)
    for key, value in merged.items():
        builder = builder.config(key, value)
    from pyspark import SparkContext

    started_here = SparkContext._active_spark_context is None
    starting = not submitted and _no_jvm_yet()
    if starting and console is not None:
        console.info("starting Spark…")
    began = time.monotonic()
    _py4j_logs_to_file()
    try:
        # PySpark's SparkContext puts its own SIGINT handler in: keep the command line's
        with _jvm_output_to_log(), interrupts.kept_handler():
            session = builder.getOrCreate()
    except Exception as exc:
        if starting and "JAVA_GATEWAY_EXITED" in str(exc):
            raise _jvm_start_error() from None
        raise
    if started_here:
        _OWNED.append(session)
    # a Ctrl-C while the JVM was launched can land in an at-fork hook, which swallows it
    interrupts.raise_if_interrupted()
    if starting and console is not None:
        console.info(f"Spark started ({time.monotonic() - began:.1f}s)")
    session.sparkContext.setLogLevel(os.environ.get("MIRRORSPEC_SPARK_LOG_LEVEL", "ERROR"))
    return session


class _LogFileHandler(logging.Handler):
    """Py4J's warnings and errors (a connection cut by Ctrl-C, a JVM gone) go to the log file,
    never to the terminal as tracebacks."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            from mirrorspec.base.logfile import log_path

            with os.fdopen(open_private(log_path()), "a", encoding="utf-8") as handle:
                handle.write(self.format(record) + "\n")
        except Exception:  # noqa: BLE001 - logging must never fail the command
            self.handleError(record)


def _py4j_logs_to_file() -> None:
    logger = logging.getLogger("py4j")
    if not any(isinstance(h, _LogFileHandler) for h in logger.handlers):
        logger.addHandler(_LogFileHandler())
        logger.propagate = False


def register_delta_errors(remote: bool) -> None:
    """Make Delta's commit conflicts raise as delta.exceptions' classes (what
    `delta.is_conflict` checks): for a classic session through py4j's error conversion, which
    importing `delta.exceptions` installs; over Spark Connect through pyspark's class mapping,
    which importing `delta.connect` extends with Delta's classes."""
    if remote:
        import delta.connect
    else:
        import delta.exceptions  # noqa: F401


def _no_jvm_yet() -> bool:
    from pyspark import SparkContext

    return SparkContext._gateway is None


def _jvm_start_error() -> SetupError:
    """The JVM died while starting (bad Java options, a jar it can't open, `spark.jars.packages`
    offline): a SetupError quoting the last error line of its log."""
    path = jvm_log_path()
    lines: list[str] = []
    if path:
        with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as log:
            lines = [line.strip() for line in log.read().splitlines()[-200:] if line.strip()]
    # the JVM's last words, without stack frames: usually the reason and its "Error:" line
    said = [line for line in lines if not line.startswith(("at ", "..."))][-3:]
    reason = " / ".join(said or ["no output"])[:400]
    return SetupError(f"Spark's JVM exited while starting: {reason}",
                      hint=f"its whole output is in {path}; `mirrorspec debug` checks Java, the "
                           "jars and the profile's Spark settings" if path else
                           "`mirrorspec debug` checks Java, the jars and the profile's Spark "
                           "settings")


def _split_conf(conf: Mapping[str, str] | None, default_mode: str
                ) -> tuple[dict[str, str], str, list[str]]:
    """Spark's conf apart from mirrorspec's own keys: (conf, Delta jars mode, extra jar sets)."""
    user_conf = {k: str(v) for k, v in (conf or {}).items()}
    jars_mode = user_conf.pop(DELTA_JARS_KEY, default_mode).strip().lower()
    if jars_mode not in DELTA_JARS_MODES:
        raise MirrorspecError(
            f"spark.conf {DELTA_JARS_KEY}: {jars_mode!r} is not one of {', '.join(DELTA_JARS_MODES)}",
            hint="cache: mirrorspec's offline jars; packages: fetch from Maven; "
                 "provided: the Spark platform already has Delta Lake")
    extra_jars = [n.strip() for n in user_conf.pop(EXTRA_JARS_KEY, "").split(",") if n.strip()]
    return user_conf, jars_mode, extra_jars


def _merged_conf(user_conf: dict[str, str], jars_mode: str, extra_jars: list[str],
                 master: str) -> dict[str, str]:
    merged = dict(DEFAULT_CONF)
    merged[WAREHOUSE_DIR_KEY] = spark_warehouse_dir()
    merged.update(user_conf)
    _add_delta_jars(merged, jars_mode, master)
    for name in extra_jars:
        _add_extra_jars(merged, name, master)
    return merged


def spark_warehouse_dir() -> str:
    """Spark's catalog folder for sessions mirrorspec starts: per user, outside any project."""
    return os.path.join(tempfile.gettempdir(), f"mirrorspec-spark-catalog-{os.getuid()}")


def driver_conf(conf: Mapping[str, str] | None = None, master: str = "local[*]") -> dict[str, str]:
    """The conf `build_session(master, conf)` starts a local driver JVM with (jars included)."""
    return _merged_conf(*_split_conf(conf, "cache"), master)


_JVM_LOG: list[str] = []  # the file this process's JVM writes its stdout/stderr to


def jvm_log_path() -> str | None:
    """Where the JVM this process started writes its own output (None: no JVM started here)."""
    return _JVM_LOG[0] if _JVM_LOG else None


@contextlib.contextmanager
def _jvm_output_to_log():
    """Start the JVM (pyspark's spark-submit child inherits this process's stdout and stderr)
    with both pointing at a log file, so its start-up notices, log4j lines and Java stack traces
    never reach the user; mirrorspec's own output is restored right after.

    MIRRORSPEC_LOG_DIR (default: the temp folder) holds `mirrorspec-spark-<pid>.log`;
    MIRRORSPEC_SPARK_OUTPUT=console leaves the JVM on the terminal."""
    from pyspark import SparkContext

    if SparkContext._gateway is not None or \
            os.environ.get("MIRRORSPEC_SPARK_OUTPUT", "").lower() == "console":
        yield  # the JVM runs already: its output goes where it went
        return
    path = os.path.join(log_folder(), f"mirrorspec-spark-{os.getpid()}.log")
    log = open_private(path)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    _JVM_LOG[:] = [path]  # known before the start, so a failed start can point at it
    try:
        os.dup2(log, 1)
        os.dup2(log, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, log):
            os.close(fd)


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (no JVM in this process)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def require_classic(spark: Any, what: str) -> None:
    """Raise a clear MirrorspecError when `what` needs the JVM but `spark` is a Connect session."""
    if is_connect(spark):
        raise MirrorspecError(
            f"{what} needs direct access to the Spark driver's JVM, which Spark Connect "
            "(spark.remote: sc://…) does not give",
            hint="use a profile output with spark.master (local[*], spark://…, yarn) for this, "
                 "or run mirrorspec on the cluster's driver")


@contextlib.contextmanager
def scheduler_pool(spark: Any, name: str):
    """Run the block's Spark jobs in the FAIR scheduler pool `name` (this thread only; pools
    are created on first use). A Connect session, whose server schedules, is left alone."""
    if is_connect(spark):
        yield
        return
    context = spark.sparkContext
    previous = context.getLocalProperty("spark.scheduler.pool")
    context.setLocalProperty("spark.scheduler.pool", name)
    try:
        yield
    finally:
        context.setLocalProperty("spark.scheduler.pool", previous)


def new_session(spark: Any) -> Any:
    """An isolated session (own SQL conf, temp views) on the same Spark: classic or Connect."""
    if not is_connect(spark):
        return spark.newSession()
    url, conf = _REMOTE_SESSIONS.get(spark.session_id, (None, {}))
    if url is None:
        raise MirrorspecError("this Spark Connect session was not built by mirrorspec, so a "
                              "second session on the same server can't be opened")
    session = _remote_create(url)
    _apply_runtime_conf(session, conf)
    _REMOTE_SESSIONS[session.session_id] = (url, conf)
    return session


class SessionPool:
    """Isolated sessions (`new_session`) of one parent, lent to one user at a time and reused.

    Opening a Connect session costs the server a new session state (~0.6 s a table on the warm
    server, docs/performance.md); a classic one is cheap but reused alike. A borrower scopes
    what it sets (`session_conf`), so the next one finds the session as `conf` left it.
    """

    def __init__(self, spark: Any, conf: Mapping[str, str] | None = None):
        self.spark = spark
        self.conf = dict(conf or {})
        self._idle: list[Any] = []
        self._lock = threading.Lock()

    def take(self) -> Any:
        """An idle session, or a new one with `conf` set."""
        with self._lock:
            if self._idle:
                return self._idle.pop()
        session = new_session(self.spark)
        for key, value in self.conf.items():
            session.conf.set(key, value)
        return session

    def give_back(self, session: Any, reuse: bool = True) -> None:
        """Return a session taken from this pool; `reuse=False` drops it (after a failure)."""
        if reuse:
            with self._lock:
                self._idle.append(session)


# Keys set by session_conf blocks that are still open, per session: blocks on several threads
# that share one session (publish runs tables in a pool) share one setting of a key, and the
# last block to leave puts back what the session had before the first one came.
_HELD: dict[tuple[int, str], list] = {}  # (id(session), key) -> [open blocks, value, before]
_HELD_LOCK = threading.Lock()


@contextlib.contextmanager
def session_conf(session: Any, conf: Mapping[str, str], keep_set: bool = False):
    """Run a block with `conf` set on `session`, then put back what each key was before.

    With `keep_set`, a key the session already has a value for (the profile's) is left as it
    is. Safe on threads that share the session and set the same values."""
    taken = []
    with _HELD_LOCK:
        try:
            for key, value in conf.items():
                slot = (id(session), key)
                held = _HELD.get(slot)
                if held is not None:
                    if held[1] != value:
                        raise MirrorspecError(f"two blocks at once set {key} on one Spark session "
                                              f"to {held[1]!r} and {value!r}")
                    held[0] += 1
                    taken.append(slot)
                    continue
                before = session.conf.get(key, None)
                if keep_set and before is not None:
                    continue
                session.conf.set(key, value)
                _HELD[slot] = [1, value, before]
                taken.append(slot)
        except BaseException:
            _release(session, taken)
            raise
    try:
        yield session
    finally:
        with _HELD_LOCK:
            _release(session, taken)


def _release(session: Any, slots: list[tuple[int, str]]) -> None:
    for slot in slots:
        held = _HELD[slot]
        held[0] -= 1
        if held[0]:
            continue
        del _HELD[slot]
        key, before = slot[1], held[2]
        if before is None:
            session.conf.unset(key)
        else:
            session.conf.set(key, before)


def _remote_create(url: str, app_name: str | None = None) -> Any:
    builder = SparkSession.builder.remote(url)
    if app_name:
        builder = builder.appName(app_name)
    session = builder.create()
    if not _OPEN_REMOTE:
        atexit.register(_close_remote_sessions)
    _OPEN_REMOTE.append(session)
    _OWNED.append(session)
    return session


def sessions_started() -> int:
    """How many sessions this process has started so far (a mark for `stop_sessions`)."""
    return len(_OWNED)


def stop_sessions(since: int = 0) -> None:
    """Stop the sessions this process started after mark `since` (classic and Connect), so a
    cluster's master records the application as finished when the command returns. Sessions
    that existed before (a notebook's, a test's) are left alone. The CLI calls it when a
    command ends, however it ends."""
    while len(_OWNED) > since:
        session = _OWNED.pop()
        if session in _OPEN_REMOTE:
            _OPEN_REMOTE.remove(session)
        try:
            session.stop()
        except Exception as exc:  # noqa: BLE001 - the JVM may be gone already (a crash, Ctrl-C)
            _log.warning("could not stop the Spark session (%s)", exc)


def _close_remote_sessions() -> None:
    while _OPEN_REMOTE:
        session = _OPEN_REMOTE.pop()
        try:
            session.stop()
        except Exception:  # noqa: BLE001, S110 - the server may be gone already; nothing to release
            pass


def _add_delta_jars(merged: dict[str, str], mode: str, master: str) -> None:
    if mode == "provided":
        return
    if mode == "cache":
        # not cached yet: downloaded now (seconds), or a SetupError saying how to get them
        _add_jar_files(merged, [str(p) for p in jars.fetch()], master)
    else:
        _append(merged, "spark.jars.packages", jars.delta_artifacts()[0])
    # Spark's Kafka connector (source.kafka) rides along when the cache has it.
    kafka = jars.cached_kafka_jars() if mode == "cache" else None
    if kafka:
        _add_jar_files(merged, [str(p) for p in kafka], master)


def _add_jar_files(merged: dict[str, str], paths: list[str], master: str) -> None:
    """Jars every JVM of the session needs. A local master is one JVM: on its class path from
    the start, so nothing is copied (`spark.jars` makes a local executor fetch each jar through
    the driver's file server before its first task: ~20 MB for Delta's and Kafka's, every
    command) and the class-data archive holds their classes like Spark's own. A cluster
    master's executors get them through `spark.jars`."""
    if master.startswith("local"):
        existing = merged.get("spark.driver.extraClassPath")
        merged["spark.driver.extraClassPath"] = os.pathsep.join(([existing] if existing else [])
                                                                + paths)
    else:
        _append(merged, "spark.jars", ",".join(paths))


def _add_extra_jars(merged: dict[str, str], name: str, master: str) -> None:
    try:
        cached = jars.cached_extra_jars(name)
    except SetupError as exc:
        raise MirrorspecError(f"spark.conf {EXTRA_JARS_KEY}: {exc.message}") from None
    if not cached:
        raise MirrorspecError(f"spark.conf {EXTRA_JARS_KEY}: the {name!r} jars are not cached",
                              hint=f"fetch them once: python -m mirrorspec.spark.platform.jars {name}")
    _add_jar_files(merged, [str(p) for p in cached], master)


def _append(conf: dict[str, str], key: str, value: str) -> None:
    existing = conf.get(key)
    conf[key] = f"{existing},{value}" if existing else value


def _inside_spark_submit() -> bool:
    """True when spark-submit (or a managed job) started this Python: its master is kept."""
    return bool(os.environ.get("PYSPARK_GATEWAY_PORT")) and SparkSession.getActiveSession() is None


def _apply_runtime_conf(session: Any, conf: Mapping[str, str]) -> None:
    """Set each key on a running session; a key only settable at start-up is a clear error."""
    for key, value in conf.items():
        try:
            session.conf.set(key, value)
        except Exception as exc:
            text = str(exc)
            if "CANNOT_MODIFY" not in text and "Cannot modify" not in text:
                raise
            where = ("the Spark Connect server" if is_connect(session)
                     else "the Spark driver that was already running")
            raise MirrorspecError(
                f"spark.conf {key} can only be set when Spark starts, and {where} has started "
                "without it",
                hint="set it where that Spark is started (spark-submit --conf, the server's "
                     "command line, the cluster's configuration) and remove it from the profile"
            ) from None


def shown_remote(remote: str) -> str:
    """A Spark Connect URL for messages: the value of its `;token=` parameter hidden."""
    return _TOKEN_PARAMETER.sub(r"\1***", remote)


_TOKEN_PARAMETER = re.compile(r"(;\s*token\s*=)[^;]*", re.IGNORECASE)


def _connect_session(remote: str, conf: dict[str, str], app_name: str) -> Any:
    """A Spark Connect session on `remote`, checked for Delta Lake."""
    shown = shown_remote(remote)
    try:
        import pyspark.sql.connect.session  # noqa: F401 - fails without the Connect extras
    except ImportError as exc:
        raise MirrorspecError(
            f"spark.remote {shown} needs pyspark's Spark Connect client, which is not "
            f"installed ({exc.name or exc})",
            hint="pip install 'pyspark[connect]' (grpcio, grpcio-status, "
                 "googleapis-common-protos, zstandard) into mirrorspec's environment") from None
    register_delta_errors(remote=True)
    runtime = {k: DEFAULT_CONF[k] for k in _CONNECT_DEFAULTS}
    runtime.update(conf)
    _check_reachable(remote)
    try:
        session = _remote_create(remote, app_name)
        extensions = session.conf.get("spark.sql.extensions", "") or ""
    except MirrorspecError:
        raise
    except Exception as exc:  # noqa: BLE001 - gRPC/connection errors come in many types
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise MirrorspecError(
            f"cannot reach the Spark Connect server at {shown}: {first}",
            hint="start the server (see docs/deploy.md) or fix spark.remote in profiles.yml"
        ) from None
    if DELTA_EXTENSION not in extensions:
        raise MirrorspecError(
            f"the Spark Connect server at {shown} was started without Delta Lake "
            f"(spark.sql.extensions is {extensions or 'unset'!r})",
            hint="start it with --jars/--packages io.delta:" + jars.delta_artifacts()[0].split(":", 1)[1]
                 + f" --conf spark.sql.extensions={DELTA_EXTENSION} --conf "
                 "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog"
                 " (docs/deploy.md)")
    _apply_runtime_conf(session, runtime)
    _REMOTE_SESSIONS[session.session_id] = (remote, runtime)
    return session


def _check_reachable(remote: str, timeout: float = 10.0) -> None:
    """Fail fast when nothing listens at sc://host:port (the gRPC client would retry for minutes)."""
    import socket
    from urllib.parse import urlparse

    if not remote.startswith("sc://"):
        raise MirrorspecError(f"spark.remote {shown_remote(remote)!r} is not a Spark Connect URL",
                              hint="write it as sc://host:port (port 15002 by default)")
    parsed = urlparse("http://" + remote[len("sc://"):].split("/", 1)[0])
    host, port = parsed.hostname or "localhost", parsed.port or 15002
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as exc:
        raise MirrorspecError(
            f"cannot reach the Spark Connect server at {shown_remote(remote)}: {host}:{port}: "
            f"{exc.strerror or exc}",
            hint="start the server (see docs/deploy.md) or fix spark.remote in profiles.yml"
        ) from None


def start_session(plan: Plan, console: Any = None, warm: bool = False,
                  master: str | None = None, conf: Mapping[str, str] | None = None):
    """The SparkSession the plan asks for (secrets in master/remote/conf resolved now), with a
    command's `master` (--master: also over the profile's remote) and `conf` (--conf) over it;
    `console` hears "starting Spark…" at once when the JVM is started here. `warm`: the caller
    works over Spark Connect, so the warm Spark server is used when one runs for these settings
    and the plan works over Connect too (warm_server.plan_allows)."""
    from mirrorspec.spark.platform.warm_server import plan_allows

    crash_point("before_spark_start")
    spec = plan.spark
    remote = resolve_secrets(spec.remote) if spec.remote and not master else None
    return build_session(master or resolve_secrets(spec.master),
                         {**resolve_secrets(dict(spec.conf)), **(conf or {})}, remote,
                         console=console, warm=warm and plan_allows(plan))


def _warm_session(merged: dict[str, str], master: str, app_name: str, console: Any) -> Any:
    """A Connect session on the warm server started for exactly `merged` and `master`
    (warm_server), or None: none runs, it is gone, or it doesn't answer (said, once)."""
    from mirrorspec.spark.platform import warm_server

    say = console.warning if console is not None else None
    ready = warm_server.find(merged, master, say)
    if ready is None:
        return None
    runtime = {k: merged[k] for k in _CONNECT_DEFAULTS if k in merged}
    connect_mode = os.environ.get(_CONNECT_MODE_ENV)
    try:
        session = _connect_session(ready.connect_url, runtime, app_name)
    except Exception as exc:  # noqa: BLE001 - gRPC errors come in many types; Spark starts here
        if connect_mode is None:
            os.environ.pop(_CONNECT_MODE_ENV, None)
        message = exc.message if isinstance(exc, MirrorspecError) else str(exc).split("\n")[0]
        (say or _log.warning)(f"the warm Spark server at {ready.url} did not answer "
                              f"({message}); starting Spark here")
        return None
    if connect_mode is None:
        _WARM_CONNECT_MODE.append(True)
    (console.info if console is not None else _log.info)(
        f"using the warm Spark server at {ready.url}")
    return session


# pyspark marks the process as a Connect client (this variable) when a Connect session is
# created, and then routes SparkSession.builder and pyspark.sql.functions to Connect. A command
# that used the warm server and then needs a classic session (`build`: run, then test) takes
# the mark back first.
_CONNECT_MODE_ENV = "SPARK_CONNECT_MODE_ENABLED"
_WARM_CONNECT_MODE: list[bool] = []


def _leave_warm_connect_mode() -> None:
    if _WARM_CONNECT_MODE:
        _WARM_CONNECT_MODE.clear()
        os.environ.pop(_CONNECT_MODE_ENV, None)
