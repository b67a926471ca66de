"""`spark start | status | stop`: the warm local Spark Connect server of a project's profile
output (mirrorspec/spark/platform/warm_server.py) — which settings it is for, started (and
warmed up), listed, stopped — for `mirrorspec spark`. Spark is imported only inside a call."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from mirrorspec.base.errors import MirrorspecError

if TYPE_CHECKING:
    from mirrorspec.context.project import ProjectContext


@dataclass(frozen=True)
class WarmSettings:
    """The Spark settings a warm server is for: the plan, its master and the conf a local
    driver of the plan starts with, and how messages name it."""

    plan: Any
    master: str
    conf: dict[str, str]

    @property
    def label(self) -> str:
        return f"{self.plan.project_name} ({self.plan.profile}.{self.plan.target})"


@dataclass(frozen=True)
class WarmStart:
    """`spark start`: the server's ready record, whether this call started it (False: it ran
    already) and how long starting took."""

    ready: Any
    started: bool
    seconds: float


def settings(project: "ProjectContext") -> WarmSettings:
    """The warm server's settings for the project's profile output; a MirrorspecError when
    the output uses a Spark Connect server already."""
    from mirrorspec.artifacts.plan import resolve_secrets
    from mirrorspec.spark.platform.session import driver_conf

    plan = project.load(say_inferred=False).plan
    if plan.spark.remote:
        raise MirrorspecError(f"profile output {plan.profile}.{plan.target} uses the Spark Connect "
                              f"server at spark.remote already; there is nothing to keep warm",
                              hint="pick a profile output with spark.master local[*] (--target)")
    master = resolve_secrets(plan.spark.master) or "local[*]"
    return WarmSettings(plan, master, driver_conf(resolve_secrets(dict(plan.spark.conf)), master))


def start(project: "ProjectContext", port: int | None, timeout: float, warm_up: bool
          ) -> tuple[WarmSettings, WarmStart]:
    """Start the warm server for the project's profile output unless one runs, and (when it
    was started and `warm_up`) mirror a throw-away table through it."""
    from mirrorspec.spark.platform import warm_server

    console = project.console
    found = settings(project)
    if not warm_server.plan_allows(found.plan):
        console.warning("this project reaches URIs or Kafka through the Spark driver, which Spark "
                        "Connect does not expose: its commands will start their own Spark")
    console.info(f"starting the warm Spark server for {found.label}…")
    began = time.monotonic()
    ready, started = warm_server.start(found.conf, found.master, found.label, port=port,
                                       timeout=timeout, say=console.info)
    if started and warm_up:
        _warm_up(console, ready)
    return found, WarmStart(ready, started, time.monotonic() - began)


def _warm_up(console: Any, ready: Any) -> None:
    """A first tiny mirror pass through the new server; a failure is a warning (it runs)."""
    from mirrorspec.spark.ops.warm_up import warm_up

    try:
        warm_up(ready.connect_url)
    except Exception as exc:  # noqa: BLE001 - the server runs; only its warm-up failed
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = first.replace(ready.token, "***") if ready.token else first
        console.warning(f"the warm-up pass on {ready.url} failed ({first}); the server runs")


def servers() -> list[tuple[Any, str]]:
    """Every warm server of this user (any project and profile) and whether it answers."""
    from mirrorspec.spark.platform import warm_server

    return [(ready, _state(warm_server, ready)) for ready in warm_server.read_all()]


def servers_folder() -> str:
    """Where the servers' ready files are."""
    from mirrorspec.spark.platform import warm_server

    return str(warm_server.servers_dir())


def _state(warm_server: Any, ready: Any) -> str:
    if not ready.ready:  # launched by a `spark start` that never wrote its ready file
        return "yes (no ready file)"
    return "yes" if warm_server.alive(ready) else "no (gone)"


def stop(project: "ProjectContext", stop_all: bool) -> list[Any]:
    """Stop the warm server of the project's profile output (every one of this user's with
    `stop_all`), each its whole process group; the ready records of those stopped."""
    from mirrorspec.spark.platform import warm_server

    if stop_all:
        chosen = warm_server.read_all()
    else:
        found = settings(project)
        key = warm_server.server_key(found.conf, found.master)
        chosen = [r for r in warm_server.read_all() if r.key == key]
    for ready in chosen:
        warm_server.stop(ready)
        project.console.info(f"stopped the warm Spark server of {ready.label} (pid {ready.pid})")
    return chosen
