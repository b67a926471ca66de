"""What a pass did to each table, as the observers (metrics, lineage) read it: one
`TableSample` per table, built from the engine's `TableOutcome` (`mirror`) or from
`run_results`' `TableRunResult` and the plan (`run`). Pure Python: the outcome is read by its
attributes, the landing folder and the publisher state through `files.Files`. Also
`require`: the observers' optional libraries, imported when asked for."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Iterable

from mirrorspec import mirroring
from mirrorspec.errors import SetupError
from mirrorspec.files import Files, join
from mirrorspec.landing import layout
from mirrorspec.plan import Plan, TablePlan
from mirrorspec.progress.mirror import read_state
from mirrorspec.progress.publish import load_state
from mirrorspec.run_results import RunResults, TableRunResult
from mirrorspec.sources.kafka import lag_rows


def require(module: str, option: str, extra: str) -> Any:
    """The optional library `module`, or a SetupError naming the extra that installs it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise SetupError(f"{option} needs the {module.split('.')[0]} library, which is not "
                         "installed", hint=f"install it: pip install 'mirrorspec[{extra}]'"
                         ) from None


@dataclass(frozen=True)
class KafkaLag:
    """Messages of one topic-partition not yet fetched, as of the table's last fetch."""

    topic: str
    partition: int
    lag: int


@dataclass(frozen=True)
class Dataset:
    """An OpenLineage-style dataset: `namespace` (file, s3://bucket, kafka://host:port)."""

    namespace: str
    name: str


@dataclass(frozen=True)
class TableSample:
    """One table after one pass (statuses as in tables.json: Replicating, Waiting, NotStarted,
    Failed, Dropped)."""

    table: str
    status: str
    delta_path: str
    landing_path: str
    files_applied: int = 0
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    seconds: float = 0.0
    error: str | None = None
    files_pending: int | None = None  # None: not known (the folder could not be listed)
    kafka_lag: tuple[KafkaLag, ...] | None = None  # None: the table has no Kafka feed
    inputs: tuple[Dataset, ...] = field(default_factory=tuple)

    @property
    def failed(self) -> bool:
        return self.status == "Failed"

    @property
    def rows_applied(self) -> int:
        return self.rows_inserted + self.rows_updated + self.rows_deleted


_OBJECT_STORES = ("s3", "s3a", "s3n", "gs", "gcs", "abfs", "abfss", "wasb", "wasbs")


def dataset_for_path(path: str) -> Dataset:
    """A folder as OpenLineage's naming spec names it: `file` + the absolute path; an object
    store's `scheme://bucket` + the key (no leading slash); else `scheme://authority` + path."""
    scheme, sep, rest = path.partition("://")
    if not sep or scheme == "file":
        return Dataset("file", rest if sep else path)
    authority, _, tail = rest.partition("/")
    tail = tail.strip("/")
    return Dataset(f"{scheme}://{authority}", tail if scheme in _OBJECT_STORES else "/" + tail)


def pending_files(files: Files, landing_path: str, delta_path: str, app_id: str) -> int | None:
    """Data files in a landing folder that the table has not applied yet (the last applied file
    stays in place, so the Delta log's progress says which are new; files behind a gap count);
    None when it can't be read: a metric is better absent than wrong."""
    try:
        lfs = files.fs(landing_path)
        if not lfs.exists(landing_path):
            return 0
        metadata = layout.read_metadata(lfs, landing_path)
        listing = layout.list_folder(lfs, landing_path, metadata)
        meta = read_state(files.fs(delta_path), delta_path, app_id).meta
        if metadata.last_update_time_detection:
            processed = join(landing_path, mirroring.PROCESSED_FOLDER)
            done = set(lfs.names(processed) if lfs.exists(processed) else ())
            done |= set(meta.get("files", [])) | set(meta.get("carry", []))
            return sum(1 for f in listing.files if f.name not in done)
        applied = int(meta.get("sequence") or 0)
        return sum(1 for f in listing.files if f.sequence is not None and f.sequence > applied)
    except Exception:  # noqa: BLE001 - observing must never fail a pass
        return None


def sample_from_outcome(outcome: Any, files: Files | None = None) -> TableSample:
    """A `mirror` pass's `TableOutcome` (read by attribute: the engine is above this floor)."""
    error = outcome.error or {}
    return TableSample(
        table=outcome.unique_id, status=outcome.status, delta_path=outcome.delta_path,
        landing_path=outcome.landing_path, files_applied=len(outcome.files_applied),
        rows_inserted=int(outcome.rows_inserted or 0),
        rows_updated=int(outcome.rows_updated or 0),
        rows_deleted=int(outcome.rows_deleted or 0), seconds=float(outcome.seconds or 0.0),
        error=error.get("message") if outcome.status == "Failed" else None,
        files_pending=(pending_files(files, outcome.landing_path, outcome.delta_path,
                                     mirroring.mirror_id(outcome.schema, outcome.name))
                       if files else None),
        inputs=(dataset_for_path(outcome.landing_path),) if outcome.landing_path else ())


def _status(result: TableRunResult) -> str:
    if result.failed:
        return "Failed"
    return result.mirror_status or {"waiting": "Waiting",
                                    "not_started": "NotStarted"}.get(result.status, "Replicating")


def _kafka_lag(files: Files, plan: Plan, table: TablePlan) -> tuple[KafkaLag, ...] | None:
    if not table.source.kafka:
        return None
    try:
        kafka = load_state(files, plan, table).get("kafka") or {}
    except Exception:  # noqa: BLE001 - an unreadable state file is the publisher's to report
        return ()
    return tuple(KafkaLag(row["topic"], row["partition"], row["lag"])
                 for row in lag_rows(kafka) if row["lag"] is not None)


def _inputs(table: TablePlan) -> tuple[Dataset, ...]:
    kafka = table.source.kafka
    if kafka:
        servers = str(kafka.get("bootstrap_servers", "")).split(",")[0].strip()
        topics = kafka.get("topics") or [kafka.get("topic_pattern") or "?"]
        return tuple(Dataset(f"kafka://{servers}", str(t)) for t in topics)
    if table.publishes and table.source.path:
        return (dataset_for_path(table.source.path),)
    return (dataset_for_path(table.landing_path),)


def samples_from_run(plan: Plan, results: RunResults, files: Files) -> list[TableSample]:
    """A `run` pass: one sample per table in `results` (the plan gives paths and the feed)."""
    by_id = {t.unique_id: t for t in plan.tables}
    samples = []
    for result in results.results:
        table = by_id.get(result.unique_id)
        if table is None:
            continue
        samples.append(TableSample(
            table=result.unique_id, status=_status(result), delta_path=table.delta_path,
            landing_path=table.landing_path, files_applied=len(result.files_applied),
            rows_inserted=result.rows_inserted, rows_updated=result.rows_updated,
            rows_deleted=result.rows_deleted, seconds=result.execution_time,
            error=result.error if result.failed else None,
            files_pending=pending_files(files, table.landing_path, table.delta_path,
                                        mirroring.mirror_id(table.schema, table.name)),
            kafka_lag=_kafka_lag(files, plan, table), inputs=_inputs(table)))
    return samples


def samples_from_mirror(tables: Iterable[Any], files: Files | None) -> list[TableSample]:
    """A `mirror` pass: one sample per `TableOutcome`."""
    return [sample_from_outcome(t, files) for t in tables]
