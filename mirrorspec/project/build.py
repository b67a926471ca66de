"""Building the project model: validated documents → `Project`, with the profile output
resolved and every cross-check problem raised together.

JSON Schema already checked each value's shape; this module checks what spans values (keys ⊆
columns, unique tables and columns, safe names, dialect rules, test references; each table's in
`table_builder.py`) and merges `defaults:` and feed-inferred columns/keys. Every problem is
located and all are raised together.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from mirrorspec.base.errors import Location, MirrorspecError, ProjectError
from mirrorspec.base.files import folders_overlap
from mirrorspec.base.suggest import suggest
from mirrorspec.load.project import LoadedProject
from mirrorspec.load.yaml_doc import Document
from mirrorspec.project.model import Output, Partner, Project, resolve_location
from mirrorspec.project.table_builder import InferFn, TableBuilder


DEFAULT_TARGET = "default"


def build_project(loaded: LoadedProject, target: str | None = None,
                  infer: InferFn | None = None) -> Project:
    """Validated documents → Project, raising one ProjectError with every cross-check problem.

    `infer(type, abs_path, options)` is asked for columns/keys a feed table leaves out
    (default: `mirrorspec.sources.infer_schema`).
    """
    problems: list[MirrorspecError] = list(loaded.problems)
    if not loaded.project_ok:
        _raise(problems)
    project_doc = loaded.project
    data = project_doc.data
    name = str(data["name"])
    output = Output(data.get("profile") or name, target or DEFAULT_TARGET)
    if loaded.profiles_ok:
        output = _resolve_output(loaded, data.get("profile") or name, target, problems)
    _check_target_path(project_doc, loaded.project_dir, problems)
    if loaded.profiles_ok:
        _check_literal_secrets(loaded, output, problems)
    partner = None
    if data.get("partner"):
        raw = data["partner"]
        version = raw.get("source_version")
        partner = Partner(raw["name"], raw.get("source_type"),
                          None if version is None else str(version),
                          raw.get("additional_information"))
    if infer is None:
        from mirrorspec.sources import infer_schema
        infer = infer_schema
    builder = TableBuilder(loaded, problems, infer)
    tables = builder.build_all(data.get("defaults") or {})
    _raise(problems)
    version = data.get("version")
    return Project(
        name=name,
        version="" if version is None else str(version),
        project_dir=loaded.project_dir,
        target_path=data.get("target-path") or "target",
        output=output,
        partner=partner,
        tables=tuple(sorted(tables, key=lambda t: t.unique_id)),
        variables=loaded.variables,
        change_data_feed=bool(data.get("change_data_feed", False)),
    )


TARGET_OUTSIDE_KEY = "target-outside-project"


def _check_target_path(doc: Document, project_dir: Path, problems: list[MirrorspecError]) -> None:
    """A target-path outside the project folder (`../x`, absolute, or a link leading out) needs
    `target-outside-project: true`: compile writes and cleans up there."""
    value = doc.data.get("target-path") or "target"
    if doc.data.get(TARGET_OUTSIDE_KEY) is True:
        return
    root = os.path.realpath(project_dir)
    target = os.path.realpath(os.path.join(root, os.path.expanduser(value)))
    if os.path.commonpath([root, target]) != root:
        problems.append(doc.problem(
            ("target-path",), f"target-path '{value}' is outside the project folder",
            hint=f"set `{TARGET_OUTSIDE_KEY}: true` in the project file if compile may write "
                 "(and remove its own stale files) there; or use a folder inside the project"))


def _check_literal_secrets(loaded: LoadedProject, output: Output,
                           problems: list[MirrorspecError]) -> None:
    """A credential written as is in the chosen profile output (an s3a secret key, an AKIA…
    id, a SAS) would land in target/plan.json: refused, naming env_var() instead."""
    from mirrorspec.load.secret_names import literal_secrets

    doc = loaded.profiles
    if doc is None:
        return
    where = (output.profile, "outputs", output.target)
    spec = doc.data.get(output.profile) if isinstance(doc.data, dict) else None
    outputs = spec.get("outputs") if isinstance(spec, dict) else None
    out = outputs.get(output.target) if isinstance(outputs, dict) else None
    for path in literal_secrets(out, where):
        problems.append(doc.problem(
            path, "looks like a credential written as is; compile would write it into "
                  "target/plan.json",
            hint="read it from the environment at run time: "
                 "{{ env_var('MIRRORSPEC_SECRET_<NAME>') }} (docs/security.md)"))


def _raise(problems: list[MirrorspecError]) -> None:
    """One ProjectError with every problem, sorted by file (project file first), line, column."""
    if not problems:
        return
    order: dict[str, int] = {}
    for problem in problems:
        order.setdefault(problem.location.file if problem.location else "", len(order))

    def key(problem: MirrorspecError) -> tuple[int, int, int]:
        loc = problem.location
        if loc is None:
            return (-1, 0, 0)
        return (order[loc.file], loc.line or 0, loc.col or 0)

    problems = sorted(problems, key=key)
    raise ProjectError(problems[0].message, problems=problems)


def _resolve_output(loaded: LoadedProject, profile: str, target: str | None,
                    problems: list[MirrorspecError]) -> Output:
    doc = loaded.profiles
    profiles = doc.data if doc is not None else {}
    if profile not in profiles:
        if doc is not None and loaded.profiles_explicit:
            problems.append(MirrorspecError(
                f"profile '{profile}' is not defined" + suggest(profile, profiles),
                Location(doc.file, 1, 1),
                hint="add it, or set `profile:` in mirrorspec_project.yml to one that exists"))
        elif target not in (None, DEFAULT_TARGET):
            problems.append(MirrorspecError(
                f"--target {target}: there is no profiles.yml defining profile '{profile}'",
                hint="create profiles.yml in the project folder (see docs/project-reference.md)"))
        return Output(profile, target or DEFAULT_TARGET)
    assert doc is not None  # profiles is {} without a profiles.yml
    spec = profiles[profile]
    outputs = spec["outputs"]
    chosen = target or spec.get("target")
    if chosen is None:
        chosen = DEFAULT_TARGET if DEFAULT_TARGET in outputs or len(outputs) != 1 else next(iter(outputs))
    if chosen not in outputs:
        where = (profile, "target") if target is None and "target" in spec else (profile, "outputs")
        problems.append(doc.problem(
            where, f"target '{chosen}' is not an output of profile '{profile}'"
                   + suggest(chosen, outputs) + f"; outputs: {', '.join(outputs)}"))
        return Output(profile, chosen)
    out = outputs[chosen] or {}
    spark = out.get("spark") or {}
    conf = {str(k): _conf_text(v) for k, v in (spark.get("conf") or {}).items()}
    defaults = Output(profile, chosen)  # the profile defaults live on Output only
    output = Output(profile, chosen, out.get("landing_zone") or defaults.landing_zone,
                    out.get("warehouse") or defaults.warehouse,
                    spark.get("master") or defaults.spark_master, spark.get("remote"), conf,
                    out.get("deletion_vectors", defaults.deletion_vectors),
                    out.get("settle_seconds", defaults.settle_seconds),
                    out.get("threads", defaults.threads))
    landing = resolve_location(output.landing_zone, loaded.project_dir)
    warehouse = resolve_location(output.warehouse, loaded.project_dir)
    if folders_overlap(landing, warehouse):
        key = "warehouse" if "warehouse" in out else "landing_zone"
        problems.append(doc.problem(
            (profile, "outputs", chosen, key),
            f"the landing zone {landing} and the warehouse {warehouse} overlap: a publisher "
            "writing the landing zone could write the Delta tables",
            hint="give landing_zone and warehouse folders apart, neither inside the other"))
    return output


def _conf_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
