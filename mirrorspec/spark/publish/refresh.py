"""`run --full-refresh` of a feed table: publish the feed aside, then swap it in.

The feed is published as for a first run — a fresh publisher state, no mirrored table to start
from (so an extract starts from its newest snapshot) — into a shadow folder under the state path
(`<state_path>/refresh/<unique_id>/`, never in the landing zone). Every file that will be
replayed is read and checked there. Only when that worked are the old publisher state, Delta
table and landing folder dropped (`landing.deploy.drop_published`) and the shadow's
`_metadata.json` and landing file moved into a new landing folder, with the publisher's own
crash protocol: the batch is recorded as `pending` before its file is renamed into place, so a
crash anywhere in the swap makes the next run publish the same file again or record it. When the
shadow publish fails, nothing of the table was touched and the shadow is removed.

A Kafka table is fetched into the shadow's own staging folder from `starting_offsets`, its
messages read and checked there; its staged messages and recorded offsets move in with the
landing file. Before anything is fetched, a refresh that would replay less than the table was
built from (offsets the broker deleted since: retention) is refused, naming each topic and
partition (`kafka.check_replay`).
"""

from __future__ import annotations

import errno
import os
from dataclasses import replace
from typing import Any, Callable
from urllib.parse import urlsplit

from mirrorspec.artifacts.plan import Plan, TablePlan
from mirrorspec.base.console import Console
from mirrorspec.base.errors import MirrorspecError
from mirrorspec.base.files import Files, is_remote, join, local_path
from mirrorspec.landing import deploy
from mirrorspec.landing.processed import LandingFiles
from mirrorspec.openmirroring.mirroring import METADATA_FILE, sequence_file_name
from mirrorspec.progress.publish import (load_state, map_strings, new_state, save_state,
                                         staging_folder)
from mirrorspec.spark.platform import delta, hadoop_fs
from mirrorspec.spark.publish.publisher import (TEMP_PREFIX, PublishResult, commit_batch, failed,
                                                publish_new_files, with_publish_lock)

REFRESH_FOLDER = "refresh"
NOTHING_DROPPED = ("full refresh: nothing was dropped (the Delta table, the landing folder and "
                   "the publisher state are as they were)")


def shadow_root(plan: Plan, table: TablePlan) -> str:
    """Where a full refresh of `table` publishes before it swaps."""
    return join(plan.state_path, REFRESH_FOLDER, table.unique_id)


def refresh_table(spark, table: TablePlan, plan: Plan, console: Console) -> PublishResult:
    """Publish `table`'s whole feed aside and, when that worked, replace the table's landing
    folder, publisher state and Delta table with it (see the module docstring). Holds the
    table's publisher lock throughout."""
    return with_publish_lock(plan, table, console,
                             lambda: _refresh(spark, table, plan, console))


def _refresh(spark, table: TablePlan, plan: Plan, console: Console) -> PublishResult:
    fs = hadoop_fs.files_for(spark)
    root = shadow_root(plan, table)
    fs.delete(root)  # what a refresh that died left
    shadow_plan = replace(plan, state_path=root)
    shadow = replace(table, landing_path=join(root, "landing"),
                     delta_path=join(root, "no-mirrored-table"))
    console.info(f"{table.unique_id}: full refresh: publishing the feed aside to check it "
                 "before anything is dropped", table=table.unique_id)
    result = _replay_refused(spark, fs, table, plan, console) or \
        publish_new_files(spark, shadow, shadow_plan, console)
    if result.status == "Failed":
        fs.delete(root)
        error = dict(result.error or {})
        error["message"] = f"{error.get('message') or 'publishing failed'}\n  {NOTHING_DROPPED}"
        result.error = error
        return result
    lf = LandingFiles(hadoop_fs.remote_resolver(spark))
    deploy.drop_published(plan, table, lf, console)
    delta.forget_delta_logs(spark)
    _swap_in(fs, lf, shadow, shadow_plan, table, plan, result)
    fs.delete(root)
    deploy.deploy_metadata(table, lf, console)  # a feed that published nothing
    return result


