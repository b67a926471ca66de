"""Idempotent replays: the publisher's Spark side of `mirrorspec.sources.delivery`.

The landing zone keeps Fabric's semantics (marker 0 appends without a key check), and producers
are at-least-once, so the publisher never lands a re-sendable event as a plain insert:

- `insert_marker`: on a keyed table every insert (a `c`, a snapshot read, a REFRESH row…) lands
  as an upsert (4), except in the table's first load (nothing published before, no data file in
  the landing folder) when the batch holds inserts only and no two share a key: nothing can
  precede them, and 0 keeps the engine's plain append of an initial load (a batch with other
  changes goes through the engine's fold anyway, so the check is not worth its aggregation
  there). A restarted snapshot inside the first batch repeats keys: then all land as 4
  (`first_load_keys_unique` decides for the whole batch).
- `resolve_backwards`: an event whose position went back within its file to one the file had
  not sent (`backwards`) is a re-send when the batch holds the same event (same position and
  `row_print`) elsewhere, or an earlier batch reached its position: dropped; otherwise a
  located error.
- `keyless_across_files`: a keyless table's identical events (same partition, phase, position
  and `row_print`) in different files of one batch: one event when its position is exact
  (the later copies are dropped), a located error when several events share the position;
  `keyless_against_marks`: the same against the events an earlier batch applied at the
  highest shared position (the marks keep their fingerprints).
- `observed_marks`: per partition and phase, the highest position the batch lands (and the
  fingerprints there, keyless) — what `delivery.Marks.advanced` needs, saved with the batch.
  Per-key positions count too: only events that order the whole table are checked
  against them (`Marks.resent`).

Readers that don't give a `_delivery` column get only the first rule.
"""

from __future__ import annotations

from typing import Any, Sequence

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import (OP_COLUMN, OP_INSERT, OP_UPSERT, ORDER_COLUMN,
                                     PRESENT_COLUMN, SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN)
from mirrorspec.sources.delivery import DELIVERY_COLUMN, KEYLESS_HINT, Marks, backwards_error

_COPY = "_copy"
_PRINT = "_print"


def first_load_keys_unique(changes: DataFrame, keys: Sequence[str]) -> bool:
    """Whether no two inserts of the batch share a key (one aggregation over the inserts)."""
    repeated = (changes.where(F.col(OP_COLUMN) == OP_INSERT).groupBy(*keys).count()
                .where(F.col("count") > 1).limit(1).collect())
    return not repeated


def insert_marker(keys: Sequence[str], inserts_stay: bool):
    """The `__rowMarker__` of a change row: its `_op`, with a keyed insert as an upsert unless
    `inserts_stay` (an insert-only first load whose keys are unique)."""
    op = F.col(OP_COLUMN)
    if not keys or inserts_stay:
        return op
    return F.when(op == OP_INSERT, F.lit(OP_UPSERT)).otherwise(op)


def backwards_condition():
    """True for rows of events that went back within their file (`delivery.FileCheck`)."""
    return F.coalesce(F.col(DELIVERY_COLUMN)["backwards"], F.lit(False))


def row_print(columns: Sequence[str]):
    """A 64-bit fingerprint of a change row (its values, op and present list): what tells two
    copies of one event apart from two events. Spark's xxhash64, computed only where needed;
    a keyless table's marks keep it across runs."""
    return F.xxhash64(*[F.col(c) for c in columns], F.col(OP_COLUMN), F.col(PRESENT_COLUMN))


_IDENTITY = ("partition", "phase", "position")


def resolve_backwards(changes: DataFrame, columns: Sequence[str], marks: Marks) -> DataFrame:
    """`changes` without the events that went back within their file: each must be a copy of
    an event the batch holds elsewhere (same partition, phase, position and row fingerprint),
    or lie where an earlier batch reached; the first that is neither raises a SourceError."""
    delivery = F.col(DELIVERY_COLUMN)
    back = backwards_condition()
    printed = changes.withColumn(_PRINT, row_print(columns))
    copies = printed.where(~back).select(*[delivery[f].alias(f"_c_{f}") for f in _IDENTITY],
                                         F.col(_PRINT).alias("_c_print"))
    suspects = printed.where(back).select(*[delivery[f].alias(f) for f in _IDENTITY], _PRINT,
                                          SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN)
    match = F.col(_PRINT) == F.col("_c_print")
    for name in _IDENTITY:
        match = match & (F.col(name) == F.col(f"_c_{name}"))
    unmatched = (suspects.join(copies, match, "left_anti")
                 .orderBy(SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN).collect())
    for row in unmatched:
        if not marks.covers(row["partition"], row["position"]):
            error = backwards_error(tuple(row["position"]))
            raise SourceError(error.message, file=row[SOURCE_FILE_COLUMN],
                              line=row[SOURCE_LINE_COLUMN], hint=error.hint)
    return changes.where(~back)


