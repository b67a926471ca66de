"""Spark reader of Qlik Replicate JSON messages (the parser is `mirrorspec.sources.qlik`)."""

from __future__ import annotations

from typing import Any, Sequence

from pyspark.sql import functions as F

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.delivery import DELIVERY_COLUMN, DELIVERY_TYPE
from mirrorspec.sources.base import ERROR_COLUMN, PAIR_COLUMN, InferredColumn, ReadResult
from mirrorspec.sources.qlik import QlikReplicateFormat, parse_task
from mirrorspec.sources.qlik_messages import OUTPUT_EXTRA
from mirrorspec.spark.publish.feeds.base import change_schema, map_tasks
from mirrorspec.spark.publish.reloads import RELOADS_STATE, follow_reloads, is_read


class QlikReplicateReader(QlikReplicateFormat):
    """`source.type: qlik_replicate`."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]) -> ReadResult:
        """Parse `files` into canonical changes, holding back unfinished transactions; with the
        `_delivery` column (`sources.delivery`): changes the delivery marks of earlier batches
        cover, and changes a file sends again, are dropped as re-sends."""
        batch = self.plan_tasks(table, files, state)
        columns, keys, structures, tasks = batch.columns, batch.keys, batch.structures, batch.tasks
        schema = _schema(columns)
        cached: list = []
        parsed = _parse(spark, tasks, schema, cached)
        # one pass: errors, and the last event that ends a transaction (in change order)
        summary = parsed.agg(
            F.count(F.col(ERROR_COLUMN)).alias("errors"),
            F.max(F.when(F.col("_txn_last"), F.col("_order"))).alias("last_end"),
            F.count(F.when(is_read(), 1)).alias("reads")).first()
        if summary["errors"]:
            row = (parsed.where(F.col(ERROR_COLUMN).isNotNull())
                   .orderBy("_source_file", "_source_line").limit(1).collect()[0])
            for frame in cached:
                frame.unpersist()
            message, _, hint = row[ERROR_COLUMN].partition("\n  hint: ")
            raise SourceError(message, file=row["_source_file"], line=row["_source_line"],
                              hint=hint or None)
        # the unfinished tail: transaction events after the last transactionLastEvent=true
        # (Replicate emits committed transactions whole and in commit order)
        tail = F.col("_txn").isNotNull() & F.col("_txn_last").isNotNull()
        if summary["last_end"] is not None:
            end = F.struct(*[F.lit(v) for v in summary["last_end"]]).cast(
                parsed.schema["_order"].dataType)
            tail = tail & (F.col("_order") > end)
        cutoff = parsed.where(tail).agg(F.min("_order")).first()[0]
        changes = parsed
        held: list[str] = []
        new_state = {"structures": [s.to_dict() for s in structures]}
        if cutoff is not None:
            bound = F.struct(*[F.lit(v) for v in cutoff]).cast(parsed.schema["_order"].dataType)
            held = sorted(r[0] for r in parsed.where(F.col("_order") >= bound)
                          .select("_source_file").distinct().collect())
            changes = parsed.where(F.col("_order") < bound)
            new_state["cutoff"] = list(cutoff)
        changes = changes.drop(*OUTPUT_EXTRA)
        consumed = tuple(f for f in sorted(files) if f not in held)
        # a run of REFRESH rows that starts a new load replaces the table; changeSequence
        # (task-wide, increasing) orders the changes around it across topic-partitions
        changes, followed = follow_reloads(spark, table, changes, [c for c, _ in columns],
                                           bool(keys), consumed, state, summary["reads"],
                                           ordered=True, keys=keys)
        if followed is not None:
            new_state[RELOADS_STATE] = followed
        return ReadResult(changes=changes, files=consumed, held_back=tuple(held),
                          info={"state": new_state, "key_columns": keys, "cached": cached,
                                "persisted": True,
                                "columns": [InferredColumn(c, t) for c, t in columns]})


def _parse(spark: Any, tasks: list[dict], schema, cached: list):
    """All changes of the batch's tasks through the Python parser, persisted (the frame to
    unpersist goes to `cached`)."""
    if not tasks:
        return spark.createDataFrame([], schema)
    parsed = map_tasks(spark, tasks, parse_task, schema).persist()
    cached.append(parsed)
    return parsed


def _schema(columns: list[tuple[str, str]]):
    return change_schema(columns, [("seq", "string"), ("file", "string"), ("line", "bigint"),
                                   ("sub", "int")],
                         [(PAIR_COLUMN, "string"), ("_txn", "string"), ("_txn_last", "boolean"),
                          (DELIVERY_COLUMN, DELIVERY_TYPE), (ERROR_COLUMN, "string")])

