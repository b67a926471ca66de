"""`mirrorspec docs generate|serve`: a static site describing every mirrored table.

Parses the options and calls `mirrorspec/context/site.py` (generate the site, find the one to
serve); serving over HTTP until Ctrl-C is the command's own."""

from __future__ import annotations

import signal
from pathlib import Path

import click

from mirrorspec.commands.params import (get_console, project_context, project_options,
                                        selection_options)
from mirrorspec.commands.params import project_dir as project_dir_option
from mirrorspec.base.errors import MirrorspecError
from mirrorspec.context import site as docs_site


@click.group("docs")
def docs() -> None:
    """Generate and serve the project's documentation site."""


@docs.command("generate")
@project_options
@selection_options
def generate(project_dir: str, target: str | None, vars_text: str | None,
             profiles_dir: str | None, select: tuple[str, ...], exclude: tuple[str, ...],
             state_path: str | None) -> None:
    """Compile the project and write the site to target/docs/ (--select: only those tables'
    pages)."""
    console = get_console()
    params = {"project_dir": project_dir, "target": target, "vars_text": vars_text,
              "profiles_dir": profiles_dir}
    site = docs_site.generate(project_context(params, console), select, exclude, state_path)
    console.result(f"Docs for {site.tables} table(s) written to {site.index}",
                   path=str(site.path), tables=site.tables, status=site.status,
                   run_results=site.run_results, test_results=site.test_results,
                   delta_tables=site.delta_tables)


@docs.command("serve")
@project_dir_option
@click.option("--port", default=8080, show_default=True, type=click.IntRange(0, 65535),
              help="Port (0: any free port).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--dir", "site_dir", type=click.Path(file_okay=False, path_type=Path),
              help="The site folder (default: <target-path>/docs of the project).")
def serve(project_dir: str, port: int, host: str, site_dir: Path | None) -> None:
    """Serve target/docs/ over HTTP until Ctrl-C."""
    from mirrorspec.docsite import make_server

    console = get_console()
    site = docs_site.site_to_serve(project_dir, site_dir)
    try:
        server = make_server(site, host, port)
    except OSError as exc:
        raise MirrorspecError(f"cannot listen on {host}:{port}: {exc.strerror or exc}",
                              hint="pick another --port") from None
    bound_host, bound_port = server.server_address[:2]
    url = f"http://{_url_host(bound_host)}:{bound_port}/"
    console.result(f"Serving {site} at {url} (Ctrl-C to stop)", url=url, path=str(site))
    # Ctrl-C and SIGTERM stop the server even when the parent started it with SIGINT ignored
    # (a background job of a script does).
    previous = {sig: signal.signal(sig, _interrupt) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        console.info("Stopped.")
    finally:
        server.server_close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


COMMANDS = [docs]
