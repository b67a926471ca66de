"""The `mirrorspec` command line: a click group of thin commands and one error handler.

Exit codes: 0 ok, 1 user or project error (MirrorspecError, or a failed table), 2 internal error
(the traceback goes to a log file named in the message), 64 a usage error (an unknown command or
option, a bad option value: click's own message, nothing run). Commands live in `mirrorspec/commands/`,
one module per area, and are registered in COMMAND_MODULES below (a module that fails to import
fails the CLI: a renamed module must never make its commands vanish). Shared options live in
`mirrorspec/commands/params.py`; command modules never import each other or this module.
"""

from __future__ import annotations

import importlib
import os
import sys
import tempfile
import traceback

import click

from mirrorspec import __version__
from mirrorspec.commands.params import get_console, global_options
from mirrorspec.console import Console
from mirrorspec.errors import FailedRun, MirrorspecError
from mirrorspec.logfile import log_folder

# Re-exported for command modules written before params.py; commands import them from
# mirrorspec.commands.params and mirrorspec.errors (a later lint step forbids importing cli).
__all__ = ["cli", "main", "register", "COMMAND_MODULES", "MirrorspecGroup", "FailedRun",
           "get_console"]

# Explicit registry: module → the click commands it exports (`COMMANDS` list in the module).
COMMAND_MODULES = (
    "mirrorspec.commands.project",   # init, validate, compile
    "mirrorspec.commands.mirror",    # mirror
    "mirrorspec.commands.run",       # run, publish, build
    "mirrorspec.commands.inspect",   # status, show, history
    "mirrorspec.commands.diff",      # diff
    "mirrorspec.commands.datatest",  # test
    "mirrorspec.commands.docs",      # docs generate / serve
    "mirrorspec.commands.lint",      # lint
    "mirrorspec.commands.reconcile", # reconcile
    "mirrorspec.commands.replay",    # replay
    "mirrorspec.commands.maintain",  # maintain
)


# sysexits.h EX_USAGE: click would exit 2, the code mirrorspec keeps for internal errors.
USAGE_ERROR = 64


class MirrorspecGroup(click.Group):
    """Maps errors to exit codes: 1 for MirrorspecError, 64 for a usage error, 2 (with a log)
    for anything else."""

    def make_context(self, *args, **kwargs):
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as exc:  # the group's own options
            exc.exit_code = USAGE_ERROR
            raise

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # a command's arguments, an unknown command
            exc.exit_code = USAGE_ERROR
            raise
        except MirrorspecError as exc:
            console = ctx.obj.get("console") if isinstance(ctx.obj, dict) else None
            message = exc.render() + _jvm_log_note()
            if console is not None and console.log_format == "json":
                console.error(message, error_type=type(exc).__name__)
            else:
                click.echo(click.style("Error: ", fg="red", bold=True) + message, err=True)
            ctx.exit(1)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            ctx.exit(130)
        except Exception:  # noqa: BLE001 - the one place unexpected errors are turned into exit 2
            log = _write_traceback()
            click.echo(click.style("Internal error: ", fg="red", bold=True)
                       + f"{sys.exc_info()[1]!r}\n  the traceback is in {log}; "
                       "please report it with that file." + _jvm_log_note(), err=True)
            ctx.exit(2)


def _jvm_log_note() -> str:
    """Where Spark's own output went, when this process started a JVM (never imports pyspark)."""
    session = sys.modules.get("mirrorspec.spark.platform.session")
    path = session.jvm_log_path() if session is not None else None
    return f"\n  Spark's own output (JVM log): {path}" if path else ""


def _write_traceback() -> str:
    try:
        folder = log_folder()
    except MirrorspecError:  # the crash log must be written somewhere
        folder = tempfile.gettempdir()
    fd, path = tempfile.mkstemp(prefix="mirrorspec-crash-", suffix=".log", dir=folder)
    with os.fdopen(fd, "w") as handle:
        handle.write(traceback.format_exc())
    return path


@click.group(cls=MirrorspecGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="mirrorspec")
@click.pass_context
def cli(ctx: click.Context, log_format: str, quiet: bool) -> None:
    """mirrorspec: declarative Fabric open-mirroring pipelines on Spark and Delta Lake."""
    ctx.ensure_object(dict)
    ctx.obj["console"] = Console(log_format=log_format, quiet=quiet)


cli.params.extend(global_options(root=True))


def _with_global_options(command: click.Command) -> None:
    """--log-format/--quiet after the subcommand too (`mirrorspec run --log-format json`)."""
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _with_global_options(sub)
        return
    names = {name for param in command.params for name in param.opts}
    command.params.extend(p for p in global_options(root=False) if not set(p.opts) & names)


def register(group: click.Group, modules: tuple[str, ...] = COMMAND_MODULES) -> None:
    """Add the `COMMANDS` of each module to `group`; an import error propagates."""
    for name in modules:
        module = importlib.import_module(name)
        commands = getattr(module, "COMMANDS", None)
        if not commands:
            raise RuntimeError(f"{name} registers no commands (a COMMANDS list)")
        for command in commands:
            _with_global_options(command)
            group.add_command(command)


register(cli)


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="mirrorspec")


if __name__ == "__main__":
    main()
