"""`ProjectContext`: a project as both front doors use it — the CLI's commands and
`mirrorspec.api.Project` make the same calls here and only parse and render around them.

It resolves what a command needs from the project (the plan, compiled or read from --plan; the
profile's threads; the selection; the Spark session choice) and runs compile, run, publish,
build, test, retry and status. It never prints a summary, never exits and never imports click:
results go back to the door, events to its console.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from mirrorspec.context.threads import DEFAULT_THREADS, resolve_table_threads

if TYPE_CHECKING:
    from mirrorspec.artifacts.data_test_results import TestResults
    from mirrorspec.artifacts.run_results import RunResults
    from mirrorspec.compile import CompileResult, PlanContext
    from mirrorspec.operate.retry import RetrySelection

OnRun = Callable[["PlanContext", "RunResults"], None]


@dataclass
class BuildOutcome:
    """`build`: the run's results and the tests of the tables that ran (None: none ran)."""

    context: "PlanContext"
    results: "RunResults"
    tests: "TestResults | None"


@dataclass
class RetryOutcome:
    """`retry`: what the last run left (`last`), and what running it again gave (None when
    nothing was left to retry)."""

    last: "RetrySelection"
    context: "PlanContext | None" = None
    results: "RunResults | None" = None
    tests: "TestResults | None" = None


