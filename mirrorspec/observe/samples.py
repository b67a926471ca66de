"""What a pass did to each table, as the OpenLineage events read it: one `TableSample` per
table, built from the engine's `TableOutcome` (`mirror`) or from `run_results`'
`TableRunResult` and the plan (`run`). Pure Python: the outcome is read by its attributes.
Also `require`: an optional library, imported when asked for."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Iterable

from mirrorspec.base.errors import SetupError
from mirrorspec.artifacts.plan import Plan, TablePlan
from mirrorspec.artifacts.run_results import RunResults, fabric_status

_OBJECT_STORES = ("s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs")


def require(module: str, option: str, extra: str) -> Any:
    """The optional library `module`, or a SetupError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise SetupError(f"{option} needs the {module.split('.')[0]} library, which is not "
                         "installed", hint=f"install it: pip install 'mirrorspec[{extra}]'"
                         ) from None


@dataclass(frozen=True)
class Dataset:
    """An OpenLineage dataset: `namespace` (file, s3a://bucket, kafka://host:port) + `name`."""

    namespace: str
    name: str


@dataclass(frozen=True)
class TableSample:
    """One table after one pass (statuses as in tables.json: Replicating, Waiting, NotStarted,
    Failed, Dropped)."""

    table: str
    status: str
    delta_path: str
    files_applied: int = 0
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    seconds: float = 0.0
    error: str | None = None
    inputs: tuple[Dataset, ...] = field(default_factory=tuple)

    @property
    def failed(self) -> bool:
        return self.status == "Failed"

    @property
    def rows_applied(self) -> int:
        return self.rows_inserted + self.rows_updated + self.rows_deleted


def dataset_for_path(path: str) -> Dataset:
    """A folder as OpenLineage's naming spec names it: `file` + the absolute path; an object
    store's `scheme://bucket` + the key (no leading slash); else `scheme://authority` + path."""
    scheme, sep, rest = path.partition("://")
    if not sep or scheme == "file":
        return Dataset("file", rest if sep else path)
    authority, _, tail = rest.partition("/")
    tail = tail.strip("/")
    return Dataset(f"{scheme}://{authority}", tail if scheme in _OBJECT_STORES else "/" + tail)


def sample_from_outcome(outcome: Any) -> TableSample:
    """A `mirror` pass's `TableOutcome` (read by attribute: the engine is above this floor)."""
    error = outcome.error or {}
    return TableSample(
        table=outcome.unique_id, status=outcome.status, delta_path=outcome.delta_path,
        files_applied=len(outcome.files_applied),
        rows_inserted=int(outcome.rows_inserted or 0),
        rows_updated=int(outcome.rows_updated or 0),
        rows_deleted=int(outcome.rows_deleted or 0), seconds=float(outcome.seconds or 0.0),
        error=error.get("message") if outcome.status == "Failed" else None,
        inputs=(dataset_for_path(outcome.landing_path),) if outcome.landing_path else ())


def _inputs(table: TablePlan) -> tuple[Dataset, ...]:
    """The feed `run` publishes (Kafka topics, the feed folder), else the landing folder."""
    kafka = table.source.kafka
    if kafka:
        servers = str(kafka.get("bootstrap_servers", "")).split(",")[0].strip()
        topics = kafka.get("topics") or [kafka.get("topic_pattern") or "?"]
        return tuple(Dataset(f"kafka://{servers}", str(t)) for t in topics)
    if table.publishes and table.source.path:
        return (dataset_for_path(table.source.path),)
    return (dataset_for_path(table.landing_path),)


def samples_from_run(plan: Plan, results: RunResults) -> list[TableSample]:
    """A `run` pass: one sample per table in `results` that ran (a skipped one has no new
    status, `run_results.fabric_status`, and is left out)."""
    by_id = {t.unique_id: t for t in plan.tables}
    samples = []
    for result in results.results:
        table = by_id.get(result.unique_id)
        status = fabric_status(result)
        if table is None or status is None:
            continue
        samples.append(TableSample(
            table=result.unique_id, status=status, delta_path=table.delta_path,
            files_applied=len(result.files_applied), rows_inserted=result.rows_inserted,
            rows_updated=result.rows_updated, rows_deleted=result.rows_deleted,
            seconds=result.execution_time, error=result.error if result.failed else None,
            inputs=_inputs(table)))
    return samples


def samples_from_mirror(tables: Iterable[Any]) -> list[TableSample]:
    """A `mirror` pass: one sample per `TableOutcome`."""
    return [sample_from_outcome(t) for t in tables]
