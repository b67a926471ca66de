"""Reading what was mirrored, for both doors (`mirrorspec show`, `changes`, `history`,
`status` and `Project.show`, `.changes`, `.history`, `.status`): a table's rows, change data
feed or Delta history, read by delta-rs
first and by Spark for what delta-rs can't read (or when `MIRRORSPEC_READ_WITH=spark` asks),
with which reader read them; and the monitoring JSON with its health (`Status`).

The rows come back as the reader gave them: delta-rs' as a pyarrow.Table (the API's type),
Spark's as the collected Python values, so the command line prints what each reader read and
the API gets a pyarrow.Table either way (`to_arrow`)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Sequence

from mirrorspec.base.errors import FailedRun, MirrorspecError, StaleMirror
from mirrorspec.operate.health import Health, assess

if TYPE_CHECKING:
    import pyarrow

    from mirrorspec.context.inspection import TableTarget
    from mirrorspec.context.project import ProjectContext
    from mirrorspec.readers.history import HistoryEntry

READ_WITH = "MIRRORSPEC_READ_WITH"
"""The environment variable that makes every read go through Spark (`spark`): a comparison
(bench/read_bench.py) or a workaround; read below both doors, so the API honours it too."""
DELTA_RS, SPARK = "delta-rs", "spark"
"""The readers a `TableRows.reader` names."""


@dataclass(frozen=True)
class TableRows:
    """Rows read from a mirrored table: its name, which reader read them (`DELTA_RS` or
    `SPARK`), the version read (None when Spark read the latest) and the rows."""

    table: str
    reader: str
    version: int | None
    columns: list[str]
    arrow: Any = None                                  # delta-rs: a pyarrow.Table
    values: list[list[Any]] | None = None              # Spark: the collected rows

    def rows(self) -> list[list[Any]]:
        """The rows as lists of Python values (a time-zoned timestamp as naive UTC)."""
        if self.values is not None:
            return self.values
        from mirrorspec.readers.delta import _python_values

        return [list(row) for row in zip(*(_python_values(c) for c in self.arrow.columns))]

    def to_arrow(self) -> "pyarrow.Table":
        """The rows as a pyarrow.Table (Spark's rows converted, each column's type inferred)."""
        if self.arrow is not None:
            return self.arrow
        import pyarrow as pa

        rows = self.values or []
        return pa.Table.from_pydict({name: [row[index] for row in rows]
                                     for index, name in enumerate(self.columns)})


@dataclass(frozen=True)
class TableChanges(TableRows):
    """The change rows of versions `from_version` to `to_version` (both included) and how many
    the range holds (`total`; the rows are at most the limit asked)."""

    from_version: int = 0
    to_version: int = 0
    total: int = 0


def read_with_spark() -> bool:
    """True when `MIRRORSPEC_READ_WITH=spark` asks every read to go through Spark."""
    return os.environ.get(READ_WITH, "").lower() == SPARK


def refuse_if_spark_asked() -> None:
    """DeltaRsUnsupported when `MIRRORSPEC_READ_WITH=spark` asks for Spark."""
    from mirrorspec.readers.errors import DeltaRsUnsupported

    if read_with_spark():
        raise DeltaRsUnsupported(f"{READ_WITH}=spark asks for it")


def say_fallback(console: Any, name: str, exc: Exception) -> None:
    """The warning that a table is read with Spark instead of delta-rs."""
    console.warning(f"{name}: reading with Spark instead of delta-rs (slower: starts a JVM): "
                    f"{exc}", table=name)


def read_rows(target: "TableTarget", limit: int | None, where: str | None,
              version: int | None, as_of: datetime | None, console: Any) -> TableRows:
    """Rows of `target` sorted by its key columns: at most `limit` (None: all), filtered by
    `where` (Spark SQL), as of `version` or `as_of`."""
    from mirrorspec.readers import delta as delta_rs
    from mirrorspec.readers.errors import DeltaRsUnsupported
    from mirrorspec.readers.storage import plan_storage_options

    name = target.name
    try:
        refuse_if_spark_asked()
        data, read_version = delta_rs.preview_arrow(target.path, name, limit, where, version,
                                                    as_of, target.keys,
                                                    plan_storage_options(target.plan))
        return TableRows(name, DELTA_RS, read_version, list(data.column_names), arrow=data)
    except DeltaRsUnsupported as exc:
        say_fallback(console, name, exc)
    from mirrorspec.context.sessions import session_for
    from mirrorspec.spark.ops.inspect import preview

    columns, rows = preview(session_for(target.plan), target.path, name,
                            limit if limit is not None else 2**31 - 1, where, version,
                            as_of.isoformat() if as_of else None, order_by=target.keys)
    return TableRows(name, SPARK, version, list(columns), values=rows)


def read_changes(target: "TableTarget", from_version: int | None, start: datetime | None,
                 to_version: int | None, end: datetime | None, limit: int | None,
                 console: Any) -> TableChanges:
    """The change data feed of `target` between two versions (or times), at most `limit` rows
    (None: all), sorted by version, key (the engine's recorded keys for a table of a
    --warehouse) and change."""
    from mirrorspec.readers.changes import read_changes as read_feed
    from mirrorspec.readers.errors import DeltaRsUnsupported
    from mirrorspec.readers.storage import plan_storage_options

    name = target.name
    keys = target.keys if target.keys or target.plan is not None else _recorded_keys(target.path)
    try:
        refuse_if_spark_asked()
        read = read_feed(target.path, name, from_version, start, to_version, end, limit, keys,
                         plan_storage_options(target.plan))
        return TableChanges(name, DELTA_RS, read.to_version, list(read.data.column_names),
                            arrow=read.data, from_version=read.from_version,
                            to_version=read.to_version, total=read.total)
    except DeltaRsUnsupported as exc:
        say_fallback(console, name, exc)
    from mirrorspec.context.sessions import session_for
    from mirrorspec.spark.ops.inspect import changes as spark_changes

    columns, rows, first, last, total = spark_changes(
        session_for(target.plan), target.path, name, from_version, start, to_version, end,
        limit, keys)
    return TableChanges(name, SPARK, last, list(columns), values=rows, from_version=first,
                        to_version=last, total=total)


def read_history(target: "TableTarget", limit: int | None, console: Any) -> list["HistoryEntry"]:
    """The table's commits, newest first (only the latest `limit`), with the landing files
    each applied and its rows changed."""
    from mirrorspec.context.sessions import session_for
    from mirrorspec.readers import delta as delta_rs
    from mirrorspec.readers.errors import DeltaRsUnsupported
    from mirrorspec.readers.storage import plan_storage_options

    try:
        refuse_if_spark_asked()
        return delta_rs.history(target.path, target.name, limit,
                                storage_options=plan_storage_options(target.plan))
    except DeltaRsUnsupported as exc:
        say_fallback(console, target.name, exc)
    from mirrorspec.spark.ops.inspect import history as spark_history

    return spark_history(session_for(target.plan), target.path, target.name, limit)


def _recorded_keys(path: str) -> list[str]:
    """The key columns the engine recorded for a table of a --warehouse (rows are sorted by
    them); none for a URI or a table without the engine's record."""
    from mirrorspec.base.files import is_remote
    from mirrorspec.progress.mirror import table_keys

    if is_remote(path):
        return []
    try:
        return table_keys(path, None)
    except MirrorspecError:
        return []


