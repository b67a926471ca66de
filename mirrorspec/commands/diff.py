"""`mirrorspec diff`: what a change to the project does to the mirrored tables (code review).

The head is a fresh compile of the project; the base is either a previous `target/` (`--state`)
or another git revision compiled in a temporary `git worktree` (`--base`), removed afterwards
whatever happens. Never imports pyspark.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

import click

from mirrorspec.commands.params import get_console, project_options
from mirrorspec.artifacts.plan import Plan, read_plan
from mirrorspec.project.diff import (
    BREAKING, CAUTION, PlanDiff, diff_plans, headline, iter_lines, report_json, report_markdown)
from mirrorspec.base.errors import FailedRun, MirrorspecError

_STYLES = {BREAKING: "bold red", CAUTION: "yellow", "safe": "green", "heading": "bold",
           "plain": "dim"}


@click.command("diff")
@project_options
@click.option("--state", "state", type=click.Path(path_type=Path),
              help="A previous target/ directory (or its plan.json) to compare with.")
@click.option("--base", "base_ref", metavar="GIT_REF",
              help="A git revision of the project to compare with (e.g. origin/main).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]),
              default="text", show_default=True, help="Report format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path),
              help="Also write the report (in --format) to this file.")
@click.option("--allow-breaking", is_flag=True,
              help="Exit 0 even when a breaking change isn't acknowledged by `recreate: true`.")
def diff(project_dir: str, state: Path | None, base_ref: str | None, target: str | None,
         vars_text: str | None, profiles_dir: str | None, fmt: str, output: Path | None,
         allow_breaking: bool) -> None:
    """Show what the project's changes do to the mirrored tables.

    Compares a fresh compile of the project with --state (a previous target/) or --base (a git
    revision). Exits 1 when a change is breaking (the table folder must be recreated) unless
    the table says `recreate: true` or --allow-breaking is given.
    """
    if (state is None) == (base_ref is None):
        raise MirrorspecError("give exactly one of --state PATH or --base GIT_REF",
                              hint="--state takes a previous target/, --base a git revision")
    console = get_console()
    options = {"target": target, "vars": vars_text,
               "profiles_dir": None if profiles_dir is None else Path(profiles_dir)}
    head_plan = compile_plan(Path(project_dir), **options)  # first: its errors are the likely ones
    if state is not None:
        base_plan, base_label = read_state(state), str(state)
    else:
        base_plan, base_label = compile_git_revision(Path(project_dir), base_ref, **options)
    result = diff_plans(base_plan, head_plan, base_label, "working tree",
                        allow_breaking=allow_breaking)
    _report(console, result, fmt, output)
    if result.blocking:
        tables = ", ".join(t.unique_id for t in result.blocking_tables)
        count = result.summary()["blocking_changes"]
        raise FailedRun(f"{count} breaking change(s) in {tables}",
                        hint="recreate the table folder and mark the table `recreate: true`, "
                             "or pass --allow-breaking (see docs/review.md)")


def _report(console, result: PlanDiff, fmt: str, output: Path | None) -> None:
    if fmt == "json":
        text = report_json(result)
        console.raw(text)
    elif fmt == "markdown":
        text = report_markdown(result)
        console.raw(text)
    else:
        text = "\n".join(line for _, line in iter_lines(result)) + "\n"
        if console.log_format == "json":
            console.event("diff", headline(result).replace("`", ""), **result.to_dict())
        else:
            console.styled_lines((_STYLES[style], line) for style, line in iter_lines(result))
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")


# --- the two sides ----------------------------------------------------------------------------

def read_state(state: Path) -> Plan:
    """The plan of a previous `target/` directory (or a plan.json file)."""
    path = state / "plan.json" if state.is_dir() else state
    if not path.exists():
        raise MirrorspecError(f"{state}: no plan.json there",
                              hint="--state takes a previous target/ directory (one that "
                                   "`mirrorspec compile` wrote) or its plan.json")
    return read_plan(path)


def compile_plan(project_dir: Path, target: str | None = None, vars: Any = None,
                 profiles_dir: Path | None = None) -> Plan:
    """Compile the project in memory (nothing is written: diff only reads) and return its plan.

    The landing-zone check of `mirrorspec compile` is skipped: a key change against what the
    landing zone holds is exactly what the diff reports.
    """
    from mirrorspec.compile import validate_project

    result = validate_project(str(project_dir), target=target, vars=vars,
                              profiles_dir=None if profiles_dir is None else str(profiles_dir),
                              check_landing=False)
    return result.plan


def compile_git_revision(project_dir: Path, ref: str, target: str | None = None,
                         vars: Any = None, profiles_dir: Path | None = None
                         ) -> tuple[Plan | None, str]:
    """Compile the project as it is at git revision `ref` (in a temporary worktree).

    Returns (None, label) when the project directory doesn't exist at that revision."""
    project = Path(project_dir).resolve()
    if not project.is_dir():
        raise MirrorspecError(f"{project_dir}: no such project directory")
    root = Path(_git(project, "rev-parse", "--show-toplevel",
                     what=f"{project_dir} is not inside a git repository",
                     hint="use --state PATH with a previous target/ instead")).resolve()
    commit = _git(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}",
                  what=f"git revision {ref!r} not found in {root}",
                  hint="fetch it first (in CI: `git fetch origin main`, checkout with "
                       "fetch-depth: 0)")
    label = f"{ref} ({commit[:12]})"
    relative = project.relative_to(root)
    with git_worktree(root, commit) as tree:
        base_project = tree / relative
        if not base_project.is_dir():
            return None, label + ", no project there"
        if profiles_dir is None and not (base_project / "profiles.yml").exists() \
                and (project / "profiles.yml").exists():
            profiles_dir = project  # profiles.yml is often untracked: use the working copy's
        try:
            return compile_plan(base_project, target, vars, profiles_dir), label
        except MirrorspecError as exc:
            raise MirrorspecError(
                f"the project at {ref} does not compile:\n{exc.render()}",
                hint="fix the base revision or compare with --state PATH") from None


@contextmanager
def git_worktree(repo_root: Path, commit: str) -> Iterator[Path]:
    """A temporary detached worktree of `commit`, removed on exit whatever happens."""
    folder = Path(tempfile.mkdtemp(prefix="mirrorspec-diff-"))
    tree = folder / "base"
    try:
        _git(repo_root, "-c", "core.hooksPath=/dev/null", "worktree", "add", "--detach",
             "--quiet", str(tree), commit, what=f"could not check out {commit} in a worktree")
        yield tree
    finally:
        try:
            _git(repo_root, "worktree", "remove", "--force", str(tree), what="")
        except MirrorspecError:
            pass
        shutil.rmtree(folder, ignore_errors=True)
        try:
            _git(repo_root, "worktree", "prune", what="")
        except MirrorspecError:
            pass


def _git(cwd: Path, *args: str, what: str, hint: str | None = None) -> str:
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0", LC_ALL="C")
    try:
        done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True,
                              check=False)
    except FileNotFoundError:
        raise MirrorspecError("git is not installed", hint="install git or use --state PATH") \
            from None
    if done.returncode != 0:
        detail = done.stderr.strip()
        raise MirrorspecError(what + (f": {detail}" if detail else ""), hint=hint)
    return done.stdout.strip()


COMMANDS = [diff]
