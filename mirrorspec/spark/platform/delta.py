"""Every Delta statement, table property and commit option mirrorspec uses, in one place.

The engine, maintenance and staging say *what* they want (add these columns, switch deletion
vectors, commit with this transaction id and record); this module says how Delta spells it.
The exactly-once commit is a value here (`CommitOptions`), applied as writer options for an
append and as session conf for a MERGE — the two spellings delta-spark accepts. Conflicts are
recognised by delta-spark's exception classes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from mirrorspec.progress import snapshot
from mirrorspec.spark.platform.session import is_connect

_log = logging.getLogger(__name__)

DELETION_VECTORS_PROPERTY = "delta.enableDeletionVectors"
COLUMN_MAPPING_PROPERTY = "delta.columnMapping.mode"
COLUMN_MAPPING_DEFAULT = "spark.databricks.delta.properties.defaults.columnMapping.mode"
DELETION_VECTORS_DEFAULT = "spark.databricks.delta.properties.defaults.enableDeletionVectors"
CHANGE_DATA_FEED_PROPERTY = snapshot.CHANGE_DATA_FEED_PROPERTY  # as the log's readers know it
CHANGE_DATA_FEED_DEFAULT = "spark.databricks.delta.properties.defaults.enableChangeDataFeed"
# Automatic deletion vectors (a table without a `deletion_vectors:` switch, docs/readers.md):
# below this many bytes of data a MERGE rewriting the files a batch touches costs less than
# Delta's vector bookkeeping (7 more Spark jobs a MERGE); bench/deletion_vectors_bench.py put
# the crossing between 11 MiB (rewriting cheaper) and 54 MiB (vectors twice as cheap).
AUTO_DELETION_VECTORS_BYTES = 16 * 2**20


def quote(name: str) -> str:
    """A SQL identifier: `name` in backticks (backticks doubled)."""
    return "`" + name.replace("`", "``") + "`"


def table_ref(delta_path: str) -> str:
    """The path-based table name Delta's SQL takes: delta.`<path>`."""
    return f"delta.{quote(delta_path)}"


@dataclass(frozen=True)
class CommitOptions:
    """What makes a commit exactly-once: the `txn` action (app id, version) and the progress
    record in the commit's userMetadata — delta-rs's CommitProperties, for delta-spark."""

    app_id: str
    version: int
    user_metadata: str

    def writer_options(self) -> dict[str, str]:
        """For `DataFrameWriter.option` (an append)."""
        return {"txnAppId": self.app_id, "txnVersion": str(self.version),
                "userMetadata": self.user_metadata}

    def session_conf(self) -> dict[str, str]:
        """For the session conf around a MERGE (DeltaTable.merge takes no options)."""
        return {"spark.databricks.delta.write.txnAppId": self.app_id,
                "spark.databricks.delta.write.txnVersion": str(self.version),
                "spark.databricks.delta.commitInfo.userMetadata": self.user_metadata}


def is_conflict(exc: BaseException) -> bool:
    """True when `exc` is Delta's optimistic-concurrency conflict (another writer committed).

    By class only, on the exception or any exception it was raised from: sessions mirrorspec
    starts or connects register Delta's error conversion (`session.register_delta_errors`),
    classic and Spark Connect alike (tests/unit/spark/test_conflict_classes.py)."""
    from delta.exceptions import base

    conflicts = (base.DeltaConcurrentModificationException, base.ConcurrentWriteException,
                 base.MetadataChangedException, base.ProtocolChangedException,
                 base.ConcurrentAppendException, base.ConcurrentDeleteReadException,
                 base.ConcurrentDeleteDeleteException, base.ConcurrentTransactionException)
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, conflicts):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


def add_columns(session, delta_path: str, fields) -> None:
    """ALTER TABLE … ADD COLUMNS for Spark StructFields (new columns of a batch)."""
    added = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}" for f in fields)
    session.sql(f"ALTER TABLE {table_ref(delta_path)} ADD COLUMNS ({added})")


def table_property(session, delta_path: str, name: str) -> str | None:
    """The table property's value, or None when it is not set."""
    row = session.sql(f"SHOW TBLPROPERTIES {table_ref(delta_path)} ('{name}')").first()
    if row is None or "does not have" in str(row["value"]):
        return None
    return str(row["value"])


def set_table_property(session, delta_path: str, name: str, value: str) -> bool:
    """Set a table property when it differs; True if it did."""
    current = table_property(session, delta_path, name)
    if current is not None and current.lower() == value.lower():
        return False
    set_property(session, delta_path, name, value)
    return True


def set_property(session, delta_path: str, name: str, value: str) -> None:
    """Set a table property (one commit), without reading it first."""
    session.sql(f"ALTER TABLE {table_ref(delta_path)} SET TBLPROPERTIES ('{name}' = '{value}')")


def auto_deletion_vectors(table_bytes: int) -> bool:
    """Whether a table of `table_bytes` without a `deletion_vectors:` switch gets vectors."""
    return table_bytes >= AUTO_DELETION_VECTORS_BYTES


