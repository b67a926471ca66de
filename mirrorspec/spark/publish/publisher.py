"""The publisher: new feed files → canonical changes → one Parquet landing file per batch.

`publish_table` lists the table's feed (`source.path`: folder or glob) for files it has not
published yet, reads them with the registered reader, completes partial rows from the mirrored
table, and writes ONE landing file named with the next 20-digit sequence: the table's columns, then
`__rowMarker__` (int32) last; full rows for 1/4, key columns (+ whatever the feed had) for 2.

Crash safety. The state file (`<plan.state_path>/publish/<unique_id>.json`) records, per batch,
the source files and the sequence they got. The batch is recorded as `pending` after the
temporary file `_publishing_<seq>/part-*.parquet` is written and before it is renamed into place:
- crash before the rename → the next run reads the same files again and writes the same
  sequence with the same content (stable row order, no timestamps in the file);
- crash after the rename → the next run finds the landing file and only completes the state.
A bad feed file fails the table with an error naming file and line; nothing of the batch lands.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Sequence

import filelock

from mirrorspec.artifacts.plan import Plan, TablePlan, holds_secret, resolve_secrets
from mirrorspec.base.console import Console, NullConsole
from mirrorspec.base.errors import MirrorspecError, SourceError
from mirrorspec.base.faults import crash_point
from mirrorspec.openmirroring.mirroring import (METADATA_FILE, PROCESSED_FOLDER, ROW_MARKER_COLUMN, dumps_json,
                                  parse_metadata_text, parse_sequence, sequence_file_name)
from mirrorspec.sources.base import (CHANGE_COLUMNS, OP_COLUMN, OP_DELETE, OP_INSERT, OP_TRUNCATE,
                                     OP_UPDATE, OP_UPSERT, PAIR_COLUMN, PRESENT_COLUMN,
                                     SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN, use_remote_reader)
from mirrorspec.sources import FEED_TYPES
from mirrorspec.sources.delivery import DELIVERY_COLUMN, STATE_KEY as DELIVERY_STATE, Marks, repeats_land
from mirrorspec.base import files as fsmod
from mirrorspec.landing.deploy import recreate_procedure
from mirrorspec.progress.publish import (REWRITTEN, STAMPS, file_stamps, load_state,
                                         rewritten_files, save_state, state_file)
from mirrorspec.spark.platform import hadoop_fs
from mirrorspec.spark.platform.failures import as_storage_error
from mirrorspec.spark.publish.feeds import get_reader
from mirrorspec.base.files import Files, join
from mirrorspec.spark.platform.session import session_conf

TEMP_PREFIX = "_publishing_"


@dataclass
class PublishResult:
    """What one publish of one table did."""

    unique_id: str
    files_written: list[str] = field(default_factory=list)
    rows: int = 0
    status: str = "UpToDate"  # Published | UpToDate | Failed | Busy (another run publishes)
    error: dict | None = None
    held_back: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)  # messages that change no row, by kind
    batch: dict | None = None  # the batch this publish recorded (its state `pending` entry)


# --- state -----------------------------------------------------------------------------------

# --- landing folder ----------------------------------------------------------------------------

def next_sequence(fs: Files, landing_path: str, state: dict[str, Any]) -> int:
    """One after the highest sequence in the landing folder, its _ProcessedFiles and the state."""
    highest = 0
    for folder in (landing_path, join(landing_path, PROCESSED_FOLDER)):
        for name in fs.names(folder):
            seq = parse_sequence(name)
            if seq is not None:
                highest = max(highest, seq)
    for batch in state.get("batches", []):
        if batch.get("sequence"):
            highest = max(highest, int(batch["sequence"]))
    return highest + 1


def _landed(fs: Files, landing_path: str, sequence: int) -> bool:
    name = sequence_file_name(sequence)
    return (fs.exists(join(landing_path, name))
            or fs.exists(join(landing_path, PROCESSED_FOLDER, name)))


def _has_data_files(fs: Files, landing_path: str) -> bool:
    for folder in (landing_path, join(landing_path, PROCESSED_FOLDER)):
        if any(parse_sequence(n) is not None for n in fs.names(folder)):
            return True
    return False


def ensure_metadata(fs: Files, table: TablePlan, key_columns: Sequence[str]) -> None:
    """Write the table's `_metadata.json` unless present; fail if it names other keyColumns."""
    metadata = dict(table.metadata or {})
    if key_columns and not metadata.get("keyColumns"):
        metadata = {"keyColumns": list(key_columns), **metadata}
    path = join(table.landing_path, METADATA_FILE)
    existing = fs.read_text(path)
    if existing is not None:
        current = parse_metadata_text(existing, path)
        wanted = tuple(metadata.get("keyColumns") or ())
        if current.key_columns == wanted:
            return
        if current.key_columns or _has_data_files(fs, table.landing_path):
            raise SourceError(
                f"{path} declares keyColumns {list(current.key_columns)} but the table's keys are "
                f"{list(wanted)}; keyColumns can't change once set",
                hint="to change the keys, " + recreate_procedure(table.unique_id, True))
    fs.write_text(path, dumps_json(metadata))


