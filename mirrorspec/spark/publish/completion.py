"""Partial-row completion and truncate expansion, in Spark.

The landing zone needs full rows, but CDC feeds carry partial ones (Qlik `columnMask`, Arcion
`Exists_Val`, Debezium's unavailable-value placeholder, GoldenGate's compressed updates, Maxwell's
minimal row images). A change row lacks column `c` when its `_present` list is set and does not
name `c` (readers have already taken what the message's own before image holds). Completion gives
it the value `c` has just before the change: from the batch's own earlier changes of that key,
else from the current mirrored row (the Delta table). An absent column never becomes NULL: when
no place has its value (a row the mirror has not seen, a key deleted before), the table stops at
that change.
"""

from __future__ import annotations

import os
from typing import Any, Sequence

from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from mirrorspec.base import files as fsmod
from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import (OP_COLUMN, OP_DELETE, OP_TRUNCATE, ORDER_COLUMN,
                                     PAIR_COLUMN, PRESENT_COLUMN, SOURCE_FILE_COLUMN,
                                     SOURCE_LINE_COLUMN)

TIE_COLUMN = "_tie"      # 0 for deletes, 1 otherwise: a key change's delete sorts before its insert
_RANK_COLUMN = "_rank"   # 0 for seed rows from the Delta table, 1 for the batch's changes
_SEED_OP = -1
_MISSING_COLUMN = "_missing"  # the columns no place had a value for
INCOMPLETE_HINT = (
    "the change carries only some columns (a compressed or minimal update, an unavailable-"
    "value placeholder) of a row the mirror does not hold: mirror the landing files published "
    "before it first (`mirrorspec run` does), load the table before its changes (a snapshot, "
    "bootstrap or initial load), or have the producer send full row images (see the source's "
    "page under docs/sources/); then rerun")


def sort_columns(keys: Sequence[str]) -> list:
    """The total order of a batch's change rows (ties broken deterministically)."""
    return ([F.col(ORDER_COLUMN), F.col(SOURCE_FILE_COLUMN), F.col(SOURCE_LINE_COLUMN),
             F.col(TIE_COLUMN)] + [F.col(k) for k in keys])


def with_tie(changes: DataFrame) -> DataFrame:
    """Add the tie-breaker column used by sort_columns()."""
    return changes.withColumn(TIE_COLUMN, F.when(F.col(OP_COLUMN) == OP_DELETE, 0).otherwise(1))


def read_mirrored(spark: SparkSession, delta_path: str | None) -> DataFrame | None:
    """The current mirrored table, or None when it doesn't exist yet."""
    if not delta_path:
        return None
    if not fsmod.is_remote(delta_path) and not os.path.isdir(
            os.path.join(fsmod.local_path(delta_path), "_delta_log")):
        return None
    try:
        return spark.read.format("delta").load(delta_path)
    except Exception as exc:
        if "is not a Delta table" in str(exc) or "PATH_NOT_FOUND" in str(exc):
            return None
        raise


def _literal(value: Any, data_type):
    """A Column literal of `data_type` for a collected `_order` value (scalars or structs)."""
    if hasattr(value, "asDict"):
        return F.struct(*[F.lit(v) for v in value]).cast(data_type)
    return F.lit(value).cast(data_type)


def expand_truncates(spark: SparkSession, changes: DataFrame, keys: Sequence[str],
                     mirrored: DataFrame | None) -> DataFrame:
    """Replace every truncate (op 8) by deletes of each key in the mirrored table and of each
    key the batch inserted or updated before it. Expects the `_tie` column."""
    truncates = (changes.where(F.col(OP_COLUMN) == OP_TRUNCATE)
                 .select(ORDER_COLUMN, SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN).collect())
    result = changes.where(F.col(OP_COLUMN) != OP_TRUNCATE)
    if not truncates:
        return result
    columns = [c for c in changes.columns]
    key_cols = [F.col(k) for k in keys]
    for trunc in truncates:
        order, file, line = trunc[0], trunc[1], trunc[2]
        schema = changes.schema
        here = F.struct(F.col(ORDER_COLUMN).alias("o"), F.col(SOURCE_FILE_COLUMN).alias("f"),
                        F.col(SOURCE_LINE_COLUMN).alias("l"))
        bound = F.struct(_literal(order, schema[ORDER_COLUMN].dataType).alias("o"),
                         F.lit(file).cast(schema[SOURCE_FILE_COLUMN].dataType).alias("f"),
                         F.lit(line).cast(schema[SOURCE_LINE_COLUMN].dataType).alias("l"))
        before = here < bound
        batch_keys = changes.where(before & (F.col(OP_COLUMN) != OP_TRUNCATE)
                                   & (F.col(OP_COLUMN) != OP_DELETE)).select(*key_cols)
        all_keys = batch_keys
        if mirrored is not None:
            all_keys = mirrored.select(*[F.col(k).cast(changes.schema[k].dataType).alias(k)
                                         for k in keys]).unionByName(batch_keys)
        deletes = all_keys.distinct()
        fill = {}
        for name in columns:
            if name in keys:
                continue
            if name == OP_COLUMN:
                fill[name] = F.lit(OP_DELETE).cast(changes.schema[name].dataType)
            elif name == ORDER_COLUMN:
                fill[name] = _literal(order, changes.schema[name].dataType)
            elif name == SOURCE_FILE_COLUMN:
                fill[name] = F.lit(file).cast("string")
            elif name == SOURCE_LINE_COLUMN:
                fill[name] = F.lit(line).cast(changes.schema[name].dataType)
            elif name == TIE_COLUMN:
                fill[name] = F.lit(0).cast(changes.schema[name].dataType)
            else:
                fill[name] = F.lit(None).cast(changes.schema[name].dataType)
        generated = deletes.select(*key_cols, *[col.alias(n) for n, col in fill.items()])
        result = result.unionByName(generated.select(*columns))
    return result


