"""Preparing a table's landing folder before a run: `_metadata.json` (and the one rule that
keyColumns can't change under a folder), `_partnerEvents.json`, and `--full-refresh`.

JVM-free: the runner calls it with a `LandingFiles` that reaches URIs through Spark; the unit
tests and the compiler's landing-zone check call it on local folders.
"""

from __future__ import annotations

from mirrorspec.openmirroring import mirroring
from mirrorspec.base.console import Console
from mirrorspec.base.errors import LandingZoneError
from mirrorspec.landing.processed import LandingFiles
from mirrorspec.artifacts.plan import Plan, TablePlan
from mirrorspec.progress.publish import staging_folder, state_file


def write_partner_events(plan: Plan, lf: LandingFiles, console: Console) -> None:
    """Write `_partnerEvents.json` at the landing zone's root when the plan has one and it differs."""
    if not plan.partner_events:
        return
    path = lf.join(plan.landing_zone, mirroring.PARTNER_EVENTS_FILE)
    text = mirroring.dumps_json(plan.partner_events)
    if lf.read_text(path) != text:
        lf.write_text(path, text)
        console.info(f"wrote {path}", path=path)


def recreate_procedure(unique_id: str, publishes: bool | None = None,
                       folder: str | None = None) -> str:
    """The one way to recreate a table folder (to change its keys, a column's type, …): for a
    table mirrorspec publishes, a full refresh; for another publisher's folder, that publisher.
    `publishes` None: both cases, for a reader who doesn't know which (diff's rules)."""
    feed = (f"set `recreate: true` on the table, then `mirrorspec compile` and `mirrorspec run "
            f"--full-refresh --select {unique_id}` (it checks the feed before it drops the "
            "landing folder and the Delta table, then lands the data again)")
    other = (f"set `recreate: true` on the table, delete its landing folder"
             f"{f' {folder}' if folder else ''} and have its publisher land a full initial "
             "load again")
    if publishes is None:
        return f"for a table mirrorspec publishes (a feed source), {feed}; otherwise {other}"
    return feed if publishes else other


def deploy_metadata(table: TablePlan, lf: LandingFiles | None = None,
                    console: Console | None = None) -> bool:
    """Write the table's `_metadata.json` when absent (or, for a folder we publish, when it
    differs from the project's); True when written.

    A present file whose keyColumns differ from the plan's (`mirroring.keys_differ`) is an
    error: Fabric does not allow keyColumns to change once set, so the folder has to be
    recreated. The same keys in another order or case are left as the file has them. (A file
    without keys in a folder that never held data is simply replaced.)
    """
    lf = lf or LandingFiles()
    path = lf.join(table.landing_path, mirroring.METADATA_FILE)
    existing = lf.read_text(path)
    wanted = list(table.key_columns or table.metadata.get("keyColumns") or [])
    present = None if existing is None else mirroring.parse_metadata_text(existing, path)
    metadata = table.metadata
    if not wanted and table.source.kafka and present is not None and present.key_columns:
        # keys a Kafka feed's own metadata gave at run time (compile never reads topics)
        wanted = list(present.key_columns)
        metadata = {"keyColumns": wanted, **table.metadata}
    if present is None or (not present.key_columns and wanted
                           and not lf.has_data(table.landing_path)):
        lf.write_text(path, mirroring.dumps_json(metadata))
        if console is not None:
            console.info(f"{table.unique_id}: wrote {path}", table=table.unique_id, path=path)
        return True
    if mirroring.keys_differ(present.key_columns, wanted):
        raise LandingZoneError(
            f"keyColumns {list(present.key_columns)} in the landing zone differ from the "
            f"project's {wanted}; keyColumns can't change once set: recreate the table folder",
            file=path, code="KeyColumnsChanged",
            hint=recreate_procedure(table.unique_id, table.publishes,
                                    table.landing_path))
    if present.key_columns and list(present.key_columns) != wanted:
        # the same keys spelled or ordered otherwise: the folder keeps them as first written
        metadata = {**metadata, "keyColumns": list(present.key_columns)}
    if present == mirroring.parse_metadata(metadata, path):
        return False
    if table.publishes:
        # We publish this folder, so the project is the truth for every other property
        # (isUpsertDefaultRowMarker, SchemaDefinition, delimited properties, …).
        lf.write_text(path, mirroring.dumps_json(metadata))
        if console is not None:
            console.info(f"{table.unique_id}: updated {path}", table=table.unique_id, path=path)
        return True
    if console is not None:
        console.warning(f"{table.unique_id}: {path} differs from the project's _metadata.json "
                        "(another publisher owns this folder; left as it is)",
                        table=table.unique_id, path=path)
    return False


def drop_published(plan: Plan, table: TablePlan, lf: LandingFiles, console: Console) -> None:
    """Drop a feed table's publisher state, Delta table and landing folder (in that order: a
    crash in between leaves a state that publishes the whole feed again)."""
    lf.delete(state_file(plan, table))
    if table.source.kafka:  # messages fetched but not published yet start over too
        lf.delete(staging_folder(plan, table))
    lf.delete(table.delta_path)
    lf.delete(table.landing_path)
    console.info(f"{table.unique_id}: full refresh: dropped the Delta table, the landing "
                 "folder and the publisher state", table=table.unique_id)


def full_refresh(plan: Plan, table: TablePlan, lf: LandingFiles, console: Console) -> None:
    """Drop the Delta table of a table whose folder another publisher owns, to rebuild it.

    (A feed table, Kafka's too, is refreshed by the publisher, `spark.publish.refresh`: it
    publishes the feed aside first and calls `drop_published` only when that worked.)

    A landing_zone table keeps its folder: the files in `_ProcessedFiles/` move back in place
    and the engine applies every file still there from the start. Files purged after the
    retention are gone: a 20-digit sequence that no longer starts at 1 can't be rebuilt, so the
    table fails and its Delta table is left as it is; under LastUpdateTimeFileDetection nobody
    can tell what was purged, so it is warned about.
    """
    if table.publishes:
        drop_published(plan, table, lf, console)
        return
    metadata_path = lf.join(table.landing_path, mirroring.METADATA_FILE)
    text = lf.read_text(metadata_path)
    metadata = (mirroring.parse_metadata_text(text, metadata_path) if text is not None
                else mirroring.parse_metadata(table.metadata, metadata_path))
    processed = lf.join(table.landing_path, mirroring.PROCESSED_FOLDER)
    names = lf.data_files(table.landing_path) + lf.data_files(processed)
    sequences = [n for n in map(mirroring.parse_sequence, names) if n is not None]
    if not metadata.last_update_time_detection and sequences and min(sequences) > 1:
        raise LandingZoneError(
            f"can't rebuild {table.unique_id} from its landing folder: it starts at file "
            f"{min(sequences):020d}, the earlier files were purged from "
            f"{mirroring.PROCESSED_FOLDER}; the Delta table was left as it is",
            file=table.landing_path, code="FullRefreshImpossible",
            hint="have the publisher recreate the folder with a full load (initial data first)")
    lf.delete(table.delta_path)
    restored = lf.restore_processed(table.landing_path)
    console.info(f"{table.unique_id}: full refresh: dropped the Delta table; {restored} processed "
                 "file(s) put back to be applied again", table=table.unique_id, restored=restored)
    if metadata.last_update_time_detection:
        console.warning(
            f"{table.unique_id}: rebuilt from the files still in the landing folder; files "
            f"purged from {mirroring.PROCESSED_FOLDER} after the retention are not in it",
            table=table.unique_id)