# --- running pure parsers inside Spark ------------------------------------------------------------

def lock_file(plan: Plan, table: TablePlan) -> str:
    """The lock one publisher of `table` holds while it publishes (beside its state file)."""
    return join(plan.state_path, "publish", f"{table.unique_id}.lock")


def unknown_files_warning(plan: Plan, table: TablePlan, new: int, recorded: int) -> str:
    """What a publish says before it lands feed files its state doesn't know into a landing
    folder that already holds data (a state lost, or brought from another folder)."""
    knows = (f"names {recorded} published file(s), none of them in the feed now" if recorded
             else "records nothing")
    return (f"{table.unique_id}: the publisher state {state_file(plan, table)} {knows}, but "
            f"the landing folder {table.landing_path} already holds data: publishing all "
            f"{new} feed file(s) again on top of it. If the project was moved or copied with "
            "a state from elsewhere, or the state was lost, `mirrorspec run --full-refresh "
            f"--select {table.unique_id}` rebuilds the table from the feed instead")


def busy_message(unique_id: str) -> str:
    """What a run that finds another one publishing the table says."""
    return (f"{unique_id}: another run is publishing {unique_id}; this run leaves its feed to "
            "that one (the next pass publishes whatever it left)")


def publish_table(spark, table: TablePlan, plan: Plan, console: Console | None = None) -> PublishResult:
    """Publish what is new in `table`'s feed into its landing folder (see the module docstring).

    One publisher per table at a time: it holds an OS file lock (`lock_file`) for the whole
    publish, released when it ends or its process dies. Another run finding it held reports
    `busy_message` (status `Busy`) and publishes nothing. The lock needs a local state path;
    with a URI state path there is none (docs/operations.md)."""
    console = console or NullConsole()
    return with_publish_lock(plan, table, console,
                             lambda: publish_new_files(spark, table, plan, console))


def with_publish_lock(plan: Plan, table: TablePlan, console: Console,
                      work: Callable[[], PublishResult]) -> PublishResult:
    """`work()` while holding the table's publisher lock (`lock_file`); `Busy` when another
    process holds it."""
    path = lock_file(plan, table)
    if fsmod.is_remote(path):
        return work()
    local = fsmod.local_path(path)
    os.makedirs(os.path.dirname(local), exist_ok=True)
    lock = filelock.FileLock(local, thread_local=False)
    try:
        lock.acquire(timeout=0)
    except filelock.Timeout:
        console.warning(busy_message(table.unique_id), table=table.unique_id)
        return PublishResult(table.unique_id, status="Busy")
    try:
        return work()
    finally:
        lock.release()


