"""`mirrorspec spark start | status | stop`: a warm local Spark Connect server that commands of the
same project and profile output use instead of starting a JVM each (warm_server.py).

Parses the options, calls `mirrorspec/context/warm.py` and renders what it did."""

from __future__ import annotations

import time
from typing import Any

import click

from mirrorspec.commands.params import get_console, plan_options, project_context
from mirrorspec.context import warm


@click.group("spark")
def spark() -> None:
    """Keep Spark warm between commands: a local Spark Connect server per profile output."""


@spark.command("start")
@plan_options
@click.option("--port", type=click.IntRange(1, 65535), default=None,
              help="Listen on this port of 127.0.0.1 (default: a free one).")
@click.option("--timeout", type=click.FloatRange(min=1), default=240.0, show_default=True,
              help="Seconds to wait for the server to answer.")
@click.option("--warm-up/--no-warm-up", default=True, show_default=True,
              help="Mirror a throw-away table and publish and mirror a throw-away extract "
                   "through the new server, so the first commands find their code warm.")
def start(port: int | None, timeout: float, warm_up: bool, **params: Any) -> None:
    """Start the warm Spark server for this project's profile output (or say it runs).

    `run`, `build`, `publish`, `mirror`, `test`, `maintain`, `reconcile` and `replay` of a
    project with the same Spark settings then connect to it instead of starting Spark (local
    paths, no Kafka source); set MIRRORSPEC_WARM=off to make them start their own."""
    console = get_console()
    found, done = warm.start(project_context(params, console), port, timeout, warm_up)
    ready = done.ready
    if done.started:
        console.result(f"the warm Spark server runs at {ready.url} (pid {ready.pid}, "
                       f"{done.seconds:.1f}s); stop it with `mirrorspec spark stop`",
                       url=ready.url, pid=ready.pid, ready_file=ready.path)
    else:
        console.result(f"the warm Spark server for {found.label} runs already at {ready.url} "
                       f"(pid {ready.pid})", url=ready.url, pid=ready.pid, ready_file=ready.path)


@spark.command("status")
def status() -> None:
    """List the warm Spark servers (every project and profile) and whether each answers."""
    console = get_console()
    servers = warm.servers()
    if not servers:
        console.result(f"no warm Spark server (ready files in {warm.servers_folder()})",
                       servers=0)
        return
    now = time.time()
    rows = [(r.label, r.url, r.pid, state, f"{(now - r.started) / 60:.0f} min", r.version)
            for r, state in servers]
    console.table("warm Spark servers", ["for", "url", "pid", "alive", "up", "mirrorspec"], rows,
                  kind="warm_servers")


@spark.command("stop")
@plan_options
@click.option("--all", "stop_all", is_flag=True,
              help="Stop every warm Spark server of this user, not only this project's.")
def stop(stop_all: bool, **params: Any) -> None:
    """Stop the warm Spark server of this project's profile output (its whole process group)."""
    console = get_console()
    chosen = warm.stop(project_context(params, console), stop_all)
    if not chosen:
        console.result("no warm Spark server to stop" + ("" if stop_all else
                                                          " for this project's profile output"),
                       stopped=0)
        return
    console.result(f"stopped {len(chosen)} warm Spark server(s)", stopped=len(chosen))


COMMANDS = [spark]
