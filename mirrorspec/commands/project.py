"""`mirrorspec init`, `validate`, `compile`, `ls` and `clean`: the commands that never start
Spark."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from mirrorspec.commands.params import get_console, plan_options, project_options, selection_options
from mirrorspec.base.console import Console


def _show(path: Any) -> str:
    rel = os.path.relpath(path)
    return str(path) if rel.startswith("..") else rel


def _report_inferred(console: Console, inferred: dict[str, tuple[str, ...]]) -> None:
    for unique_id, notes in sorted(inferred.items()):
        for note in notes:
            console.info(f"{unique_id}: inferred {note}", table=unique_id)


@click.command("init")
@click.argument("name")
@click.option("--force", is_flag=True, help="Write into an existing non-empty folder.")
def init(name: str, force: bool) -> None:
    """Create a new project NAME (a folder) that compiles as is."""
    from mirrorspec.project.scaffold import SCHEMA_HINT, scaffold_project

    console = get_console()
    created = scaffold_project(name, force=force)
    console.success(f"Created project {created.name} in {_show(created)}", path=str(created))
    console.info(f"Editors: the YAML files point yaml-language-server at {SCHEMA_HINT}")
    console.info("Sample data: feeds/customers and feeds/orders hold one CSV snapshot each; "
                 "`mirrorspec run` lands them in landing_zone/ and mirrors them into Delta "
                 "tables in warehouse/ (profiles.yml says where)")
    console.result(f"Next: cd {_show(created)} && mirrorspec compile && mirrorspec run")


@click.command("validate")
@project_options
def validate(project_dir: str, target: str | None, vars_text: str | None,
             profiles_dir: str | None) -> None:
    """Check the project (YAML, schemas, cross-checks, landing-zone keys) without writing."""
    from mirrorspec.compile import validate_project

    console = get_console()
    result = validate_project(project_dir, target=target, vars=vars_text, profiles_dir=profiles_dir)
    _report_inferred(console, result.inferred)
    plan = result.plan
    console.result(f"OK: project {plan.project_name}, {len(plan.tables)} table(s), "
                   f"profile {plan.profile}, target {plan.target}",
                   tables=len(plan.tables), project=plan.project_name)


@click.command("compile")
@project_options
@selection_options
def compile(project_dir: str, target: str | None, vars_text: str | None,
            profiles_dir: str | None, select: tuple[str, ...], exclude: tuple[str, ...],
            state_path: str | None) -> None:
    """Compile the project into target/: _metadata.json files, _partnerEvents.json, plan.json.
    --select/--exclude list only the tables chosen (plan.json always holds every table: `run`
    selects when it runs)."""
    from mirrorspec.compile import compile_project
    from mirrorspec.openmirroring.mirroring import table_folder

    console = get_console()
    result = compile_project(project_dir, target=target, vars=vars_text, profiles_dir=profiles_dir)
    _report_inferred(console, result.inferred)
    plan = result.plan
    tables = plan.tables
    if select or exclude:
        from mirrorspec.project.selection import select_with_warnings

        tables = select_with_warnings(plan, select, exclude, state_path=state_path,
                                      console=console)
    if not plan.tables:
        console.warning("the project declares no tables (add tables/*.yml)")
    _warn_missing_landing_zone(console, plan)
    if not console.quiet and tables and (len(tables) <= 50 or select or exclude):
        console.table(
            f"{plan.project_name} (profile {plan.profile}, target {plan.target}): "
            f"landing zone {plan.landing_zone}",
            ["table", "keys", "format", "source", "folder"],
            [(t.unique_id, ", ".join(t.key_columns) or "-", t.file_format, t.source.type,
              table_folder(t.name, t.schema)) for t in tables])
    metadata = sum(1 for name in result.files if name.endswith("_metadata.json"))
    chosen = f" ({len(tables)} selected)" if select or exclude else ""
    console.result(f"Compiled {len(plan.tables)} table(s){chosen} into "
                   f"{_show(result.target_dir)}: plan.json, {metadata} _metadata.json"
                   + (", _partnerEvents.json" if plan.partner_events is not None else ""),
                   tables=len(plan.tables), selected=[t.unique_id for t in tables],
                   plan=str(result.plan_path))


def _warn_missing_landing_zone(console: Console, plan: Any) -> None:
    """compile writes nothing there, so it only warns what `run` would refuse or create."""
    from mirrorspec.operate.preflight import missing_landing_zone

    missing = missing_landing_zone(plan)
    if missing is not None and (missing.refused or missing.suggestion):
        console.warning(f"{missing.message()}: `run` "
                        + ("refuses to create it" if missing.refused else "would create it"),
                        landing_zone=missing.path)
        console.info(f"  hint: {missing.hint()}")


LS_KEYS = ("unique_id", "name", "schema", "warehouse_schema", "source", "tags", "key_columns",
           "landing_path", "delta_path", "yaml_file")


@click.command("ls")
@plan_options
@selection_options
@click.option("--output", "output", type=click.Choice(["text", "json"]), default="text",
              show_default=True, help="text: one unique id a line; json: one object a line.")
def ls(output: str, **params: Any) -> None:
    """List the selected tables (the same selection `run` would take); writes nothing."""
    from mirrorspec.project.selection import select_with_warnings

    console = get_console()
    plan, target_dir = _plan_without_writing(params)
    tables = select_with_warnings(plan, params["select"], params["exclude"],
                                  state_path=params["state_path"], console=console,
                                  results_dir=target_dir)
    for table in tables:
        if output == "json":
            entry = {"unique_id": table.unique_id, "name": table.name, "schema": table.schema,
                     "warehouse_schema": table.warehouse_schema, "source": table.source.type,
                     "tags": list(table.tags), "key_columns": list(table.key_columns),
                     "landing_path": table.landing_path, "delta_path": table.delta_path,
                     "yaml_file": table.yaml_file}
            console.raw(json.dumps(entry, ensure_ascii=False))
        else:
            console.raw(table.unique_id)


def _plan_without_writing(params: dict[str, Any]):
    """(plan, target folder): from --plan, or the project validated without writing."""
    if params.get("plan_path"):
        from mirrorspec.compile import load_plan_context

        ctx = load_plan_context(plan_path=params["plan_path"])
        return ctx.plan, ctx.target_dir
    from mirrorspec.compile import validate_project

    result = validate_project(params["project_dir"], target=params["target"],
                              vars=params["vars_text"], profiles_dir=params["profiles_dir"],
                              check_landing=False)
    return result.plan, Path(result.target_dir)


@click.command("clean")
@project_options
def clean(project_dir: str, target: str | None, vars_text: str | None,
          profiles_dir: str | None) -> None:
    """Delete what mirrorspec wrote in the target folder (plan.json, the _metadata.json copies,
    results, the docs site) and nothing else. A target folder holding another project's
    plan.json, or any of this project's sources (its YAML, feeds, landing zone, warehouse,
    publisher state), is refused whole."""
    from mirrorspec.compile import validate_project
    from mirrorspec.compile.clean import clean_target
    from mirrorspec.load.project import PROFILES_FILE

    console = get_console()
    result = validate_project(project_dir, target=target, vars=vars_text,
                              profiles_dir=profiles_dir, check_landing=False)
    plan, project = result.plan, result.project
    sources = [("project", str(project.project_dir)),
               ("profiles.yml", str(Path(profiles_dir or project.project_dir) / PROFILES_FILE)),
               ("landing zone", plan.landing_zone), ("warehouse", plan.warehouse),
               ("publisher state", plan.state_path)]
    for table in plan.tables:
        if table.yaml_file:
            sources.append((f"table file of {table.unique_id}",
                            str(project.project_dir / table.yaml_file)))
        if table.source.path:
            sources.append((f"feed of {table.unique_id}", table.source.path))
    folder = Path(result.target_dir)
    done = clean_target(folder, plan.project_name, result.files, sources)
    if not done.deleted:
        console.result(f"Nothing to clean in {_show(folder)}"
                       + (f" ({len(done.left)} file(s) mirrorspec didn't write, left alone)"
                          if done.left else ""), path=str(folder), deleted=0)
        return
    left = (f"; left {len(done.left)} file(s) mirrorspec didn't write, e.g. "
            f"{_show(done.left[0])}" if done.left else "")
    console.result(f"Deleted {len(done.deleted)} file(s) mirrorspec wrote in {_show(folder)}"
                   + left, path=str(folder), deleted=len(done.deleted), left=len(done.left))


COMMANDS = [init, validate, compile, ls, clean]
