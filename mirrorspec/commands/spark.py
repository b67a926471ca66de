"""`mirrorspec spark start | status | stop`: a warm local Spark Connect server that commands of the
same project and profile output use instead of starting a JVM each (warm_server.py)."""

from __future__ import annotations

import time
from typing import Any

import click

from mirrorspec.commands.params import get_console, plan_options


@click.group("spark")
def spark() -> None:
    """Keep Spark warm between commands: a local Spark Connect server per profile output."""


def _settings(params: dict[str, Any]) -> tuple[Any, str, dict[str, str]]:
    """(plan, master, the conf a local driver of the plan starts with) for the project."""
    from mirrorspec.compile import load_plan_context
    from mirrorspec.base.errors import MirrorspecError
    from mirrorspec.artifacts.plan import resolve_secrets
    from mirrorspec.spark.platform.session import driver_conf

    plan = load_plan_context(params["project_dir"], params["target"], params["vars_text"],
                             params["profiles_dir"], params["plan_path"]).plan
    if plan.spark.remote:
        raise MirrorspecError(f"profile output {plan.profile}.{plan.target} uses the Spark Connect "
                              f"server at spark.remote already; there is nothing to keep warm",
                              hint="pick a profile output with spark.master local[*] (--target)")
    master = resolve_secrets(plan.spark.master) or "local[*]"
    return plan, master, driver_conf(resolve_secrets(dict(plan.spark.conf)), master)


def _label(plan: Any) -> str:
    return f"{plan.project_name} ({plan.profile}.{plan.target})"


@spark.command("start")
@plan_options
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Listen on this port of 127.0.0.1 (default: a free one).")
@click.option("--timeout", type=click.FloatRange(min=1), default=240.0, show_default=True,
              help="Seconds to wait for the server to answer.")
@click.option("--warm-up/--no-warm-up", default=True, show_default=True,
              help="Mirror a throw-away table through the new server, so the first command "
                   "finds its classes loaded.")
def start(port: int | None, timeout: float, warm_up: bool, **params: Any) -> None:
    """Start the warm Spark server for this project's profile output (or say it runs).

    `run`, `build`, `publish`, `mirror`, `test`, `maintain`, `reconcile` and `replay` of a
    project with the same Spark settings then connect to it instead of starting Spark (local
    paths, no Kafka source); set MIRRORSPEC_WARM=off to make them start their own."""
    from mirrorspec.spark.platform import warm_server

    console = get_console()
    plan, master, conf = _settings(params)
    if not warm_server.plan_allows(plan):
        console.warning("this project reaches URIs or Kafka through the Spark driver, which Spark "
                        "Connect does not expose: its commands will start their own Spark")
    console.info(f"starting the warm Spark server for {_label(plan)}…")
    began = time.monotonic()
    ready, started = warm_server.start(conf, master, _label(plan), port=port, timeout=timeout,
                                       say=console.info)
    if started and warm_up:
        _warm_up(console, ready)
    if started:
        console.result(f"the warm Spark server runs at {ready.url} (pid {ready.pid}, "
                       f"{time.monotonic() - began:.1f}s); stop it with `mirrorspec spark stop`",
                       url=ready.url, pid=ready.pid, ready_file=ready.path)
    else:
        console.result(f"the warm Spark server for {_label(plan)} runs already at {ready.url} "
                       f"(pid {ready.pid})", url=ready.url, pid=ready.pid, ready_file=ready.path)


def _warm_up(console: Any, ready: Any) -> None:
    """A first tiny mirror pass through the new server; a failure is a warning (it runs)."""
    from mirrorspec.spark.ops.warm_up import warm_up

    try:
        warm_up(ready.connect_url)
    except Exception as exc:  # noqa: BLE001 - the server runs; only its warm-up failed
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        first = first.replace(ready.token, "***") if ready.token else first
        console.warning(f"the warm-up pass on {ready.url} failed ({first}); the server runs")


@spark.command("status")
def status() -> None:
    """List the warm Spark servers (every project and profile) and whether each answers."""
    from mirrorspec.spark.platform import warm_server

    console = get_console()
    servers = warm_server.read_all()
    if not servers:
        console.result(f"no warm Spark server (ready files in {warm_server.servers_dir()})",
                       servers=0)
        return
    now = time.time()
    rows = [(r.label, r.url, r.pid, _state(warm_server, r), f"{(now - r.started) / 60:.0f} min",
             r.version) for r in servers]
    console.table("warm Spark servers", ["for", "url", "pid", "alive", "up", "mirrorspec"], rows,
                  kind="warm_servers")


def _state(warm_server: Any, ready: Any) -> str:
    if not ready.ready:  # launched by a `spark start` that never wrote its ready file
        return "yes (no ready file)"
    return "yes" if warm_server.alive(ready) else "no (gone)"


@spark.command("stop")
@plan_options
@click.option("--all", "stop_all", is_flag=True,
              help="Stop every warm Spark server of this user, not only this project's.")
def stop(stop_all: bool, **params: Any) -> None:
    """Stop the warm Spark server of this project's profile output (its whole process group)."""
    from mirrorspec.spark.platform import warm_server

    console = get_console()
    if stop_all:
        chosen = warm_server.read_all()
    else:
        _plan, master, conf = _settings(params)
        key = warm_server.server_key(conf, master)
        chosen = [r for r in warm_server.read_all() if r.key == key]
    if not chosen:
        console.result("no warm Spark server to stop" + ("" if stop_all else
                                                          " for this project's profile output"),
                       stopped=0)
        return
    for ready in chosen:
        warm_server.stop(ready)
        console.info(f"stopped the warm Spark server of {ready.label} (pid {ready.pid})")
    console.result(f"stopped {len(chosen)} warm Spark server(s)", stopped=len(chosen))


COMMANDS = [spark]
