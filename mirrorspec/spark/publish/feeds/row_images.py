"""Spark reading shared by the row-image JSON feeds (GoldenGate, Canal, Maxwell): each file's
text through the format's pure parser (`mirrorspec.sources.<format>.parse_text`)."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

from mirrorspec.sources.base import ReadResult
from mirrorspec.sources.debezium import Row, table_shape
from mirrorspec.sources.row_images import ORDER_FIELDS, parse_options
from mirrorspec.spark.publish.feeds.base import read_text_changes, skipped_rows

Parser = Callable[..., Iterator[Row]]


def read_row_images(spark: Any, table: Any, files: Sequence[str], parse_text: Parser
                    ) -> ReadResult:
    """Canonical changes of `files`; raises SourceError naming file and line on bad input."""
    opts = parse_options(table.source.options)
    shape = table_shape(table, opts.key_columns)

    def parse(text: str, file: str) -> Iterator[Row]:
        skipped: dict[str, int] = {}
        yield from parse_text(text, file, shape, opts, skipped)
        yield from skipped_rows(skipped, len(shape.columns), len(ORDER_FIELDS), file)

    changes, info = read_text_changes(spark, files, shape, parse, ORDER_FIELDS)
    if shape.key_columns and not table.key_columns:
        info["key_columns"] = list(shape.key_columns)
    return ReadResult(changes=changes, files=tuple(files), info=info)
