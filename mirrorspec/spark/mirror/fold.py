"""The batch fold (DESIGN.md, "How the engine should apply a batch") and the one MERGE.

For each key, the batch's changes in (file, row) order fold into the fate of the rows already in
the table (keep / delete / set R) plus rows to append. With j = the key's last delete, p = its
last update/upsert after j, and "first" = its first non-delete change after j:

- the fate is `delete` when there is a delete, else `set R_p` when there is an update, else keep;
  `insert_if_absent` (set only) is true when no insert precedes the key's first update;
- the appended rows are R_p × (inserts between j and p, plus one when the fate is delete and
  "first" is an update), followed by every insert after max(j, p) as it is.

This is the exact closed form of the step-by-step table in DESIGN.md, so duplicate inserts of an
existing key are mirrored exactly. It takes one shuffle (a window over the key).
"""

from __future__ import annotations

import uuid

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.window import Window

from mirrorspec.openmirroring.mirroring import RowMarker
from mirrorspec.spark.mirror.batch import FILE_ORDER, MARKER, ROW_ORDER, col
from mirrorspec.spark.platform.delta import quote

IS_RESET = "__is_reset"
ACTION = "__action"
INSERT_IF_ABSENT = "__insert_if_absent"
ACTION_DELETE = "delete"
ACTION_SET = "set"

# A MERGE of a table this small (with its batch) runs without adaptive execution, in one
# shuffle partition: adaptive execution submits every shuffle stage as a job of its own (a tiny
# MERGE: 11 jobs, 8 without it), each planned and scheduled for a few rows. Above it,
# adaptive execution's partition coalescing and skew handling pay.
SMALL_MERGE_BYTES = 16 * 2**20
SMALL_MERGE_CONF = {"spark.sql.adaptive.enabled": "false", "spark.sql.shuffle.partitions": "1"}

_INSERT = int(RowMarker.INSERT)
_DELETE = int(RowMarker.DELETE)
_REPLACE = [int(RowMarker.UPDATE), int(RowMarker.UPSERT)]


def fold_changes(changes: DataFrame, columns: list[str], keys: list[str]) -> DataFrame:
    """The MERGE source for `changes` (table columns + __marker, __file_order, __row_order).

    Rows: one reset row per key whose existing rows change (`__is_reset`, `__action` delete or
    set, `__insert_if_absent`), plus the rows to append (`__is_reset` false).
    """
    # Five projections (each one analysed by the driver: a cold process pays for every one),
    # a window layer each where a window reads an earlier one's result.
    order = F.struct(F.col(FILE_ORDER), F.col(ROW_ORDER))
    w = Window.partitionBy(*[col(k) for k in keys])
    marker = F.col(MARKER)
    df = changes.select("*", order.alias("__ord"),
                        F.max(F.when(marker == _DELETE, order)).over(w).alias("__j"))
    after = F.col("__j").isNull() | (F.col("__ord") > F.col("__j"))
    df = df.select("*",
                   F.max(F.when(after & marker.isin(_REPLACE), F.col("__ord"))).over(w)
                   .alias("__p"),
                   F.min(F.when(after & (marker != _DELETE),
                                F.struct(F.col("__ord"), marker.alias("m")))).over(w)
                   .alias("__first"))
    df = df.select("*", F.sum(F.when(
        after & (marker == _INSERT) & (F.col("__ord") < F.col("__p")), 1)
        .otherwise(0)).over(w).alias("__ins_before_p"))
    first_is_update = F.coalesce(F.col("__first.m").isin(_REPLACE), F.lit(False))
    has_delete = F.col("__j").isNotNull()
    is_p = F.col("__p").isNotNull() & (F.col("__ord") == F.col("__p"))
    boundary = F.greatest(F.col("__j"), F.col("__p"))  # greatest skips NULLs
    # How many appended copies this row stands for, and whether it also carries the reset.
    copies = (F.when(is_p, F.col("__ins_before_p")
                     + F.when(has_delete & first_is_update, 1).otherwise(0))
              .when((marker == _INSERT) & (boundary.isNull() | (F.col("__ord") > boundary)), 1)
              .otherwise(0))
    reset = F.coalesce(F.col("__ord") == F.coalesce(F.col("__p"), F.col("__j")), F.lit(False))
    total = (copies + F.when(reset, 1).otherwise(0)).cast("int")
    # one output row per copy (none when total is 0: explode of NULL yields no row)
    df = df.select(
        *[col(c) for c in columns],
        reset.alias("__reset"),
        F.when(has_delete, F.lit(ACTION_DELETE)).otherwise(F.lit(ACTION_SET)).alias("__act"),
        ((~has_delete) & first_is_update).alias("__iia"),
        F.explode(F.when(total > 0, F.sequence(F.lit(0), total - 1))).alias("__i"),
    )
    is_reset_row = F.col("__reset") & (F.col("__i") == 0)
    return df.select(
        *[col(c) for c in columns],
        is_reset_row.alias(IS_RESET),
        F.when(is_reset_row, F.col("__act")).alias(ACTION),
        F.when(is_reset_row, F.col("__iia")).otherwise(F.lit(False)).alias(INSERT_IF_ABSENT),
    )


