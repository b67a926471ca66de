"""Spark reader of Arcion CSV/JSON files (the parser is `mirrorspec.sources.arcion`)."""

from __future__ import annotations

from typing import Any, Sequence

from pyspark.sql import functions as F

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.arcion import ArcionFormat, parse_task
from mirrorspec.sources.replicator_positions import ARCION_ORDER_FIELDS as ORDER_FIELDS
from mirrorspec.sources.delivery import DELIVERY_COLUMN, DELIVERY_TYPE
from mirrorspec.sources.base import ERROR_COLUMN, PAIR_COLUMN, ReadResult
from mirrorspec.spark.publish.feeds.base import change_schema, map_tasks
from mirrorspec.spark.publish.reloads import RELOADS_STATE, follow_reloads, is_read


class ArcionReader(ArcionFormat):
    """`source.type: arcion`."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]) -> ReadResult:
        """Parse `files` into canonical changes, with the `_delivery` column
        (`sources.delivery`): changes whose cursor the delivery marks of earlier batches cover,
        or a file already sent, are dropped as re-sends."""
        columns, keys, tasks = self.plan_tasks(table, files, state)
        schema = change_schema(columns, ORDER_FIELDS,
                               [(PAIR_COLUMN, "string"), (DELIVERY_COLUMN, DELIVERY_TYPE),
                                (ERROR_COLUMN, "string")])
        if not tasks:
            parsed = spark.createDataFrame([], schema)
        else:
            parsed = map_tasks(spark, tasks, parse_task, schema).persist()
        error = (parsed.where(F.col(ERROR_COLUMN).isNotNull())
                 .orderBy("_source_file", "_source_line").limit(1).collect())
        if error:
            parsed.unpersist()
            row = error[0]
            message, _, hint = row[ERROR_COLUMN].partition("\n  hint: ")
            raise SourceError(message, file=row["_source_file"], line=row["_source_line"],
                              hint=hint or None)
        # a run of snapshot rows that starts a new snapshot replaces the table
        reads = parsed.where(is_read()).limit(1).count()
        changes, followed = follow_reloads(spark, table, parsed.drop(ERROR_COLUMN),
                                           [c for c, _ in columns], bool(keys),
                                           sorted(files), state, reads,
                                           {t["file"]: t["rank"] for t in tasks})
        return ReadResult(changes=changes, files=tuple(sorted(files)),
                          info={"cached": [parsed], "persisted": True, "key_columns": keys,
                                "state": {RELOADS_STATE: followed} if followed else {}})
