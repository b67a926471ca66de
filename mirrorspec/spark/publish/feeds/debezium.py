"""Spark reader of Debezium change events, JSON or Avro (the parser is
`mirrorspec.sources.debezium`, the order `mirrorspec.sources.debezium.positions`)."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from pyspark.sql import functions as F

from mirrorspec.base.errors import SourceError
from mirrorspec.sources.base import OP_TRUNCATE, ReadResult
from mirrorspec.sources.debezium import (DebeziumFormat, Row, parse_options, parse_text,
                                         table_shape)
from mirrorspec.sources.debezium.positions import MISSING_HINT, ORDER_FIELDS, UNPOSITIONED
from mirrorspec.sources.delivery import DELIVERY_COLUMN, DELIVERY_TYPE, Marks
from mirrorspec.spark.publish.feeds.base import read_text_changes, skipped_rows

DEBEZIUM_ORDER_FIELDS = ORDER_FIELDS
# skip-count kinds that carry the position streams out of the parse tasks (not messages)
_STREAM_KIND = "\x00stream:"


class DebeziumReader(DebeziumFormat):
    """`debezium`: Debezium change events."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]
             ) -> ReadResult:
        """Canonical changes of `files`, with the `_delivery` column (`sources.delivery`);
        events the delivery marks of earlier batches cover are dropped as re-sends. Raises
        SourceError naming file and line on bad input."""
        opts = parse_options(table.source.options)
        shape = table_shape(table, opts.key_columns)
        decoder = self.record_decoder(table.source.options)
        decode, binary = decoder if decoder is not None else (None, False)
        marks = Marks.from_state(state)

        def parse(text: str, file: str) -> Iterator[Row]:
            skipped: dict[str, int] = {}
            streams: dict[str, int] = {}
            if decode is None:
                yield from parse_text(text, file, shape, opts, skipped, streams, marks)
            else:
                yield from decode(text, file, shape, opts, skipped, streams, marks)
            skipped.update({_STREAM_KIND + s: n for s, n in streams.items()})
            yield from skipped_rows(skipped, len(shape.columns), len(DEBEZIUM_ORDER_FIELDS), file,
                                    extra=1)

        changes, info = read_text_changes(spark, files, shape, parse, DEBEZIUM_ORDER_FIELDS,
                                          binary=binary, extra=[(DELIVERY_COLUMN, DELIVERY_TYPE)])
        skipped = info.get("skipped") or {}
        streams = {k[len(_STREAM_KIND):] for k in list(skipped) if k.startswith(_STREAM_KIND)}
        for kind in [k for k in skipped if k.startswith(_STREAM_KIND)]:
            del skipped[kind]
        if not skipped:
            info.pop("skipped", None)
        positioned = {s for s in streams if not s.startswith(UNPOSITIONED)}
        if shape.key_columns and (len(positioned) > 1 or (
                len(files) > 1 and any(s.startswith(UNPOSITIONED) for s in streams))):
            _check_orderable(changes, shape.key_columns, info)
        if shape.key_columns and not table.key_columns:
            info["key_columns"] = list(shape.key_columns)
        return ReadResult(changes=changes, files=tuple(files), info=info)


def _check_orderable(changes, keys: Sequence[str], info: dict[str, Any]) -> None:
    """Fail when nothing orders two events of one key in one phase (snapshot, streaming):
    they sit in different files and one has no source position (within one file the line
    orders them), or their positions come from different streams (servers, shards)."""
    order = F.col("_order")
    unknown = order["stream"].startswith(UNPOSITIONED)
    where = F.struct(F.col("_source_file").alias("file"), F.col("_source_line").alias("line"),
                     order["stream"].alias("stream"))
    by_stream = F.when(~unknown, F.struct(order["stream"].alias("stream"),
                                          F.col("_source_file").alias("file"),
                                          F.col("_source_line").alias("line")))
    bad = (changes.where(F.col("_op") != OP_TRUNCATE)
           .groupBy(*keys, order["phase"])
           .agg(F.countDistinct("_source_file").alias("files"),
                F.countDistinct(F.when(~unknown, order["stream"])).alias("streams"),
                F.min(F.when(unknown, where)).alias("unknown"),
                F.min(by_stream).alias("first"), F.max(by_stream).alias("last"))
           .where(((F.col("files") > 1) & F.col("unknown").isNotNull())
                  | (F.col("streams") > 1))
           .limit(1).collect())
    if not bad:
        return
    for frame in info.pop("cached", []):
        frame.unpersist()
    row = bad[0]
    key = ", ".join(f"{k}={row[k]!r}" for k in keys)
    first, last, unknown_at = row["first"], row["last"], row["unknown"]
    if unknown_at is not None and row["files"] > 1:
        at = unknown_at
        raise SourceError(
            f"events of key ({key}) in {row['files']} files can't be ordered: this one has "
            f"{at['stream']}", file=at["file"], line=at["line"], hint=MISSING_HINT)
    raise SourceError(
        f"events of key ({key}) come from two streams whose positions don't compare "
        f"({first['stream']} at {first['file']}:{first['line']}, {last['stream']} here)",
        file=last["file"], line=last["line"],
        hint="publish the files of one server/shard first (move the others out of the feed "
             "folder until then), or put each key's events in one feed file")