def publish_new_files(spark, table: TablePlan, plan: Plan, console: Console) -> PublishResult:
    """The publish itself, without the lock (`publish_table` holds it)."""
    result = PublishResult(table.unique_id)
    fs = hadoop_fs.files_for(spark)
    # the Qlik/Arcion parsers scan feed files on the driver; URIs are read through Hadoop
    use_remote_reader(lambda path: hadoop_fs.filesystem_for(path, spark).read_bytes(path))
    try:
        state = load_state(fs, plan, table)
        if state.get("pending"):
            pending = state["pending"]
            if _landed(fs, table.landing_path, int(pending["sequence"])):
                commit_batch(fs, plan, table, state, pending)
                console.info(f"{table.unique_id}: recorded landing file "
                             f"{sequence_file_name(int(pending['sequence']))} published before a crash",
                             table=table.unique_id)
                result.files_written.append(join(table.landing_path,
                                                 sequence_file_name(int(pending["sequence"]))))
                result.rows = int(pending.get("rows") or 0)
                result.status = "Published"
                # fall through: new files may be waiting too
            else:
                return _publish_batch(spark, fs, table, plan, state, list(pending["files"]),
                                      int(pending["sequence"]), console, result)
        feed_path = table.source.path
        if table.source.kafka:  # topics → staged feed files, offsets recorded (kafka_source)
            from mirrorspec.spark.publish.kafka import stage_messages

            feed_path = stage_messages(spark, fs, plan, table, state,
                                       lambda s: save_state(fs, plan, table, s), console)
        if not feed_path:
            raise SourceError(f"table {table.unique_id} has source type {table.source.type!r} "
                              "but no source path", hint="set source.path in the table's YAML")
        published = state.get("files", {})
        held = [f for f in state.get("held_back", [])]
        listed = hadoop_fs.list_feed_files(feed_path, spark)
        # a published file its producer wrote again under its name (an AWS DMS full-load file
        # on a table reload) is read again, as what it is (the reader is told: REWRITTEN)
        stamped = [f for f in listed if f in (state.get(STAMPS) or {})]
        rewritten = rewritten_files(state, file_stamps(fs, stamped)) if stamped else []
        new = [f for f in listed if (f not in published or f in rewritten) and f not in held]
        files = sorted(set(held) | set(new))
        if not new:
            result.held_back = held
            return result
        state[REWRITTEN] = rewritten
        if rewritten:
            console.info(f"{table.unique_id}: {len(rewritten)} published feed file(s) were "
                         "written again under their name: reading them again",
                         table=table.unique_id, rewritten=rewritten)
        if len(new) == len(listed) and not rewritten and not table.source.kafka \
                and _has_data_files(fs, table.landing_path):
            console.warning(unknown_files_warning(plan, table, len(new), len(published)),
                            table=table.unique_id, files=len(new))
        sequence = next_sequence(fs, table.landing_path, state)
        return _publish_batch(spark, fs, table, plan, state, files, sequence, console, result)
    except MirrorspecError as exc:
        if table.source.kafka:
            from mirrorspec.spark.publish.kafka import located_error

            exc = located_error(fs, exc)
        return failed(result, exc, console)
    except Exception as exc:
        # disk full, permissions: the feed is fine; the state's `pending` batch makes the next
        # run write the same file again or record the one already renamed into place
        error = as_storage_error(exc, f"{table.unique_id}: publish", "publishing failed",
                                 "the feed is fine; the next run publishes this batch (never "
                                 "twice)")
        if error is None:
            raise
        return failed(result, error, console)


def failed(result: PublishResult, exc: MirrorspecError, console: Console) -> PublishResult:
    """`result` as a failed publish with `exc` as its error (said on the console)."""
    error: dict[str, Any] = {"errorCode": type(exc).__name__, "message": exc.render()}
    if isinstance(exc, SourceError):
        error["file"], error["line"] = exc.file, exc.line
    result.status = "Failed"
    result.error = error
    result.files_written = []
    result.rows = 0
    console.error(f"{result.unique_id}: {exc.render()}", table=result.unique_id, error=error)
    return result


# A batch's cache lives for one publish and is read two or three times: compressing it costs
# more CPU than the memory it saves (1M Qlik messages: ~1 s of a 7 s warm publish; measured in
# docs/performance.md, "Publishing"). A value the profile sets wins.
PUBLISH_CONF = {"spark.sql.inMemoryColumnarStorage.compressed": "false"}


