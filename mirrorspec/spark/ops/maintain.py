"""`mirrorspec maintain`: purge deletion vectors, compact and vacuum one mirrored table."""

from __future__ import annotations

from dataclasses import dataclass, field

from mirrorspec.spark.platform import delta
from mirrorspec.spark.platform.delta import DELETION_VECTORS_PROPERTY, set_deletion_vectors
from mirrorspec.spark.platform.live import LiveProgress, Step
from mirrorspec.spark.platform.session import new_session

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


class _StepClock:
    """Tells `progress` (a `live.LiveProgress`, or None) when each step starts and ends: a step
    ends when the next starts or the table is done, saying what it added to `outcome.done`."""

    def __init__(self, outcome: MaintainOutcome, progress: LiveProgress | None):
        self.outcome, self.progress = outcome, progress
        self.running: Step | None = None
        self.mark = 0

    def start(self, step: str, doing: str) -> None:
        self.end()
        if self.progress is not None:
            self.running = self.progress.begin(self.outcome.unique_id, step, doing)
            self.running.says(f"{doing}: nothing to do")
            self.mark = len(self.outcome.done)

    def end(self) -> None:
        if self.running is not None:
            self.running.done("; ".join(self.outcome.done[self.mark:]) or None)
            self.running = None


def maintain_table(spark, unique_id: str, delta_path: str, deletion_vectors: bool | None,
                   steps: MaintainSteps, progress: LiveProgress | None = None
                   ) -> MaintainOutcome:
    """Apply the table's `deletion_vectors` switch, then REORG … APPLY (PURGE), OPTIMIZE and
    VACUUM as `steps` says. With the switch off on a table that has the deletionVectors table
    feature, `ALTER TABLE … DROP FEATURE` replaces the purge (it purges the vectors itself, then
    downgrades the protocol), so readers that refuse the feature (delta-rs' to_pyarrow_table)
    accept the table. Without a switch (None: deletion vectors by the table's size) the
    property is left as the engine set it. `progress` (a `live.LiveProgress`) hears each step
    start and end."""
    session = new_session(spark)  # its own conf (retention check), classic or Connect
    outcome = MaintainOutcome(unique_id)
    clock = _StepClock(outcome, progress)
    if deletion_vectors is False and steps.purge and _has_feature(session, delta_path,
                                                             "deletionVectors"):
        clock.start("drop feature", "dropping the deletionVectors table feature")
        before = _vectors(delta_path)
        delta.drop_deletion_vectors_feature(session, delta_path)
        outcome.done.append("dropped the deletionVectors table feature"
                            + (f" ({before} file(s) with deletion vectors rewritten)"
                               if before is not None else ""))
        # DROP FEATURE removes the property: set it, so the switch reads the same everywhere
        set_deletion_vectors(session, delta_path, deletion_vectors)
    else:
        clock.start("switch", f"checking {DELETION_VECTORS_PROPERTY}")
        if deletion_vectors is not None and set_deletion_vectors(session, delta_path,
                                                                 deletion_vectors):
            outcome.done.append(f"{DELETION_VECTORS_PROPERTY} = {str(deletion_vectors).lower()}")
        if steps.purge:
            clock.start("purge", "purging deletion vectors")
            if _vectors(delta_path) == 0:  # REORG would only scan the table to rewrite nothing
                outcome.done.append("no deletion vectors to purge")
            else:
                metrics = delta.purge_deletion_vectors(session, delta_path)
                outcome.done.append("purged deletion vectors "
                                    f"({metrics.get('numFilesRemoved', 0)} file(s) rewritten)")
    if steps.optimize:
        clock.start("optimize", "optimizing")
        metrics = delta.optimize(session, delta_path)
        outcome.done.append(f"optimized ({metrics.get('numFilesRemoved', 0)} file(s) into "
                            f"{metrics.get('numFilesAdded', 0)})")
    if steps.vacuum:
        clock.start("vacuum", "vacuuming")
        if steps.allow_short_retention:
            session.conf.set(_RETENTION_CHECK, "false")
        retain = "" if steps.retain_hours is None else f" RETAIN {steps.retain_hours:g} HOURS"
        deleted = delta.vacuum(session, delta_path, steps.retain_hours)
        outcome.done.append(f"vacuumed{retain.lower()}"
                            + (f" ({deleted} file(s) deleted)" if deleted is not None else ""))
    clock.end()
    return outcome


def _has_feature(session, delta_path: str, feature: str) -> bool:
    """Whether the table's protocol names `feature`: from its log through delta-rs (milliseconds),
    else DESCRIBE DETAIL (a Spark job: seconds)."""
    try:
        from deltalake import DeltaTable

        from mirrorspec.readers.delta import table_uri

        protocol = DeltaTable(table_uri(delta_path)).protocol()
        return feature in set(protocol.reader_features or []) | set(
            protocol.writer_features or [])
    except Exception:  # noqa: BLE001 - delta-rs can't open it here (credentials, scheme): ask Spark
        detail = delta.describe(session, delta_path)
        features = detail["tableFeatures"] if detail is not None else None
        return feature in (features or [])


def _vectors(delta_path: str) -> int | None:
    """How many live files carry deletion vectors (None: delta-rs can't tell)."""
    try:
        import pyarrow as pa
        from deltalake import DeltaTable

        from mirrorspec.readers.delta import table_uri

        return pa.table(DeltaTable(table_uri(delta_path)).deletion_vectors()).num_rows
    except Exception:  # noqa: BLE001 - only a figure for the message
        return None
