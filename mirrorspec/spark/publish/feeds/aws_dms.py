"""Spark reader of AWS DMS S3 target files (the CSV parser is `mirrorspec.sources.aws_dms`)."""

from __future__ import annotations

import json
import os
from typing import Any, Sequence

from pyspark.sql import functions as F

from mirrorspec.base.errors import SourceError
from mirrorspec.openmirroring.mirroring import spark_type_for
from mirrorspec.sources.aws_dms import (DMS_ORDER_FIELDS, OP_CODES, OP_COLUMN_NAME,
                                        SEQUENCE_HINT, AwsDmsFormat, DmsOptions,
                                        belongs_to_table, check_parquet_rows, file_format,
                                        is_full_load_file, parse_csv, parse_options,
                                        with_default_source_table)
from mirrorspec.progress.publish import REWRITTEN
from mirrorspec.sources.delivery import DELIVERY_COLUMN, DELIVERY_TYPE, Marks
from mirrorspec.sources.base import OP_DELETE, OP_INSERT, OP_UPDATE, ReadResult
from mirrorspec.sources.debezium import TableShape, table_shape
from mirrorspec.spark.publish.feeds.base import read_text_changes
from mirrorspec.spark.publish.reloads import RELOADS_STATE, follow_reloads


class AwsDmsReader(AwsDmsFormat):
    """`aws_dms`: AWS DMS S3 target CSV and Parquet files."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]
             ) -> ReadResult:
        """Canonical changes of `files`, with the `_delivery` column (`sources.delivery`): CDC
        rows (CSV and Parquet) the delivery marks of earlier batches cover are dropped as
        re-sends, and full-load files after the table's CDC rows replace the table
        (`spark.publish.reloads`). Raises SourceError naming file and row on bad input."""
        opts = parse_options(table.source.options)
        shape = table_shape(table, opts.key_columns)
        mine = [f for f in files if belongs_to_table(f, opts)]  # all are consumed
        opts = with_default_source_table(opts, table.name)
        csv_files = [f for f in mine if file_format(f, opts) == "csv"]
        parquet_files = [f for f in mine if file_format(f, opts) == "parquet"]

        marks = Marks.from_state(state)

        def parse(text: str, file: str):
            return parse_csv(text, file, shape, opts, marks)

        frames, info = [], {}
        if csv_files or not parquet_files:
            frame, info = read_text_changes(spark, csv_files, shape, parse, DMS_ORDER_FIELDS,
                                            extra=[(DELIVERY_COLUMN, DELIVERY_TYPE)])
            frames.append(frame)
        if parquet_files:
            frames.append(read_parquet_changes(spark, parquet_files, shape, opts, marks))
            info = {"cached": info.get("cached", [])}  # the union itself is not persisted
        changes = frames[0]
        for frame in frames[1:]:
            changes = changes.unionByName(frame)
        # full-load files after the table's changes are a reload: it replaces the table
        loads = [f for f in mine if is_full_load_file(f)]
        ordered = sorted(mine, key=lambda f: (not is_full_load_file(f), f))
        # a full-load file written again under a published name starts a new load
        restarted = bool(set(loads) & set(state.get(REWRITTEN) or ()))
        changes, followed = follow_reloads(spark, table, changes, shape.names,
                                           bool(shape.key_columns), sorted(files), state,
                                           len(loads), {f: i for i, f in enumerate(ordered)},
                                           restarted)
        if followed:
            info["state"] = {RELOADS_STATE: followed}
        if shape.key_columns and not table.key_columns:
            info["key_columns"] = list(shape.key_columns)
        return ReadResult(changes=changes, files=tuple(files), info=info)


def read_parquet_changes(spark: Any, files: Sequence[str], shape: TableShape, options: DmsOptions,
                         marks: Marks | None = None):
    """Canonical changes of DMS Parquet files (columns matched by name, case-insensitively),
    with the delivery checks of CSV rows (`check_parquet_rows`) on the CDC files' rows."""

    raw = spark.read.option("mergeSchema", "true").parquet(*files)
    by_lower = {name.lower(): name for name in raw.columns}
    op_name = by_lower.get(OP_COLUMN_NAME.lower())
    op_text = F.upper(F.trim(F.col(op_name))) if op_name else F.lit(None).cast("string")
    ts_name = by_lower.get(options.timestamp_column.lower()) if options.timestamp_column else None
    if options.timestamp_column and ts_name is None:
        raise SourceError(f"no Parquet file has the timestamp column "
                          f"{options.timestamp_column!r}", file=files[0],
                          hint="set timestamp_column to DMS's TimestampColumnName, or remove it")
    seq_name = options.change_sequence_column
    if seq_name and seq_name not in shape.names:
        raise SourceError(f"change_sequence_column {seq_name!r} is not one of the table's "
                          "columns", file=files[0], hint=SEQUENCE_HINT)
    # A column a file lacks (added to the source table later) reads as NULL.
    selected = raw.select(
        *[(F.col(by_lower[name.lower()]) if name.lower() in by_lower else F.lit(None))
          .cast(spark_type_for(data_type)).alias(name) for name, data_type in shape.columns],
        op_text.alias("_op_text"),
        (F.col(ts_name).cast("string") if ts_name else F.lit(None).cast("string")).alias("_ts"),
        (F.col(seq_name).cast("string") if seq_name else F.lit(None).cast("string"))
        .alias("_seq"),
        _file_name_column(files).alias("_source_file"),
        (F.col("_metadata.row_index") + 1).cast("bigint").alias("_source_line"))
    _check_parquet_ops(selected, shape)
    op = (F.when(F.col("_op_text") == "U", OP_UPDATE).when(F.col("_op_text") == "D", OP_DELETE)
          .otherwise(OP_INSERT))
    phase = F.when(_is_load(F.col("_source_file")), 0).otherwise(1)
    cdc = [f for f in files if not is_full_load_file(f)]
    if cdc:
        checked = _checked_deliveries(spark, selected.where(phase == 1), shape, options, marks)
        selected = selected.join(checked, ["_source_file", "_source_line"], "left").where(
            (phase == 0) | F.col(DELIVERY_COLUMN).isNotNull())
        delivery = F.coalesce(F.col(DELIVERY_COLUMN), _unchecked_delivery(phase))
    else:
        delivery = _unchecked_delivery(phase)
    order = F.col("_seq") if seq_name else F.col("_ts")
    return selected.select(
        *shape.names,
        op.cast("int").alias("_op"),
        F.struct(phase.alias("phase"), F.when(phase == 1, order).alias("ts"),
                 F.col("_source_file").alias("file"), F.col("_source_line").alias("line")
                 ).alias("_order"),
        F.lit(None).cast("array<string>").alias("_present"),
        "_source_file", "_source_line", delivery.alias(DELIVERY_COLUMN))


