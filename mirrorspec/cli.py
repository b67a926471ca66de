"""The `mirrorspec` command line: a click group of thin commands and one error handler.

Exit codes: 0 ok, 1 user or project error (MirrorspecError, or a failed table), 2 internal error
(the traceback goes to a log file named in the message) or a usage error (click's own code for an
unknown command or option or a bad value; nothing ran), 3 `status --stale-after` (stale).
Commands live in `mirrorspec/commands/`, one module per area, and are registered in
COMMAND_MODULES below (a module that fails to import fails the CLI: a renamed module must never make its commands vanish). Shared options live in
`mirrorspec/commands/params.py`; command modules never import each other or this module.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import sys
import tempfile
import traceback

import click

from mirrorspec import __version__
from mirrorspec.commands.params import LOG_FORMAT_ENV, get_console, global_options
from mirrorspec.base.console import Console, color_disabled, emit_usage_error
from mirrorspec.base.errors import FailedRun, MirrorspecError
from mirrorspec.base import interrupts
from mirrorspec.base.logfile import log_exception, log_folder

# Re-exported for command modules written before params.py; commands import them from
# mirrorspec.commands.params and mirrorspec.base.errors (a later lint step forbids importing cli).
__all__ = ["cli", "main", "register", "COMMAND_MODULES", "MirrorspecGroup", "FailedRun",
           "get_console"]

# Explicit registry: module → the click commands it exports (`COMMANDS` list in the module).
COMMAND_MODULES = (
    "mirrorspec.commands.project",   # init, validate, compile, ls, clean
    "mirrorspec.commands.mirror",    # mirror
    "mirrorspec.commands.run",       # run, publish, build, retry
    "mirrorspec.commands.inspect",   # status, show, history, changes, export
    "mirrorspec.commands.diff",      # diff
    "mirrorspec.commands.datatest",  # test
    "mirrorspec.commands.docs",      # docs generate / serve
    "mirrorspec.commands.lint",      # lint
    "mirrorspec.commands.reconcile", # reconcile
    "mirrorspec.commands.replay",    # replay
    "mirrorspec.commands.maintain",  # maintain
    "mirrorspec.commands.serve",     # serve (the OneLake endpoint)
    "mirrorspec.commands.debug",     # debug
    "mirrorspec.commands.spark",     # spark start / status / stop (the warm Spark server)
)


_SESSION_MODULE = "mirrorspec.spark.platform.session"


class MirrorspecGroup(click.Group):
    """Maps errors to exit codes: 1 for MirrorspecError, 2 (with a log) for anything else."""

    def invoke(self, ctx: click.Context):
        try:
            return self._invoke_and_stop_spark(ctx)
        except MirrorspecError as exc:
            console = ctx.obj.get("console") if isinstance(ctx.obj, dict) else None
            message = exc.render() + _jvm_log_note()
            if console is not None and console.log_format == "json":
                console.error(message, error_type=type(exc).__name__)
            else:
                click.echo(_red("Error: ", console) + message, err=True)
            ctx.exit(exc.exit_code)
        except click.ClickException as exc:
            raise _json_if_asked(exc, ctx) from None
        except (click.exceptions.Exit, click.exceptions.Abort):
            if interrupts.interrupted():
                _stop_interrupted(ctx)
            raise
        except KeyboardInterrupt:
            _stop_interrupted(ctx)
        except Exception:  # noqa: BLE001 - the one place unexpected errors are turned into exit 2
            if interrupts.interrupted():  # e.g. Py4J's connection cut by Ctrl-C mid-call
                _stop_interrupted(ctx)
            log = _write_traceback()
            click.echo(_red("Internal error: ", ctx.obj.get("console") if isinstance(ctx.obj, dict)
                            else None)
                       + f"{sys.exc_info()[1]!r}\n  the traceback is in {log}; "
                       "please report it with that file." + _jvm_log_note(), err=True)
            ctx.exit(2)

    def _invoke_and_stop_spark(self, ctx: click.Context):
        # A session the command started ends with it (success, error or Ctrl-C), so a cluster's
        # master lists the application as finished when the command returns. The module is
        # looked up, never imported: commands that start no JVM stay JVM-free.
        session = sys.modules.get(_SESSION_MODULE)
        mark = session.sessions_started() if session is not None else 0
        try:
            return super().invoke(ctx)
        finally:
            session = sys.modules.get(_SESSION_MODULE)
            # after Ctrl-C the JVM ends with the process; stopping it could hang on a call
            # Ctrl-C cut short
            if session is not None and not interrupts.interrupted():
                session.stop_sessions(since=mark)

    def make_context(self, info_name, args, parent=None, **extra):
        """Usage errors of the root options (e.g. `--log-format xml`) as JSON when asked."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.ClickException as exc:
            raise _json_if_asked(exc, None, args) from None


