"""Compile a YAML project into `target/`: `_metadata.json` files, `_partnerEvents.json`, `plan.json`.

    result = compile_project("projects/parquet_orders")
    result.plan          # mirrorspec.artifacts.plan.Plan
    result.plan_path     # <target>/plan.json

`validate_project` does everything but write; `load_project` stops at the model. None of them
imports pyspark. Imported by commands, `diff`, `selection`, `docsite`, `lint` and `spark`; imports
`model`, `landing`, `load` and below.

- `compiler`: the model → `Plan`; each `_metadata.json`; the checks against the landing zone;
- `artifacts`: the plan and its files written into `target/` (atomic, unchanged files kept);
- `clean`: `mirrorspec clean`, only what compile wrote in the target.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

from typing import TYPE_CHECKING, Callable

from mirrorspec.base.errors import ProjectError

if TYPE_CHECKING:  # the runner imports mirrorspec.artifacts.plan: keep this package light
    from mirrorspec.base.console import Console
    from mirrorspec.artifacts.plan import Plan
    from mirrorspec.project.model import Project

__all__ = ["CompileResult", "PlanContext", "compile_project", "validate_project", "load_project",
           "load_plan_context"]
PLAN_FILE = "plan.json"
InferFn = Callable[[str, "str | None", dict[str, Any]], Any]


@dataclass(frozen=True)
class CompileResult:
    """What a compile produced (or, from validate_project, would produce)."""

    project: "Project"
    plan: "Plan"
    target_dir: Path
    files: dict[str, str]  # relative to target_dir → text
    written: tuple[Path, ...] = ()
    inferred: dict[str, tuple[str, ...]] = field(default_factory=dict)  # unique_id → notes

    @property
    def plan_path(self) -> Path:
        return self.target_dir / PLAN_FILE


@contextmanager
def _no_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def load_project(project_dir: str | os.PathLike[str] = ".", target: str | None = None,
                 vars: str | Mapping[str, Any] | None = None,
                 profiles_dir: str | os.PathLike[str] | None = None,
                 environ: Mapping[str, str] | None = None, infer: InferFn | None = None) -> "Project":
    """Load, render, validate and model a project (raises ProjectError with every problem).

    `vars` is a mapping or the YAML text of `--vars`; `target` picks the profile output.
    """
    from mirrorspec.load.project import load_files, parse_vars
    from mirrorspec.project.build import build_project

    loaded = load_files(project_dir, parse_vars(vars), profiles_dir, environ)
    return build_project(loaded, target, infer)


def validate_project(project_dir: str | os.PathLike[str] = ".", target: str | None = None,
                     vars: str | Mapping[str, Any] | None = None,
                     profiles_dir: str | os.PathLike[str] | None = None,
                     environ: Mapping[str, str] | None = None, infer: InferFn | None = None,
                     check_landing: bool = True) -> CompileResult:
    """Everything compile checks and builds, without writing anything."""
    from mirrorspec.compile.compiler import (artifact_texts, build_plan, check_landing_zone,
                                             target_dir)

    with _no_gc():  # no cycles to collect here; the collector would cost a third of the time
        project = load_project(project_dir, target, vars, profiles_dir, environ, infer)
        plan = build_plan(project)
        if check_landing:
            problems = check_landing_zone(plan, project)
            if problems:
                raise ProjectError(problems[0].message, problems=problems)
        inferred = {t.unique_id: t.inferred for t in project.tables if t.inferred}
        files = artifact_texts(plan)
    return CompileResult(project, plan, target_dir(project), files, (), inferred)


def compile_project(project_dir: str | os.PathLike[str] = ".", target: str | None = None,
                    vars: str | Mapping[str, Any] | None = None,
                    profiles_dir: str | os.PathLike[str] | None = None,
                    environ: Mapping[str, str] | None = None, infer: InferFn | None = None,
                    check_landing: bool = True) -> CompileResult:
    """Validate and compile the project, writing `<target-path>/`; same input → same bytes."""
    result = validate_project(project_dir, target, vars, profiles_dir, environ, infer, check_landing)
    from mirrorspec.compile.artifacts import write_artifacts

    written = write_artifacts(result.target_dir, result.files, result.plan.project_name)
    return CompileResult(result.project, result.plan, result.target_dir, result.files,
                         tuple(written), result.inferred)


@dataclass(frozen=True)
class PlanContext:
    """The plan a command works on and the target folder its artifacts go to."""

    plan: "Plan"
    target_dir: Path


def load_plan_context(project_dir: str | os.PathLike[str] = ".", target: str | None = None,
                      vars_text: str | Mapping[str, Any] | None = None, profiles_dir: str | os.PathLike[str] | None = None,
                      plan_path: str | os.PathLike[str] | None = None,
                      console: "Console | None" = None) -> PlanContext:
    """Compile the project (or read `plan_path`) and say where its target folder is."""
    if plan_path:
        from mirrorspec.artifacts.plan import read_plan

        path = Path(plan_path)
        return PlanContext(read_plan(path), path.resolve().parent)
    # The landing zone is checked per table by the runner (a table whose keyColumns changed
    # fails on its own, and --full-refresh can recreate it), not for the whole compile.
    result = compile_project(project_dir, target=target, vars=vars_text,
                             profiles_dir=profiles_dir, check_landing=False)
    if console is not None:
        for unique_id, notes in sorted(result.inferred.items()):
            for note in notes:
                console.info(f"{unique_id}: {note}", table=unique_id)
    return PlanContext(result.plan, Path(result.target_dir).resolve())