def keyless_across_files(changes: DataFrame, columns: Sequence[str],
                         repeats_land: bool = False) -> DataFrame:
    """`changes` without the later copies of a keyless table's event that several files of the
    batch hold at one exact position; a SourceError at the second copy when the position is
    shared by several events (a re-send can't be told from a second identical row), unless
    the table's equal events land (`repeats_land`: such copies stay, as other rows)."""
    delivery = F.col(DELIVERY_COLUMN)
    positioned = delivery["position"].isNotNull()
    same = Window.partitionBy(*[delivery[f] for f in _IDENTITY], row_print(columns)).orderBy(
        F.col(ORDER_COLUMN), F.col(SOURCE_FILE_COLUMN), F.col(SOURCE_LINE_COLUMN))
    ranked = changes.withColumn(_COPY, F.row_number().over(same))
    copy = positioned & (F.col(_COPY) > 1)
    if repeats_land:
        return ranked.where(~(copy & delivery["exact"])).drop(_COPY)
    bad = (ranked.where(copy & ~delivery["exact"])
           .orderBy(SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN).limit(1).collect())
    if bad:
        _keyless_error("another file of the batch sent an equal event at the same source "
                       "position, which several events share", bad[0])
    return ranked.where(~copy).drop(_COPY)


def keyless_against_marks(spark, changes: DataFrame, columns: Sequence[str],
                          marks: Marks) -> None:
    """Stop at a keyless table's event at the highest position an earlier batch applied,
    where several events share the position, when it equals one applied there."""
    applied = marks.at()
    if not applied:
        return
    delivery = F.col(DELIVERY_COLUMN)
    seen = spark.createDataFrame([(p, ph, list(pos), fp) for p, ph, pos, fp in applied],
                                 "_m_partition string, _m_phase int, _m_position array<bigint>, "
                                 "_m_print bigint")
    printed = changes.where(~delivery["exact"]).withColumn(_PRINT, row_print(columns))
    match = ((delivery["partition"] == F.col("_m_partition"))
             & (delivery["phase"] == F.col("_m_phase"))
             & (delivery["position"] == F.col("_m_position"))
             & (F.col(_PRINT) == F.col("_m_print")))
    bad = (printed.join(F.broadcast(seen), match, "left_semi")
           .orderBy(SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN).limit(1).collect())
    if bad:
        _keyless_error("an earlier batch applied an equal event at the same source position, "
                       "which several events share", bad[0])


def _keyless_error(what: str, row) -> None:
    raise SourceError(f"{what}: a re-send and a second identical row can't be told apart",
                      file=row[SOURCE_FILE_COLUMN], line=row[SOURCE_LINE_COLUMN],
                      hint=KEYLESS_HINT)


def observed_marks(changes: DataFrame, columns: Sequence[str], keyed: bool
                   ) -> list[tuple[str, int, bool, Any, list[int]]]:
    """(partition, phase, per_key, highest position, fingerprints of the events there) of the
    batch's positioned events; fingerprints (`row_print`) only for a keyless table."""
    delivery = F.col(DELIVERY_COLUMN)
    positioned = changes.where(delivery["position"].isNotNull())
    tops = (positioned.groupBy(delivery["partition"].alias("partition"),
                               delivery["phase"].alias("phase"),
                               delivery["per_key"].alias("per_key"))
            .agg(F.max(delivery["position"]).alias("position")).collect())
    observed = []
    for top in tops:
        prints: list[int] = []
        if not keyed:
            at = positioned.where((delivery["partition"] == top["partition"])
                                  & (delivery["phase"] == top["phase"])
                                  & (delivery["position"] == F.array(
                                      *[F.lit(int(p)).cast("bigint") for p in top["position"]])))
            prints = [int(r[0]) for r in at.select(row_print(columns)).collect()]
        observed.append((top["partition"], int(top["phase"]), bool(top["per_key"]),
                         list(top["position"]), prints))
    return observed
