"""The Spark execution plan: `target/plan.json`, the only input of `mirrorspec run`.

The plan is fully resolved (paths absolute or URIs, defaults applied, metadata rendered) so the
runner never re-reads YAML. Secrets are never in it: an `env_var()` whose name starts with
`MIRRORSPEC_SECRET_` compiles to the placeholder `{{ env_var('NAME') }}`, resolved by
`resolve_secrets()` at run time.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from mirrorspec.base.errors import PlanError
from mirrorspec.openmirroring.mirroring import dumps_json

PLAN_VERSION = 1
SECRET_PREFIX = "MIRRORSPEC_SECRET_"
# the steps of a table (verb–noun)
STEP_PUBLISH = "PublishFeed"
STEP_MIRROR = "MirrorTable"
_SECRET_PLACEHOLDER = re.compile(r"\{\{\s*env_var\('(" + SECRET_PREFIX + r"[A-Za-z0-9_]*)'\)\s*\}\}")


@dataclass(frozen=True)
class SparkSpec:
    """Where and how to start Spark: `master` (local[*], spark://…, yarn, k8s://…) or `remote`
    (sc://… for Spark Connect), plus pass-through conf."""

    master: str = "local[*]"
    remote: str | None = None
    conf: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class SourceSpec:
    """Where a table's changes come from. `landing_zone` means another publisher writes it."""

    type: str = "landing_zone"
    path: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    kafka: dict[str, Any] | None = None  # source.kafka (secrets stay placeholders until run)


@dataclass(frozen=True)
class ColumnSpec:
    name: str
    type: str | None  # a SchemaDefinition DataType (mirroring.DATA_TYPES), or None when unknown
    nullable: bool = True
    description: str | None = None


@dataclass(frozen=True)
class TableStep:
    """One verb–noun step of a table: PublishFeed (source → landing zone), MirrorTable."""

    step: str


@dataclass(frozen=True)
class TablePlan:
    """Everything the runner needs for one table."""

    unique_id: str  # "<warehouse schema>.<table>"
    name: str
    schema: str | None  # landing-zone schema folder (None: root)
    warehouse_schema: str
    landing_path: str  # the table's folder in the landing zone
    delta_path: str  # WAREHOUSE/<schema>/<table>
    metadata: dict[str, Any]  # the `_metadata.json` object, as compiled
    key_columns: list[str] = field(default_factory=list)
    columns: list[ColumnSpec] = field(default_factory=list)
    file_format: str = "parquet"  # parquet | csv | delimited_text (what the publisher writes)
    source: SourceSpec = field(default_factory=SourceSpec)
    steps: list[TableStep] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    description: str | None = None
    recreate: bool = False
    tests: list[dict[str, Any]] = field(default_factory=list)
    yaml_file: str | None = None  # the YAML the table came from, relative to the project
    # delta.enableDeletionVectors of the mirrored table; None: by its size (docs/readers.md)
    deletion_vectors: bool | None = None
    settle_seconds: float = 0  # a landing file younger than this waits for a later pass
    # delta.enableChangeDataFeed of the mirrored table (docs/change-data-feed.md); a plan
    # written before the field existed reads as False
    change_data_feed: bool = False

    @property
    def publishes(self) -> bool:
        """True when the runner publishes this table's source feed into the landing zone."""
        return any(step.step == STEP_PUBLISH for step in self.steps)

    @property
    def mirrors(self) -> bool:
        """True when the runner mirrors this table's landing folder (a plan without steps does)."""
        return any(step.step == STEP_MIRROR for step in self.steps) or not self.steps


@dataclass(frozen=True)
class Plan:
    """`target/plan.json`."""

    plan_version: int
    project_name: str
    project_version: str
    profile: str
    target: str
    landing_zone: str
    warehouse: str
    state_path: str  # where the publisher keeps what it published (per table JSON)
    spark: SparkSpec
    partner_events: dict[str, Any] | None
    tables: list[TablePlan]
    threads: int | None = None  # tables mirrored at once (the profile output's); None: default
    # the project folder, absolute: what the publisher state's feed paths are relative to
    project_dir: str | None = None

    def to_json(self) -> str:
        """Deterministic JSON text of the plan (as `dumps_json(asdict(plan))`, without the copies)."""
        return dumps_json(self)

    def table(self, unique_id: str) -> TablePlan:
        for table in self.tables:
            if table.unique_id == unique_id:
                return table
        raise KeyError(unique_id)


def plan_from_dict(doc: dict[str, Any]) -> Plan:
    """Rebuild a Plan from its JSON object, refusing other plan versions."""
    version = doc.get("plan_version")
    if version != PLAN_VERSION:
        raise PlanError(
            f"plan_version {version!r} is not supported by this mirrorspec (expects {PLAN_VERSION})",
            hint="recompile the project with `mirrorspec compile`")
    tables = []
    for t in doc["tables"]:
        t = dict(t)
        t["columns"] = [ColumnSpec(**c) for c in t.get("columns", [])]
        t["source"] = SourceSpec(**t.get("source", {}))
        t["steps"] = [TableStep(**s) for s in t.get("steps", [])]
        tables.append(TablePlan(**t))
    fields = dict(doc)
    fields["spark"] = SparkSpec(**doc.get("spark", {}))
    fields["tables"] = tables
    return Plan(**fields)


def read_plan(path: str | os.PathLike[str]) -> Plan:
    """Load `target/plan.json`."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"{path}: no plan found", hint="run `mirrorspec compile` first") from None
    except json.JSONDecodeError as exc:
        raise PlanError(f"{path}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}",
                        hint="recompile the project with `mirrorspec compile`") from None
    try:
        return plan_from_dict(doc)
    except (KeyError, TypeError) as exc:
        raise PlanError(f"{path}: not a mirrorspec plan ({exc})",
                        hint="recompile the project with `mirrorspec compile`") from None


def secret_placeholder(name: str) -> str:
    """What a secret env_var() compiles to."""
    return "{{ env_var('" + name + "') }}"


def holds_secret(value: Any) -> bool:
    """Whether a secret placeholder is anywhere in `value` (strings, dicts, lists)."""
    if isinstance(value, str):
        return _SECRET_PLACEHOLDER.search(value) is not None
    if isinstance(value, dict):
        return any(holds_secret(v) for v in value.values())
    if isinstance(value, list):
        return any(holds_secret(v) for v in value)
    return False


def resolve_secrets(value: Any, environ: Mapping[str, str] | None = None) -> Any:
    """Replace secret placeholders in strings (recursively) with their environment values."""
    env = os.environ if environ is None else environ
    if isinstance(value, str):
        def sub(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in env:
                raise PlanError(f"secret environment variable {name} is not set",
                                hint=f"export {name}=… before `mirrorspec run`")
            return env[name]
        return _SECRET_PLACEHOLDER.sub(sub, value)
    if isinstance(value, dict):
        return {k: resolve_secrets(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve_secrets(v, env) for v in value]
    return value