def partial_condition(data_columns: Sequence[str]):
    """True for change rows lacking one of `data_columns` (deletes never count as partial)."""
    if not data_columns:
        return F.lit(False)
    wanted = F.array(*[F.lit(c) for c in data_columns])
    return (F.col(PRESENT_COLUMN).isNotNull() & (F.col(OP_COLUMN) != OP_DELETE)
            & (F.size(F.array_except(wanted, F.col(PRESENT_COLUMN))) > 0))


def complete_changes(spark: SparkSession, changes: DataFrame, columns: Sequence[str],
                     keys: Sequence[str], mirrored: DataFrame | None,
                     cached: list[DataFrame] | None = None) -> DataFrame:
    """Fill every absent column of the batch's change rows (see the module docstring).

    `changes` has the table's `columns`, the canonical change columns, `_pair` and `_tie`; only
    keys with a partial row (and the old keys of partial key changes) are windowed, the rest
    passes through untouched. Deletes reset a key: nothing is known of it after one — except
    that the insert of a key change (`_pair`) first takes what it lacks from the old key's row
    just before that key's delete. (A key changed twice in one batch takes from the first old
    key only what that key's own row held.) A column still unknown raises SourceError at
    the first such change (file and line). With `cached`, the completed rows are persisted
    (and appended to it, for the caller to unpersist) before that check, so the landing write
    reads them instead of running the windows again.
    """
    data_columns = [c for c in columns if c not in keys]
    if not keys or not data_columns:
        return changes
    if PAIR_COLUMN not in changes.columns:
        changes = changes.withColumn(PAIR_COLUMN, F.lit(None).cast("string"))
    partial = partial_condition(data_columns)
    pairs = changes.where(partial & F.col(PAIR_COLUMN).isNotNull()).select(PAIR_COLUMN)
    old_keys = (changes.where(F.col(OP_COLUMN) == OP_DELETE)
                .join(pairs, PAIR_COLUMN, "left_semi").select(*keys))
    partial_keys = changes.where(partial).select(*keys).unionByName(old_keys).distinct()
    affected = changes.join(partial_keys, list(keys), "left_semi")
    untouched = changes.join(partial_keys, list(keys), "left_anti")

    affected = affected.withColumn(_RANK_COLUMN, F.lit(1))
    if mirrored is not None:
        have = set(mirrored.columns)
        current = mirrored.select(
            *[F.col(k).cast(changes.schema[k].dataType).alias(k) for k in keys],
            *[(F.col(c) if c in have else F.lit(None)).cast(changes.schema[c].dataType).alias(c)
              for c in data_columns])
        # several mirrored rows may share a key (inserts never check): pick one deterministically
        seed = (current.join(partial_keys, list(keys), "left_semi")
                .groupBy(*keys).agg(F.max(F.struct(*data_columns)).alias("_s"))
                .select(*keys, *[F.col("_s")[c].alias(c) for c in data_columns])
                .withColumn(OP_COLUMN, F.lit(_SEED_OP).cast(changes.schema[OP_COLUMN].dataType))
                .withColumn(_RANK_COLUMN, F.lit(0)))
        affected = affected.unionByName(seed, allowMissingColumns=True)

    ordered = (Window.partitionBy(*keys)
               .orderBy(F.col(_RANK_COLUMN), F.col(ORDER_COLUMN), F.col(SOURCE_FILE_COLUMN),
                        F.col(SOURCE_LINE_COLUMN), F.col(TIE_COLUMN)))
    window = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    op = F.col(OP_COLUMN)

    def carries(name: str):
        return ((op == OP_DELETE) | (op == _SEED_OP) | F.col(PRESENT_COLUMN).isNull()
                | F.array_contains(F.col(PRESENT_COLUMN), name))

    def known(name: str):
        # a struct keeps a present NULL (v NULL, k true) apart from "nothing known" (no struct)
        # and from "the key was deleted" (k false: nothing is known after a delete)
        return F.when(carries(name), F.struct(
            F.when(op == OP_DELETE, F.lit(None)).otherwise(F.col(name)).alias("v"),
            (op != OP_DELETE).alias("k")))

    affected = _complete_key_changes(affected, data_columns, ordered, known)
    filled, missing = [], []
    for name in data_columns:
        previous = F.last(known(name), ignorenulls=True).over(window)
        filled.append(F.when(carries(name), F.col(name)).otherwise(previous["v"]).alias(name))
        missing.append(F.when(~carries(name) & ~F.coalesce(previous["k"], F.lit(False)),
                              F.lit(name)))
    others = [c for c in affected.columns if c not in data_columns]
    completed = (affected.select(*[F.col(c) for c in others], *filled,
                                 F.array_compact(F.array(*missing)).alias(_MISSING_COLUMN))
                 .where(F.col(_RANK_COLUMN) == 1).drop(_RANK_COLUMN))
    if cached is not None:
        completed = completed.persist()
        cached.append(completed)
    _stop_at_incomplete(completed, keys)
    completed = completed.withColumn(
        PRESENT_COLUMN, F.lit(None).cast(changes.schema[PRESENT_COLUMN].dataType))
    return untouched.unionByName(completed.select(*changes.columns))


