"""Spark reader of GoldenGate JSON (the parser is `mirrorspec.sources.goldengate`)."""

from __future__ import annotations

from typing import Any, Sequence

from mirrorspec.sources.base import ReadResult
from mirrorspec.sources.goldengate import GoldenGateFormat, parse_text
from mirrorspec.spark.publish.feeds.row_images import read_row_images


class GoldenGateReader(GoldenGateFormat):
    """`goldengate`: see `mirrorspec.sources.goldengate`."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]
             ) -> ReadResult:
        """Canonical changes of `files`; raises SourceError naming file and line on bad input."""
        return read_row_images(spark, table, files, parse_text, state)