def _publish_batch(spark, fs: Files, table: TablePlan, plan: Plan, state: dict[str, Any],
                   files: list[str], sequence: int, console: Console,
                   result: PublishResult) -> PublishResult:
    try:
        reader = get_reader(table.source.type)
    except (KeyError, ImportError) as exc:
        raise SourceError(f"no feed reader for source type {table.source.type!r} ({exc})",
                          hint=f"use one of {', '.join(FEED_TYPES)}") from None
    prior = {k: v for k, v in state.items() if k != "pending"}
    rewritable = getattr(reader, "rewritable", None)
    stamps = file_stamps(fs, [f for f in files if rewritable(f)]) if rewritable else {}
    if holds_secret(table.source.options):  # secrets are resolved only here, in memory
        table = replace(table, source=replace(table.source,
                                              options=resolve_secrets(table.source.options)))
    with session_conf(spark, PUBLISH_CONF, keep_set=True):
        read = reader.read(spark, table, files, prior)
        cached = list(read.info.get("cached", []))
        try:
            changes = read.changes
            if not read.info.get("persisted"):
                changes = changes.persist()
                cached.append(changes)
            keys = list(table.key_columns or read.info.get("key_columns") or [])
            first_load = (not any(b.get("sequence") for b in prior.get("batches", []))
                          and not _has_data_files(fs, table.landing_path))
            written, rows, marks = _write_landing(spark, fs, table, changes, keys, sequence,
                                                  first_load, Marks.from_state(prior), cached)
        finally:
            for frame in cached:
                frame.unpersist()
    held_back = sorted(read.held_back)
    consumed = sorted(set(read.files or files) - set(held_back))
    outcome = {"sequence": sequence if written else None, "files": files, "consumed": consumed,
               "held_back": held_back, "rows": rows, "reader": read.info.get("state", {})}
    if stamps:  # files the producer may write again: their stamps when read
        outcome[STAMPS] = {f: stamps[f] for f in consumed if f in stamps}
    if marks is not None:
        outcome[DELIVERY_STATE] = marks.to_state()
    result.batch = outcome
    skipped_snapshots = read.info.get("skipped_snapshots") or []
    if skipped_snapshots:
        console.info(f"{table.unique_id}: nothing precedes this batch, so only the newest "
                     f"snapshot was read; {len(skipped_snapshots)} older snapshot(s) recorded as "
                     "published without reading them", table=table.unique_id,
                     skipped_snapshots=skipped_snapshots)
    if written:
        ensure_metadata(fs, table, keys)
        state["pending"] = outcome
        save_state(fs, plan, table, state)
        crash_point("before_publish_rename", table.unique_id)
        final = join(table.landing_path, sequence_file_name(sequence))
        fs.rename(written, final)
        fs.delete(join(table.landing_path, f"{TEMP_PREFIX}{sequence:020d}"))
        crash_point("after_publish_rename", table.unique_id)
        result.files_written.append(final)
        result.rows += rows
        result.status = "Published"
        console.info(f"{table.unique_id}: published {rows} change(s) from {len(consumed)} file(s) "
                     f"as {sequence_file_name(sequence)}", table=table.unique_id, rows=rows,
                     sequence=sequence)
    commit_batch(fs, plan, table, state, outcome)
    result.held_back = held_back
    for kind, count in (read.info.get("skipped") or {}).items():
        result.skipped[kind] = result.skipped.get(kind, 0) + count
    if result.skipped:
        console.info(f"{table.unique_id}: skipped messages that change no row: "
                     + ", ".join(f"{n} {k}" for k, n in sorted(result.skipped.items())),
                     table=table.unique_id, skipped=dict(result.skipped))
    if held_back:
        console.info(f"{table.unique_id}: holding back {len(held_back)} file(s) with an unfinished "
                     "transaction until the next run", table=table.unique_id, held_back=held_back)
    return result


