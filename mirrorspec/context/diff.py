"""`diff`: what a change to the project does to the mirrored tables (code review), for
`mirrorspec diff` and `Project.diff`. Never imports pyspark.

The head is a fresh compile of the project; the base is either a previous `target/` (`state`)
or another git revision compiled in a temporary `git worktree` (`base`), removed afterwards
whatever happens. The changes and their kinds are `mirrorspec/project/diff.py`'s; here are the
two sides and the verdict (a breaking change not acknowledged fails: `failure`).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from mirrorspec.artifacts.plan import Plan, read_plan
from mirrorspec.base.errors import FailedRun, MirrorspecError
from mirrorspec.project.diff import PlanDiff, diff_plans


def diff_project(project_dir: str | os.PathLike[str], state: Path | None = None,
                 base_ref: str | None = None, target: str | None = None, vars: Any = None,
                 profiles_dir: Path | None = None, allow_breaking: bool = False,
                 names: tuple[str, str] = ("--state PATH", "--base GIT_REF")) -> PlanDiff:
    """The changes from `state` (a previous target/ or its plan.json) or `base_ref` (a git
    revision), exactly one of them, to a fresh compile of the project; `names` are how the
    door calls the two (`--state PATH`, `state=`)."""
    if (state is None) == (base_ref is None):
        raise MirrorspecError(f"give exactly one of {names[0]} or {names[1]}",
                              hint=f"{names[0].split()[0]} takes a previous target/, "
                                   f"{names[1].split()[0]} a git revision")
    options = {"target": target, "vars": vars,
               "profiles_dir": None if profiles_dir is None else Path(profiles_dir)}
    head_plan = compile_plan(Path(project_dir), **options)  # first: its errors are the likely ones
    if state is not None:
        base_plan, base_label = read_state(Path(state)), str(state)
    else:
        base_plan, base_label = compile_git_revision(Path(project_dir), str(base_ref), **options)
    return diff_plans(base_plan, head_plan, base_label, "working tree",
                      allow_breaking=allow_breaking)


def failure(result: PlanDiff) -> FailedRun | None:
    """The FailedRun of a breaking change no table acknowledges (`recreate: true`); else None."""
    if not result.blocking:
        return None
    tables = ", ".join(t.unique_id for t in result.blocking_tables)
    count = result.summary()["blocking_changes"]
    return FailedRun(f"{count} breaking change(s) in {tables}",
                     hint="recreate the table folder and mark the table `recreate: true`, "
                          "or pass --allow-breaking (see docs/review.md)")


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
