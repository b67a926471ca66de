"""Reading what was mirrored, as Python values: a table's rows or change data feed as a
pyarrow.Table (delta-rs first, the plan's Spark for what delta-rs can't read) and the
monitoring JSON with its health (`Status`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from mirrorspec.base.errors import FailedRun, StaleMirror
from mirrorspec.operate.health import Health, assess

if TYPE_CHECKING:
    import pyarrow


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


def read_rows(plan: Any, table: str, limit: int | None, where: str | None,
              version: int | None, as_of: datetime | None, console: Any) -> "pyarrow.Table":
    """Rows of the plan's table `table` sorted by its key columns: at most `limit` (None:
    all), filtered by `where`, as of `version` or `as_of`."""
    from mirrorspec.project.selection import resolve_table
    from mirrorspec.readers import delta as delta_rs
    from mirrorspec.readers.errors import DeltaRsUnsupported
    from mirrorspec.readers.storage import plan_storage_options

    target = resolve_table(plan, table)
    name, keys = target.unique_id, list(target.key_columns)
    try:
        data, _version = delta_rs.preview_arrow(target.delta_path, name, limit, where, version,
                                                as_of, keys, plan_storage_options(plan))
        return data
    except DeltaRsUnsupported as exc:
        console.warning(f"{name}: reading with Spark instead of delta-rs: {exc}", table=name)
    from mirrorspec.context.sessions import session_for
    from mirrorspec.spark.ops.inspect import preview

    columns, rows = preview(session_for(plan), target.delta_path, name,
                            limit if limit is not None else 2**31 - 1, where, version,
                            as_of.isoformat() if as_of else None, order_by=keys)
    return _arrow(columns, rows)


def read_changes(plan: Any, table: str, from_version: int | None, start: datetime | None,
                 to_version: int | None, end: datetime | None, limit: int | None,
                 console: Any) -> "pyarrow.Table":
    """The change data feed of the plan's table `table` between two versions (or times)."""
    from mirrorspec.project.selection import resolve_table
    from mirrorspec.readers.changes import read_changes as read_feed
    from mirrorspec.readers.errors import DeltaRsUnsupported
    from mirrorspec.readers.storage import plan_storage_options

    target = resolve_table(plan, table)
    keys = list(target.key_columns)
    try:
        return read_feed(target.delta_path, target.unique_id, from_version, start, to_version,
                         end, limit, keys, plan_storage_options(plan)).data
    except DeltaRsUnsupported as exc:
        console.warning(f"{target.unique_id}: reading with Spark instead of delta-rs: {exc}",
                        table=target.unique_id)
    from mirrorspec.context.sessions import session_for
    from mirrorspec.spark.ops.inspect import changes as spark_changes

    columns, rows, _first, _last, _total = spark_changes(
        session_for(plan), target.delta_path, target.unique_id, from_version, start,
        to_version, end, limit, keys)
    return _arrow(columns, rows)


def _arrow(columns: list[str], rows: list[Any]) -> "pyarrow.Table":
    import pyarrow as pa

    return pa.Table.from_pylist([dict(zip(columns, row)) for row in rows])