# --- the monitoring JSON ------------------------------------------------------------------------

@dataclass(frozen=True)
class Status:
    """The monitoring JSON of a warehouse (`replicator.json`, `tables.json`) and its verdict."""

    replicator: dict[str, Any]
    tables: list[dict[str, Any]]
    health: Health = field(default_factory=Health)

    @property
    def failed(self) -> bool:
        """True when a table is `Failed`."""
        return bool(self.health.failed)

    def raise_if_unhealthy(self) -> "Status":
        """FailedRun for a Failed table, StaleMirror when stale (`stale_after`); else self."""
        if self.health.failed:
            raise FailedRun(self.health.verdict())
        if self.health.stale:
            raise StaleMirror(self.health.verdict())
        return self

    def to_dict(self) -> dict[str, Any]:
        """`{"replicator": …, "tables": […]}` as `mirrorspec status --json` prints it."""
        return {"replicator": self.replicator, "tables": self.tables}


def read_status(warehouse: str, stale_after: timedelta | None) -> Status:
    """The warehouse's monitoring JSON (empty when there is none) and its health."""
    from mirrorspec.artifacts.status import read_status as read_json

    doc = read_json(warehouse) or {}
    return Status(doc.get("replicator") or {}, list(doc.get("tables") or []),
                  assess(doc, stale_after))


def require_status(status: Status, warehouse: str) -> Status:
    """`status`, or the error that `warehouse` has no monitoring JSON (`mirrorspec status`
    says so; `Project.status` returns the empty Status)."""
    if not status.tables and not status.replicator:
        raise MirrorspecError(f"no monitoring JSON in {warehouse}",
                              hint="run `mirrorspec run` (or `mirrorspec mirror`) first")
    return status


@dataclass(frozen=True)
class StatusReport:
    """What `mirrorspec status` shows of a warehouse: its Status, the table entries a
    selection chose (all without one), whether the last write of the monitoring JSON failed
    (its stale marker) and, per Kafka table and partition, the offsets and lag of the last
    fetch (a project's only)."""

    warehouse: str
    status: Status
    tables: list[dict[str, Any]]
    write_failed: bool = False
    kafka_offsets: list[list[Any]] = field(default_factory=list)


def status_report(project: "ProjectContext", warehouse: str | None,
                  stale_after: timedelta | None, select: Sequence[str] = (),
                  exclude: Sequence[str] = (), state_path: str | None = None,
                  console: Any = None, required: bool = True) -> StatusReport:
    """The monitoring JSON of `warehouse` (given: no project is read) or of the project's,
    with its health; `required`: a warehouse without one is an error (`mirrorspec status`),
    else an empty Status (`Project.status`)."""
    from mirrorspec.artifacts.status import is_stale
    from mirrorspec.context import inspection
    from mirrorspec.openmirroring.mirroring import warehouse_schema
    from mirrorspec.progress.publish import kafka_offset_rows

    plan = inspection.plan_or_none(project, warehouse)
    where = str(warehouse) if plan is None else plan.warehouse
    status = read_status(where, stale_after)
    if required:
        require_status(status, where)
    tables = status.tables
    if select or exclude:
        wanted = {target.name for target in inspection.targets(
            None, project, warehouse, select, exclude, state_path, console)}
        tables = [entry for entry in tables
                  if f"{warehouse_schema(entry.get('sourceSchemaName') or None)}."
                     f"{entry.get('sourceTableName') or ''}" in wanted]
    return StatusReport(where, status, tables, is_stale(where),
                        kafka_offset_rows(plan) if plan is not None else [])
