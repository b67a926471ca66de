"""`mirrorspec maintain`: purge deletion vectors, compact and vacuum one mirrored table."""

from __future__ import annotations

from dataclasses import dataclass, field

from mirrorspec.spark.platform.delta import DELETION_VECTORS_PROPERTY, quote, set_deletion_vectors

_RETENTION_CHECK = "spark.databricks.delta.retentionDurationCheck.enabled"


@dataclass(frozen=True)
class MaintainSteps:
    """What to run; `retain_hours` None keeps the table's own retention."""

    purge: bool = True
    optimize: bool = True
    vacuum: bool = True
    retain_hours: float | None = None
    allow_short_retention: bool = False


@dataclass
class MaintainOutcome:
    unique_id: str
    done: list[str] = field(default_factory=list)


def maintain_table(spark, unique_id: str, delta_path: str, deletion_vectors: bool,
                   steps: MaintainSteps) -> MaintainOutcome:
    """Apply the table's `deletion_vectors` switch, then REORG … APPLY (PURGE), OPTIMIZE and
    VACUUM as `steps` says. With the switch off, the deletionVectors table feature is dropped
    after the purge, so readers that refuse the feature (delta-rs' to_pyarrow_table) accept the
    table."""
    session = spark.newSession()
    table = f"delta.{quote(delta_path)}"
    outcome = MaintainOutcome(unique_id)
    if set_deletion_vectors(session, delta_path, deletion_vectors):
        outcome.done.append(f"{DELETION_VECTORS_PROPERTY} = {str(deletion_vectors).lower()}")
    if steps.purge:
        metrics = _metrics(session.sql(f"REORG TABLE {table} APPLY (PURGE)"))
        outcome.done.append(f"purged deletion vectors ({metrics.get('numFilesRemoved', 0)} "
                            "file(s) rewritten)")
        if not deletion_vectors and _has_feature(session, table, "deletionVectors"):
            session.sql(f"ALTER TABLE {table} DROP FEATURE deletionVectors")
            outcome.done.append("dropped the deletionVectors table feature")
    if steps.optimize:
        metrics = _metrics(session.sql(f"OPTIMIZE {table}"))
        outcome.done.append(f"optimized ({metrics.get('numFilesRemoved', 0)} file(s) into "
                            f"{metrics.get('numFilesAdded', 0)})")
    if steps.vacuum:
        if steps.allow_short_retention:
            session.conf.set(_RETENTION_CHECK, "false")
        retain = "" if steps.retain_hours is None else f" RETAIN {steps.retain_hours:g} HOURS"
        session.sql(f"VACUUM {table}{retain}").collect()
        deleted = _vacuumed_files(session, table)
        outcome.done.append(f"vacuumed{retain.lower()}"
                            + (f" ({deleted} file(s) deleted)" if deleted is not None else ""))
    return outcome


def _metrics(frame) -> dict:
    row = frame.first()
    if row is None or "metrics" not in row.asDict():
        return {}
    metrics = row["metrics"]
    return metrics.asDict() if hasattr(metrics, "asDict") else dict(metrics or {})


def _vacuumed_files(session, table: str) -> int | None:
    """Files the VACUUM deleted, from its `VACUUM END` commit (when Delta logs vacuums)."""
    last = session.sql(f"DESCRIBE HISTORY {table} LIMIT 1").first()
    if last is None or last["operation"] != "VACUUM END":
        return None
    value = (last["operationMetrics"] or {}).get("numDeletedFiles")
    return int(value) if value is not None else None


def _has_feature(session, table: str, feature: str) -> bool:
    detail = session.sql(f"DESCRIBE DETAIL {table}").first()
    features = detail["tableFeatures"] if detail is not None else None
    return feature in (features or [])
