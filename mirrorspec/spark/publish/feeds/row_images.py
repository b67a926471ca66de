"""Spark reading shared by the row-image JSON feeds (GoldenGate, Canal, Maxwell): each file's
text through the format's pure parser (`mirrorspec.sources.<format>.parse_text`), then what the
parsers' notes say about the batch as a whole:

- a file's leading rows without a position sort at the greatest position of the earlier files
  (`sources.row_images.borrow_positions` did the rest within each file);
- the format's `BatchPlan` (held-back files, truncates that turn out to continue a reload, the
  reader state to keep) — Maxwell's unfinished bootstraps, Canal's initial loads;
- on a table without key columns, truncates become the rows the landing zone can take
  (`spark.publish.replace`).

Every row carries its `_delivery` column (`sources.delivery`; the parsers' `DeliveryGate`):
messages the delivery marks of earlier batches cover are dropped as re-sends, and the
publisher (`spark.publish.replays`) does the rest.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from mirrorspec.sources.base import (OP_COLUMN, OP_TRUNCATE, ORDER_COLUMN, SOURCE_FILE_COLUMN,
                                     SOURCE_LINE_COLUMN, ReadResult)
from mirrorspec.sources.debezium import Row, table_shape
from mirrorspec.sources.delivery import DELIVERY_COLUMN, DELIVERY_TYPE, Marks
from mirrorspec.sources.row_images import (ORDER_FIELDS, POSITIONS_NOTE, TRUNCATE_NOTE,
                                           BatchPlan, Planner, parse_options)
from mirrorspec.spark.publish.feeds.base import note_rows, read_text_changes, skipped_rows
from mirrorspec.spark.publish.reloads import is_read, stop_at_repeated_reads
from mirrorspec.spark.publish.replace import replace_keyless

Parser = Callable[..., Iterator[Row]]


def read_row_images(spark: Any, table: Any, files: Sequence[str], parse_text: Parser,
                    state: dict[str, Any] | None = None, planner: Planner | None = None
                    ) -> ReadResult:
    """Canonical changes of `files`; raises SourceError naming file and line on bad input."""
    opts = parse_options(table.source.options)
    shape = table_shape(table, opts.key_columns)
    width = len(shape.columns)
    marks = Marks.from_state(state)

    def parse(text: str, file: str) -> Iterator[Row]:
        skipped: dict[str, int] = {}
        notes: list[tuple] = []
        yield from parse_text(text, file, shape, opts, skipped, notes, marks)
        yield from skipped_rows(skipped, width, len(ORDER_FIELDS), file, extra=1)
        yield from note_rows(notes, width, file, extra=1)

    changes, info = read_text_changes(spark, files, shape, parse, ORDER_FIELDS,
                                      extra=[(DELIVERY_COLUMN, DELIVERY_TYPE)])
    notes = info.pop("notes", [])
    ordered = sorted(files)
    changes = inherit_positions(changes, ordered, notes)
    reader_state = dict((state or {}).get("reader") or {})
    plan = planner(notes, ordered, reader_state) if planner else BatchPlan(state=reader_state)
    if plan.held:
        changes = changes.where(~F.col(SOURCE_FILE_COLUMN).isin(plan.held))
    for file, line in plan.dropped:
        changes = changes.where(~((F.col(OP_COLUMN) == OP_TRUNCATE)
                                  & (F.col(SOURCE_FILE_COLUMN) == file)
                                  & (F.col(SOURCE_LINE_COLUMN) == line)))
    if not shape.key_columns and changes.where(is_read()).limit(1).count():
        # a keyless table's full load (Canal/DTS INIT) repeated across files or batches
        last = reader_state.get("last_kind")
        published = any(b.get("sequence") for b in (state or {}).get("batches", []))
        stop_at_repeated_reads(spark, changes, table, shape.names,
                               None if last is None else last == "INIT", published)
    truncated = any(n["kind"] == TRUNCATE_NOTE and n["file"] not in plan.held
                    and (n["file"], n["line"]) not in plan.dropped for n in notes)
    if truncated and not shape.key_columns:
        changes = replace_keyless(spark, changes, table, shape.names)
    info["state"] = plan.state
    if shape.key_columns and not table.key_columns:
        info["key_columns"] = list(shape.key_columns)
    return ReadResult(changes=changes, files=tuple(files), held_back=tuple(plan.held),
                      info=info)


def inherit_positions(changes: DataFrame, files: Sequence[str], notes: list[dict[str, Any]]
                      ) -> DataFrame:
    """Rows still without a sort position (those before their file's first position) sort at
    the greatest position of the batch's earlier files (by name), so they keep their place in
    the feed; with no earlier position they stay first (NULL)."""
    greatest = {n["file"]: n["details"][0] for n in notes if n["kind"] == POSITIONS_NOTE}
    inherited: dict[str, str] = {}
    running: str | None = None
    for file in files:
        if running is not None:
            inherited[file] = running
        if file in greatest:
            running = greatest[file] if running is None else max(running, greatest[file])
    if not inherited:
        return changes
    pairs = [F.lit(v) for item in sorted(inherited.items()) for v in item]
    position = F.coalesce(F.col(f"{ORDER_COLUMN}.position"),
                          F.create_map(*pairs)[F.col(SOURCE_FILE_COLUMN)])
    fields = [position.alias("position")] + [F.col(f"{ORDER_COLUMN}.{name}").alias(name)
                                             for name, _ in ORDER_FIELDS[1:]]
    return changes.withColumn(ORDER_COLUMN, F.struct(*fields))