def commit_batch(fs: Files, plan: Plan, table: TablePlan, state: dict[str, Any],
                 outcome: dict) -> None:
    """Record a published batch (`outcome`, the state's `pending` entry) in the state."""
    for name in outcome["consumed"]:
        state["files"][name] = outcome["sequence"]
    state["held_back"] = list(outcome["held_back"])
    state["reader"] = outcome.get("reader") or {}
    if outcome.get(STAMPS):
        state[STAMPS] = {**(state.get(STAMPS) or {}), **outcome[STAMPS]}
    state.pop(REWRITTEN, None)
    if outcome.get(DELIVERY_STATE) is not None:  # the delivery marks, with the batch they cover
        state[DELIVERY_STATE] = outcome[DELIVERY_STATE]
    state["batches"].append({"sequence": outcome["sequence"], "files": outcome["files"],
                             "rows": outcome["rows"]})
    state["pending"] = None
    save_state(fs, plan, table, state)


# --- from canonical changes to a landing file ---------------------------------------------------

_VALID_OPS = (OP_INSERT, OP_UPDATE, OP_DELETE, OP_UPSERT, OP_TRUNCATE)


def _check_changes(changes, columns: list[str], keys: list[str]) -> dict[str, int]:
    """One pass over the batch: counts of rows, bad rows, partial rows, inserts and events
    that went back within their file; raises on bad rows."""
    from pyspark.sql import functions as F

    from mirrorspec.spark.publish.completion import partial_condition
    from mirrorspec.spark.publish.replays import backwards_condition

    op = F.col(OP_COLUMN)
    bad_op = ~op.isin(*_VALID_OPS) | op.isNull()
    keyless = op.isin(OP_UPDATE, OP_DELETE, OP_UPSERT, OP_TRUNCATE) if not keys else F.lit(False)
    null_key = (op.isin(OP_UPDATE, OP_DELETE, OP_UPSERT)
                & F.greatest(*[F.col(k).isNull() for k in keys], F.lit(False))) if keys else F.lit(False)
    data_columns = [c for c in columns if c not in keys]
    checks = {"bad_op": bad_op, "keyless": keyless, "null_key": null_key,
              "partial": partial_condition(data_columns) if keys else F.lit(False),
              "truncate": op == OP_TRUNCATE, "insert": op == OP_INSERT,
              "backwards": (backwards_condition() if DELIVERY_COLUMN in changes.columns
                            else F.lit(False))}
    row = changes.agg(F.count(F.lit(1)).alias("rows"),
                      *[F.sum(F.when(c, 1).otherwise(0)).alias(n) for n, c in checks.items()]).first()
    counts = {k: int(row[k] or 0) for k in ["rows", *checks]}
    problems = [
        ("bad_op", lambda r: f"unknown change operation {r[OP_COLUMN]!r}",
         "the reader produced an operation that isn't insert/update/delete/upsert/truncate"),
        ("keyless", lambda r: "the table has no key columns, so updates and deletes can't be applied",
         "declare key_columns in the table's YAML (or let the feed's metadata declare them)"),
        ("null_key", lambda r: "a key column is NULL in an update or delete",
         "the feed must carry the key of every update and delete"),
    ]
    for name, message, hint in problems:
        if counts[name]:
            first = (changes.where(checks[name])
                     .orderBy(SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN).limit(1).first())
            raise SourceError(message(first), file=first[SOURCE_FILE_COLUMN],
                              line=first[SOURCE_LINE_COLUMN], hint=hint)
    return counts


