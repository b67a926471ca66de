"""`mirrorspec docs generate|serve`: a static site describing every mirrored table."""

from __future__ import annotations

import signal
from pathlib import Path

import click

from mirrorspec.commands.params import get_console, project_options, selection_options
from mirrorspec.commands.params import project_dir as project_dir_option
from mirrorspec.base.errors import MirrorspecError


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
    import dataclasses

    from mirrorspec.compile import compile_project
    from mirrorspec.docsite.build import write_site

    console = get_console()
    result = compile_project(project_dir, target=target, vars=vars_text, profiles_dir=profiles_dir)
    plan = result.plan
    if select or exclude:
        from mirrorspec.project.selection import select_with_warnings

        plan = dataclasses.replace(plan, tables=select_with_warnings(
            plan, select, exclude, state_path=state_path, console=console))
    out, found = write_site(plan, Path(result.target_dir))
    console.result(f"Docs for {len(plan.tables)} table(s) written to {out / 'index.html'}",
                   path=str(out), tables=len(plan.tables), **found)


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
    from mirrorspec.docsite.build import DOCS_DIR

    console = get_console()
    site = site_dir or _target_dir(Path(project_dir)) / DOCS_DIR
    if not (site / "index.html").exists():
        raise MirrorspecError(f"{site}: no docs site there",
                              hint="run `mirrorspec docs generate` first")
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


def _target_dir(project_dir: Path) -> Path:
    """The project's target folder: `target-path` of mirrorspec_project.yml, else target/.

    Read without rendering (serve needs no profile); a templated target-path falls back."""
    from mirrorspec.load.project import PROJECT_FILE
    from mirrorspec.load.yaml_doc import load_document

    doc = load_document(project_dir / PROJECT_FILE, []).data  # bounded: a YAML bomb is refused
    value = doc.get("target-path") if isinstance(doc, dict) else None
    if not isinstance(value, str) or not value.strip() or "{" in value:
        value = "target"
    return project_dir / Path(value).expanduser()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


COMMANDS = [docs]
