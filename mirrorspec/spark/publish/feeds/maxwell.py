"""Spark reader of Maxwell JSON (the parser is `mirrorspec.sources.maxwell`)."""

from __future__ import annotations

from typing import Any, Sequence

from mirrorspec.sources.base import ReadResult
from mirrorspec.sources.maxwell import MaxwellFormat, parse_text, plan_batch
from mirrorspec.spark.publish.feeds.row_images import read_row_images


class MaxwellReader(MaxwellFormat):
    """`maxwell`: see `mirrorspec.sources.maxwell`."""

    def read(self, spark: Any, table: Any, files: Sequence[str], state: dict[str, Any]
             ) -> ReadResult:
        """Canonical changes of `files`; raises SourceError naming file and line on bad input."""
        return read_row_images(spark, table, files, parse_text, state, plan_batch)