def set_deletion_vectors(session, delta_path: str, enabled: bool) -> bool:
    """Set `delta.enableDeletionVectors` on an existing table when it differs; True if it did."""
    return set_table_property(session, delta_path, DELETION_VECTORS_PROPERTY,
                              "true" if enabled else "false")


def switch_change_data_feed(session, delta_path: str, wanted: bool | None, exists: bool,
                            current: str | None) -> dict[str, str]:
    """Delta's change data feed as the table's switch says (docs/change-data-feed.md).

    `wanted` None leaves the table as it is. For a table the coming commit creates, returns the
    session default that commit is written with, so the feed starts at version 0 with its
    rows. For an existing table whose property (`current`, None when unset) differs, sets it
    now, in a commit of its own that carries no rows: Delta takes a table property only from a
    commit that changes metadata, never from a MERGE or an append, so the feed starts at the
    version right after (the commit of this batch). Returns {} then."""
    if wanted is None:
        return {}
    value = "true" if wanted else "false"
    if not exists:
        return {CHANGE_DATA_FEED_DEFAULT: value}
    if (current or "false").lower() == value:
        return {}
    set_property(session, delta_path, CHANGE_DATA_FEED_PROPERTY, value)
    return {}


def map_column_names(session, delta_path: str) -> bool:
    """Store columns by name (column mapping), so names with a space or `,;{}()=` are allowed."""
    return set_table_property(session, delta_path, COLUMN_MAPPING_PROPERTY, "name")


def drop_deletion_vectors_feature(session, delta_path: str) -> None:
    """Remove the deletionVectors table feature (Delta purges the vectors itself first)."""
    session.sql(f"ALTER TABLE {table_ref(delta_path)} DROP FEATURE deletionVectors").collect()


def purge_deletion_vectors(session, delta_path: str) -> dict:
    """REORG TABLE … APPLY (PURGE): rewrite the files that carry deletion vectors; its metrics."""
    return _metrics(session.sql(f"REORG TABLE {table_ref(delta_path)} APPLY (PURGE)"))


def optimize(session, delta_path: str) -> dict:
    """OPTIMIZE (compact small files); its metrics."""
    return _metrics(session.sql(f"OPTIMIZE {table_ref(delta_path)}"))


def vacuum(session, delta_path: str, retain_hours: float | None = None) -> int | None:
    """VACUUM (with the table's own retention, or RETAIN `retain_hours` HOURS); the number of
    files it deleted, from its `VACUUM END` commit (None when Delta logged none)."""
    retain = "" if retain_hours is None else f" RETAIN {retain_hours:g} HOURS"
    session.sql(f"VACUUM {table_ref(delta_path)}{retain}").collect()
    last = session.sql(f"DESCRIBE HISTORY {table_ref(delta_path)} LIMIT 1").first()
    if last is None or last["operation"] != "VACUUM END":
        return None
    value = (last["operationMetrics"] or {}).get("numDeletedFiles")
    return int(value) if value is not None else None


def describe(session, delta_path: str):
    """DESCRIBE DETAIL's row (size, files, table features, …); it builds the snapshot's state."""
    return session.sql(f"DESCRIBE DETAIL {table_ref(delta_path)}").first()


def size_in_bytes(session, delta_path: str) -> int:
    """The size of the table's current data files."""
    row = describe(session, delta_path)
    return int(row["sizeInBytes"] or 0) if row is not None else 0


def _metrics(frame) -> dict:
    row = frame.first()
    if row is None or "metrics" not in row.asDict():
        return {}
    metrics = row["metrics"]
    return metrics.asDict() if hasattr(metrics, "asDict") else dict(metrics or {})


def forget_delta_logs(spark) -> None:
    """Drop Delta's cached logs after deleting a table folder, so a table re-created at the same
    path isn't read through a stale snapshot."""
    if is_connect(spark):
        return  # the server's JVM owns the cache; a Connect client can't reach it
    # Private API: Delta has no public call that drops its DeltaLog cache (DeltaTable has none,
    # and spark.catalog.clearCache() leaves it alone).
    try:
        spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    except Exception as exc:  # noqa: BLE001 - py4j raises several types; a stale read is the cost
        _log.warning("could not clear Delta's log cache (%s): a table re-created at the same "
                     "path may be read through its old log", exc)


def activate(session) -> None:
    """Make `session` the active one of this thread's JVM side (Delta reads conf from it)."""
    if is_connect(session):
        return  # no JVM here; Connect sessions are separate anyway
    # Private API: PySpark can read the JVM's active session but has no public call that sets it
    # for the current thread (SparkSession.builder.getOrCreate() would return the default one).
    try:
        session._jvm.org.apache.spark.sql.SparkSession.setActiveSession(session._jsparkSession)
    except Exception as exc:  # noqa: BLE001 - py4j raises several types
        _log.warning("could not make the mirror session active on the JVM side (%s): Delta may "
                     "read the default session's conf", exc)