class ProjectContext:
    """One project with the options every command shares.

    Args:
        project_dir: the folder holding mirrorspec_project.yml (a `Given` keeps its origin).
        target: the profile output (None: the profile's `target`).
        vars: `--vars` YAML text or a mapping.
        profiles_dir: the folder holding profiles.yml (None: the project, then ~/.mirrorspec).
        plan_path: a compiled plan.json to use instead of compiling.
        console: where events go (the CLI's Console, the API's CallbackConsole).
        warm_server: use the warm Spark server when one runs for the plan's settings.
        door_args: extra invocation args recorded in run_results.json (`{"api": True}`).
    """

    def __init__(self, project_dir: str | os.PathLike[str] = ".", target: str | None = None,
                 vars: str | Mapping[str, Any] | None = None,
                 profiles_dir: str | os.PathLike[str] | None = None,
                 plan_path: str | os.PathLike[str] | None = None, *, console: Any = None,
                 warm_server: bool = True, door_args: Mapping[str, Any] | None = None):
        self.project_dir = project_dir
        self.target = target
        self.vars = vars
        self.profiles_dir = profiles_dir
        self.plan_path = plan_path
        self.console = console
        self.warm_server = warm_server
        self.door_args = dict(door_args or {})

    # --- the plan ---------------------------------------------------------------------------
    def load(self, say_inferred: bool = True) -> "PlanContext":
        """The plan (compiled, the landing zone checked per table later by the runner; or read
        from plan_path) and its target folder; `say_inferred`: inferred keys and columns go to
        the console."""
        from mirrorspec.compile import load_plan_context

        return load_plan_context(self.project_dir, self.target, self.vars, self.profiles_dir,
                                 self.plan_path, self.console if say_inferred else None)

    def compile(self) -> "CompileResult":
        """Validate and compile into the target folder (plan.json, _metadata.json files)."""
        from mirrorspec.compile import compile_project

        return compile_project(self.project_dir, self.target, self.vars, self.profiles_dir)

    def validate(self, check_landing: bool = True) -> "CompileResult":
        """Everything compile checks and builds, without writing."""
        from mirrorspec.compile import validate_project

        return validate_project(self.project_dir, self.target, self.vars, self.profiles_dir,
                                check_landing=check_landing)

    def _vars_for_results(self) -> Any:
        from mirrorspec.load.project import parse_vars

        return parse_vars(self.vars) or None

    # --- run, publish, build, retry ---------------------------------------------------------
    def run(self, select: Sequence[str] = (), exclude: Sequence[str] = (),
            state: str | None = None, threads: int | None = None, full_refresh: bool = False,
            fail_fast: bool = False, command: str = "run",
            warmer: Any = None) -> tuple["PlanContext", "RunResults"]:
        """`run` (`publish`, `build`'s run with `command`): compile or read the plan, refuse a
        mistyped landing zone before Spark, publish and mirror the selected tables. `threads`
        None: the profile output's `threads`, else the default (`resolve_table_threads`)."""
        from mirrorspec.artifacts.run_results import safe_args
        from mirrorspec.operate.preflight import require_planned_landing_zone

        ctx = self.load()
        require_planned_landing_zone(ctx.plan, self.console)  # a mistyped landing_zone
        from mirrorspec.spark.run import run_plan

        threads = resolve_table_threads(threads, ctx.plan.threads)
        args = safe_args(project_dir=self.project_dir, target=self.target,
                         vars=self._vars_for_results(), plan=self.plan_path,
                         select=tuple(select), exclude=tuple(exclude), state=state,
                         threads=threads, full_refresh=full_refresh, fail_fast=fail_fast,
                         **self.door_args)
        results = run_plan(ctx.plan, select=tuple(select), exclude=tuple(exclude),
                           threads=threads, full_refresh=full_refresh,
                           publish_only=command == "publish", state_path=state,
                           console=self.console, target_dir=ctx.target_dir, args=args,
                           command=command, warmer=warmer, fail_fast=fail_fast,
                           warm_server=self.warm_server)
        return ctx, results

    def build(self, select: Sequence[str] = (), exclude: Sequence[str] = (),
              state: str | None = None, threads: int | None = None, full_refresh: bool = False,
              fail_fast: bool = False, on_run: OnRun | None = None) -> BuildOutcome:
        """`build`: `run`, then the data tests of the tables that ran, with the same threads
        (tables that failed have their tests skipped). `on_run(plan context, results)` hears
        the run before the tests start (the CLI prints its summary)."""
        ctx, results = self.run(select, exclude, state, threads, full_refresh, fail_fast,
                                command="build")
        if on_run is not None:
            on_run(ctx, results)
        ran = [r.unique_id for r in results.results]
        if not ran:
            return BuildOutcome(ctx, results, None)
        from mirrorspec.spark.ops.datatests import execute_tests

        tests = execute_tests(self.console, ctx, ran, skip=results.tests_to_skip(),
                              threads=resolve_table_threads(threads, ctx.plan.threads),
                              warm=self.warm_server)
        return BuildOutcome(ctx, results, tests)

    def retry(self, threads: int | None = None, on_run: OnRun | None = None) -> RetryOutcome:
        """`retry`: run again the tables that ended error or skipped in the last
        run_results.json, with that run's command and options (`threads` over its threads);
        `on_run` as `build`'s."""
        from mirrorspec.operate.retry import retry_selection

        last = retry_selection(self.load(say_inferred=False).target_dir)
        if not last.select:
            self.console.result(last.nothing_to_do, retried=0)
            return RetryOutcome(last)
        self.console.info(f"retrying `{last.command}` for {len(last.select)} table(s): "
                          + ", ".join(s.removeprefix("id:") for s in last.select))
        again = dict(select=last.select, threads=threads or last.threads,
                     full_refresh=last.full_refresh, fail_fast=last.fail_fast)
        if last.command == "build":
            built = self.build(**again, on_run=on_run)
            return RetryOutcome(last, built.context, built.results, built.tests)
        ctx, results = self.run(**again, command=last.command)
        if on_run is not None:
            on_run(ctx, results)
        return RetryOutcome(last, ctx, results)

    # --- test, status -----------------------------------------------------------------------
    def test(self, select: Sequence[str] = (), exclude: Sequence[str] = (),
             state: str | None = None,
             threads: int = DEFAULT_THREADS) -> tuple["PlanContext", "TestResults"]:
        """`test`: the data tests of the selected tables; writes target/test_results.json."""
        from mirrorspec.project.selection import select_with_warnings

        ctx = self.load()
        tables = select_with_warnings(ctx.plan, tuple(select), tuple(exclude), state_path=state,
                                      console=self.console, results_dir=ctx.target_dir)
        from mirrorspec.spark.ops.datatests import execute_tests

        return ctx, execute_tests(self.console, ctx, [t.unique_id for t in tables],
                                  threads=threads, warm=self.warm_server)

    def refresh_site(self, ctx: "PlanContext") -> None:
        """After run, publish, build or test: rewrite the docs site when target/docs holds one."""
        from mirrorspec.docsite.build import refresh_site

        refresh_site(self.console, ctx.plan, ctx.target_dir)