def rows_for_empty_table(source: DataFrame, columns: list[str]) -> DataFrame:
    """What the MERGE would leave in an empty table: appended rows and set-rows to insert."""
    keep = (~F.col(IS_RESET)) | ((F.col(ACTION) == ACTION_SET) & F.col(INSERT_IF_ABSENT))
    return source.filter(keep).select(*[col(c) for c in columns])


def small_merge_conf(table_bytes: int | None, batch_bytes: int) -> dict[str, str]:
    """The session conf of a MERGE of a `batch_bytes` batch into a table of `table_bytes`
    (None: unknown): `SMALL_MERGE_CONF` while both together stay under SMALL_MERGE_BYTES."""
    if table_bytes is None or table_bytes + batch_bytes >= SMALL_MERGE_BYTES:
        return {}
    return dict(SMALL_MERGE_CONF)


def merge_condition(keys: list[str], prune: str | None = None) -> str:
    """Plain equality on every key (NULL keys never match), restricted to reset rows; `prune`, a
    target-only predicate every batch key satisfies, lets Delta skip files by statistics."""
    parts = [f"t.{quote(k)} = s.{quote(k)}" for k in keys]
    return " AND ".join(parts + [f"s.{IS_RESET}"] + ([prune] if prune else []))


def run_merge(session, delta_path: str, source: DataFrame, columns: list[str],
              keys: list[str], prune: str | None = None) -> None:
    """The one MERGE of a batch (see DESIGN.md), as SQL so it also runs over Spark Connect.

    The table's txn/userMetadata confs are set on `session`, the one that runs the statement.
    """
    view = f"__mirrorspec_merge_{uuid.uuid4().hex}"
    source.createOrReplaceTempView(view)
    target = "delta.`" + delta_path.replace("`", "``") + "`"
    names = ", ".join(quote(c) for c in columns)
    values = ", ".join(f"s.{quote(c)}" for c in columns)
    updates = ", ".join(f"t.{quote(c)} = s.{quote(c)}" for c in columns)
    try:
        session.sql(
            f"MERGE INTO {target} AS t USING {view} AS s ON {merge_condition(keys, prune)} "
            f"WHEN MATCHED AND s.{ACTION} = '{ACTION_DELETE}' THEN DELETE "
            f"WHEN MATCHED AND s.{ACTION} = '{ACTION_SET}' THEN UPDATE SET {updates} "
            f"WHEN NOT MATCHED AND s.{IS_RESET} AND s.{ACTION} = '{ACTION_SET}' "
            f"AND s.{INSERT_IF_ABSENT} THEN INSERT ({names}) VALUES ({values}) "
            f"WHEN NOT MATCHED AND NOT s.{IS_RESET} THEN INSERT ({names}) VALUES ({values})")
    finally:
        session.catalog.dropTempView(view)