def _replay_refused(spark, fs: Files, table: TablePlan, plan: Plan,
                    console: Console) -> PublishResult | None:
    """A Kafka table's refresh refused before anything is fetched when the broker no longer
    holds offsets the table was built from (`kafka.check_replay`); None when it may go on."""
    if not table.source.kafka:
        return None
    from mirrorspec.spark.publish.kafka import check_replay

    try:
        check_replay(spark, table, load_state(fs, plan, table))
    except MirrorspecError as exc:
        return failed(PublishResult(table.unique_id), exc, console)
    return None


def _swap_in(fs: Files, lf: LandingFiles, shadow: TablePlan, shadow_plan: Plan,
             table: TablePlan, plan: Plan, result: PublishResult) -> None:
    """Move the shadow's `_metadata.json` and landing file into `table`'s new landing folder
    and its state into place: pending first, then the file, then the batch recorded. A Kafka
    table's staged messages (those held back with an unfinished transaction) and recorded
    offsets move with it."""
    metadata = fs.read_text(join(shadow.landing_path, METADATA_FILE))
    if metadata is not None:
        fs.write_text(join(table.landing_path, METADATA_FILE), metadata)
    relocate = _move_staging(fs, shadow_plan, shadow, plan, table)
    shadow_state = relocate(load_state(fs, shadow_plan, shadow))
    batch = relocate(result.batch)
    if batch is None or batch.get("sequence") is None:  # nothing landed: the state is all
        save_state(fs, plan, table, shadow_state)
        return
    state = new_state(table)
    if shadow_state.get("kafka"):
        state["kafka"] = shadow_state["kafka"]
    state["pending"] = batch
    save_state(fs, plan, table, state)
    name = sequence_file_name(int(batch["sequence"]))
    final = join(table.landing_path, name)
    _move(fs, join(shadow.landing_path, name), final,
          join(table.landing_path, f"{TEMP_PREFIX}{int(batch['sequence']):020d}"))
    commit_batch(fs, plan, table, state, batch)
    result.files_written = [final]


def _move_staging(fs: Files, shadow_plan: Plan, shadow: TablePlan, plan: Plan,
                  table: TablePlan) -> Callable[[Any], Any]:
    """Move a Kafka table's staged messages from the shadow's staging folder into its own
    (emptied by `drop_published`); returns what turns the shadow's staging paths in a state
    or batch into the moved files' paths (the identity for other tables)."""
    if not table.source.kafka:
        return lambda value: value
    source, target = staging_folder(shadow_plan, shadow), staging_folder(plan, table)
    for name in fs.names(source):
        _move(fs, join(source, name), join(target, name), join(target, TEMP_PREFIX + name))
    prefixes = {f"{p.rstrip('/')}/" for p in (source, _absolute(source))}
    moved = f"{target.rstrip('/')}/"

    def relocate(text: str) -> str:
        for prefix in prefixes:
            if text.startswith(prefix):
                return moved + text[len(prefix):]
        return text
    return lambda value: map_strings(value, relocate)


def _absolute(path: str) -> str:
    return path if is_remote(path) else os.path.abspath(local_path(path))


def _move(fs: Files, source: str, target: str, temp: str) -> None:
    """Move a file to `target`: a rename where both are on one filesystem, else a copy through
    `temp` (renamed into place, so the target never exists half written)."""
    if _same_filesystem(source, target):
        try:
            fs.rename(source, target)
            return
        except OSError as exc:
            if exc.errno != errno.EXDEV:  # another device: copy
                raise
    target_fs = fs.fs(target)
    target_fs.delete(temp)
    with fs.fs(source).open_stream(source) as stream:
        target_fs.write_chunks(temp, iter(lambda: stream.read(1 << 20), b""))
    fs.rename(temp, target)
    fs.delete(source)


def _same_filesystem(first: str, second: str) -> bool:
    if not is_remote(first) and not is_remote(second):
        return True
    return urlsplit(first)[:2] == urlsplit(second)[:2]