def _write_landing(spark, fs: Files, table: TablePlan, changes, keys: list[str],
                   sequence: int, first_load: bool = False, marks: Marks | None = None,
                   cached: list | None = None) -> tuple[str | None, int, Marks | None]:
    """Write the batch as `_publishing_<seq>/part-*.parquet`; (that file or None, row count,
    the delivery marks after the batch, or None when the reader gives no `_delivery`).
    Keyed inserts land as upserts but in an insert-only first load with unique keys
    (`replays`). Frames it persists go to `cached`, which the caller unpersists."""
    from pyspark.sql import functions as F

    from mirrorspec.spark.publish.completion import (complete_changes, expand_truncates, read_mirrored,
                                             sort_columns, with_tie)
    from mirrorspec.spark.publish.replays import (first_load_keys_unique, insert_marker,
                                                  keyless_across_files, keyless_against_marks,
                                                  observed_marks, resolve_backwards)

    declared = {c.name for c in table.columns}  # `_id` is a column; `_op`, `_order`… are not
    columns = [c for c in changes.columns if c in declared or not c.startswith("_")]
    defaults = {PRESENT_COLUMN: "array<string>", SOURCE_FILE_COLUMN: "string",
                SOURCE_LINE_COLUMN: "bigint", PAIR_COLUMN: "string"}
    for name, kind in defaults.items():  # optional for readers whose rows are always full
        if name not in changes.columns:
            changes = changes.withColumn(name, F.lit(None).cast(kind))
    missing = [k for k in keys if k not in columns]
    if missing:
        raise SourceError(f"key column(s) {', '.join(missing)} are not columns of the feed "
                          f"(columns: {', '.join(columns)})",
                          hint="fix key_columns in the table's YAML")
    counts = _check_changes(changes, columns, keys)
    if counts["rows"] == 0:
        return None, 0, None
    advanced = None
    if DELIVERY_COLUMN in changes.columns:
        marks = marks or Marks()
        if counts["backwards"]:
            changes = resolve_backwards(changes, columns, marks)
        if not keys:
            lands = repeats_land(table.source.options)  # keyless_repeats: land
            if not lands:
                keyless_against_marks(spark, changes, columns, marks)
            if changes.select(SOURCE_FILE_COLUMN).distinct().limit(2).count() > 1:
                changes = keyless_across_files(changes, columns, lands)
        advanced = marks.advanced(observed_marks(changes, columns, bool(keys)))
    # 0 pays only where it keeps the engine's plain append: an insert-only first load
    inserts_stay = (first_load and bool(keys) and counts["insert"] == counts["rows"]
                    and first_load_keys_unique(changes, keys))
    frame = with_tie(changes.select(*columns, *CHANGE_COLUMNS, PAIR_COLUMN))
    mirrored = None
    if counts["partial"] or counts["truncate"]:
        mirrored = read_mirrored(spark, table.delta_path)
    if counts["truncate"]:
        frame = expand_truncates(spark, frame, keys, mirrored)
    if counts["partial"]:
        frame = complete_changes(spark, frame, columns, keys, mirrored, cached)
    landing = (frame.repartition(1).sortWithinPartitions(*sort_columns(keys))
               .select(*[F.col(c) for c in columns],
                       insert_marker(keys, inserts_stay).cast("int").alias(ROW_MARKER_COLUMN)))
    temp = join(table.landing_path, f"{TEMP_PREFIX}{sequence:020d}")
    fs.delete(temp)
    # INT96 (Spark's default) is deprecated; Fabric and every reader know TIMESTAMP_MICROS
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    landing.write.mode("overwrite").parquet(temp)
    parts = sorted(n for n in fs.names(temp) if n.startswith("part-") and n.endswith(".parquet"))
    if len(parts) != 1:
        raise MirrorspecError(f"expected one Parquet part in {temp}, found {len(parts)}")
    part = join(temp, parts[0])
    rows = _parquet_rows(spark, part)
    if rows == 0:
        fs.delete(temp)
        return None, 0, advanced
    return part, rows, advanced


def _parquet_rows(spark, path: str) -> int:
    """The row count a Parquet file's footer records (no Spark job for local files)."""
    if not fsmod.is_remote(path):
        import pyarrow.parquet as pq

        return pq.read_metadata(fsmod.local_path(path)).num_rows
    return spark.read.parquet(path).count()


def present_list(columns: Sequence[str], present: Iterable[str] | None) -> list[str] | None:
    """Canonical `_present`: None when every column is present."""
    if present is None:
        return None
    present = list(present)
    return None if set(columns) <= set(present) else present


__all__ = ["PublishResult", "publish_table", "next_sequence",
           "ensure_metadata", "present_list", "PRESENT_COLUMN"]