def _checked_deliveries(spark: Any, rows, shape: TableShape, options: DmsOptions,
                        marks: Marks | None):
    """(`_source_file`, `_source_line`, `_delivery`) of the CDC rows to land: the rows of each
    file through `check_parquet_rows` (one task per file), re-sends left out. Raises the
    first located SourceError (by file and line)."""
    keyed = bool(shape.key_columns)
    content = F.xxhash64(*[F.col(n) for n in shape.names], F.col("_op_text"), F.col("_ts"),
                         F.col("_seq"))
    small = rows.select("_source_file", "_source_line", "_ts", "_seq", content.alias("_print"))

    def check(item):
        file, found = item
        try:
            for line, value in check_parquet_rows(file, sorted(found), keyed, options, marks):
                if value is not None:
                    yield file, line, value, None
        except SourceError as exc:
            yield file, exc.line or 0, None, json.dumps({"message": exc.message,
                                                         "hint": exc.hint})

    pairs = small.rdd.map(lambda r: (r[0], (r[1], r[2], r[3], r[4]))).groupByKey().flatMap(check)
    checked = spark.createDataFrame(pairs, f"_source_file string, _source_line bigint, "
                                           f"{DELIVERY_COLUMN} {DELIVERY_TYPE}, _error string")
    error = checked.where(F.col("_error").isNotNull()).orderBy(
        "_source_file", "_source_line").limit(1).collect()
    if error:
        detail = json.loads(error[0]["_error"])
        raise SourceError(detail["message"], file=error[0]["_source_file"],
                          line=error[0]["_source_line"], hint=detail["hint"])
    return checked.drop("_error")


def _unchecked_delivery(phase):
    """The `_delivery` of a full-load Parquet row: its phase, no position (DMS sends a full
    load again only as a reload of the table)."""
    return F.struct(F.lit("").alias("partition"), phase.cast("int").alias("phase"),
                    F.lit(None).cast("array<bigint>").alias("position"),
                    F.lit(False).alias("exact"), F.lit(False).alias("per_key"),
                    F.lit(False).alias("backwards"))


def _check_parquet_ops(selected, shape: TableShape) -> None:
    """Raise SourceError for the first row with an unknown Op, or a U/D on a keyless table."""

    op = F.col("_op_text")
    bad = op.isNotNull() & (op != "") & ~op.isin(*OP_CODES)
    if not shape.key_columns:
        bad = bad | op.isin("U", "D")
    first = (selected.where(bad).select("_source_file", "_source_line", "_op_text")
             .orderBy("_source_file", "_source_line").limit(1).collect())
    if not first:
        return
    row = first[0]
    if row["_op_text"] in OP_CODES:
        raise SourceError("update/delete row for a table without key columns",
                          file=row["_source_file"], line=row["_source_line"],
                          hint="declare key_columns for the table")
    raise SourceError(f"unknown DMS operation {row['_op_text']!r} in the Op column",
                      file=row["_source_file"], line=row["_source_line"],
                      hint="expected I, U or D")


def _file_name_column(files: Sequence[str]):
    """The caller's spelling of each row's file (Spark reports `file:` URIs), as a Column."""

    names = []
    for file in files:
        local = os.path.abspath(file) if "://" not in file else file
        names += [F.lit(local), F.lit(file)]
    uri = F.col("_metadata.file_path")
    plain = F.url_decode(F.regexp_replace(uri, "^file:(//)?", ""))
    return F.coalesce(F.create_map(*names)[plain], uri)


def _is_load(file_name):

    base = F.regexp_extract(file_name, r"([^/]*)$", 1)
    return F.upper(base).startswith("LOAD")
