"""Which Spark session a command gets: the profile's (local, a cluster's master, Spark Connect)
with --master/--conf over it, the warm Spark server when one runs for those settings, or a
local session without a project. Spark is imported only inside these functions."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, TypeVar

if TYPE_CHECKING:
    from mirrorspec.base.files import Files

T = TypeVar("T")


def start_spark(plan: Any, master: str | None, conf: dict[str, str], console: Any = None,
                warm: bool = False):
    """A SparkSession: the profile's master, remote and conf (secrets resolved) when `plan` is
    given, with --master and --conf over them; else --master (local[*]) and --conf. `console`
    hears "starting Spark…" at once. `warm` (a command that works over Spark Connect): with a
    plan, the warm Spark server is used when one runs for exactly these settings and the plan
    works over Connect (`warm_server.plan_allows`)."""
    from mirrorspec.spark.platform.session import build_session, start_session

    if plan is None:
        return build_session(master or "local[*]", conf, console=console)
    return start_session(plan, console, warm, master=master, conf=conf)


def session_for(plan: Any):
    """The session a reader falls back to when delta-rs can't read a table: the plan's
    settings, else a local session."""
    if plan is not None:
        from mirrorspec.spark.platform.session import start_session

        return start_session(plan)
    from mirrorspec.spark.platform.session import build_session

    return build_session()


def local_then_session(resolve: Callable[[Files], T], start: Callable[[], Any]) -> tuple[T, Any]:
    """`resolve(files)` with local files only, so a local path's problem is said before Spark
    starts; when it meets a URI (`files.SessionNeeded`), `start()` Spark and resolve again with
    the session's Hadoop filesystems (the profile's credentials), before any heavy work. Returns
    (what `resolve` returned, the session or None). A store that refuses or can't be reached is
    a StorageError naming its cause, not an internal error."""
    from mirrorspec.base.errors import MirrorspecError, StorageError
    from mirrorspec.base.files import Files, SessionNeeded

    try:
        return resolve(Files()), None
    except SessionNeeded:
        spark = start()
    from mirrorspec.base.logfile import log_exception
    from mirrorspec.spark.platform.failures import short
    from mirrorspec.spark.platform.hadoop_fs import files_for

    try:
        return resolve(files_for(spark)), spark
    except MirrorspecError:
        raise
    except Exception as exc:  # noqa: BLE001 - py4j: S3A/ABFS refused (credentials, bucket, endpoint)
        log = log_exception("resolving the table's paths", exc)
        raise StorageError(f"could not reach the store: {short(exc)}; details in {log}",
                           hint="check the profile's Spark settings for the store (endpoint, "
                                "credentials); `mirrorspec debug` checks it is reachable") from None
