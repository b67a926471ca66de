"""Spark reader of Debezium JSON change events (the parser is `mirrorspec.sources.debezium`)."""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from mirrorspec.sources.base import ReadResult
from mirrorspec.sources.debezium import (DebeziumFormat, Row, parse_options, parse_text,
                                         table_shape)
from mirrorspec.spark.publish.feeds.base import read_text_changes, skipped_rows

DEBEZIUM_ORDER_FIELDS = (("lsn", "bigint"), ("position", "string"), ("pos", "bigint"),
                         ("row", "bigint"), ("ts_ms", "bigint"), ("file", "string"),
                         ("line", "bigint"), ("part", "int"))


class DebeziumReader(DebeziumFormat):
    """`debezium`: Debezium JSON change events."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]
             ) -> ReadResult:
        """Canonical changes of `files`; raises SourceError naming file and line on bad input."""
        opts = parse_options(table.source.options)
        shape = table_shape(table, opts.key_columns)

        def parse(text: str, file: str) -> Iterator[Row]:
            skipped: dict[str, int] = {}
            yield from parse_text(text, file, shape, opts, skipped)
            yield from skipped_rows(skipped, len(shape.columns), len(DEBEZIUM_ORDER_FIELDS), file)

        changes, info = read_text_changes(spark, files, shape, parse, DEBEZIUM_ORDER_FIELDS)
        if shape.key_columns and not table.key_columns:
            info["key_columns"] = list(shape.key_columns)
        return ReadResult(changes=changes, files=tuple(files), info=info)