INTERRUPTED = ("Interrupted (Ctrl-C): stopped at once; what was committed stays, and the next "
               "run goes on from there")


def _stop_interrupted(ctx: click.Context) -> None:
    """Ctrl-C, wherever it came: one line (the trace, if any, to the log file), exit 130 —
    at once in the console script, without waiting for tables still inside Spark."""
    exc = sys.exc_info()[1]
    line = INTERRUPTED
    if exc is not None and not isinstance(exc, (KeyboardInterrupt, click.exceptions.Exit)):
        with contextlib.suppress(MirrorspecError, OSError):
            line += f" (details in {log_exception('interrupted (Ctrl-C)', exc)})"
    console = ctx.obj.get("console") if isinstance(ctx.obj, dict) else None
    if console is not None and console.log_format == "json":
        record = console.record("error", line, error_type="Interrupted")
        click.echo(json.dumps(record, default=str), err=True)
    else:
        click.echo(line, err=True)
    if interrupts.installed():
        interrupts.exit_now(interrupts.EXIT_CODE)
    ctx.exit(interrupts.EXIT_CODE)


def _red(text: str, console: Console | None) -> str:
    """`text` in bold red, unless --no-color or NO_COLOR."""
    no_color = console.no_color if console is not None else color_disabled()
    return text if no_color else click.style(text, fg="red", bold=True)


def _wants_json(ctx: click.Context | None, args: list[str] | None = None) -> bool:
    console = ctx.obj.get("console") if ctx is not None and isinstance(ctx.obj, dict) else None
    if console is not None and console.log_format == "json":
        return True
    argv = list(args if args is not None else sys.argv[1:])
    for index, arg in enumerate(argv):
        if arg == "--log-format=json" or (arg == "--log-format" and argv[index + 1:index + 2]
                                          == ["json"]):
            return True
    return os.environ.get(LOG_FORMAT_ENV) == "json"


class _JsonUsageError(click.ClickException):
    """A click usage error shown as one JSON error event."""

    def __init__(self, original: click.ClickException, invocation_id: str | None):
        super().__init__(original.format_message())
        self.exit_code = original.exit_code
        self.original = original
        self.invocation_id = invocation_id

    def show(self, file=None) -> None:
        message = self.original.format_message()
        usage = getattr(self.original, "ctx", None)
        if isinstance(self.original, click.UsageError) and usage is not None:
            message += f" ({usage.get_usage().strip()})"
        emit_usage_error(message, self.exit_code, self.invocation_id)


def _json_if_asked(exc: click.ClickException, ctx: click.Context | None,
                   args: list[str] | None = None) -> click.ClickException:
    if isinstance(exc, _JsonUsageError) or not _wants_json(ctx, args):
        return exc
    console = ctx.obj.get("console") if ctx is not None and isinstance(ctx.obj, dict) else None
    return _JsonUsageError(exc, console.invocation_id if console is not None else None)


def _jvm_log_note() -> str:
    """Where Spark's own output went, when this process started a JVM (never imports pyspark)."""
    session = sys.modules.get(_SESSION_MODULE)
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


def version_text() -> str:
    """`mirrorspec --version`: the package and the Spark, Delta Lake and Python it runs with."""
    from importlib.metadata import PackageNotFoundError, version

    def installed(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    python = ".".join(str(part) for part in sys.version_info[:3])
    return (f"mirrorspec {__version__} (Spark {installed('pyspark')}, "
            f"Delta Lake {installed('delta-spark')}, Python {python})")


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(version_text())
        ctx.exit()


@click.group(cls=MirrorspecGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version of mirrorspec, Spark, Delta Lake and Python, and exit.")
@click.pass_context
def cli(ctx: click.Context, log_format: str, quiet: bool, no_color: bool) -> None:
    """mirrorspec: declarative Fabric open-mirroring pipelines on Spark and Delta Lake."""
    ctx.ensure_object(dict)
    ctx.obj["console"] = Console(log_format=log_format, quiet=quiet, no_color=no_color)


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
    interrupts.install()
    try:
        cli(prog_name="mirrorspec")
    except SystemExit as ended:
        interrupts.exit_after_cleanup(ended.code)
    interrupts.exit_after_cleanup(0)


if __name__ == "__main__":
    main()
