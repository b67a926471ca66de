"""`mirrorspec init`, `validate` and `compile`: the commands that never start Spark."""

from __future__ import annotations

import os
from typing import Any

import click

from mirrorspec.commands.params import get_console, project_options, selection_options
from mirrorspec.console import Console


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
    from mirrorspec.scaffold import SCHEMA_HINT, scaffold_project

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
    from mirrorspec.mirroring import table_folder

    console = get_console()
    result = compile_project(project_dir, target=target, vars=vars_text, profiles_dir=profiles_dir)
    _report_inferred(console, result.inferred)
    plan = result.plan
    tables = plan.tables
    if select or exclude:
        from mirrorspec.selection import select_with_warnings

        tables = select_with_warnings(plan, select, exclude, state_path=state_path,
                                      console=console)
    if not plan.tables:
        console.warning("the project declares no tables (add tables/*.yml)")
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


COMMANDS = [init, validate, compile]