def _stop_at_incomplete(completed: DataFrame, keys: Sequence[str]) -> None:
    """Raise SourceError at the first change (by file and line) a column of which no place
    had a value for."""
    first = (completed.where(F.size(F.col(_MISSING_COLUMN)) > 0)
             .select(SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN, _MISSING_COLUMN, *keys)
             .orderBy(SOURCE_FILE_COLUMN, SOURCE_LINE_COLUMN).limit(1).collect())
    if not first:
        return
    row = first[0]
    lacking = list(row[_MISSING_COLUMN])
    key = ", ".join(f"{k}={row[k]!r}" for k in keys)
    raise SourceError(
        f"the change of key ({key}) lacks {', '.join(lacking[:5])}"
        f"{', …' if len(lacking) > 5 else ''}, and neither the message, the batch's earlier "
        "changes nor the mirrored row has a value for it (an absent column never becomes NULL)",
        file=row[SOURCE_FILE_COLUMN], line=row[SOURCE_LINE_COLUMN], hint=INCOMPLETE_HINT)


def _complete_key_changes(affected: DataFrame, data_columns: Sequence[str], ordered,
                          known) -> DataFrame:
    """Give the partial insert of each key change what the old key's row held just before the
    old key's delete (the delete and the insert share a `_pair` id)."""
    before = ordered.rowsBetween(Window.unboundedPreceding, -1)
    is_pair = F.col(PAIR_COLUMN).isNotNull()
    states = (affected
              .select(PAIR_COLUMN, OP_COLUMN, *[F.last(known(c), ignorenulls=True).over(before)
                                                .alias(f"__old_{c}") for c in data_columns])
              .where(is_pair & (F.col(OP_COLUMN) == OP_DELETE)).drop(OP_COLUMN))
    inserts = affected.where(is_pair & (F.col(OP_COLUMN) != OP_DELETE))
    rest = affected.where(~is_pair | (F.col(OP_COLUMN) == OP_DELETE))
    joined = inserts.join(states, PAIR_COLUMN, "left")
    present = F.coalesce(F.col(PRESENT_COLUMN), F.array(*[F.lit(c) for c in data_columns]))
    values, taken = {}, []
    for name in data_columns:
        take = (~F.array_contains(present, name)) & F.coalesce(F.col(f"__old_{name}")["k"],
                                                               F.lit(False))
        values[name] = F.when(take, F.col(f"__old_{name}")["v"]).otherwise(F.col(name))
        taken.append(F.when(take, F.lit(name)))
    now_present = F.when(F.col(PRESENT_COLUMN).isNull(), F.lit(None)).otherwise(
        F.array_union(F.col(PRESENT_COLUMN), F.array_compact(F.array(*taken))))
    completed = joined.select(*[values[c].alias(c) if c in values
                                else (now_present.alias(c) if c == PRESENT_COLUMN else F.col(c))
                                for c in affected.columns])
    return rest.unionByName(completed)
