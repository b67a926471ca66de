"""The options commands share, each defined once (with its env-var fallback), and the console.

Like dbt's `cli/params.py`: a command stacks the groups it needs (`project_options`,
`plan_options`, `selection_options`, `run_options`, `warehouse_option`). `global_options` are the
root group's flags (`--log-format`, `--quiet`); cli.py adds them to every command too, so they are
accepted before or after the subcommand.
"""

from __future__ import annotations

from typing import Any, Callable

import click

from mirrorspec.base.console import Console
from mirrorspec.base.origin import Given
from mirrorspec.context.threads import DEFAULT_THREADS
from mirrorspec.load.project import PROFILES_DIR_ENV, PROJECT_DIR_ENV

LOG_FORMAT_ENV = "MIRRORSPEC_LOG_FORMAT"


def absolute_location(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
    """click callback: a path option resolved to its one absolute form where it enters (URIs
    untouched), so the current folder never matters again; tuples element-wise."""
    from mirrorspec.base.files import normalize  # pure Python, no pyspark

    if value is None:
        return None
    if isinstance(value, tuple):
        return tuple(normalize(str(v)) for v in value)
    return normalize(str(value))


def given_as(ctx: click.Context, name: str) -> str | None:
    """How option `name` of the running command got its value, for a message: its flag
    (`--profiles-dir`), its environment variable (`MIRRORSPEC_PROFILES_DIR`), or None for its
    default."""
    source = ctx.get_parameter_source(name)
    param = next((p for p in ctx.command.params if p.name == name), None)
    if source is None or param is None or source.name == "DEFAULT":
        return None
    envvar = getattr(param, "envvar", None)
    if source.name == "ENVIRONMENT" and isinstance(envvar, str):
        return envvar
    return param.opts[0] if param.opts else name


def _project_folder(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """click callback: --project-dir as a `Given`, so a problem with it names where it came
    from (the option, MIRRORSPEC_PROJECT_DIR, or the current folder by default)."""
    if value is None:
        return None
    return Given(str(value), given_as(ctx, str(param.name)) or "the current folder")


def _profiles_folder(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """click callback: --profiles-dir absolute (as `absolute_location`) and as a `Given` naming
    the option or MIRRORSPEC_PROFILES_DIR."""
    value = absolute_location(ctx, param, value)
    if value is None:
        return None
    return Given(value, given_as(ctx, str(param.name)) or "--profiles-dir")


project_dir = click.option(
    "--project-dir", default=".", show_default=True, envvar=PROJECT_DIR_ENV, show_envvar=True,
    type=click.Path(file_okay=False), callback=_project_folder,
    help="Folder holding mirrorspec_project.yml.")
profiles_dir = click.option(
    "--profiles-dir", default=None, envvar=PROFILES_DIR_ENV, show_envvar=True,
    type=click.Path(file_okay=False), callback=_profiles_folder,
    help="Folder holding profiles.yml (default: the project folder, then ~/.mirrorspec).")
target = click.option("--target", "-t", default=None,
                      help="Output of the profile to use (default: the profile's `target`).")
vars_text = click.option("--vars", "vars_text", default=None, metavar="YAML",
                         help="Values for var() as a YAML mapping, e.g. '{env: prod}'.")
plan_path = click.option("--plan", "plan_path", default=None, type=click.Path(dir_okay=False),
                         callback=absolute_location,
                         help="Use this compiled target/plan.json instead of compiling.")
select = click.option("--select", "-s", multiple=True,
                      help="Tables to take: names, schema.*, globs, source:TYPE, tag:TAG, "
                           "state:modified, result:error|fail|skipped (repeatable; space or "
                           "comma separated).")
exclude = click.option("--exclude", multiple=True, help="Tables to leave out (same syntax).")
state_path = click.option("--state", "state_path", default=None, type=click.Path(exists=True),
                          callback=absolute_location,
                          help="A previous target/ folder, for state:modified and result:.")
threads = click.option("--threads", type=click.IntRange(min=1), default=DEFAULT_THREADS,
                       show_default=True, help="Tables processed concurrently.")
table_threads = click.option(
    "--threads", type=click.IntRange(min=1), default=None,
    help="Tables processed concurrently (default: the profile output's `threads`, else twice "
         "the CPU cores, 2 to 8).")
full_refresh = click.option("--full-refresh", is_flag=True,
                            help="Rebuild the selected tables from their sources.")
heartbeat_every = click.option(
    "--heartbeat-every", type=click.IntRange(min=1), default=10, show_default=True, metavar="N",
    help="--watch: print an 'alive' line after every N idle passes in a row.")
heartbeat_file = click.option(
    "--heartbeat-file", default=None, type=click.Path(dir_okay=False), callback=absolute_location,
    help="--watch: rewrite this file after every pass, for a liveness probe (run: default "
         "<target>/heartbeat.json).")
fail_fast = click.option("--fail-fast", "-x", is_flag=True,
                         help="Stop at the first failed table: tables not started yet are "
                              "skipped (those running finish).")
output_format = click.option(
    "--format", "output", type=click.Choice(["text", "json", "csv"]), default="text",
    show_default=True, help="text for people; json (typed values, null) or csv (NULL an empty "
                            "field, '' as \"\") for programs.")
warehouse_option = click.option(
    "--warehouse", default=None, type=click.Path(file_okay=False), callback=absolute_location,
    help="Read this warehouse directly instead of compiling the project.")


spark_conf = click.option("--conf", "conf", multiple=True, metavar="KEY=VALUE",
                          help="Spark conf, over the profile's (repeatable).")
spark_master = click.option("--master", default=None,
                            help="Spark master URL (default: the profile's, else local[*]).")


metrics_port = click.option(
    "--metrics-port", type=click.IntRange(0, 65535), default=None, metavar="PORT",
    help="With --watch: serve Prometheus metrics on http://HOST:PORT/metrics "
         "(pip install 'mirrorspec[metrics]'; 0 picks a free port).")
metrics_host = click.option(
    "--metrics-host", default="127.0.0.1", show_default=True, metavar="HOST",
    envvar="MIRRORSPEC_METRICS_HOST", show_envvar=True,
    help="The address /metrics listens on (0.0.0.0: every interface, for a scraper in "
         "another pod or host).")


def parse_conf(pairs: tuple[str, ...]) -> dict[str, str]:
    """--conf KEY=VALUE pairs as a dict (a UsageError names a malformed one)."""
    from mirrorspec.base.errors import UsageError

    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--conf {pair!r} is not key=value",
                             hint="e.g. --conf spark.sql.shuffle.partitions=4")
        conf[key.strip()] = value
    return conf


def _given(name: str) -> bool:
    """True when option `name` was set on the command line or from its environment variable."""
    ctx = click.get_current_context(silent=True)
    source = ctx.get_parameter_source(name) if ctx is not None else None
    return source is not None and source.name in ("COMMANDLINE", "ENVIRONMENT")


def optional_plan(params: dict[str, Any], needed: bool):
    """The project's plan when the command runs in a project: --plan, --project-dir, --target,
    --vars or --profiles-dir given, or `needed` (a location the project supplies was left out).
    None otherwise: the command works from its own options."""
    if not needed and not any(_given(n) for n in ("plan_path", "project_dir", "target",
                                                  "vars_text", "profiles_dir")):
        return None
    from mirrorspec.compile import load_plan_context

    return load_plan_context(params["project_dir"], params["target"], params["vars_text"],
                             params["profiles_dir"], params["plan_path"]).plan


def _stack(*decorators: Callable) -> Callable[[Callable], Callable]:
    def apply(func: Callable) -> Callable:
        for decorator in reversed(decorators):
            func = decorator(func)
        return func
    return apply


project_options = _stack(project_dir, target, vars_text, profiles_dir)
"""--project-dir, --target, --vars, --profiles-dir: what a compile needs."""
plan_options = _stack(project_dir, profiles_dir, target, vars_text, plan_path)
"""The project options and --plan (a compiled plan.json instead of a compile)."""
selection_options = _stack(select, exclude, state_path)
"""--select, --exclude, --state."""
run_options = _stack(table_threads, full_refresh, fail_fast)
"""--threads, --full-refresh, --fail-fast."""
watch_options = _stack(heartbeat_every, heartbeat_file)
"""--heartbeat-every, --heartbeat-file (for --watch)."""


# --- global flags and the console -----------------------------------------------------------

def _set_console(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """Rebuild the console when a global flag is given after the subcommand."""
    if value is None or value is False:
        return value
    root = ctx.find_root()
    current = get_console(ctx)
    log_format = value if param.name == "log_format" else current.log_format
    quiet = True if param.name == "quiet" else current.quiet
    no_color = True if param.name == "no_color" else current.no_color
    root.obj["console"] = Console(log_format=log_format, quiet=quiet, no_color=no_color,
                                  invocation_id=current.invocation_id)
    return value


def global_options(root: bool) -> list[click.Option]:
    """--log-format, --quiet and --no-color: on the root group (with the env var) or on a
    subcommand."""
    return [
        click.Option(["--log-format"], type=click.Choice(["text", "json"]),
                     default="text" if root else None,
                     envvar=LOG_FORMAT_ENV if root else None, show_envvar=root,
                     expose_value=root, callback=None if root else _set_console,
                     help="text for people, json: one object per event."),
        click.Option(["--quiet", "-q"], is_flag=True, expose_value=root,
                     callback=None if root else _set_console, help="Only errors and results."),
        click.Option(["--no-color"], is_flag=True, expose_value=root,
                     callback=None if root else _set_console,
                     help="No colours (also when NO_COLOR is set)."),
    ]


def get_console(ctx: click.Context | None = None) -> Console:
    """The console of the running command."""
    ctx = ctx or click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, dict) or "console" not in root.obj:
        root.obj = {"console": Console()}
    return root.obj["console"]


def live_progress(console: Console, steps: int, spark: Any = None) -> Any:
    """A `live.LiveProgress` of a command made of `steps` phases (replay, reconcile): phase
    lines, and the stage-task bar (timed lines in a log) once Spark runs (`spark` now, or
    `attach` + `start` later). Stopped when the command ends, failing too."""
    from mirrorspec.spark.platform.live import LiveProgress

    progress = LiveProgress(console, steps, spark, rates=False, steps=True)
    if spark is not None:
        progress.start()
    click.get_current_context().call_on_close(progress.stop)
    return progress


# --- OpenLineage events (run, mirror) --------------------------------------------------------

def _http_url(_ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
    if value and not str(value).startswith(("http://", "https://")):
        # never the value itself: a URL may carry a key in its user part or query
        scheme, colon, _ = str(value).partition(":")
        said = f"it starts with {scheme[:16]!r}:" if colon else "it has no scheme"
        raise click.BadParameter(f"not an http(s) URL ({said}), e.g. http://marquez:5000")
    return value


lineage_options = _stack(
    click.option("--openlineage-url", default=None, envvar="OPENLINEAGE_URL", show_envvar=True,
                 callback=_http_url, metavar="URL",
                 help="Send OpenLineage run events per table to this collector (needs "
                      "mirrorspec[openlineage]; api key from OPENLINEAGE_API_KEY)."),
    click.option("--openlineage-namespace", default="mirrorspec", show_default=True,
                 envvar="OPENLINEAGE_NAMESPACE", show_envvar=True,
                 help="The OpenLineage job namespace."))
"""--openlineage-url, --openlineage-namespace (popped by `start_lineage`)."""


def start_lineage(console: Console, params: dict[str, Any]):
    """The LineageEmitter `lineage_options` asked for, or None; `params` loses both keys."""
    from mirrorspec.context.lineage import open_lineage

    return open_lineage(params.pop("openlineage_url", None),
                        params.pop("openlineage_namespace", None), console)


def project_context(params: dict[str, Any], console: Console | None = None):
    """The `ProjectContext` (mirrorspec/context/project.py) of the plan options a command was
    given: --project-dir, --target, --vars, --profiles-dir and --plan."""
    from mirrorspec.context.project import ProjectContext

    return ProjectContext(params["project_dir"], params["target"], params["vars_text"],
                          params["profiles_dir"], params.get("plan_path"),
                          console=console or get_console())
