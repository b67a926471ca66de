"""Project model → Plan (pure, deterministic) and the checks against the configured landing zone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, cast

from mirrorspec.openmirroring import mirroring
from mirrorspec.artifacts.plan import (PLAN_VERSION, STEP_MIRROR, STEP_PUBLISH, ColumnSpec, Plan, SourceSpec,
                             SparkSpec, TablePlan, TableStep)
from mirrorspec.base.errors import Location, MirrorspecError
from mirrorspec.landing.deploy import recreate_procedure
from mirrorspec.project.model import Project, Table, is_uri, resolve_location
from mirrorspec.sources import resolve_options

STATE_FOLDER = "_mirrorspec"


def join_location(base: str, relative: str) -> str:
    """`base/relative` for a path or a URI (always '/', the landing-zone separator)."""
    return base.rstrip("/") + "/" + relative


def table_metadata(table: Table) -> dict[str, Any]:
    """The `_metadata.json` object of a table: exactly the documented names, only what was set."""
    delimited = table.format in ("csv", "delimited_text")
    columns: tuple[mirroring.ColumnDefinition, ...] = ()
    if delimited and table.columns:  # model.py refuses a delimited column without a type
        columns = tuple(mirroring.ColumnDefinition(c.name, cast(str, c.type), c.nullable)
                        for c in table.columns)
    extension = table.delimited.extension if table.delimited else None
    properties = dict(table.delimited.properties) if table.delimited else None
    return mirroring.render_metadata(
        key_columns=table.key_columns,
        last_update_time_detection=table.file_detection == "last_update_time",
        upsert_default=table.upsert_default,
        columns=columns,
        file_format=mirroring.FILE_FORMAT_DELIMITED if table.format == "delimited_text" else None,
        file_extension=extension,
        delimited=properties,
    )


def build_plan(project: Project) -> Plan:
    """The fully resolved plan of a project."""
    output = project.output
    landing_zone = resolve_location(output.landing_zone, project.project_dir)
    warehouse = resolve_location(output.warehouse, project.project_dir)
    partner = None
    if project.partner is not None:
        p = project.partner
        partner = mirroring.render_partner_events(p.name, p.source_type, p.source_version,
                                                  p.additional_information)
    tables = [_table_plan(t, project, landing_zone, warehouse) for t in project.tables]
    tables.sort(key=lambda t: t.unique_id)
    return Plan(
        plan_version=PLAN_VERSION,
        project_name=project.name,
        project_version=project.version,
        profile=output.profile,
        target=output.target,
        landing_zone=landing_zone,
        warehouse=warehouse,
        state_path=join_location(warehouse, STATE_FOLDER),
        spark=SparkSpec(master=output.spark_master, remote=output.spark_remote,
                        conf=dict(sorted(output.spark_conf.items()))),
        partner_events=partner,
        tables=tables,
        threads=output.threads,
        project_dir=str(project.project_dir),
    )


def _table_plan(table: Table, project: Project, landing_zone: str, warehouse: str) -> TablePlan:
    source_path = None
    if table.source.path:
        source_path = resolve_location(table.source.path, project.project_dir)
    steps = [TableStep(STEP_PUBLISH), TableStep(STEP_MIRROR)] if table.source.is_feed \
        else [TableStep(STEP_MIRROR)]
    return TablePlan(
        unique_id=table.unique_id,
        name=table.name,
        schema=table.schema,
        warehouse_schema=table.warehouse_schema,
        landing_path=join_location(landing_zone, mirroring.table_folder(table.name, table.schema)),
        delta_path=join_location(warehouse, f"{table.warehouse_schema}/{table.name}"),
        metadata=table_metadata(table),
        key_columns=list(table.key_columns),
        columns=[ColumnSpec(c.name, c.type, True if c.nullable is None else c.nullable,
                            c.description) for c in table.columns],
        file_format=table.format,
        source=SourceSpec(table.source.type, source_path,
                          resolve_options(table.source.type, dict(table.source.options),
                                          str(project.project_dir)),
                          dict(table.source.kafka) if table.source.kafka else None),
        steps=steps,
        tags=list(table.tags),
        description=table.description,
        recreate=table.recreate,
        tests=[dict(t) for t in table.tests],
        yaml_file=table.yaml_file,
        deletion_vectors=(project.output.deletion_vectors if table.deletion_vectors is None
                          else table.deletion_vectors),
        settle_seconds=(project.output.settle_seconds if table.settle_seconds is None
                        else table.settle_seconds),
        change_data_feed=(project.change_data_feed if table.change_data_feed is None
                          else table.change_data_feed),
    )


def check_landing_zone(plan: Plan, project: Project) -> list[MirrorspecError]:
    """Problems with what the configured landing zone already holds: keyColumns can't change
    once a table's `_metadata.json` is there (the landing-zone specification), unless the table
    says `recreate: true`
    (the change is acknowledged: `run --full-refresh` or its publisher recreates the folder).
    URIs are not checked."""
    if is_uri(plan.landing_zone) or not os.path.isdir(plan.landing_zone):
        return []
    locations = {t.unique_id: t.key_location or t.location for t in project.tables}
    problems = []
    for table in plan.tables:
        if table.recreate:
            continue
        path = Path(table.landing_path) / mirroring.METADATA_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            continue
        try:
            existing = mirroring.parse_metadata_text(text, str(path))
        except MirrorspecError:
            continue  # the engine reports a bad _metadata.json itself
        if existing.key_columns and mirroring.keys_differ(existing.key_columns,
                                                          table.key_columns):
            new = table.key_columns
            problems.append(MirrorspecError(
                f"{table.unique_id}: key_columns {new} differ from keyColumns "
                f"{list(existing.key_columns)} already in {path}; keys can't change once a "
                "table's _metadata.json is in the landing zone",
                locations.get(table.unique_id) or Location(table.yaml_file or ""),
                hint="to change the keys, "
                     + recreate_procedure(table.unique_id, table.publishes, table.landing_path)
                     + "; or keep the old keys"))
    return problems


def artifact_texts(plan: Plan) -> dict[str, str]:
    """Every file compile writes, relative to the target folder → its text."""
    files = {}
    for table in plan.tables:
        folder = mirroring.table_folder(table.name, table.schema)
        files[f"landing_zone/{folder}/{mirroring.METADATA_FILE}"] = mirroring.dumps_json(
            table.metadata)
    if plan.partner_events is not None:
        files[f"landing_zone/{mirroring.PARTNER_EVENTS_FILE}"] = mirroring.dumps_json(plan.partner_events)
    files["plan.json"] = plan.to_json()
    return files


def target_dir(project: Project) -> Path:
    """The project's target folder (absolute)."""
    return Path(os.path.normpath(project.project_dir / os.path.expanduser(project.target_path)))
